"""The API holds only the newest hour of control_request_latency in memory (a bound on the table that grows with
the cluster's chatter); GET /control-requests reaching further back is answered from the lake, exactly."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import api.snapshots
import api.store
from api.snapshots import CONTROL_REQUESTS_WINDOW, read_added_files
from api.store import LakeStore
from tests.api.conftest import AUTH, ClientFactory
from tests.api.lake import CONTROL_REQUEST_LATENCY, T0, control_request, write

# control_request(i) is sent at T0 + 10 s * i: three hours of requests, one commit per hour.
PER_HOUR = 360
HOURS = 3
NEWEST = T0 + timedelta(seconds=10 * (PER_HOUR * HOURS - 1))


@pytest.fixture
def history(tmp_path: Path) -> Path:
    lake = tmp_path / "lake"
    for h in range(HOURS):
        write(lake, CONTROL_REQUEST_LATENCY,
              [control_request(i, i % 3, 5.0) for i in range(h * PER_HOUR, (h + 1) * PER_HOUR)])
    return lake


def _in_window() -> int:
    start = NEWEST - CONTROL_REQUESTS_WINDOW
    return sum(1 for i in range(PER_HOUR * HOURS) if T0 + timedelta(seconds=10 * i) >= start)


def test_the_snapshot_holds_the_last_hour_and_reads_only_its_files(
    monkeypatch: pytest.MonkeyPatch, history: Path
) -> None:
    files_read: list[int] = []

    def counting(root: str, actions: Any, table: str) -> Any:
        files_read.append(actions.num_rows)
        return read_added_files(root, actions, table)

    monkeypatch.setattr(api.store, "read_added_files", counting)
    store = LakeStore(history, refresh_interval_s=0, background_reload=False)
    try:
        snap = store.snapshot(CONTROL_REQUEST_LATENCY.name)
        assert files_read == [2]  # the first hour's file ends before the window: its statistics say so, unread
        assert snap.num_rows == _in_window()
        oldest = min(snap["sent_ts"].to_pylist())
        assert oldest >= NEWEST - CONTROL_REQUESTS_WINDOW
        # an appended hour moves the window: the snapshot stays one hour long
        write(history, CONTROL_REQUEST_LATENCY,
              [control_request(i, 1, 5.0) for i in range(PER_HOUR * HOURS, PER_HOUR * (HOURS + 1))])
        snap = store.snapshot(CONTROL_REQUEST_LATENCY.name)
        assert snap.num_rows == _in_window()
        assert min(snap["sent_ts"].to_pylist()) > oldest
    finally:
        store.close()


def test_control_requests_before_the_window_come_from_the_lake(make_client: ClientFactory, history: Path) -> None:
    c = make_client(history)
    recent = c.get("/control-requests?limit=5", headers=AUTH).json()
    assert recent["count"] == _in_window()
    assert datetime.fromisoformat(recent["covers_since"]) == NEWEST - CONTROL_REQUESTS_WINDOW
    all_ = c.get(f"/control-requests?limit=5&since={T0.isoformat().replace('+00:00', 'Z')}", headers=AUTH).json()
    assert all_["count"] == PER_HOUR * HOURS
    assert datetime.fromisoformat(all_["covers_since"]) == T0
    # the same newest page either way, in the same order
    assert [r["correlation_id"] for r in all_["data"]] == [r["correlation_id"] for r in recent["data"]]
    # the lake answers the filters as the snapshot does
    q = f"since={(T0 + timedelta(minutes=30)).isoformat().replace('+00:00', 'Z')}&broker_id=1&limit=1000"
    old = c.get(f"/control-requests?{q}", headers=AUTH).json()
    start = T0 + timedelta(minutes=30)
    expect = [i for i in range(PER_HOUR * HOURS) if i % 3 == 1 and T0 + timedelta(seconds=10 * i) >= start]
    assert old["count"] == len(expect)
    assert [r["correlation_id"] for r in old["data"]] == sorted(expect, reverse=True)


def test_the_row_bound_cuts_the_window(monkeypatch: pytest.MonkeyPatch, make_client: ClientFactory,
                                       history: Path) -> None:
    """Past CONTROL_REQUESTS_MAX_ROWS the snapshot keeps the newest rows and says so in covers_since."""
    monkeypatch.setattr(api.snapshots, "CONTROL_REQUESTS_MAX_ROWS", 100)
    c = make_client(history)
    page = c.get("/control-requests?limit=1000", headers=AUTH).json()
    assert page["count"] == 100
    oldest_held = T0 + timedelta(seconds=10 * (PER_HOUR * HOURS - 100))
    assert datetime.fromisoformat(page["covers_since"]) == oldest_held
    further = oldest_held - timedelta(minutes=5)
    q = f"since={further.isoformat().replace('+00:00', 'Z')}&limit=1000"
    assert c.get(f"/control-requests?{q}", headers=AUTH).json()["count"] == 130
