"""sink.mode delta-spark: delta-spark's own writer under txnAppId/txnVersion, equal to the delta-rs sink's tables."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from jobs.run.jars import session_has_delta
from lake.sink import DeltaSink
from lake.spark_read import read_delta
from schemas.tables import DQ_RESULTS, RAW_LOGS
from tests.lake_helpers import lake_rows, lake_table, stage_and_commit

pytestmark = pytest.mark.spark

T0 = dt.datetime(2021, 3, 2, 8, 0, 0, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _needs_delta(spark) -> None:
    if not session_has_delta(spark):
        pytest.skip("delta-spark not fetched: python -m planewatch.kafka.artifacts fetch spark")


def _df(spark, start: int, n: int):
    rows = [
        ("c1" if i % 3 else "c:2 x", i % 4, "state-change", f"line {i}", 6, "/logs/state-change.log", i,
         T0 + dt.timedelta(seconds=i), 7, (T0 + dt.timedelta(days=i % 2)).date())
        for i in range(start, start + n)
    ]  # fmt: skip
    return spark.createDataFrame(rows, RAW_LOGS.ddl())


def _arrow(spark, start: int, n: int) -> pa.Table:
    return pa.table(_df(spark, start, n).toArrow())


def _rows(lake: Path, name: str) -> list[tuple]:
    return sorted(tuple(str(v) for v in r.values()) for r in lake_rows(lake, name))


def test_appends_exactly_once_and_equals_the_delta_rs_sink(spark, tmp_path: Path) -> None:
    spark_path, rs_path = str(tmp_path / "spark"), str(tmp_path / "rs")
    sink = DeltaSink(spark_path, RAW_LOGS, "q:raw_logs", mode="delta-spark")
    rs = DeltaSink(rs_path, RAW_LOGS, "q:raw_logs")
    for batch, (start, n) in enumerate(((0, 50), (50, 30))):
        got = stage_and_commit(sink, _arrow(spark, start, n), batch)
        assert (got.skipped, got.rows, got.mode) == (False, n, "delta-spark")
        assert got.files >= 1
        assert len(got.paths) == got.files
        assert got.rows_known
        stage_and_commit(rs, _arrow(spark, start, n), batch)
    replay = stage_and_commit(sink, _arrow(spark, 50, 30), 1)
    assert replay.skipped
    assert not replay.rows_known
    table = DeltaTable(spark_path)
    assert table.transaction_version("q:raw_logs") == 1
    assert table.version() == got.version
    assert _rows(tmp_path, "spark") == _rows(tmp_path, "rs")
    # Natively read back (format delta), equal to what delta-rs reads; partition pruning by `=` filters.
    native = read_delta(spark, spark_path, native=True)
    assert sorted(map(tuple, native.collect())) == sorted(map(tuple, read_delta(spark, rs_path).collect()))
    assert sorted(map(tuple, native.collect())) == sorted(map(tuple, read_delta(spark, spark_path).collect()))
    assert native.columns == RAW_LOGS.names
    one = [[("cluster", "=", "c1"), ("date", "=", "2021-03-02")]]
    pruned = read_delta(spark, spark_path, partitions_in=one, native=True)
    assert {(r.cluster, r.date.isoformat()) for r in pruned.collect()} == {("c1", "2021-03-02")}
    assert sorted(map(tuple, pruned.collect())) == sorted(map(tuple, read_delta(spark, rs_path, partitions_in=one)
                                                                 .collect()))


def test_delta_spark_ignores_a_replay_by_itself(spark, tmp_path: Path) -> None:
    """delta-spark's own txn check (not only the sink's): a write of a committed version adds nothing."""
    path = str(tmp_path / "t")
    stage_and_commit(DeltaSink(path, RAW_LOGS, "q:raw", mode="delta-spark"), _arrow(spark, 0, 10), 4)
    (
        _df(spark, 0, 10).write.format("delta").mode("append").option("txnAppId", "q:raw").option("txnVersion", 4)
        .partitionBy(*RAW_LOGS.partition_by).save(path)
    )  # fmt: skip
    assert lake_table(tmp_path, "t").num_rows == 10


def test_write_arrow_goes_through_delta_spark(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "dq")
    sink = DeltaSink(path, DQ_RESULTS, "q:dq", mode="delta-spark")
    row = {"table_name": "raw_logs", "batch_id": 0, "suite": "reconciliation", "expectation": "x", "success": True,
           "unexpected_count": 0, "element_count": 3, "run_ts": T0, "duration_ms": None}  # fmt: skip
    data = pa.Table.from_pylist([row], DQ_RESULTS.to_arrow())
    first = sink.write_arrow(data, 0)
    assert (first.skipped, first.rows, first.mode) == (False, 1, "delta-spark")
    assert sink.write_arrow(data, 0).skipped
    history = DeltaTable(path).history(1)[0]
    assert "Delta-Lake" in str(history.get("engineInfo"))  # written by delta-spark, not delta-rs
    assert lake_table(tmp_path, "dq").num_rows == 1


def test_a_table_with_deletion_vectors_is_read_natively(spark, tmp_path: Path) -> None:
    """The file list would still return a deleted row (its file stays, a deletion vector masks it)."""
    path = str(tmp_path / "dv")
    stage_and_commit(DeltaSink(path, RAW_LOGS, "q:raw", mode="delta-spark"), _arrow(spark, 0, 12), 0)
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE source_offset = 5")
    assert DeltaTable(path).protocol().min_reader_version > 1
    offsets = sorted(r.source_offset for r in read_delta(spark, path).collect())
    assert offsets == [i for i in range(12) if i != 5]
