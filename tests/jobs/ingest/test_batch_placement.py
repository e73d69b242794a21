"""The one ingest path with process() (the engine) on the driver writes exactly what it writes with process() on the
executors (through mapInArrow).

Both run through IngestBatch on the same source-shaped DataFrame: every log format of FACTS.md (the parser cases),
every metric naming, garbage, and rows that parse but fail a hard quality rule. Each table is compared row for row;
the reconciliation holds on both; a replayed batch writes nothing twice, wherever process() runs, and counts what
the first attempt counted.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from jobs.ingest.batch import COLD_EXECUTORS_FACTOR, DRIVER_RECORD_BYTES, IngestBatch
from pipelines.parsing.engine import record_json, run_engine
from pipelines.quality import load_suite
from pipelines.quality.rules import REASON, split_valid_arrow
from schemas.tables import METRIC_SAMPLES, RAW_LOGS, STATE_CHANGE_EVENTS
from tests.lake_helpers import lake_rows, pipeline_settings
from tests.pipelines.parsing.parse_cases import ALL_LOG_CASES
from tests.pipelines.parsing.parse_metric_cases import METRIC_CASES

INGEST_TS = dt.datetime(2024, 1, 1, 0, 0, tzinfo=dt.UTC)
SOURCE_DDL = ("cluster string, broker_id int, kind string, line string, line_bytes long, source string, "
              "source_offset long, ingest_ts timestamp, truncated boolean")
# Lines that parse but break a hard rule (metric_samples.json): a negative queue size, a percent above 100, NaN (each
# at a time no case's sample of its series has: a second sample of a series at one time is a duplicate, unused).
BAD_METRICS = (
    "kafka_network_requestchannel_requestqueuesize -3.0 1614672099000",
    "kafka_network_socketserver_networkprocessoravgidlepercent 250 1614672099000",
    "kafka_network_socketserver_networkprocessoravgidlepercent NaN",
    "kafka_network_requestchannel_requestqueuesize +Inf 1614672098000",  # no Kafka metric is infinite
)
# A sample shipped twice: the second is a duplicate (unused, counted).
DUPLICATED = "kafka_network_requestchannel_requestqueuesize 7.0 1614672088000"
GARBAGE = ("this line is not a Kafka log line at all", "\x00\x01binary\ufffd", "{\"json\": \"not a metric\"", "")
# A source row's broker id outside 0..2^31-1 (the path said broker--5): lines without [Broker id=N] fail validation.
BAD_BROKER = -5


def _source_rows(family: str) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []

    def add(kind: str | None, line: str, broker: int | None, source: str, size: int | None = None) -> None:
        size = len(line.encode()) if size is None else size
        rows.append(("c1", broker, kind, line, size, source, len(rows) * 100, INGEST_TS, False))

    if family == "logs":
        for i, case in enumerate(ALL_LOG_CASES):
            add(case.log_kind, case.line, BAD_BROKER if i % 7 == 0 else 9, f"/in/c1/broker-9/{case.log_kind}.log")
        for g in GARBAGE:
            add("state-change", g, 9, "/in/c1/broker-9/state-change.log")
    else:
        for case in METRIC_CASES:
            add(case.metric_format or "prometheus", case.line, 2, "/in/c1/broker-2/metrics/m.prom")
        for line in (*BAD_METRICS, *GARBAGE, DUPLICATED, DUPLICATED):
            add("prometheus", line, 2, "/in/c1/broker-2/metrics/m.prom")
        add("prometheus", '{"ts": 1614672000000, "mbean": "kafka.net', 2, "/in/c1/broker-2/metrics/m.json",
            size=3_000_000)  # its reader kept only the start of a 3 MB record
    return rows


def _table(lake: Path, name: str) -> list[dict[str, Any]]:
    rows = lake_rows(lake, name)
    return sorted(rows, key=lambda r: (r.get("source") or "", r.get("source_offset") or -1, r.get("reason") or ""))


def _same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if "record" in x and x.get("stage") == "validate":  # JSON text: same object, number spelling may differ
            x, y = {**x, "record": json.loads(x["record"])}, {**y, "record": json.loads(y["record"])}
        assert x == y


@pytest.mark.spark
@pytest.mark.parametrize("family", ["logs", "metrics"])
def test_driver_path_writes_what_the_executor_path_writes(spark: Any, tmp_path: Path, family: str) -> None:
    df = spark.createDataFrame(_source_rows(family), SOURCE_DDL)
    runs = {}
    # over-limit: `auto` does not read a batch of unknown size to count it: the executors, driver_batch_max_rows or not
    for name, driver_max, where, path in (("executors", 0, "auto", "executors"),
                                          ("driver", 100_000, "driver", "driver"),
                                          ("over-limit", 10, "auto", "executors")):
        settings = pipeline_settings(tmp_path / name, once=False, sink={"driver_batch_max_rows": driver_max},
                                     quality={"sample_limit": 50})
        handler = IngestBatch(settings, family, f"ingest_{family}_files", "run1", where=where)
        handler.ensure_tables()
        handler(df, 0)
        handler(df, 0)  # a replayed batch (crash before the checkpoint commit) writes nothing twice
        assert [r.path for r in handler.reports] == [path, path]
        first, replay = handler.reports
        assert (replay.raw, replay.silver, replay.quarantine, replay.unused) == (
            first.raw, first.silver, first.quarantine, first.unused)
        runs[name] = (tmp_path / name / "lake", handler.reports[0])
    (lake_e, rep_e), (lake_d, rep_d) = runs["executors"], runs["driver"]
    for t in ("quarantine", "raw_logs" if family == "logs" else "raw_metrics"):
        _same(_table(runs["over-limit"][0], t), _table(lake_e, t))
    assert (rep_d.raw, rep_d.silver, rep_d.quarantine, rep_d.unused) == (
        rep_e.raw, rep_e.silver, rep_e.quarantine, rep_e.unused)
    assert rep_d.balanced
    assert rep_d.raw == df.count()
    # what the pipeline's metrics read of a report (jobs.run.observability): the same wherever process() ran
    assert rep_d.ok
    assert rep_e.ok
    assert rep_d.quarantine_reasons == rep_e.quarantine_reasons
    assert sum(rep_d.quarantine_reasons.values()) == rep_d.quarantine
    assert rep_d.newest_event_ts == rep_e.newest_event_ts
    assert set(rep_d.newest_event_ts) == {"c1"}
    tables = ["raw_logs", "state_change_events", "request_events"] if family == "logs" else [
        "raw_metrics", "metric_samples"]
    for t in [*tables, "quarantine"]:
        _same(_table(lake_d, t), _table(lake_e, t))
    q = _table(lake_d, "quarantine")
    # every kind of rejection happened (metrics: also failed scrapes, the metric cases' source-error records)
    assert {r["stage"] for r in q} == {"parse", "validate", *(["source"] if family == "metrics" else [])}
    if family == "metrics":  # the cut record, the infinite value: each with its reason; the duplicate: once
        from pipelines.parsing.stages import CUT_REASON

        reasons = [r["reason"] for r in q]
        assert CUT_REASON in reasons
        assert any(r.startswith("expect_column_values_to_be_between(value, min_value=-9.2") for r in reasons)
        dup = [r for r in _table(lake_d, "metric_samples") if r["ts"].timestamp() * 1000 == 1614672088000]
        assert [r["value"] for r in dup] == [7.0]
    dq = {(r["suite"], r["expectation"], r["success"], r["unexpected_count"], r["element_count"])
          for r in _table(lake_d, "dq_results") if r["suite"] != r["table_name"]}  # GE rows: timing differs
    assert dq == {(r["suite"], r["expectation"], r["success"], r["unexpected_count"], r["element_count"])
                  for r in _table(lake_e, "dq_results") if r["suite"] != r["table_name"]}
    assert any(s == "reconciliation" and ok for s, _, ok, _, _ in dq)


def test_arrow_rules_split_with_the_first_failed_expectation() -> None:
    rows = [
        {"cluster": "c", "broker_id": 1, "signal": "RequestQueueSize", "value": -1.0, "attribute": None},
        {"cluster": "c", "broker_id": 1, "signal": "RequestQueueSize", "value": 4.0, "attribute": None},
        {"cluster": "c", "broker_id": 1, "signal": "RequestHandlerAvgIdlePercent", "value": 250.0,
         "attribute": "Count"},
        {"cluster": "c", "broker_id": 1, "signal": "RequestHandlerAvgIdlePercent", "value": 250.0,
         "attribute": "OneMinuteRate"},
        {"cluster": "c", "broker_id": 1, "signal": "NetworkProcessorAvgIdlePercent", "value": float("nan"),
         "attribute": None},
        {"cluster": None, "broker_id": -7, "signal": None, "value": None, "attribute": None},
        {"cluster": "c", "broker_id": -1, "signal": "X", "value": 1e300, "attribute": None},  # beyond any Kafka number
        {"cluster": "c", "broker_id": -1, "signal": "X", "value": 1e18, "attribute": None},
    ]
    schema = pa.schema([("cluster", pa.string()), ("broker_id", pa.int32()), ("signal", pa.string()),
                        ("value", pa.float64()), ("attribute", pa.string())])
    good, bad = split_valid_arrow(pa.Table.from_pylist(rows, schema), load_suite(METRIC_SAMPLES.name))
    assert good.num_rows == 3
    assert bad.num_rows == 5
    assert all(r is not None for r in bad[REASON].to_pylist())


def test_route_batch_reconciles_without_spark() -> None:
    raw = pa.Table.from_pylist(
        [{"cluster": "c1", "broker_id": b, "log_kind": kind, "line": line, "line_bytes": len(line), "source": "s",
          "source_offset": off, "ingest_ts": INGEST_TS, "batch_id": 3, "date": INGEST_TS.date()}
         for (_, b, kind, line, _, _, off, _, _) in _source_rows("logs")], RAW_LOGS.to_arrow())
    suites = {t: load_suite(t) for t in ("state_change_events", "request_events")}
    out = run_engine(raw, "logs", suites=suites, batch_id=3)
    assert out.quarantine is not None
    silver = sum(t.num_rows for t in out.silver.values())
    assert out.unused is not None
    assert raw.num_rows == silver + out.quarantine.num_rows + out.unused.num_rows
    assert out.failed_rules[STATE_CHANGE_EVENTS.name]  # the -5 broker ids
    assert set(out.quarantine.column("batch_id").to_pylist()) == {3}
    assert all(t.column("batch_id").to_pylist() == [3] * t.num_rows for t in out.silver.values())
    # quality off: nothing is validated, so nothing but parser rejects is quarantined
    loose = run_engine(raw, "logs", batch_id=3)
    assert loose.quarantine is not None
    assert sum(t.num_rows for t in loose.silver.values()) == silver + sum(
        sum(v.values()) for v in out.failed_rules.values())


def test_record_json_is_to_json_shaped() -> None:
    ts = dt.datetime(2021, 3, 2, 8, 0, 1, 10500, tzinfo=dt.UTC)
    assert record_json({"a": 1, "b": None, "ts": ts, "d": ts.date(), "m": [("k", "v")], "x": float("nan")}) == (
        '{"a":1,"ts":"2021-03-02T08:00:01.010Z","d":"2021-03-02","m":{"k":"v"},"x":"NaN"}')


@pytest.mark.spark
@pytest.mark.parametrize("where", ["driver", "executors"])
def test_a_replay_after_a_crash_between_commits_reads_the_committed_bronze(spark: Any, tmp_path: Path, where: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The crashed attempt committed bronze, not silver: the replay takes the same path over the bronze rows it
    committed (not the source again, which would stamp another ingest_ts), and commits only what is missing."""
    from lake.sink import DeltaSink

    rows = _source_rows("logs")
    settings = pipeline_settings(tmp_path / where, once=False, sink={"driver_batch_max_rows": 100_000},
                                 quality={"sample_limit": 50})
    crashed = IngestBatch(settings, "logs", "ingest_logs_files", "run1", where=where)
    crashed.ensure_tables()
    commit = DeltaSink.commit_pending

    def fail_silver(sink: DeltaSink, *args: Any, **kwargs: Any) -> Any:
        if sink.table.name != "raw_logs":
            raise RuntimeError("killed between commits")
        return commit(sink, *args, **kwargs)

    monkeypatch.setattr(DeltaSink, "commit_pending", fail_silver)
    with pytest.raises(RuntimeError, match="killed between commits"):
        crashed(spark.createDataFrame(rows, SOURCE_DDL), 0)
    monkeypatch.setattr(DeltaSink, "commit_pending", commit)
    lake = tmp_path / where / "lake"
    assert len(_table(lake, "raw_logs")) == len(rows)
    assert _table(lake, "state_change_events") == []

    later = dt.datetime(2024, 1, 1, 5, 0, tzinfo=dt.UTC)  # the source re-read now would stamp this
    replay = IngestBatch(settings, "logs", "ingest_logs_files", "run1", where=where)
    replay(spark.createDataFrame([(*r[:7], later, r[8]) for r in rows], SOURCE_DDL), 0)
    (report,) = replay.reports
    assert report.path == where
    assert report.balanced
    assert report.raw == len(rows)
    assert len(_table(lake, "raw_logs")) == len(rows)
    silver = _table(lake, "state_change_events")
    assert silver
    assert {r["ingest_ts"] for r in silver} == {INGEST_TS}
    assert {r["ingest_ts"] for r in _table(lake, "quarantine")} == {INGEST_TS}


def test_auto_keeps_a_larger_batch_on_the_driver_until_the_executors_have_run_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch between the limit and COLD_EXECUTORS_FACTOR times it: the driver while the executors are cold, the
    executors once a batch of the process ran there; one above the cold limit: the executors, cold or not."""
    settings = pipeline_settings(tmp_path, once=False, sink={"driver_batch_max_rows": 100})
    handler = IngestBatch(settings, "logs", "ingest_logs_files", "run1")
    limit = 100 * DRIVER_RECORD_BYTES
    sizes = {0: limit, 1: 2 * limit, 2: COLD_EXECUTORS_FACTOR * limit + 1}
    monkeypatch.setattr(handler, "_logged_bytes", sizes.get)
    monkeypatch.setattr(IngestBatch, "executors_warm", False)
    assert [handler.where_for(b) for b in (0, 1, 2)] == ["driver", "driver", "executors"]
    monkeypatch.setattr(IngestBatch, "executors_warm", True)
    assert [handler.where_for(b) for b in (0, 1, 2)] == ["driver", "executors", "executors"]
