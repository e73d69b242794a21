"""A cluster's log time (jobs.detect.pairing.advance_logs): the slowest of its sources in a batch, within
SOURCE_SPREAD of the newest. A catch-up reads a logging topic's partitions at different event times; a clock at the
newest line made the lagging partitions' lines late (a fleet drain: 10-21 % of the backlog unpaired)."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa

from jobs.detect.pairing import CLOCK_SCHEMA, SOURCE_SPREAD, LogClock, advance_logs, batch_log_ms

T0 = dt.datetime(2026, 12, 7, 21, 0, tzinfo=dt.UTC)
SPREAD_MS = int(SOURCE_SPREAD.total_seconds() * 1000)
DELAY_MS = 10_000  # detection.watermark_delay_s
# The drain: a cluster's lines every 10 ms for 10 minutes, spread over the topic's partitions as a shipper's
# partitions.auto does, read in batches that take each partition up to a share that differs between partitions.
PARTITIONS = 4
LINES = 60_000
BATCHES = 40


def _rows(rows: list[tuple[str, int, str]]) -> pa.Table:
    return pa.Table.from_pylist([{"cluster": c, "ts": T0 + dt.timedelta(milliseconds=ms), "source": s}
                                 for c, ms, s in rows], CLOCK_SCHEMA)


def test_the_slowest_source_within_the_spread_sets_the_batch_time() -> None:
    assert batch_log_ms({"kafka:logs/0": 50_000, "kafka:logs/1": 20_000}, SPREAD_MS) == 20_000
    # a source further behind than the spread (a host whose clock is wrong) holds nothing back
    assert batch_log_ms({"kafka:logs/0": SPREAD_MS + 90_000, "kafka:logs/1": 20_000}, SPREAD_MS) == SPREAD_MS + 90_000
    assert batch_log_ms({"a": SPREAD_MS + 90_000, "b": 95_000, "c": 20_000}, SPREAD_MS) == 95_000
    assert batch_log_ms({"/logs/b1/server.log": 7}, SPREAD_MS) == 7


def test_a_clock_never_goes_back_and_a_source_absent_from_a_batch_holds_nothing() -> None:
    clocks: dict[str, LogClock] = {}
    assert advance_logs(clocks, _rows([("c1", 30_000, "p0"), ("c1", 10_000, "p1"), ("c2", 5, "p0")]),
                        SPREAD_MS) == {"c1", "c2"}
    assert clocks["c1"].log_ms == int(T0.timestamp() * 1000) + 10_000
    assert advance_logs(clocks, _rows([("c1", 4_000, "p1")]), SPREAD_MS) == set()  # behind: stays
    assert clocks["c1"].log_ms == int(T0.timestamp() * 1000) + 10_000
    assert advance_logs(clocks, _rows([("c1", 40_000, "p0")]), SPREAD_MS) == {"c1"}  # p1 idle this batch
    assert clocks["c1"].log_ms == int(T0.timestamp() * 1000) + 40_000


def test_rows_without_a_source_move_the_clock_by_their_newest_line() -> None:
    clocks: dict[str, LogClock] = {}
    rows = _rows([("c1", 30_000, "p0"), ("c1", 10_000, "p1")]).drop_columns(["source"])
    advance_logs(clocks, rows, SPREAD_MS)
    assert clocks["c1"].log_ms == int(T0.timestamp() * 1000) + 30_000


def _late_lines(spread_ms: int) -> int:
    """The drain's lines older than their cluster's watermark before their batch (what pairing drops as late)."""
    rng = random.Random(20261207)
    parts: list[list[int]] = [[] for _ in range(PARTITIONS)]
    for i in range(LINES):
        parts[rng.randrange(PARTITIONS)].append(i * 10)
    speed = [1.0, 1.0, 0.9, 1.1]  # each partition's share of a batch, relative: up to a minute apart by the end
    pos = [0] * PARTITIONS
    clocks: dict[str, LogClock] = {}
    late = 0
    for _ in range(BATCHES):
        batch: list[tuple[str, int, str]] = []
        for p in range(PARTITIONS):
            take = int(LINES / PARTITIONS / BATCHES * speed[p] * rng.uniform(0.8, 1.2))
            batch += [("fleet-1", ms, f"kafka:logs/{p}") for ms in parts[p][pos[p]:pos[p] + take]]
            pos[p] += take
        mark = None if "fleet-1" not in clocks else clocks["fleet-1"].log_ms - DELAY_MS  # type: ignore[operator]
        base = int(T0.timestamp() * 1000)
        late += sum(1 for _, ms, _ in batch if mark is not None and base + ms < mark)
        if batch:
            advance_logs(clocks, _rows(batch), spread_ms)
    return late


def test_a_drain_reading_partitions_unevenly_leaves_no_line_late() -> None:
    assert _late_lines(SPREAD_MS) == 0
    assert _late_lines(0) > LINES // 10  # the newest line as the clock: what the fleet drain measured
