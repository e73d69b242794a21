"""A metric alert against its peers at the same time and its broker's own history (pure polars)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl
import pyarrow as pa

from pipelines.detection.config import DetectionConfig
from pipelines.detection.metric_baselines import HISTORY_MIN_MINUTES, add_metric_baselines
from pipelines.detection.metric_detectors import BASELINE_SPECS, metric_windows
from pipelines.detection.registry import metric_candidates
from schemas.alerts import AlertType
from schemas.signals import Signal
from schemas.tables import METRIC_ROLLUPS_1M, METRIC_SAMPLES

CFG = DetectionConfig()
T0 = dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)
_IDLE = Signal.RequestHandlerAvgIdlePercent.value
_QUEUE = Signal.RequestQueueSize.value


def samples(values: dict[int, float], signal: str = _IDLE, attribute: str = "OneMinuteRate", n: int = 8,
            step_s: float = 5.0) -> pa.Table:
    """`n` scrapes every `step_s` of `signal` per broker, each at its value."""
    rows: list[dict[str, Any]] = []
    for i in range(n):
        at = T0 + dt.timedelta(seconds=step_s * i)
        for broker, v in values.items():
            rows.append({"cluster": "c1", "broker_id": broker, "ts": at, "signal": signal, "attribute": attribute,
                         "value": v, "source": f"http://b{broker}:9404/metrics", "source_offset": len(rows),
                         "date": at.date()})
    return pa.Table.from_pylist([{k: r.get(k) for k in METRIC_SAMPLES.names} for r in rows], METRIC_SAMPLES.to_arrow())


def alerts(tbl: pa.Table, alert_type: AlertType) -> list[dict[str, Any]]:
    """Per broker, its latest candidate of `alert_type` (sliding windows give one per observation)."""
    found = [c for c in metric_candidates(metric_windows(tbl, CFG), CFG) if c["type"] == alert_type.value]
    latest = {c["broker_id"]: c for c in sorted(found, key=lambda c: c["ts"])}
    return [latest[b] for b in sorted(latest)]


def rollups(broker: int, minutes: int, signal: str = _IDLE, attribute: str = "OneMinuteRate",
            avg: float = 0.97, last: list[float] | None = None) -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    for m in range(minutes):
        minute = T0 - dt.timedelta(minutes=minutes - m)
        rows.append({"cluster": "c1", "broker_id": broker, "signal": signal, "listener": None, "request": None,
                     "attribute": attribute, "minute": minute, "min": avg, "max": avg, "avg": avg,
                     "last": last[m] if last else avg, "samples": 12, "date": minute.date()})
    frame = pl.from_arrow(pa.Table.from_pylist([{k: r.get(k) for k in METRIC_ROLLUPS_1M.names} for r in rows],
                                               METRIC_ROLLUPS_1M.to_arrow()))
    assert isinstance(frame, pl.DataFrame)
    return frame


def test_a_saturated_broker_is_compared_with_its_idle_peers() -> None:
    [c] = alerts(samples({1: 0.95, 2: 0.05, 3: 0.90}), AlertType.REQUEST_HANDLER_SATURATED)
    assert c["broker_id"] == 2
    base = c["evidence"]["baseline"]
    assert (round(base["peers_median"], 3), base["peers"]) == (0.925, 2)
    add_metric_baselines([c], pl.DataFrame(), HOUR, CFG, BASELINE_SPECS)
    assert c["summary"].endswith("[against: its peers' median around the same time 92.5% (2 brokers)]")
    assert c["evidence"]["baseline"]["text"] == "its peers' median around the same time 92.5% (2 brokers)"


def test_a_whole_cluster_saturated_shows_its_peers_saturated_too() -> None:
    found = alerts(samples({1: 0.04, 2: 0.05, 3: 0.06}), AlertType.REQUEST_HANDLER_SATURATED)
    assert sorted(c["broker_id"] for c in found) == [1, 2, 3]
    two = next(c for c in found if c["broker_id"] == 2)
    assert two["evidence"]["baseline"]["peers_median"] == 0.05


def test_its_own_history_is_the_tail_on_the_alerts_side() -> None:
    """Idle ratios: lower is worse, so the history's p10 (its busiest tenth of minutes)."""
    [c] = alerts(samples({1: 0.95, 2: 0.05}), AlertType.REQUEST_HANDLER_SATURATED)
    # a busy stretch of 5 minutes of 55 stays out of its p10
    hist = pl.concat([rollups(2, 50, avg=0.97), rollups(2, 5, avg=0.60).with_columns(
        pl.col("minute") - dt.timedelta(minutes=50))])
    add_metric_baselines([c], hist, HOUR, CFG, BASELINE_SPECS)
    base = c["evidence"]["baseline"]
    assert (base["own_quantile"], base["own"], base["own_minutes"]) == ("p10", 0.97, 55)
    assert "its own p10 over the previous 60 min 97.0% (55 one-minute values)" in c["summary"]


def test_a_short_history_says_so() -> None:
    [c] = alerts(samples({1: 0.95, 2: 0.05}), AlertType.REQUEST_HANDLER_SATURATED)
    add_metric_baselines([c], rollups(2, HISTORY_MIN_MINUTES - 2), HOUR, CFG, BASELINE_SPECS)
    base = c["evidence"]["baseline"]
    assert "own" not in base
    assert f"its own history: {HISTORY_MIN_MINUTES - 2} min only" in base["text"]


def test_a_count_history_is_read_from_its_rise_across_minutes() -> None:
    """A meter read from its Count (ns idle): each minute's ratio is its rise over 60 s of nanoseconds."""
    counts = [i * 0.8 * 60e9 for i in range(20)]
    tbl = samples({1: 0.0, 2: 0.0}, attribute="Count")
    # Count series: broker 1 idles 90%, broker 2 5%
    tbl = pa.Table.from_pylist([{**r, "value": r["source_offset"] // 2 * (0.9 if r["broker_id"] == 1 else 0.05)
                                 * 5e9 + 1} for r in tbl.to_pylist()], METRIC_SAMPLES.to_arrow())
    [c] = alerts(tbl, AlertType.REQUEST_HANDLER_SATURATED)
    assert c["broker_id"] == 2
    add_metric_baselines([c], rollups(2, 20, attribute="Count", last=counts), HOUR, CFG, BASELINE_SPECS)
    base = c["evidence"]["baseline"]
    assert (round(base["own"], 6), base["own_minutes"]) == (0.8, 20)
    assert round(base["peers_median"], 6) == 0.9


def test_a_queue_is_compared_on_its_mean_length() -> None:
    [c] = alerts(samples({1: 3.0, 2: 500.0, 3: 5.0}, signal=_QUEUE, attribute="Value"),
                 AlertType.REQUEST_QUEUE_SATURATED)
    add_metric_baselines([c], rollups(2, 30, signal=_QUEUE, attribute="Value", avg=2.0), HOUR, CFG, BASELINE_SPECS)
    assert c["summary"].endswith("[against: its own p90 over the previous 60 min 2.0 requests (30 one-minute "
                                 "values); its peers' median around the same time 4.0 requests (2 brokers)]")


def test_an_election_is_counted_against_the_controllers_history() -> None:
    sig = Signal.UncleanLeaderElectionsPerSec.value
    rows = samples({100: 0.0}, signal=sig, attribute="Count").to_pylist()
    rows = [{**r, "value": 0.0 if i < 4 else 1.0} for i, r in enumerate(rows)]
    [c] = alerts(pa.Table.from_pylist(rows, METRIC_SAMPLES.to_arrow()), AlertType.UNCLEAN_LEADER_ELECTION)
    add_metric_baselines([c], rollups(100, 30, signal=sig, attribute="Count", last=[0.0] * 30), HOUR, CFG,
                         BASELINE_SPECS)
    assert c["summary"].endswith("[against: its own previous 30 min: 0 of these]")


def test_peers_are_read_around_the_same_time_not_at_the_same_window_start() -> None:
    """A paused controller: every broker's lag peaks, but broker 3 is scraped 6 s after its peers, so its last
    window starts after their peak: the peers' windows overlapping it still hold it (Apache Kafka 4.4.0)."""
    sig = Signal.LastAppliedRecordLagMs.value
    rows: list[dict[str, Any]] = []
    for broker, offset, peak in ((1, 3.5, 18_000.0), (2, 3.5, 18_100.0), (3, 9.5, 20_800.0)):
        for i in range(10):
            at_s = offset + 5.0 * i
            v = peak if i == 3 else 300.0
            at = T0 + dt.timedelta(seconds=at_s)
            rows.append({"cluster": "c1", "broker_id": broker, "ts": at, "signal": sig, "attribute": "Value",
                         "value": v, "source": f"b{broker}", "source_offset": i, "date": at.date()})
    tbl = pa.Table.from_pylist([{k: r.get(k) for k in METRIC_SAMPLES.names} for r in rows], METRIC_SAMPLES.to_arrow())
    three = next(c for c in alerts(tbl, AlertType.METADATA_APPLY_LAG) if c["broker_id"] == 3)
    assert three["evidence"]["window_start"] > "2026-11-28T09:00:18.5"  # after the peers' peak
    base = three["evidence"]["baseline"]
    assert (base["peers_median"], base["peers"]) == (18_050.0, 2)
