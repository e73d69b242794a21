"""jobs.ingest.staging.write_batch: a batch's tables opened at once, staged, committed at once, exactly once each."""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa
import pytest

from jobs.ingest.staging import FilesOutcome, PartitionFiles, each_table, write_batch
from lake.sink import DeltaSink, SinkResult
from schemas.tables import QUARANTINE
from tests.lake_helpers import lake_rows, stage_and_commit

T0 = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
# How long a step waits for the other tables' steps to reach the same point: run at once, they meet at once; one
# after the other, the first waits alone until this timeout breaks the meeting.
MEET_S = 10.0
# Three tables of the quarantine's columns, as a batch has bronze, a silver table and the quarantine.
TABLES = [dataclasses.replace(QUARANTINE, name=f"t{i}") for i in range(3)]


def _rows(n: int, cluster: str) -> pa.Table:
    rows = [dict.fromkeys(QUARANTINE.names) for _ in range(n)]
    for i, row in enumerate(rows):
        row.update({"cluster": cluster, "stage": "parse", "reason": "no pattern", "record": f"line {i}",
                    "source": "f", "source_offset": i, "ingest_ts": T0, "date": T0.date()})
    return pa.Table.from_pylist(rows, schema=QUARANTINE.to_arrow())


def _sinks(tmp_path: Path, mode: str = "delta-rs") -> list[DeltaSink]:
    return [DeltaSink(str(tmp_path / t.name), t, f"q:{t.name}", mode) for t in TABLES]


def _stage(pending: Mapping[str, str]) -> FilesOutcome:
    """Five rows of each of two clusters into every open table (two partitions: two files each)."""
    outcome = FilesOutcome()
    for table in TABLES:
        if table.name in pending:
            files = PartitionFiles(table, pending[table.name])
            files.write(pa.concat_tables([_rows(5, "c1"), _rows(5, "c2")]))
            outcome.files[table.name] = [path for path, _ in files.close()]
    return outcome


def _meeting(sinks: list[DeltaSink], events: list[str]) -> None:
    """Each sink's open and commit wait until every sink's has begun (a barrier each)."""
    opened, committed = threading.Barrier(len(sinks), timeout=MEET_S), threading.Barrier(len(sinks), timeout=MEET_S)
    for sink in sinks:
        def open_pending(batch_id: int, inner: DeltaSink = sink) -> str | None:
            directory = DeltaSink.open_pending(inner, batch_id)
            opened.wait()
            events.append("table opened")
            return directory

        def commit_pending(pending: str, batch_id: int, files: list[str] | None = None,
                           inner: DeltaSink = sink) -> SinkResult:
            committed.wait()
            return DeltaSink.commit_pending(inner, pending, batch_id, files)

        sink.open_pending = open_pending  # type: ignore[method-assign]
        sink.commit_pending = commit_pending  # type: ignore[method-assign]


def test_a_batch_opens_and_commits_its_tables_at_once_and_each_exactly_once(tmp_path: Path) -> None:
    sinks = _sinks(tmp_path)
    events: list[str] = []
    _meeting(sinks, events)

    def run(pending: Mapping[str, str]) -> FilesOutcome:
        events.append("run")
        return _stage(pending)

    _outcome, results = write_batch(run, 0, sinks, lap=events.append)
    assert events == ["table opened"] * len(TABLES) + ["open", "run", "stage", "commit"]
    assert {name: (r.skipped, r.rows, r.files) for name, r in results.items()} == {
        t.name: (False, 10, 2) for t in TABLES}
    assert all(len(lake_rows(tmp_path, t.name)) == 10 for t in TABLES)
    again, replayed = write_batch(run, 0, sinks)  # a replay of the batch: every table has it
    assert all(r.skipped for r in replayed.values())
    assert again.files == {}
    assert all(len(lake_rows(tmp_path, t.name)) == 10 for t in TABLES)


def test_a_replay_after_a_crash_between_commits_stages_only_the_tables_without_the_batch(tmp_path: Path) -> None:
    sinks = _sinks(tmp_path)
    stage_and_commit(sinks[1], pa.concat_tables([_rows(5, "c1"), _rows(5, "c2")]), 0)  # t1 committed batch 0
    seen: list[set[str]] = []

    def run(pending: Mapping[str, str]) -> FilesOutcome:
        seen.append(set(pending))
        return _stage(pending)

    _, results = write_batch(run, 0, sinks)
    assert seen == [{"t0", "t2"}]
    assert [results[t.name].skipped for t in TABLES] == [False, True, False]
    assert all(len(lake_rows(tmp_path, t.name)) == 10 for t in TABLES)


def test_a_failed_commit_of_one_table_is_raised_after_the_others_committed(tmp_path: Path) -> None:
    sinks = _sinks(tmp_path)

    def refuse(pending: str, batch_id: int, files: list[str] | None = None) -> SinkResult:
        raise OSError("the object store refused the commit")

    sinks[0].commit_pending = refuse  # type: ignore[method-assign]
    with pytest.raises(OSError, match="refused"):
        write_batch(_stage, 0, sinks)
    assert [len(lake_rows(tmp_path, t.name)) for t in TABLES[1:]] == [10, 10]
    _, results = write_batch(_stage, 0, _sinks(tmp_path))  # the batch again, as Spark replays it
    assert [results[t.name].skipped for t in TABLES] == [False, True, True]
    assert all(len(lake_rows(tmp_path, t.name)) == 10 for t in TABLES)


def test_delta_spark_sinks_take_their_turns_on_the_calling_thread(tmp_path: Path) -> None:
    threads = each_table(_sinks(tmp_path, "delta-spark"), lambda sink: threading.current_thread())
    assert threads == [threading.main_thread()] * len(TABLES)
    rs = each_table(_sinks(tmp_path), lambda sink: threading.current_thread())
    assert threading.main_thread() not in rs
