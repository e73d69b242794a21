"""Every metric rule at the scrape intervals operators use (15, 30 and 60 s, and an irregular schedule), as at a
few seconds: a condition held for two scrapes fires by its second sample; a healthy series never does.

Each scrape is its own `.prom` file (one file per scrape, as a landing zone holds them), so a meter's cumulative
Count spans files: the rules must read it as one counter of the scraped target."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pytest

from pipelines.detection.config import DetectionConfig
from pipelines.detection.metric_detectors import metric_windows
from pipelines.detection.registry import metric_candidates
from schemas.alerts import AlertType
from schemas.tables import METRIC_SAMPLES

CFG = DetectionConfig()
T0 = dt.datetime(2026, 11, 28, 12, 0, 0, tzinfo=dt.UTC)
BROKER = 4
# Scrapes before the condition, during it (two: min_samples), after it.
BEFORE, DURING, AFTER = 6, 2, 3
# An irregular schedule: a scraper that is late now and then, and a scrape lost (the 47 s gap).
IRREGULAR = (15.0, 16.2, 14.1, 47.0, 15.3, 29.8, 15.0, 15.4, 14.6, 15.2, 30.1)


@dataclass(frozen=True)
class Series:
    """One series of a rule's input: a value per scrape, from (is the condition on, seconds since the last
    scrape, the previous value)."""

    signal: str
    attribute: str
    value: Callable[[bool, float, float], float]
    listener: str | None = None
    request: str | None = None


def gauge(healthy: float, bad: float) -> Callable[[bool, float, float], float]:
    return lambda on, _step, _prev: bad if on else healthy


def ns_meter(healthy: float, bad: float) -> Callable[[bool, float, float], float]:
    """A Yammer meter's cumulative Count in ns marked at `healthy`/`bad` of the time: the step's increase."""
    return lambda on, step, prev: prev + (bad if on else healthy) * step * 1e9


def completions(on: bool, _step: float, prev: float) -> float:
    """A RequestMetrics Count: one request completed in each scrape of the condition."""
    return prev + (1.0 if on else 0.0)


CASES: dict[AlertType, tuple[Series, ...]] = {
    AlertType.CONTROL_PLANE_QUEUE_BACKLOG: (Series("ControlPlaneRequestQueueSize", "Value", gauge(0, 15)),),
    AlertType.REQUEST_QUEUE_SATURATED: (Series("RequestQueueSize", "Value", gauge(3, 450)),
                                        Series("ControlPlaneRequestQueueSize", "Value", gauge(0, 0))),
    AlertType.ACCEPTOR_BLOCKED: (Series("AcceptorBlockedPercent", "OneMinuteRate", gauge(0.0, 0.5), "PLAINTEXT"),),
    AlertType.NETWORK_PROCESSOR_SATURATED: (Series("NetworkProcessorAvgIdlePercent", "Value", gauge(0.8, 0.1)),),
    AlertType.REQUEST_HANDLER_SATURATED: (Series("RequestHandlerAvgIdlePercent", "OneMinuteRate", gauge(0.8, 0.1)),),
    AlertType.METADATA_APPLY_LAG: (Series("LastAppliedRecordLagMs", "Value", gauge(20, 9000)),),
    AlertType.CONTROLLER_EVENT_QUEUE_DELAY: (Series("EventQueueTimeMs", "50thPercentile", gauge(3, 2000)),),
    AlertType.CONTROL_REQUEST_QUEUE_DELAY: (
        Series("RequestQueueTimeMs", "99thPercentile", gauge(0.5, 2500), request="LeaderAndIsr"),
        Series("RequestQueueTimeMs", "Count", completions, request="LeaderAndIsr")),
    AlertType.LEADER_AND_ISR_TOTAL_TIME_HIGH: (
        Series("TotalTimeMs", "99thPercentile", gauge(40, 13973), request="LeaderAndIsr"),
        Series("TotalTimeMs", "Count", completions, request="LeaderAndIsr")),
    # the active controller's election meters (jmx_exporter: `..._total`, the Count): a rise is an election
    AlertType.UNCLEAN_LEADER_ELECTION: (Series("UncleanLeaderElectionsPerSec", "Count", completions),),
    AlertType.LEADER_ELECTED_FROM_ELR: (Series("ElectionFromEligibleLeaderReplicasPerSec", "Count", completions),),
}
# The meters that jmx_exporter's common rules export only as a Count (`..._count_total`, ns).
COUNT_CASES: dict[str, tuple[AlertType, Series]] = {
    "acceptor-count": (AlertType.ACCEPTOR_BLOCKED,
                       Series("AcceptorBlockedPercent", "Count", ns_meter(0.0, 0.67), "PLAINTEXT")),
    "handler-count": (AlertType.REQUEST_HANDLER_SATURATED,
                      Series("RequestHandlerAvgIdlePercent", "Count", ns_meter(0.8, 0.1))),
}
INTERVALS = {"15s": (15.0,) * 10, "30s": (30.0,) * 10, "60s": (60.0,) * 10, "irregular": IRREGULAR}


def scrape_times(steps: tuple[float, ...]) -> list[float]:
    out, t = [0.0], 0.0
    for s in steps[: BEFORE + DURING + AFTER - 1]:
        t += s
        out.append(t)
    return out


def samples(series: tuple[Series, ...], times: list[float], condition: bool = True) -> pa.Table:
    rows = []
    for s in series:
        prev, last = 0.0, 0.0
        for i, t in enumerate(times):
            on = condition and BEFORE <= i < BEFORE + DURING
            prev = s.value(on, t - last, prev)
            last = t
            at = T0 + dt.timedelta(seconds=t)
            rows.append({"cluster": "ops", "broker_id": BROKER, "ts": at, "signal": s.signal, "value": prev,
                         "attribute": s.attribute, "listener": s.listener, "request": s.request,
                         "source": f"/in/ops/broker-{BROKER}/metrics/scrape-{int(at.timestamp() * 1000)}.prom",
                         "source_offset": i, "date": at.date()})
    return pa.Table.from_pylist([{n: r.get(n) for n in METRIC_SAMPLES.names} for r in rows], METRIC_SAMPLES.to_arrow())


def found(series: tuple[Series, ...], times: list[float], condition: bool = True) -> list[dict[str, object]]:
    return metric_candidates(metric_windows(samples(series, times, condition), CFG), CFG)


def _check_fires(alert: AlertType, series: tuple[Series, ...], steps: tuple[float, ...]) -> None:
    times = scrape_times(steps)
    hits = [c for c in found(series, times) if c["type"] == alert]
    assert hits, f"{alert} did not fire"
    assert {c["broker_id"] for c in hits} == {BROKER}
    second_bad = T0 + dt.timedelta(seconds=times[BEFORE + DURING - 1])
    assert min(c["ts"] for c in hits) <= second_bad, "not judged by the condition's second scrape"


@pytest.mark.parametrize("interval", sorted(INTERVALS))
@pytest.mark.parametrize("alert", sorted(CASES))
def test_a_condition_of_two_scrapes_fires_at_every_interval(alert: AlertType, interval: str) -> None:
    _check_fires(alert, CASES[alert], INTERVALS[interval])


@pytest.mark.parametrize("interval", sorted(INTERVALS))
@pytest.mark.parametrize("case", sorted(COUNT_CASES))
def test_a_meter_seen_only_as_its_count_fires_at_every_interval(case: str, interval: str) -> None:
    alert, series = COUNT_CASES[case]
    _check_fires(alert, (series,), INTERVALS[interval])


@pytest.mark.parametrize("interval", sorted(INTERVALS))
@pytest.mark.parametrize("alert", sorted(CASES))
def test_healthy_series_are_quiet_at_every_interval(alert: AlertType, interval: str) -> None:
    assert found(CASES[alert], scrape_times(INTERVALS[interval]), condition=False) == []


@pytest.mark.parametrize("interval", sorted(INTERVALS))
@pytest.mark.parametrize("case", sorted(COUNT_CASES))
def test_healthy_counts_are_quiet_at_every_interval(case: str, interval: str) -> None:
    assert found((COUNT_CASES[case][1],), scrape_times(INTERVALS[interval]), condition=False) == []


def test_a_series_sampled_more_sparsely_than_the_bound_does_not_fire() -> None:
    """Beyond max_scrape_interval_s a window holds one sample: no rule calls one scrape sustained."""
    series = CASES[AlertType.CONTROL_PLANE_QUEUE_BACKLOG]
    assert found(series, scrape_times((120.0,) * 10)) == []


def test_a_counter_reset_between_scrape_files_is_no_increase() -> None:
    """The target restarted between two scrapes (its Count began again): the step across the reset counts
    neither its fall nor its time, so a healthy meter stays quiet although its files differ."""
    times = scrape_times((30.0,) * 10)
    tbl = samples((Series("AcceptorBlockedPercent", "Count", ns_meter(0.0, 0.0), "PLAINTEXT"),), times, False)
    values = [900e9 if i < 5 else 1e6 for i in range(tbl.num_rows)]  # restarted after the fifth scrape
    tbl = tbl.set_column(tbl.schema.get_field_index("value"), "value", pa.array(values, pa.float64()))
    assert metric_candidates(metric_windows(tbl, CFG), CFG) == []
