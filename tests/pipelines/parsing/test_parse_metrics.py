"""The metric parser's Python engine against whole expected rows (no Spark)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from schemas.tables import METRIC_SAMPLES, QUARANTINE, RAW_METRICS
from tests.pipelines.parsing.parse_helpers import load_module, metric_fixture_rows, parse_all, parse_metric, raw_metric

cases = load_module("parse_cases")
metric_cases = load_module("parse_metric_cases")


def _expected(case, raw):
    prov = {c: raw[c] for c in ("source", "source_offset", "ingest_ts", "batch_id")}
    if case.route == "sample":
        row = dict.fromkeys(METRIC_SAMPLES.names)
        row.update(cluster="c1", broker_id=raw["broker_id"], **prov)
        row.update(case.expect)
        row["date"] = row["ts"].date()
        return row
    if case.route == "unused":
        return {**{c: raw[c] for c in RAW_METRICS.names}, **case.expect}
    row = dict.fromkeys(QUARANTINE.names)
    row.update(cluster="c1", broker_id=raw["broker_id"], target_table="metric_samples", stage="parse",
               record=raw["line"], date=raw["date"], **prov)
    row.update(case.expect)
    return row


@pytest.mark.parametrize("case", metric_cases.METRIC_CASES, ids=lambda c: c.line[:70])
def test_metric_case_whole_row(case) -> None:
    raw = raw_metric(case.line, 5, case.metric_format)
    route, row = parse_metric(raw)
    assert route == case.route
    assert row == _expected(case, raw)


def test_check_fixture_prometheus_scrapes() -> None:
    rows = parse_all([r for r in metric_fixture_rows() if "scrape-" in r["source"]], "metrics")
    samples = [row for route, row in rows if route == "sample"]
    assert len(samples) == 12
    assert {r["signal"] for r in samples} == {"RequestQueueSize", "ControlPlaneRequestQueueSize",
                                              "NetworkProcessorAvgIdlePercent"}
    queue = sorted((r["ts"].isoformat(), r["value"]) for r in samples if r["signal"] == "RequestQueueSize")
    assert queue == [("2021-03-02T08:00:00+00:00", 0.0), ("2021-03-02T08:00:15+00:00", 3.0),
                     ("2021-03-02T08:00:30+00:00", 6.0), ("2021-03-02T08:00:45+00:00", 9.0)]
    assert all(r["broker_id"] is None or r["broker_id"] == 9 for r in samples)


def test_strimzi_socket_server_metric_names_sample() -> None:
    """samples/10: every name of Strimzi's socket-server-metrics rule resolves to one CamelCase signal."""
    rows = [r for r in metric_fixture_rows() if r["source"].startswith("samples/10_")]
    assert len(rows) == 23
    for r in rows:
        route, row = parse_metric({**r, "line": r["line"] + " 1"})
        assert route == "sample"
        assert row["mbean"] == "kafka.server:type=socket-server-metrics"
        assert row["signal"][0].isupper()
        assert "_" not in row["signal"]
        assert not math.isnan(row["value"])


KRAFT_SCRAPES = Path(__file__).resolve().parents[2] / "fixtures" / "kafka" / "kafka-4.4.0-kraft-scrapes"


def test_kraft_scrapes_of_apache_kafka_4_4_resolve_to_their_signals() -> None:
    """The KRaft names as the running 4.4.0 cluster exported them (not as the docs list them): each resolves, none is
    quarantined, and the controller's scrape holds the fenced broker."""
    got: dict[str, dict[str, float]] = {}
    counts: dict[str, float] = {}
    for name in ("controller-100.prom", "broker-3.prom"):
        lines = (KRAFT_SCRAPES / name).read_text().splitlines()
        routed = parse_all([raw_metric(line, i, "prometheus", 100) for i, line in enumerate(lines)], "metrics")
        assert [row for route, row in routed if route == "quarantine"] == [], name
        got[name] = {row["signal"]: row["value"] for route, row in routed
                     if route == "sample" and row["attribute"] == "Value"}
        if name.startswith("controller"):
            counts = {row["signal"]: row["value"] for route, row in routed
                      if route == "sample" and row["attribute"] == "Count"}
    # the election meters UNCLEAN_LEADER_ELECTION and LEADER_ELECTED_FROM_ELR read (`..._total`: the Count)
    assert counts["UncleanLeaderElectionsPerSec"] == counts["ElectionFromEligibleLeaderReplicasPerSec"] == 0.0
    controller = got["controller-100.prom"]
    assert (controller["FencedBrokerCount"], controller["ActiveBrokerCount"]) == (1.0, 2.0)
    for signal in ("TimedOutBrokerHeartbeatCount", "NewActiveControllersCount", "EventQueueOperationsTimedOutCount",
                   "ControllerEventManagerAvgIdleRatio", "MetadataLoaderAvgIdleRatio", "RaftCurrentEpoch",
                   "RaftCurrentLeader", "RaftCommitLatencyAvg", "LastAppliedRecordLagMs"):
        assert signal in controller, signal
    assert controller["RaftCurrentLeader"] == 100.0
    # a 4.4.0 broker exports its loader's lag under broker-metadata-metrics, and no MetadataLoader AvgIdleRatio
    assert {"MetadataApplyLagMs", "RaftCurrentLeader"} <= set(got["broker-3.prom"])
    assert "MetadataLoaderAvgIdleRatio" not in got["broker-3.prom"]
