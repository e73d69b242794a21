"""RequestMetrics quantiles come from Yammer's exponentially decaying reservoir: a slow request keeps the p99 high
for minutes. A window is judged by what its own requests took: the quantile only when it rose in the window, and
the window's mean from the cumulative Count and Mean (Apache Kafka 3.9.1 re-reported an 8,263 ms LeaderAndIsr in a
window whose own requests took 1,425, 752 and 7 ms)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from pipelines.detection.config import DetectionConfig
from pipelines.detection.metric_detectors import metric_windows
from pipelines.detection.registry import metric_candidates
from schemas.tables import METRIC_SAMPLES

CFG = DetectionConfig()
T0 = dt.datetime(2026, 11, 28, 12, 0, 0, tzinfo=dt.UTC)
STEP_S = 15.0


def scrapes(p99: list[float], count: list[float], mean: list[float] | None = None) -> pa.Table:
    """LeaderAndIsr's TotalTimeMs series, one scrape every STEP_S."""
    rows = []
    for attr, values in (("99thPercentile", p99), ("Count", count), ("Mean", mean or [])):
        for i, v in enumerate(values):
            at = T0 + dt.timedelta(seconds=i * STEP_S)
            rows.append({"cluster": "c", "broker_id": 1, "ts": at, "signal": "TotalTimeMs", "attribute": attr,
                         "request": "LeaderAndIsr", "value": v, "source": "http://b1:9404/metrics",
                         "source_offset": i, "date": at.date()})
    return pa.Table.from_pylist([{n: r.get(n) for n in METRIC_SAMPLES.names} for r in rows], METRIC_SAMPLES.to_arrow())


def total_time_high(tbl: pa.Table) -> list[dict[str, object]]:
    return [c for c in metric_candidates(metric_windows(tbl, CFG), CFG)
            if c["type"] == "LEADER_AND_ISR_TOTAL_TIME_HIGH"]


def _mean_after(count: list[float], took_ms: list[float]) -> list[float]:
    """The histogram's lifetime Mean after each scrape, given what each scrape's new requests took (ms each)."""
    out, total = [], 0.0
    for i, c in enumerate(count):
        new = c - (count[i - 1] if i else 0.0)
        total += new * took_ms[i]
        out.append(total / c if c else 0.0)
    return out


def test_an_old_slow_request_in_the_reservoir_is_not_a_new_window_s() -> None:
    """The p99 stays at 8,263 ms (a request minutes ago) while new LeaderAndIsr complete in milliseconds."""
    count = [10.0, 10.0, 11.0, 13.0, 14.0, 16.0]
    took = [8263.0, 0.0, 1425.0, 752.0, 7.0, 40.0]
    assert total_time_high(scrapes([8263.0] * 6, count)) == []
    assert total_time_high(scrapes([8263.0] * 6, count, _mean_after(count, took))) == []


def test_new_slow_requests_behind_a_stale_quantile_are_seen_through_the_mean() -> None:
    """The p99 cannot rise past the old slow request, but the window's own requests took 12 s each."""
    count = [10.0, 10.0, 10.0, 12.0, 14.0, 14.0]
    took = [500.0, 0.0, 0.0, 12000.0, 12000.0, 0.0]
    [hit] = total_time_high(scrapes([13000.0] * 6, count, _mean_after(count, took)))
    assert round(hit["value"]) == 12000
    assert hit["severity"] == "warning"


def test_a_quantile_that_rises_fires_with_the_quantile() -> None:
    count = [10.0, 10.0, 11.0, 11.0]
    [hit] = total_time_high(scrapes([40.0, 40.0, 13973.0, 13973.0], count))
    assert hit["value"] == 13973.0
