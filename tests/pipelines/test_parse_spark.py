"""The Spark engine: identical rows to the Python engine on every fixture and case (so every whole-row expectation of
test_parse_logs / test_parse_metrics holds for Spark too), counts reconcile, bad input never fails the job."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest

from pipelines.parsing import broker_id_from_path, classify_log_kind, parse_log_lines, parse_metric_lines
from pipelines.parsing.pylogs import parse_line
from pipelines.parsing.pymetrics import parse_metric
from schemas.tables import (
    METRIC_SAMPLES,
    QUARANTINE,
    RAW_LOGS,
    RAW_METRICS,
    REQUEST_EVENTS,
    STATE_CHANGE_EVENTS,
)
from tests.pipelines.parse_helpers import load_module, log_fixture_rows, metric_fixture_rows, raw_log, raw_metric

pytestmark = pytest.mark.spark
cases = load_module("parse_cases")
metric_cases = load_module("parse_metric_cases")

# Bytes a file may hold that are not UTF-8: the source decodes them with replacement characters.
NON_UTF8 = b"[2021-03-02 08:00:01,010] INFO [Broker id=2] \xff\xfe\xc3( garbage (state.change.logger)".decode(
    "utf-8", "replace"
)


def _norm(v: Any) -> Any:
    """Spark returns naive UTC datetimes (session zone UTC); NaN never equals itself."""
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def _key(row: dict[str, Any]) -> tuple[str, int]:
    return row["source"], row["source_offset"]


def _collect(df) -> dict[tuple[str, int], dict[str, Any]]:
    out = {}
    for r in df.collect():
        d = {k: _norm(v) for k, v in r.asDict().items()}
        assert _key(d) not in out
        out[_key(d)] = d
    return out


def _log_rows() -> list[dict[str, Any]]:
    rows = [raw_log(c.line, i, c.log_kind, source="case") for i, c in enumerate(cases.ALL_LOG_CASES)]
    rows += log_fixture_rows()
    rows.append(raw_log(NON_UTF8, 0, source="non-utf8"))
    rows.append(raw_log("[2021-03-02 08:00:01,010] INFO [Broker id=\x01] x\x01y (state.change.logger)", 0,
                        source="sep-in-text"))
    return rows


@pytest.fixture(scope="module")
def parsed_logs(spark):
    rows = _log_rows()
    raw = spark.createDataFrame([tuple(r[c] for c in RAW_LOGS.names) for r in rows], RAW_LOGS.to_spark())
    p = parse_log_lines(raw, persist=True)
    out = {
        "state_change": _collect(p.state_change),
        "request": _collect(p.requests),
        "rejected": _collect(p.rejected),
        "unused": _collect(p.unused),
    }
    schemas = {name: getattr(p, attr).schema for name, attr in
               (("state_change", "state_change"), ("request", "requests"), ("rejected", "rejected"),
                ("unused", "unused"))}
    p.unpersist()
    return rows, out, schemas


def test_log_outputs_have_the_table_columns(parsed_logs) -> None:
    _, _, schemas = parsed_logs
    assert [(f.name, f.dataType) for f in schemas["state_change"]] == [
        (f.name, f.dataType) for f in STATE_CHANGE_EVENTS.to_spark()]
    assert [(f.name, f.dataType) for f in schemas["request"]] == [
        (f.name, f.dataType) for f in REQUEST_EVENTS.to_spark()]
    assert [(f.name, f.dataType) for f in schemas["rejected"]] == [(f.name, f.dataType) for f in QUARANTINE.to_spark()]
    assert [f.name for f in schemas["unused"]] == [*RAW_LOGS.names, "reason"]


def test_logs_reconcile_every_row_lands_exactly_once(parsed_logs) -> None:
    rows, out, _ = parsed_logs
    keys = [k for part in out.values() for k in part]
    assert len(keys) == len(set(keys)) == len(rows)
    assert set(keys) == {_key(r) for r in rows}


def test_spark_and_python_log_engines_identical(parsed_logs) -> None:
    rows, out, _ = parsed_logs
    for raw in rows:
        route, expected = parse_line(raw)
        got = out[route].get(_key(raw))
        assert got is not None, (route, raw["line"][:200])
        assert got == {k: _norm(v) for k, v in expected.items()}, raw["line"][:200]


def test_check_fixture_rows(parsed_logs) -> None:
    _, out, _ = parsed_logs
    finished = [r for r in out["state_change"].values() if r["event"] == "leader_and_isr_finished"
                and r["correlation_id"] == 17 and r["source"].endswith("broker-2/state-change.log")]
    assert [(r["broker_id"], r["elapsed_ms"], r["partitions"], r["ts"]) for r in finished] == [
        (2, 13973, 960, dt.datetime(2021, 3, 2, 8, 0, 14, 977000))]
    req = [r for r in out["request"].values() if r["source"].endswith("kafka-request.log")]
    assert [(r["api_name"], r["correlation_id"], r["listener"], r["total_time_ms"]) for r in req] == [
        ("LeaderAndIsr", 17, "CONTROLLER", 13974.2)]
    junk = [r for r in out["rejected"].values() if r["record"] == "this line is not a Kafka log line at all"]
    assert len(junk) == 1


def _metric_rows() -> list[dict[str, Any]]:
    rows = [raw_metric(c.line, i, c.metric_format, source="case") for i, c in enumerate(metric_cases.METRIC_CASES)]
    rows += metric_fixture_rows()
    rows.append(raw_metric('{"mbean": "a:type=b", "tags": "not-a-map", "value": 1}', 0, source="bad-tags"))
    rows.append(raw_metric("x" * 200_000 + " 1", 0, source="huge"))
    return rows


def test_spark_and_python_metric_engines_identical_and_reconcile(spark) -> None:
    rows = _metric_rows()
    raw = spark.createDataFrame([tuple(r[c] for c in RAW_METRICS.names) for r in rows], RAW_METRICS.to_spark())
    p = parse_metric_lines(raw, persist=True)
    assert [(f.name, f.dataType) for f in p.samples.schema] == [(f.name, f.dataType) for f in METRIC_SAMPLES.to_spark()]
    out = {"sample": _collect(p.samples), "rejected": _collect(p.rejected), "unused": _collect(p.unused)}
    p.unpersist()
    keys = [k for part in out.values() for k in part]
    assert len(keys) == len(set(keys)) == len(rows)
    for raw_row in rows:
        route, expected = parse_metric(raw_row)
        got = out[route].get(_key(raw_row))
        assert got is not None, (route, raw_row["line"][:200])
        assert got == {k: _norm(v) for k, v in expected.items()}, raw_row["line"][:200]


def test_path_helpers(spark) -> None:
    df = spark.createDataFrame(
        [("/data/prod/broker-3/state-change.log.2024-05-10-09", "x"), ("C:\\logs\\broker_12\\server.log", "x"),
         ("/logs/kafka-request.log", "x"), ("/logs/controller.log", "x"),
         ("/x/app.log", "[..] INFO y (state.change.logger)"),
         ("/x/app.log", "[..] INFO y (kafka.server.ReplicaFetcherManager)"), ("/x/app.log", "hello")],
        "path STRING, line STRING",
    )
    got = df.select(classify_log_kind(df.path, df.line).alias("k"), broker_id_from_path(df.path).alias("b")).collect()
    assert [(r.k, r.b) for r in got] == [("state-change", 3), ("server", 12), ("request", None), ("controller", None),
                                         ("state-change", None), ("server", None), ("unknown", None)]


def test_may_route_keeps_every_request_line(spark, parsed_logs) -> None:
    """The executor path's request job parses only lines passing may_route: it must pass every line that the parser
    routes to request_events (a necessary condition), and drop the state-change lines it exists to skip."""
    from pipelines.parsing import may_route

    rows, out, _ = parsed_logs
    raw = spark.createDataFrame([tuple(r[c] for c in RAW_LOGS.names) for r in rows], RAW_LOGS.to_spark())
    kept = {(r["source"], r["source_offset"]) for r in
            raw.where(may_route("request", "logs")).select("source", "source_offset").collect()}
    assert out["request"]
    assert set(out["request"]) <= kept
    assert any(k not in kept for k in out["state_change"])
    assert raw.where(may_route("state_change", "logs")).count() == len(rows)  # no cheaper test: every line
    wrapped = "[2021-03-02 08:00:01,010] DEBUG Completed re\nquest:{} (kafka.request.logger)"
    one = spark.createDataFrame([(wrapped,)], "line string")
    assert one.where(may_route("request", "logs")).count() == 1
