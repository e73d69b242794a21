"""The lake's table maintenance (lake.maintenance, run by jobs.run.maintenance) on real Delta tables: retention by
partition and by age, compaction of small files, vacuum, and exactly-once appends that go on while it runs."""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, WriterProperties, write_deltalake

from jobs.run.maintenance import Maintainer
from jobs.run.settings import MaintenanceSettings
from lake import maintenance
from lake.maintenance import cleanup_log, compactable_partitions, expired_predicate, maintain_table
from schemas.tables import ALERTS, INCIDENTS, METRIC_SAMPLES, Table
from tests.api.lake import alert, samples
from tests.lake_helpers import lake_rows, pipeline_settings
from tests.polling import wait_until

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)
TODAY = NOW.date()
# every file is small; vacuum deletes what was removed at once
CFG = MaintenanceSettings(compact_min_files=4, target_file_mb=32, vacuum_retention_h=0,
                          retention_days={"metric_samples": 30, "alerts": 365})
# Appends racing the maintenance: enough commits to overlap several passes, few enough for a test.
RACING_APPENDS = 60


def _samples(day: dt.date, n: int, offset: int) -> pa.Table:
    ts = dt.datetime.combine(day, dt.time(8), tzinfo=dt.UTC)
    rows = samples(1, "RequestQueueSize", ts, n)
    return pa.Table.from_pylist([{**r, "cluster": "c1", "source_offset": offset + i, "date": day}
                                 for i, r in enumerate(rows)], schema=METRIC_SAMPLES.to_arrow())


def _append(path: str, table: pa.Table, app: str | None = None, version: int | None = None) -> None:
    txn = None if app is None else CommitProperties(app_transactions=[Transaction(app_id=app, version=version or 0)])
    write_deltalake(path, table, mode="append", partition_by=list(METRIC_SAMPLES.partition_by), commit_properties=txn)


def _data_files(path: str) -> set[Path]:
    return {p for p in Path(path).rglob("*.parquet") if "_delta_log" not in p.parts}


def test_the_partitions_to_compact_are_those_with_enough_small_files() -> None:
    assert compactable_partitions(pa.table({"size_bytes": [10, 10, 10]}), (), 3, 50) == [{}]
    adds = pa.table({"size_bytes": [10, 10, 10, 100, 10, 10],
                     "partition.cluster": ["a", "a", "a", "a", "b", "b"],
                     "partition.date": ["d1", "d1", "d1", "d1", "d1", "d1"]})
    assert compactable_partitions(adds, ("cluster", "date"), 3, 50) == [{"cluster": "a", "date": "d1"}]
    assert compactable_partitions(adds, ("cluster", "date"), 2, 50) == [{"cluster": "a", "date": "d1"},
                                                                       {"cluster": "b", "date": "d1"}]
    assert compactable_partitions(adds.slice(0, 0), ("cluster", "date"), 1, 50) == []


def test_the_expired_rows_are_named_by_partition_or_by_age() -> None:
    assert expired_predicate(METRIC_SAMPLES, 30, TODAY) == "date < '2026-10-29'"
    assert expired_predicate(ALERTS, 365, TODAY) == "resolved_at < '2025-11-28T00:00:00Z'"
    assert expired_predicate(INCIDENTS, 365, TODAY) == "resolved_at < '2025-11-28T00:00:00Z'"
    assert expired_predicate(Table("other", "gold", ()), 7, TODAY) is None


def test_a_pass_deletes_old_partitions_compacts_the_rest_and_vacuums(tmp_path: Path) -> None:
    path = str(tmp_path / "metric_samples")
    old = TODAY - dt.timedelta(days=40)
    _append(path, _samples(old, 5, 0))
    for i in range(10):
        _append(path, _samples(TODAY, 3, 100 + 3 * i))
    before = _data_files(path)

    report = maintain_table(path, METRIC_SAMPLES, CFG, NOW)

    table = DeltaTable(path)
    live = {Path(u.removeprefix("file://")) for u in table.file_uris()}
    assert len(live) == 1  # today's 10 small files are one now
    assert _data_files(path) == live  # the old partition and the compacted files are gone from disk
    assert before.isdisjoint(live)
    rows = lake_rows(tmp_path, "metric_samples")
    assert sorted(r["source_offset"] for r in rows) == list(range(100, 130))
    assert {r["date"] for r in rows} == {TODAY}
    assert (report.compacted_partitions, report.files_removed, report.files_added) == (1, 10, 1)
    assert report.deleted_rows == 5
    assert report.vacuumed_files >= 11
    (compacted,) = live
    assert pq.ParquetFile(compacted).metadata.row_group(0).column(0).compression == "ZSTD"


def test_a_compacted_file_is_written_in_row_groups_a_time_range_can_skip(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(maintenance, "COMPACTED_WRITER", WriterProperties(max_row_group_size=4, compression="ZSTD"))
    path = str(tmp_path / "metric_samples")
    for i in range(5):
        _append(path, _samples(TODAY, 3, 3 * i))
    maintain_table(path, METRIC_SAMPLES, CFG, NOW)
    (compacted,) = [u.removeprefix("file://") for u in DeltaTable(path).file_uris()]
    meta = pq.ParquetFile(compacted).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [4, 4, 4, 3]


def test_a_table_without_partitions_is_compacted_whole(tmp_path: Path) -> None:
    path = str(tmp_path / "alerts")
    for i in range(5):
        write_deltalake(path, pa.Table.from_pylist([alert(i)], schema=ALERTS.to_arrow()), mode="append")
    report = maintain_table(path, ALERTS, CFG, NOW)
    assert (report.compacted_partitions, report.files_removed, report.files_added) == (1, 5, 1)
    assert sorted(r["alert_id"] for r in lake_rows(tmp_path, "alerts")) == [f"a{i:05d}" for i in range(5)]


def test_a_partition_with_few_small_files_is_left_alone(tmp_path: Path) -> None:
    path = str(tmp_path / "metric_samples")
    for i in range(3):
        _append(path, _samples(TODAY, 2, 2 * i))
    report = maintain_table(path, METRIC_SAMPLES, CFG, NOW)
    assert report.compacted_partitions == 0
    assert len(DeltaTable(path).file_uris()) == 3


def test_the_log_behind_the_newest_checkpoint_is_deleted_and_the_table_reads_the_same(tmp_path: Path) -> None:
    path = str(tmp_path / "metric_samples")
    commits = 105  # delta-rs writes a checkpoint at version 99
    for batch in range(commits):
        _append(path, _samples(TODAY, 1, batch), "writer", batch)
    log_dir = Path(path) / "_delta_log"
    assert cleanup_log(path, 1.0, NOW.replace(year=2000)) == 0  # nothing is older than the retention yet
    deleted = cleanup_log(path, 0.0, dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1))
    assert deleted == 99  # the commits 0..98 before the checkpoint of version 99
    assert sorted(p.name for p in log_dir.glob("*.json"))[0] == f"{99:020d}.json"
    table = DeltaTable(path)
    assert table.version() == commits - 1
    assert table.transaction_version("writer") == commits - 1
    assert len(lake_rows(tmp_path, "metric_samples")) == commits


def test_resolved_alerts_past_their_retention_are_deleted_open_ones_kept(tmp_path: Path) -> None:
    path = str(tmp_path / "alerts")
    long_ago = NOW - dt.timedelta(days=400)
    rows = [alert(1, started=long_ago, status="resolved", resolved_at=long_ago + dt.timedelta(hours=1)),
            alert(2, started=long_ago, status="open"),
            alert(3, started=NOW - dt.timedelta(days=2), status="resolved", resolved_at=NOW - dt.timedelta(days=1))]
    write_deltalake(path, pa.Table.from_pylist(rows, schema=ALERTS.to_arrow()), mode="append")
    maintain_table(path, ALERTS, CFG, NOW)
    assert sorted(r["alert_id"] for r in lake_rows(tmp_path, "alerts")) == ["a00002", "a00003"]


def test_exactly_once_appends_go_on_while_maintenance_runs(tmp_path: Path) -> None:
    """A writer appends under its app transaction while passes compact and vacuum the same partition: every
    append lands once, the transaction version is the writer's last, and no commit of the writer fails."""
    path = str(tmp_path / "metric_samples")
    _append(path, _samples(TODAY, 1, 0), "writer", 0)
    failures: list[BaseException] = []

    def writer() -> None:
        try:
            for batch in range(1, RACING_APPENDS + 1):
                _append(path, _samples(TODAY, 2, 2 * batch), "writer", batch)
        except BaseException as exc:  # reported by the test
            failures.append(exc)

    thread = threading.Thread(target=writer, name="racing-writer")
    thread.start()
    passes = 0
    try:
        while thread.is_alive() or passes == 0:
            maintain_table(path, METRIC_SAMPLES, CFG, NOW)
            passes += 1
    finally:
        thread.join(60)
    assert failures == []
    maintain_table(path, METRIC_SAMPLES, CFG, NOW)
    table = DeltaTable(path)
    assert table.transaction_version("writer") == RACING_APPENDS
    offsets = sorted(r["source_offset"] for r in lake_rows(tmp_path, "metric_samples"))
    assert offsets == [0, *range(2, 2 * RACING_APPENDS + 2)]
    assert len(table.file_uris()) < RACING_APPENDS  # compacted as it went
    assert passes >= 2


def test_the_maintainer_passes_over_the_lake_and_survives_a_broken_table(tmp_path: Path) -> None:
    settings = dataclasses.replace(pipeline_settings(tmp_path, once=False), maintenance=CFG)
    lake = Path(settings.lake)
    for i in range(5):
        _append(str(lake / "metric_samples"), _samples(TODAY, 1, i))
    broken = lake / "alerts" / "_delta_log"
    broken.mkdir(parents=True)
    (broken / "00000000000000000000.json").write_text("not a delta log\n")
    maintainer = Maintainer(settings, clock=lambda: NOW)
    reports: Any = maintainer.run_pass()
    assert reports["metric_samples"].compacted_partitions == 1
    assert reports["alerts"].errors  # logged, tried again next pass; the other tables were maintained
    assert maintainer.failures["alerts"] == 1
    assert len(DeltaTable(str(lake / "metric_samples")).file_uris()) == 1


def test_the_maintainer_thread_passes_until_stopped(tmp_path: Path) -> None:
    cfg = dataclasses.replace(CFG, interval_s=0.05)
    settings = dataclasses.replace(pipeline_settings(tmp_path, once=False), maintenance=cfg)
    for i in range(5):
        _append(str(Path(settings.lake) / "metric_samples"), _samples(TODAY, 1, i))
    maintainer = Maintainer(settings, clock=lambda: NOW).start()
    try:
        wait_until(lambda: maintainer.passes >= 2, 30, "two maintenance passes")
    finally:
        maintainer.stop(30)
    assert not maintainer._thread.is_alive()
    assert len(DeltaTable(str(Path(settings.lake) / "metric_samples")).file_uris()) == 1
