"""planewatch_delta: a Delta table's appends as a stream (offset = table version), bounded per micro-batch."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from jobs.io.delta_read import DeltaStreamSource, latest_version
from jobs.io.delta_sink import DeltaSink
from schemas.tables import RAW_LOGS

pytestmark = [pytest.mark.spark, pytest.mark.streaming]

T0 = dt.datetime(2021, 3, 2, 8, 0, tzinfo=dt.UTC)


def _rows(start: int, n: int) -> list[tuple]:
    return [
        ("c1", 1, "state-change", f"l{i}", 2, "f", i, T0, 0, (T0 + dt.timedelta(days=i % 2)).date())
        for i in range(start, start + n)
    ]


def test_stream_reads_each_commit_once_with_partition_values(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "raw_logs")
    sink = DeltaSink(path, RAW_LOGS, "src:raw")
    for b in range(3):
        sink.write(spark.createDataFrame(_rows(b * 10, 10), RAW_LOGS.ddl()), b)
    spark.dataSource.register(DeltaStreamSource)
    seen: list[tuple[int, int]] = []
    got: list = []

    def collect(df, batch_id: int) -> None:
        rows = df.collect()
        seen.append((batch_id, len(rows)))
        got.extend(rows)

    def run() -> None:
        q = (
            spark.readStream.format("planewatch_delta")
            .option("maxFilesPerTrigger", 2)
            .load(path)
            .writeStream.foreachBatch(collect)
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        try:
            q.awaitTermination(300)
        finally:
            q.stop()

    run()
    assert sorted(r["source_offset"] for r in got) == list(range(30))
    assert len([s for s in seen if s[1]]) >= 3  # each commit has 2 files (2 dates): one commit per micro-batch
    assert {(r["source_offset"] % 2, r["date"].day) for r in got} == {(0, 2), (1, 3)}
    assert {r["cluster"] for r in got} == {"c1"}
    # A new commit after a restart: only it is read.
    sink.write(spark.createDataFrame(_rows(30, 5), RAW_LOGS.ddl()), 3)
    got.clear()
    run()
    assert sorted(r["source_offset"] for r in got) == list(range(30, 35))


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
