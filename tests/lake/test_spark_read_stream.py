"""planewatch_delta: a Delta table's appends as a stream (offset = table version), bounded per micro-batch."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from jobs.io.settings import MaintenanceSettings
from lake.log import STALE_OFFSET_S, ReaderPosition, latest_version, reader_positions
from lake.maintenance import maintain_table
from lake.sink import DeltaSink
from lake.spark_read import DeltaStreamSource
from schemas.tables import RAW_LOGS
from tests.lake_helpers import stage_and_commit

pytestmark = [pytest.mark.spark, pytest.mark.streaming]

T0 = dt.datetime(2021, 3, 2, 8, 0, tzinfo=dt.UTC)


def _rows(start: int, n: int) -> list[tuple]:
    return [
        ("c1", 1, "state-change", f"l{i}", 2, "f", i, T0, 0, (T0 + dt.timedelta(days=i % 2)).date())
        for i in range(start, start + n)
    ]


def _collecting_stream(spark, path: str, checkpoint: Path, seen: list[tuple[int, int]], got: list) -> None:
    """Run planewatch_delta over `path` to its end (availableNow, 2 files a batch), collecting batches' rows."""

    def collect(df, batch_id: int) -> None:
        rows = df.collect()
        seen.append((batch_id, len(rows)))
        got.extend(rows)

    q = (
        spark.readStream.format("planewatch_delta")
        .option("maxFilesPerTrigger", 2)
        .load(path)
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        q.awaitTermination(300)
    finally:
        q.stop()


def test_stream_reads_each_commit_once_with_partition_values(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "raw_logs")
    sink = DeltaSink(path, RAW_LOGS, "src:raw")
    for b in range(3):
        stage_and_commit(sink, pa.table(spark.createDataFrame(_rows(b * 10, 10), RAW_LOGS.ddl()).toArrow()), b)
    spark.dataSource.register(DeltaStreamSource)
    seen: list[tuple[int, int]] = []
    got: list = []
    _collecting_stream(spark, path, tmp_path / "ck", seen, got)
    # the first batch reads the snapshot
    assert [n for _, n in seen if n] == [30]
    assert sorted(r["source_offset"] for r in got) == list(range(30))
    assert {(r["source_offset"] % 2, r["date"].day) for r in got} == {(0, 2), (1, 3)}
    assert {r["cluster"] for r in got} == {"c1"}
    # New commits after a restart: only they are read, a commit (2 files: 2 dates) per micro-batch.
    for b in range(3, 6):
        stage_and_commit(sink, pa.table(spark.createDataFrame(_rows(b * 10, 10), RAW_LOGS.ddl()).toArrow()), b)
    seen.clear()
    got.clear()
    _collecting_stream(spark, path, tmp_path / "ck", seen, got)
    assert sorted(r["source_offset"] for r in got) == list(range(30, 60))
    assert [n for _, n in seen if n] == [10, 10, 10]


def test_the_latest_version_is_the_highest_commit_in_the_log(tmp_path: Path) -> None:
    """What the stream source asks at every trigger, by listing the log: the same as delta-rs's version, also after
    a checkpoint and a cleanup of the commits behind it, and -1 for no table."""
    path = str(tmp_path / "t")
    assert latest_version(path) == -1
    for i in range(4):
        write_deltalake(path, pa.table({"n": [i]}), mode="append")
    assert latest_version(path) == DeltaTable(path).version() == 3
    DeltaTable(path).create_checkpoint()
    for old in (tmp_path / "t" / "_delta_log").glob("0000000000000000000[0-2].json"):
        old.unlink()
    write_deltalake(path, pa.table({"n": [9]}), mode="append")
    assert latest_version(path) == DeltaTable(path).version() == 4
    assert latest_version(f"file://{path}") == 4


def _append_commits(path: str, first: int, commits: int) -> None:
    """`commits` appends of one raw_logs row each (source_offset = the commit's number from `first`)."""
    for i in range(first, first + commits):
        row = dict(zip(RAW_LOGS.names, _rows(i, 1)[0], strict=True))
        write_deltalake(path, pa.Table.from_pylist([row], schema=RAW_LOGS.to_arrow()), mode="append",
                        partition_by=list(RAW_LOGS.partition_by))


def test_log_cleanup_keeps_what_a_stopped_stream_has_not_read_and_a_new_stream_reads_the_snapshot(
        spark, tmp_path: Path) -> None:
    """A stream stopped at version 49 while 55 more commits land (a Delta checkpoint at 99) keeps commits 50.. through
    the maintenance pass, and reads them when it restarts. A new stream after the log was cleaned and the files
    compacted and vacuumed reads the snapshot: every row once."""
    path = str(tmp_path / "raw_logs")
    checkpoints = tmp_path / "ck"
    spark.dataSource.register(DeltaStreamSource)
    _append_commits(path, 0, 50)
    seen: list[tuple[int, int]] = []
    got: list = []
    _collecting_stream(spark, path, checkpoints / "stopped", seen, got)
    assert sorted(r["source_offset"] for r in got) == list(range(50))
    _append_commits(path, 50, 55)  # delta-rs writes a checkpoint at version 99
    log_dir = Path(path) / "_delta_log"
    readers = reader_positions(str(checkpoints))
    assert readers == {os.path.realpath(path): ReaderPosition(49, snapshot=False)}
    after_all = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    keep_files = MaintenanceSettings(compact_min_files=4, log_retention_h=0, vacuum_retention_h=6, retention_days={})
    report = maintain_table(path, RAW_LOGS, keep_files, after_all, readers)
    assert report.log_files_deleted == 50  # commits 0..49: read; 50..98 stay for the stopped stream
    assert not (log_dir / f"{49:020d}.json").exists()
    assert (log_dir / f"{50:020d}.json").exists()
    assert report.compacted_partitions == 2  # both dates
    got.clear()
    _collecting_stream(spark, path, checkpoints / "stopped", seen, got)
    assert sorted(r["source_offset"] for r in got) == list(range(50, 105))
    # the stream has read everything: the rest of the log behind the checkpoint goes, compacted-away files too
    vacuum_all = dataclasses.replace(keep_files, vacuum_retention_h=0)
    report = maintain_table(path, RAW_LOGS, vacuum_all, after_all, reader_positions(str(checkpoints)))
    assert report.log_files_deleted == 49
    assert report.vacuumed_files == 105
    got.clear()
    _collecting_stream(spark, path, checkpoints / "new", seen, got)
    assert sorted(r["source_offset"] for r in got) == list(range(105))


def test_reader_positions_read_the_two_newest_offsets_of_each_query(tmp_path: Path) -> None:
    def offsets(query: str, batch: int, *sources: str) -> None:
        d = tmp_path / query / "offsets"
        d.mkdir(parents=True, exist_ok=True)
        (d / str(batch)).write_text("\n".join(["v1", '{"batchWatermarkMs":0}', *sources]))

    offsets("pairing", 7, '{"version": 3, "table": "/lake/a"}', '{"version": 40, "table": "/lake/b"}')
    offsets("pairing", 8, '{"version": 5, "table": "/lake/a"}', '{"version": 41, "table": "/lake/b"}')
    offsets("pairing", 9, '{"version": 6, "table": "/lake/a"}', '{"version": 42, "table": "/lake/b"}')
    offsets("ingest", 2, '{"files": {}}', "-", '{"version": {"0": 12}}')  # a Kafka topic named "version"
    offsets("rollups", 1, '{"version": 12, "table": "/lake/b"}')
    (tmp_path / "stray.txt").write_text("not a query")
    want = {"/lake/a": ReaderPosition(5, False), "/lake/b": ReaderPosition(12, False)}
    assert reader_positions(str(tmp_path)) == want
    assert reader_positions(str(tmp_path / "none")) == {}
    assert reader_positions(f"file://{tmp_path}") == want
    offsets("fresh", 0, '{"version": 30, "table": "/lake/c"}')  # its first batch, not committed: a snapshot
    assert reader_positions(str(tmp_path))["/lake/c"] == ReaderPosition(30, snapshot=True)
    (tmp_path / "fresh" / "commits").mkdir()
    (tmp_path / "fresh" / "commits" / "0").write_text("v1\n{}")
    assert reader_positions(str(tmp_path))["/lake/c"] == ReaderPosition(30, snapshot=False)
    assert reader_positions("s3://bucket/checkpoints") is None
    offsets("torn", 1, '{"version": 3, "tab')
    assert reader_positions(str(tmp_path)) is None
    (tmp_path / "torn" / "offsets" / "1").unlink()
    offsets("old", 4, '{"version": 2}')  # a checkpoint written before offsets named their table
    assert reader_positions(str(tmp_path)) is None
    # ... and no running query writes it any more (a query a later version removed): ignored
    assert reader_positions(str(tmp_path), now=time.time() + STALE_OFFSET_S + 1) is not None
