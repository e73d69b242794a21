"""Sliding metric windows (pipelines.detection.metric_detectors.metric_windows): membership, aggregates, duplicates,
and the windows a micro-batch's new samples touch."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from pipelines.detection.config import DetectionConfig
from pipelines.detection.metric_detectors import metric_windows
from schemas.tables import METRIC_SAMPLES

CFG = DetectionConfig(metric_window_s=30.0, metric_window_slide_s=5.0)
T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def samples(rows: list[tuple[str, int, float, float]]) -> pa.Table:
    """metric_samples rows: (signal, broker, seconds after T0, value)."""
    full = [{"cluster": "c", "broker_id": b, "ts": T0 + dt.timedelta(seconds=s), "signal": sig, "value": v,
             "attribute": "Value", "listener": None, "request": None, "source": "f", "source_offset": i,
             "date": T0.date()} for i, (sig, b, s, v) in enumerate(rows)]
    return pa.Table.from_pylist([{n: r.get(n) for n in METRIC_SAMPLES.names} for r in full], METRIC_SAMPLES.to_arrow())


def by_start(windows: pa.Table, sig: str, broker: int = 1) -> dict[int, dict]:
    return {int((w["window_start"] - T0).total_seconds()): w for w in windows.to_pylist()
            if w["sig"] == sig and w["broker_id"] == broker}


def test_a_sample_is_in_every_window_that_covers_it():
    w = by_start(metric_windows(samples([("RequestQueueSize", 1, 12.0, 7.0)]), CFG), "RequestQueueSize")
    # 30 s windows every 5 s, aligned on the epoch: those starting at -15 .. 10 s cover 12 s
    assert sorted(w) == [-15, -10, -5, 0, 5, 10]
    assert all(x["window_end"] - x["window_start"] == dt.timedelta(seconds=30) for x in w.values())


def test_aggregates_in_time_order_and_a_sample_shipped_twice_is_one_point():
    rows = [("RequestQueueSize", 1, 3.0, 5.0), ("RequestQueueSize", 1, 1.0, 9.0), ("RequestQueueSize", 1, 3.0, 5.0),
            ("RequestQueueSize", 1, 2.0, 1.0)]
    w = by_start(metric_windows(samples(rows), CFG), "RequestQueueSize")[0]
    assert (w["vmin"], w["vmax"], w["vfirst"], w["vlast"]) == (1.0, 9.0, 9.0, 5.0)
    assert w["vavg"] == (5.0 + 9.0 + 5.0 + 1.0) / 4
    assert [(p["ts"] - T0).total_seconds() for p in w["points"]] == [1.0, 2.0, 3.0]
    assert w["samples"] == 3
    assert (w["first_ts"], w["last_ts"]) == (T0 + dt.timedelta(seconds=1), T0 + dt.timedelta(seconds=3))


def test_touched_windows_are_every_series_of_the_broker_over_all_samples():
    series = ("RequestQueueSize", "ControlPlaneRequestQueueSize")
    old = [(sig, b, s, float(s)) for s in range(0, 40, 2) for sig in series for b in (1, 2)]
    new = [("RequestQueueSize", 1, 41.0, 99.0)]
    everything = samples(old + new)
    got = metric_windows(everything, CFG, touched=samples(new))
    # only broker 1's windows covering 41 s, for both of its series, each with all its samples
    assert {(w["broker_id"], w["sig"]) for w in got.to_pylist()} == {(1, "RequestQueueSize"),
                                                                    (1, "ControlPlaneRequestQueueSize")}
    queue = by_start(got, "RequestQueueSize")
    assert sorted(queue) == [15, 20, 25, 30, 35, 40]
    whole = by_start(metric_windows(everything, CFG), "RequestQueueSize")
    assert all(queue[s] == whole[s] for s in queue)
    assert queue[15]["samples"] == 13  # 16, 18 .. 38 and 41
    assert queue[15]["vmax"] == 99.0
