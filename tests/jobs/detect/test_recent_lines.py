"""The state-change lines kept between batches (jobs.detect.recent_lines) are the lines the lake gives for a span,
read the lake once per cluster, follow each batch's rows, and read the lake again only for what they do not hold."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake

import jobs.detect.recent_lines as recent_module
from jobs.detect.recent_lines import RecentLines
from lake.read import LatestTable, committed_rows
from pipelines.detection.latency_detectors import LATENCY_RULE_COLUMNS, LATENCY_RULE_EVENTS
from schemas.events import Event
from schemas.tables import STATE_CHANGE_EVENTS

T0 = dt.datetime(2026, 12, 7, 23, 58, tzinfo=dt.UTC)  # a batch crosses midnight: two date partitions
KEEP = dt.timedelta(minutes=5)
# a fetcher line, a lock wait, an election and a line the latency rules do not read
KINDS = (Event.LOG_START_OFFSET_INCREMENTED, Event.LOCK_WAIT, Event.CONTROLLER_ELECTED, Event.LEADER_AND_ISR_HANDLING)


class CountingTable(LatestTable):
    """The lake's reader, counting its reads."""

    reads = 0

    def read_spans(self, *args: Any, **kw: Any) -> pa.Table:
        self.reads += 1
        return super().read_spans(*args, **kw)


def line(i: int, cluster: str = "c1") -> dict[str, Any]:
    ts = T0 + dt.timedelta(seconds=2 * i)
    return {"cluster": cluster, "broker_id": 1 + i % 3, "ts": ts, "event": KINDS[i % len(KINDS)].value,
            "controller_epoch": 4, "lock_wait_ms": 10 * i if i % len(KINDS) == 1 else None,
            "correlation_id": i if i % 2 else None, "message": f"line {i}", "source": f"{cluster}/state-change.log",
            "source_offset": 100 * i, "date": ts.date()}


def write(path: Path, rows: list[dict[str, Any]]) -> pa.Table:
    table = pa.Table.from_pylist(rows, STATE_CHANGE_EVENTS.to_arrow())
    write_deltalake(str(path), table, partition_by=list(STATE_CHANGE_EVENTS.partition_by), mode="append")
    return table


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    t = table.select(list(LATENCY_RULE_COLUMNS))
    return sorted(tuple(r.values()) for r in t.to_pylist())


def at(i: int) -> dt.datetime:
    return T0 + dt.timedelta(seconds=2 * i)


@pytest.fixture
def lake(tmp_path: Path) -> tuple[Path, CountingTable, LatestTable]:
    path = tmp_path / "state_change_events"
    write(path, [line(i) for i in range(100)] + [line(i, "c2") for i in range(10)])
    schema = STATE_CHANGE_EVENTS.to_arrow()
    return path, CountingTable(str(path), schema), LatestTable(str(path), schema)


def test_kept_lines_are_the_lakes_and_the_lake_is_read_once(lake: tuple[Path, CountingTable, LatestTable]) -> None:
    path, reader, fresh = lake
    kept = RecentLines(reader, KEEP)
    wanted = {e.value for e in KINDS[:3]}

    def from_lake(spans: list[tuple[str, dt.datetime, dt.datetime]]) -> list[tuple[Any, ...]]:
        t = fresh.read_spans(spans)
        return rows(t.filter(pa.compute.is_in(t["event"], pa.array(sorted(wanted)))))

    first = [("c1", at(90), at(99))]
    got = kept.read_spans(first)
    assert rows(got) == from_lake(first)
    assert got.num_rows == 7  # 10 lines, 3 of a kind the rules do not read
    assert reader.reads == 1
    # batches follow, handed over as the pairing gets them (its columns only); none reads the lake
    for batch in range(3):
        new = [line(100 + 10 * batch + k) for k in range(10)] + [line(50 + batch, "c2")]
        before = set(DeltaTable(str(path)).file_uris())
        table = write(path, new)
        if batch == 1:  # a batch the executors processed: its lines of those kinds read from its committed files
            files = sorted(set(DeltaTable(str(path)).file_uris()) - before)
            kept.observe(committed_rows(files, STATE_CHANGE_EVENTS, list(LATENCY_RULE_COLUMNS),
                                        where=pc.field("event").isin([e.value for e in LATENCY_RULE_EVENTS])))
        else:
            kept.observe(table.select([c for c in table.column_names if c not in ("message", "date")]))
        span = [("c1", at(95 + 10 * batch), at(110 + 10 * batch))]
        assert rows(kept.read_spans(span)) == from_lake(span)
    assert reader.reads == 1
    # two clusters: c2 is read once, then kept too
    both = [("c1", at(120), at(129)), ("c2", at(0), at(60))]
    assert rows(kept.read_spans(both)) == from_lake(both)
    assert reader.reads == 2


def test_older_than_kept_a_forgotten_cluster_or_too_many_read_the_lake(
        lake: tuple[Path, CountingTable, LatestTable], monkeypatch: pytest.MonkeyPatch) -> None:
    _, reader, fresh = lake
    kept = RecentLines(reader, KEEP)
    kept.read_spans([("c1", at(90), at(99))])  # the first read: from at(90) on (the newest line is at(99))
    assert reader.reads == 1
    older = [("c1", at(10), at(99))]
    t = fresh.read_spans(older)
    assert kept.read_spans(older).num_rows == t.filter(pa.compute.is_in(
        t["event"], pa.array([e.value for e in KINDS[:3]]))).num_rows == 67
    assert reader.reads == 2
    kept.forget(["c1"])  # a batch processed on the executors held lines of c1
    kept.read_spans([("c1", at(95), at(99))])
    assert reader.reads == 3
    kept.begin(7)
    kept.begin(8)
    kept.read_spans([("c1", at(95), at(99))])
    assert reader.reads == 3
    kept.begin(8)  # batch 8 again (a replay): what it handed over may be kept twice
    kept.read_spans([("c1", at(95), at(99))])
    assert reader.reads == 4
    monkeypatch.setattr(recent_module, "MAX_LINES_PER_CLUSTER", 5)
    crowded = RecentLines(reader, KEEP)
    assert crowded.read_spans([("c1", at(90), at(99))]).num_rows == 7
    crowded.read_spans([("c1", at(90), at(99))])
    assert reader.reads == 4 + 3  # the first read and its span's, then the span's alone: never kept
