"""GET /alerts answers 200 while the pipeline writes the alerts table, from before its first commit on.

A reader serves the last version it has: an empty list while the table does not exist yet in an existing lake
(no alert was ever written), then every committed version, never a 503 because a commit is being written. The
writer commits as the pipeline does (lake.sink: the table created empty by ``ensure_table``, MERGEs by
alert_id carrying the batch's app transaction, appends, and a checkpoint as delta-rs writes every 100 commits).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lake.merge import DeltaMerger
from lake.tables import ensure_table
from schemas.tables import ALERTS
from tests.api.conftest import AUTH, ClientFactory
from tests.api.lake import alert, write
from tests.api.serve import serve
from tests.lake_helpers import lake_table
from tests.polling import wait_until

# One commit a second (the pipeline's alert writers commit once per micro-batch, a few seconds apart), polled at
# 2 Hz (the demo's watcher polls at 4 Hz; 2 Hz still puts several polls between commits) for DURATION_S.
COMMIT_INTERVAL_S = 1.0
POLL_INTERVAL_S = 0.5
DURATION_S = 20.0
POLLS = int(DURATION_S / POLL_INTERVAL_S)
# Commits after the table's creation: they fit in DURATION_S with room for slow commits on a loaded machine.
COMMITS = 14
NEW_PER_COMMIT = 2  # alerts each commit inserts (a MERGE also resolves the previous commit's alerts)
CHECKPOINT_EVERY = 5  # commits between checkpoints (delta-rs: every 100; here a few happen within the test)
# Bounds: the first poll, the writer's end after the polls, and the API catching up with the last commit.
FIRST_POLL_TIMEOUT_S = 30.0
JOIN_TIMEOUT_S = 60.0
CATCH_UP_TIMEOUT_S = 30.0
HTTP_TIMEOUT_S = 10.0


def _rows(ids: range, status: str = "open") -> pa.Table:
    rows = [alert(i, status=status) for i in ids]
    return pa.Table.from_pylist([{c: r.get(c) for c in ALERTS.names} for r in rows], schema=ALERTS.to_arrow())


@pytest.mark.slow
def test_alerts_are_never_503_while_the_pipeline_writes(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()  # the lake exists (the pipeline started); the alerts table does not yet
    table = lake / ALERTS.name
    polled = threading.Event()  # the first poll was answered: the writer may create the table
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            if not polled.wait(FIRST_POLL_TIMEOUT_S):
                raise AssertionError("no poll was answered before the table existed")
            ensure_table(str(table), ALERTS)
            merger = DeltaMerger(str(table), ALERTS, "test-alerts-writer", ["alert_id"])
            for k in range(COMMITS):
                if stop.wait(COMMIT_INTERVAL_S):
                    return
                new = range(k * NEW_PER_COMMIT, (k + 1) * NEW_PER_COMMIT)
                if k % 2 == 0:  # a MERGE: the previous commit's alerts resolved (rows rewritten), new ones inserted
                    old = range(max(0, k - 1) * NEW_PER_COMMIT, k * NEW_PER_COMMIT)
                    merger.write_arrow(pa.concat_tables([_rows(old, status="resolved"), _rows(new)]), k)
                else:
                    write(lake, ALERTS, [alert(i) for i in new])
                if (k + 1) % CHECKPOINT_EVERY == 0:
                    DeltaTable(str(table)).create_checkpoint()
        except BaseException as e:  # reported by the test, not lost in the thread
            errors.append(e)

    with serve(lake) as base, httpx.Client(base_url=base, headers=AUTH, timeout=HTTP_TIMEOUT_S) as client:
        thread = threading.Thread(target=writer, name="alerts-writer")
        thread.start()
        answers: list[tuple[int, int, str]] = []  # (status, count or -1, body head) of each poll
        try:
            start = time.monotonic()
            for i in range(POLLS):
                r = client.get("/alerts?limit=1000")
                answers.append((r.status_code, int(r.json().get("count", -1)), r.text[:200]))
                polled.set()
                time.sleep(max(0.0, start + (i + 1) * POLL_INTERVAL_S - time.monotonic()))  # 2 Hz pacing
        finally:
            stop.set()
            thread.join(JOIN_TIMEOUT_S)
        assert not thread.is_alive(), "the writer did not stop"
        assert not errors, errors
        final = len(lake_table(lake, ALERTS.name, ["alert_id"])["alert_id"].unique())
        wait_until(
            lambda: client.get("/alerts?limit=1000").json()["count"] == final,
            CATCH_UP_TIMEOUT_S,
            f"GET /alerts to show the last commit's {final} alerts",
        )

    failed = [a for a in answers if a[0] != 200]
    assert not failed, f"{len(failed)} of {len(answers)} polls not 200: {failed[:5]}"
    counts = [count for _, count, _ in answers]
    assert counts[0] == 0  # before the table existed: no alert was ever written
    assert counts == sorted(counts), "an answer went back to an older version"
    assert final > NEW_PER_COMMIT  # the polls ran while commits landed


def test_a_lake_without_its_snapshot_tables_yet_answers_empty(make_client: ClientFactory, tmp_path: Path) -> None:
    """Before the pipeline's first commit the lake exists and the tables do not: no alert or control request was
    ever written, so their lists are empty (200); /health still says the tables are not there."""
    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / ALERTS.name).mkdir()  # ensure_table's directory, its log not written yet
    c = make_client(lake)
    body = c.get("/alerts", headers=AUTH).json()
    assert (body["count"], body["data"], body["next_cursor"]) == (0, [], None)
    assert c.get("/control-requests", headers=AUTH).json()["data"] == []
    assert c.get("/alerts/a00001", headers=AUTH).status_code == 404
    health = {t["name"]: t for t in c.get("/health").json()["tables"]}
    assert not health[ALERTS.name]["available"]
    assert "does not exist" in health[ALERTS.name]["error"]
    # the first commit is served at the next request (refresh_interval_ms=0)
    write(lake, ALERTS, [alert(1)])
    assert c.get("/alerts", headers=AUTH).json()["count"] == 1
