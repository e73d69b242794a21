"""The exactly-once Delta sink: staged files, one delta-rs commit per batch, replays and orphans."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lake.merge import DeltaMerger
from lake.sink import PENDING_DIR, DeltaSink, cleanup_pending
from lake.spark_read import read_delta
from lake.tables import app_slug
from schemas.tables import ALERTS, RAW_LOGS
from tests.lake_helpers import lake_rows, lake_table, stage_and_commit

pytestmark = pytest.mark.spark

T0 = dt.datetime(2021, 3, 2, 8, 0, 0, tzinfo=dt.UTC)


def _raw_rows(n: int, start: int = 0, cluster: str = "c1") -> list[tuple]:
    return [
        (
            cluster if i % 3 else "c:2 x",  # a partition value Spark must escape in the directory name
            i % 4,
            "state-change",
            f"line {i}",
            6,
            "/logs/state-change.log",
            i,
            T0 + dt.timedelta(seconds=i),
            None,
            (T0 + dt.timedelta(days=i % 2)).date(),
        )
        for i in range(start, start + n)
    ]


def _arrow(rows):
    return pa.Table.from_pylist([dict(zip(RAW_LOGS.names, r, strict=True)) for r in rows], RAW_LOGS.to_arrow())


def test_append_is_idempotent_and_reads_back(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "raw_logs")
    sink = DeltaSink(path, RAW_LOGS, "q1:raw_logs")
    r0 = stage_and_commit(sink, _arrow(_raw_rows(50)), 0)
    r1 = stage_and_commit(sink, _arrow(_raw_rows(30, start=50)), 1)
    assert (r0.skipped, r0.rows, r1.skipped, r1.rows) == (False, 50, False, 30)
    replay = stage_and_commit(sink, _arrow(_raw_rows(30, start=50)), 1)
    assert replay.skipped
    table = DeltaTable(path)
    assert table.transaction_version("q1:raw_logs") == 1
    assert table.version() == r1.version
    got = lake_table(tmp_path, "raw_logs")
    assert got.num_rows == 80
    assert sorted(got.column("source_offset").to_pylist()) == list(range(80))
    assert set(got.column("cluster").to_pylist()) == {"c1", "c:2 x"}
    # Spark reads the snapshot's files back, partition columns included.
    back = read_delta(spark, path)
    assert back.count() == 80
    assert back.where("cluster = 'c:2 x'").count() == len([i for i in range(80) if i % 3 == 0])
    # Footer stats make delta-rs skip files: a filter on source_offset reads the right rows.
    filtered = table.to_pyarrow_table(filters=[("source_offset", ">=", 70)])
    assert filtered.num_rows == 10
    assert not (Path(path) / PENDING_DIR).exists() or not any((Path(path) / PENDING_DIR).iterdir())


def test_orphans_of_an_uncommitted_batch_are_removed(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "raw_logs")
    sink = DeltaSink(path, RAW_LOGS, "q2:raw_logs")
    stage_and_commit(sink, _arrow(_raw_rows(10)), 0)
    # Simulate a crash after the files of batch 1 were moved into the table but before the commit.
    slug = app_slug("q2:raw_logs")
    pending = Path(path) / PENDING_DIR / f"{slug}-b{1:020d}-deadbeef"
    pending.mkdir(parents=True)
    orphan = Path(path) / "cluster=c1" / "date=2021-03-02" / f"{slug}-b1-part-orphan.parquet"
    orphan.write_bytes(b"PAR1 not really")
    (pending / "_manifest.json").write_text('{"files": ["cluster=c1/date=2021-03-02/' + orphan.name + '"]}')
    # A committed batch's leftover directory goes too, without touching its (referenced) files.
    done = Path(path) / PENDING_DIR / f"{slug}-b{0:020d}-cafebabe"
    done.mkdir()
    before = set(DeltaTable(path).file_uris())
    assert cleanup_pending(path, "q2:raw_logs", committed=0) == 2
    assert not orphan.exists()
    assert not pending.exists()
    assert not done.exists()
    assert set(DeltaTable(path).file_uris()) == before
    assert all(os.path.exists(u.removeprefix("file://")) for u in before)
    # The retried batch 1 then commits normally.
    assert stage_and_commit(sink, _arrow(_raw_rows(5, start=10)), 1).rows == 5
    assert lake_table(tmp_path, "raw_logs").num_rows == 15


def test_empty_batch_commits_nothing(spark, tmp_path: Path) -> None:
    path = str(tmp_path / "raw_logs")
    sink = DeltaSink(path, RAW_LOGS, "q3:raw_logs")
    res = stage_and_commit(sink, _arrow([]), 0)
    assert (res.skipped, res.files, res.rows) == (False, 0, 0)
    assert DeltaTable(path).version() == 0  # just the empty table's creation
    assert read_delta(spark, path).count() == 0
    assert read_delta(spark, path).columns == RAW_LOGS.names


def _alert(alert_id: str, status: str, value: float) -> dict:
    return {
        "alert_id": alert_id,
        "type": "DELAYED_LEADER_AND_ISR",
        "severity": "critical",
        "status": status,
        "cluster": "c1",
        "broker_id": 2,
        "listener": None,
        "started_at": T0,
        "last_seen_at": T0,
        "resolved_at": None,
        "summary": "s",
        "evidence": "{}",
        "value": value,
        "threshold": 5000.0,
        "updated_at": T0,
    }


def test_merge_updates_in_place_exactly_once(tmp_path: Path) -> None:
    path = str(tmp_path / "alerts")
    merger = DeltaMerger(path, ALERTS, "detect:alerts", keys=["alert_id"])
    schema = ALERTS.to_arrow()
    merger.write_arrow(pa.Table.from_pylist([_alert("a", "open", 1.0), _alert("b", "open", 2.0)], schema), 0)
    batch1 = pa.Table.from_pylist([_alert("a", "open", 5.0), _alert("a", "resolved", 7.0)], schema)
    assert merger.write_arrow(batch1, 1).rows == 1  # the last row per key wins
    assert merger.write_arrow(batch1, 1).skipped
    rows = {r["alert_id"]: r for r in lake_rows(tmp_path, "alerts")}
    assert set(rows) == {"a", "b"}
    assert (rows["a"]["status"], rows["a"]["value"], rows["b"]["value"]) == ("resolved", 7.0, 2.0)
    assert DeltaTable(path).transaction_version("detect:alerts") == 1


def test_a_batch_inserts_its_new_rows_and_merges_the_others_each_exactly_once(tmp_path: Path) -> None:
    """A batch's rows known to be new are appended (no file read), the rest merged; a replay of the batch (crashed
    after one commit or both) writes neither again."""
    path = str(tmp_path / "alerts")
    merger = DeltaMerger(path, ALERTS, "detect:alerts", keys=["alert_id"])
    schema = ALERTS.to_arrow()
    merger.insert_arrow(pa.Table.from_pylist([_alert("a", "open", 1.0), _alert("b", "open", 2.0)], schema), 0)
    new = pa.Table.from_pylist([_alert("c", "open", 3.0)], schema)
    update = pa.Table.from_pylist([_alert("a", "resolved", 7.0)], schema)
    assert merger.insert_arrow(new, 1).rows == 1
    assert merger.insert_arrow(new, 1).skipped  # crashed after the append: the replay appends nothing
    assert merger.write_arrow(update, 1).rows == 1
    assert merger.insert_arrow(new, 1).skipped
    assert merger.write_arrow(update, 1).skipped
    rows = {r["alert_id"]: r for r in lake_rows(tmp_path, "alerts")}
    assert len(lake_rows(tmp_path, "alerts")) == 3
    assert (rows["a"]["status"], rows["b"]["value"], rows["c"]["value"]) == ("resolved", 2.0, 3.0)
    assert DeltaTable(path).transaction_version("detect:alerts+insert") == 1
