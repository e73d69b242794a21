"""Metric rules over counters as Prometheus users scrape them (jmx_exporter 1.x `..._count_total`, no rates), and
Kafka's RequestMetrics of the control requests as the only input of a metrics-only cluster (Spark, batch).

Every series goes through the metric parser first (Prometheus text lines with timestamps, as a scrape or a `.prom`
file holds them), so the names, the `_total` suffix and the labels are resolved the way silver holds them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipelines.detection.config import DetectionConfig
from pipelines.detection.metric_detectors import metric_windows
from pipelines.detection.registry import metric_candidates
from schemas.tables import METRIC_SAMPLES, RAW_METRICS

pytestmark = pytest.mark.spark

CFG = DetectionConfig()
STORM = Path(__file__).resolve().parents[2] / "fixtures" / "kafka" / "kafka-3.9.1-connection-storm-jmx"
T0_MS = 1_700_000_000_000
STEP_MS = 5_000

HANDLER = "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count_total"
BROKER_POOL = "kafka_server_kafkarequesthandlerpool_brokerrequesthandleravgidlepercent_count_total"
ACCEPTOR = 'kafka_network_acceptor_acceptorblockedpercent_count_total{listener="PLAINTEXT"}'


def series(name: str, points: list[tuple[float, float]]) -> list[str]:
    """Prometheus lines of one series: (seconds after T0, value)."""
    return [f"{name} {v!r} {T0_MS + int(s * 1000)}" for s, v in points]


def every(step_s: float, values: list[float], start: float = 0.0) -> list[tuple[float, float]]:
    return [(start + i * step_s, v) for i, v in enumerate(values)]


SYNTHETIC: dict[str, list[str]] = {
    # 10 % idle (0.5e9 ns a 5 s step); the broker restarts after the third sample and its meter starts again
    "rh-reset-fire": series(HANDLER, every(5, [100e9, 100.5e9, 101e9, 0.2e9, 0.7e9, 1.2e9])),
    # 20 % idle on Kafka 4.x's broker pool meter, one scrape lost (a 15 s step)
    "rh4-gap-fire": series(BROKER_POOL, [(0, 50e9), (5, 51e9), (20, 54e9), (25, 55e9)]),
    # blocked 10 % of the time, scrapes lost between 10 s and 25 s
    "acc-gap-fire": series(ACCEPTOR, [(0, 0.0), (5, 0.5e9), (10, 1e9), (25, 2.5e9), (30, 3e9)]),
    # 80 % idle with a restart: the reset's step counts neither its fall nor its time
    "rh-reset-quiet": series(HANDLER, every(5, [100e9, 104e9, 108e9, 1e9, 5e9, 9e9])),
    # a restart where a sustained-looking fall would read as saturation if the fall were taken as a delta
    "acc-reset-quiet": series(ACCEPTOR, every(5, [40e9, 40e9, 1e6, 1e6, 1e6])),
}

RM = "kafka_network_requestmetrics_"
LAI = 'request="LeaderAndIsr"'


def rm(name: str, request: str, q_values: list[float], counts: list[float]) -> list[str]:
    quantile = f'{RM}{name}{{{request},quantile="0.99"}}'
    count = f"{RM}{name}_count_total{{{request}}}"
    return series(quantile, every(5, q_values)) + series(count, every(5, counts))


METRICS_ONLY: dict[str, list[str]] = {
    # a LeaderAndIsr completes in 13973 ms and waited 2500 ms in the shared request queue (no control plane)
    "rm-fire": rm("totaltimems", LAI, [40.0, 40.0, 13973.0, 13973.0], [3, 3, 4, 4])
    + rm("requestqueuetimems", LAI, [0.5, 0.5, 2500.0, 2500.0], [3, 3, 4, 4]),
    # the decaying reservoir still holds an old slow request: no request completed, the quantile did not rise
    "rm-stale-quiet": rm("totaltimems", LAI, [13973.0] * 4, [4] * 4)
    + rm("requestqueuetimems", LAI, [2500.0] * 4, [4] * 4),
    # fast LeaderAndIsr; a slow queue for Produce is not a control request's
    "rm-fast-quiet": rm("totaltimems", LAI, [40.0, 40.0, 45.0, 45.0], [3, 3, 4, 4])
    + rm("requestqueuetimems", 'request="Produce"', [1.0, 1.0, 3000.0, 3000.0], [9, 9, 10, 10]),
    # with a control plane (KIP-291) a control request's queue time is not spent behind data
    "rm-cp-quiet": rm("requestqueuetimems", LAI, [0.5, 0.5, 2500.0, 2500.0], [3, 3, 4, 4])
    + series("kafka_network_requestchannel_controlplanerequestqueuesize", every(5, [0, 0, 3, 0])),
}


def _samples(cluster: str, lines: list[str], broker: int = 1) -> list[tuple[object, ...]]:
    """The metric_samples rows the parser makes of `lines` (one file of one broker)."""
    import pyarrow as pa

    from pipelines.parsing.engine import route_records

    raw = [{"cluster": cluster, "broker_id": broker, "metric_format": "prometheus", "line": line,
            "line_bytes": len(line), "source": f"{cluster}.prom", "source_offset": i,
            "ingest_ts": datetime(2024, 1, 1, tzinfo=UTC), "batch_id": 1, "date": None}
           for i, line in enumerate(lines)]
    routed = route_records(pa.Table.from_pylist(raw, RAW_METRICS.to_arrow()), "metrics", "UTC")
    return [tuple(r.get(n) for n in METRIC_SAMPLES.names) for route, r in routed if route == "sample"]


@pytest.fixture(scope="module")
def found(spark):
    samples = _samples("storm-real", (STORM / "broker-1.prom").read_text().splitlines())
    for cluster, lines in {**SYNTHETIC, **METRICS_ONLY}.items():
        samples += _samples(cluster, lines)
    df = spark.createDataFrame(samples, METRIC_SAMPLES.to_spark())
    return metric_candidates(metric_windows(df.toArrow(), CFG), CFG)


def of(found, cluster, type_):
    return [c for c in found if c["cluster"] == cluster and c["type"] == type_]


def quality(hits):
    return {(h["severity"], round(h["value"], 6), h["threshold"], h["listener"]) for h in hits}


def test_real_kafka_connection_storm_counter_raises_acceptor_blocked(found):
    """Apache Kafka 3.9.1's AcceptorBlockedPercent Count (jmx_exporter 1.x `_count_total`, the only attribute its
    rules export) during the storm; nothing before the storm. The worst window holds the whole storm: 15.083e9 ns
    blocked between its scrapes at 03:35:26.996 and 03:35:48.062 (21.066 s)."""
    hits = of(found, "storm-real", "ACCEPTOR_BLOCKED")
    assert hits
    assert {h["listener"] for h in hits} == {"PLAINTEXT"}
    assert max(h["value"] for h in hits) == pytest.approx((15098544496.0 - 15471573.0) / 21.066e9)
    assert {h["threshold"] for h in hits} == {0.05}
    assert {h["severity"] for h in hits} == {"critical"}
    timeline = [json.loads(x) for x in (STORM / "timeline.jsonl").read_text().splitlines()]
    storm = next(e["ts_ms"] for e in timeline if e["event"] == "storm-started")
    assert min(h["ts"].timestamp() * 1000 for h in hits) > storm
    # its request handlers were ~90 % idle: no saturation
    assert of(found, "storm-real", "REQUEST_HANDLER_SATURATED") == []


QUALITY = {
    ("rh-reset-fire", "REQUEST_HANDLER_SATURATED"): {("critical", 0.1, 0.3, "data-plane")},
    ("rh4-gap-fire", "REQUEST_HANDLER_SATURATED"): {("warning", 0.2, 0.3, "data-plane")},
    ("acc-gap-fire", "ACCEPTOR_BLOCKED"): {("warning", 0.1, 0.05, "PLAINTEXT")},
    ("rm-fire", "LEADER_AND_ISR_TOTAL_TIME_HIGH"): {("warning", 13973.0, 5000.0, None)},
    ("rm-fire", "CONTROL_REQUEST_QUEUE_DELAY"): {("critical", 2500.0, 100.0, "data-plane")},
}


@pytest.mark.parametrize(("cluster", "type_"), sorted(QUALITY))
def test_counter_and_request_metric_rules_fire_with_severity_value_and_threshold(found, cluster, type_):
    assert quality(of(found, cluster, type_)) == QUALITY[(cluster, type_)]


@pytest.mark.parametrize("cluster", sorted(c for c in {**SYNTHETIC, **METRICS_ONLY} if c.endswith("-quiet")))
def test_quiet_on_healthy_counters_and_stale_reservoirs(found, cluster):
    assert [c["type"] for c in found if c["cluster"] == cluster] == []


def test_nothing_else_fires_on_the_firing_series(found):
    fired = {(c["cluster"], c["type"]) for c in found if c["cluster"] in {**SYNTHETIC, **METRICS_ONLY}}
    assert fired == set(QUALITY)
