"""Snapshots refreshed incrementally on appends equal a full reload; removes fall back to the full reload."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import write_deltalake

import api.store
from api.snapshots import read_added_files
from api.store import LakeStore
from tests.api.lake import ALERTS, CONTROL_REQUEST_LATENCY, T0, alert, control_request, write
from tests.polling import wait_until


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the files read on the incremental path (the real reader runs)."""
    calls: list[int] = []

    def counting(root: str, actions, table: str):
        calls.append(actions.num_rows)
        return read_added_files(root, actions, table)

    monkeypatch.setattr(api.store, "read_added_files", counting)
    return calls


def _full(lake: Path, name: str) -> pa.Table:
    fresh = LakeStore(lake, refresh_interval_s=0, background_reload=False)
    try:
        return fresh.snapshot(name)
    finally:
        fresh.close()


def test_appended_alerts_are_merged_incrementally(tmp_path: Path, spy: list[int]) -> None:
    lake = tmp_path / "lake"
    write(lake, ALERTS, [alert(i) for i in range(50)])
    store = LakeStore(lake, refresh_interval_s=0, background_reload=False)
    try:
        assert store.snapshot(ALERTS.name).num_rows == 50
        assert spy == []
        # new alerts, and updates of existing ones (appended rows with a newer updated_at)
        write(lake, ALERTS, [alert(60), alert(3, status="resolved", updated_at=T0 + timedelta(hours=9))])
        write(lake, ALERTS, [alert(61, started=T0 - timedelta(days=1))])
        snap = store.snapshot(ALERTS.name)
        assert spy == [2]  # both commits' files, read once (the snapshot moved straight to the newest version)
        assert snap.equals(_full(lake, ALERTS.name))
        assert snap.num_rows == 52
        row = snap.filter(pc.equal(snap["alert_id"], "a00003")).to_pylist()[0]
        assert row["status"] == "resolved"
        # an overwrite removes files: full reload, still equal
        write(lake, ALERTS, [alert(i) for i in range(5)], mode="overwrite")
        snap = store.snapshot(ALERTS.name)
        assert spy == [2]
        assert snap.equals(_full(lake, ALERTS.name))
        assert snap.num_rows == 5
    finally:
        store.close()


def test_partitioned_control_requests_keep_their_partition_columns(tmp_path: Path, spy: list[int]) -> None:
    lake = tmp_path / "lake"
    write(lake, CONTROL_REQUEST_LATENCY, [control_request(i, i % 3, 10.0 * i) for i in range(10)])
    store = LakeStore(lake, refresh_interval_s=0, background_reload=False)
    try:
        store.snapshot(CONTROL_REQUEST_LATENCY.name)
        assert spy == [1]  # a windowed snapshot's first load reads the files of its window through the same reader
        write(lake, CONTROL_REQUEST_LATENCY, [control_request(20, 1, 5.0, cluster="c2")])
        snap = store.snapshot(CONTROL_REQUEST_LATENCY.name)
        assert spy == [1, 1]
        assert snap.equals(_full(lake, CONTROL_REQUEST_LATENCY.name))
        top = snap.slice(0, 1).to_pylist()[0]
        assert (top["cluster"], top["correlation_id"], str(top["date"])) == ("c2", 20, "2026-11-20")
    finally:
        store.close()


def test_appended_files_with_arrow_view_types_are_merged(tmp_path: Path, spy: list[int]) -> None:
    """The pipeline's delta-rs MERGE writes string columns as string_view; Arrow cannot sort those, so the
    incremental reload must bring them back to the contract's types (it failed with ArrowTypeError before)."""
    lake = tmp_path / "lake"
    write(lake, ALERTS, [alert(i) for i in range(3)])
    store = LakeStore(lake, refresh_interval_s=0, background_reload=False)
    try:
        assert store.snapshot(ALERTS.name).num_rows == 3
        schema = ALERTS.to_arrow()
        rows = [{c: r.get(c) for c in schema.names} for r in (alert(7), alert(1, status="resolved"))]
        views = pa.Table.from_pylist(rows, schema=schema)
        for i, f in enumerate(schema):
            if pa.types.is_string(f.type):
                views = views.set_column(i, pa.field(f.name, pa.string_view()), views.column(i).cast(pa.string_view()))
        write_deltalake(str(lake / ALERTS.name), views, mode="append")
        snap = store.snapshot(ALERTS.name)
        assert spy == [1]
        assert snap.num_rows == 4
        assert snap.schema.field("summary").type == pa.string()
        assert snap.equals(_full(lake, ALERTS.name))
    finally:
        store.close()


def test_a_version_refresh_reloads_the_snapshot_without_waiting_for_the_next_request(tmp_path: Path) -> None:
    """Background mode: the request that finds the refresh interval passed starts the version check; when the
    version moved, the check itself starts the snapshot's reload, so the next request already gets the new rows."""
    lake = tmp_path / "lake"
    write(lake, ALERTS, [alert(i) for i in range(3)])
    store = LakeStore(lake, refresh_interval_s=0, background_reload=True)
    try:
        assert store.snapshot(ALERTS.name).num_rows == 3
        write(lake, ALERTS, [alert(7)])
        assert store.snapshot(ALERTS.name).num_rows == 3  # served from memory; the refresh runs in the background
        h = store._handles[ALERTS.name]
        wait_until(lambda: h.snapshot_version >= 1, what="version 1 loaded")
        assert h.snapshot_version == 1
        assert h.snapshot is not None
        assert h.snapshot.num_rows == 4
    finally:
        store.close()


def test_a_reload_that_finishes_behind_the_table_is_followed_by_the_newer_one(tmp_path: Path) -> None:
    """A commit that lands while a background reload reads the older version starts the next reload as soon as that
    one ends, without waiting for another request."""
    lake = tmp_path / "lake"
    write(lake, ALERTS, [alert(i) for i in range(3)])
    store = LakeStore(lake, refresh_interval_s=0, background_reload=True)
    try:
        assert store.snapshot(ALERTS.name).num_rows == 3
        h = store._handles[ALERTS.name]
        with h.load_lock:  # hold the loader: the reload of version 1 waits here while version 2 is committed
            write(lake, ALERTS, [alert(7)])
            store.snapshot(ALERTS.name)  # refresh (version 1) and start its reload, which blocks on load_lock
            wait_until(lambda: h.reloading, what="the reload of version 1 started")
            assert h.reloading
            write(lake, ALERTS, [alert(8)])
            h.version = 2  # what the next refresh reads; the reload in flight already took version 1
        # no request from here on: the loader alone must reach version 2
        wait_until(lambda: h.snapshot_version >= 2, what="version 2 loaded")
        assert h.snapshot_version == 2
        assert h.snapshot is not None
        assert h.snapshot.num_rows == 5
    finally:
        store.close()


def test_a_closed_store_schedules_nothing(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    write(lake, ALERTS, [alert(i) for i in range(3)])
    store = LakeStore(lake, refresh_interval_s=0, background_reload=True)
    assert store.snapshot(ALERTS.name).num_rows == 3
    store.close()
    write(lake, ALERTS, [alert(7)])
    h = store._handles[ALERTS.name]
    store._refresh(ALERTS.name, h)  # a refresh that was running when the store closed: no reload is scheduled
    assert h.version == 1
    assert not h.reloading
    assert store.snapshot(ALERTS.name).num_rows == 3  # the last snapshot is still served
    assert not h.refreshing
