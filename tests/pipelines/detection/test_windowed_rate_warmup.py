"""A young broker's windowed-rate ratios: NetworkProcessorAvgIdlePercent reads idle x age / (age + 30 s) for the
first 30 s of its network processors (Kafka's Rate divides by at least one full sample window), so detection leaves
out those samples within WINDOWED_RATE_WARMUP_S of the broker's process start (jmx_exporter's
process_start_time_seconds)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from pipelines.detection.config import DetectionConfig
from pipelines.detection.metric_detectors import WINDOWED_RATE_WARMUP_S, metric_windows
from pipelines.detection.registry import metric_candidates
from schemas.alerts import AlertType
from schemas.signals import Signal
from schemas.tables import METRIC_SAMPLES

CFG = DetectionConfig()
STARTED = dt.datetime(2026, 11, 28, 16, 1, 3, tzinfo=dt.UTC)
# seen on Apache Kafka 4.4.0: the network processors' metrics exist 14 s after the JVM started
PROCESSORS_AFTER_S = 14.0
KAFKA_MIN_WINDOW_S = 30.0


def reported_idle(true_idle: float, since_start_s: float) -> float:
    """What Kafka's gauge reports `since_start_s` after the JVM started, its processors `true_idle` idle."""
    age = since_start_s - PROCESSORS_AFTER_S
    return true_idle * age / (age + KAFKA_MIN_WINDOW_S) if age < KAFKA_MIN_WINDOW_S else true_idle


def scrapes(true_idle: float, interval_s: float, *, with_start: bool = True, started: dt.datetime = STARTED,
            first_s: float = 16.0, last_s: float = 150.0, app_info: bool = False) -> pa.Table:
    rows = []
    t = first_s
    while t <= last_s:
        at = STARTED + dt.timedelta(seconds=t)
        src = "http://127.0.0.1:9404/metrics"
        idle = reported_idle(true_idle, (at - started).total_seconds())
        series = [(Signal.NetworkProcessorAvgIdlePercent.value, idle)]
        if with_start and app_info:  # Kafka's own app-info start-time-ms (ms), as the reference broker reports it
            series.append((Signal.StartTimeMs.value, started.timestamp() * 1000))
        elif with_start:
            series.append((Signal.ProcessStartTimeSeconds.value, started.timestamp()))
        for signal, value in series:
            rows.append({"cluster": "ops", "broker_id": 2, "ts": at, "signal": signal, "attribute": "Value",
                         "value": value, "source": src, "source_offset": len(rows), "date": at.date()})
        t += interval_s
    return pa.Table.from_pylist([{n: r.get(n) for n in METRIC_SAMPLES.names} for r in rows], METRIC_SAMPLES.to_arrow())


def saturated(tbl: pa.Table) -> list[dict[str, object]]:
    return [c for c in metric_candidates(metric_windows(tbl, CFG), CFG)
            if c["type"] == AlertType.NETWORK_PROCESSOR_SATURATED]


@pytest.mark.parametrize("interval_s", [5.0, 15.0])
@pytest.mark.parametrize("app_info", [False, True], ids=["process-start", "app-info-start-time-ms"])
def test_the_warmup_of_a_healthy_young_broker_is_not_saturation(interval_s: float, app_info: bool) -> None:
    assert saturated(scrapes(0.96, interval_s, with_start=False)), "the warm-up reads as saturation unless removed"
    assert saturated(scrapes(0.96, interval_s, app_info=app_info)) == []


@pytest.mark.parametrize("interval_s", [5.0, 15.0, 30.0])
def test_a_saturated_young_broker_fires_once_warmed_up(interval_s: float) -> None:
    found = saturated(scrapes(0.1, interval_s))
    assert found
    warm = STARTED + dt.timedelta(seconds=WINDOWED_RATE_WARMUP_S)
    assert all(c["ts"] >= warm for c in found)


def test_an_old_incarnation_is_judged_from_its_first_sample() -> None:
    """A broker started an hour before the pipeline first scrapes it: nothing of its samples is left out."""
    old = STARTED - dt.timedelta(hours=1)
    found = saturated(scrapes(0.1, 5.0, started=old, first_s=16.0, last_s=60.0))
    assert found
    assert min(c["ts"] for c in found) < STARTED + dt.timedelta(seconds=WINDOWED_RATE_WARMUP_S)


def lag_scrapes(lags_ms: list[float], interval_s: float = 5.0) -> pa.Table:
    rows = []
    for i, lag in enumerate(lags_ms):
        at = STARTED + dt.timedelta(seconds=i * interval_s)
        rows.append({"cluster": "ops", "broker_id": 100, "ts": at, "signal": Signal.LastAppliedRecordLagMs.value,
                     "attribute": "Value", "value": lag if lag >= 0 else at.timestamp() * 1000, "source": "s",
                     "source_offset": i, "date": at.date()})
    return pa.Table.from_pylist([{n: r.get(n) for n in METRIC_SAMPLES.names} for r in rows], METRIC_SAMPLES.to_arrow())


def lagging(tbl: pa.Table) -> list[dict[str, object]]:
    return [c for c in metric_candidates(metric_windows(tbl, CFG), CFG) if c["type"] == AlertType.METADATA_APPLY_LAG]


def test_a_controller_that_applied_no_record_yet_is_not_lagging_but_a_real_lag_still_is() -> None:
    """Apache Kafka 4.4.0: a KRaft controller's first scrape after its restart reads LastAppliedRecordLagMs as the
    wall clock itself (no record applied: its append time is 0), then 390 ms."""
    assert lagging(lag_scrapes([-1, 390, 360, 380] * 6)) == []  # -1: the epoch ms of the sample
    assert lagging(lag_scrapes([-1, 40_000, 45_000, 50_000] * 6))  # a real lag after the start still alerts
