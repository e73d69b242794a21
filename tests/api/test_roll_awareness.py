"""Roll-aware alerting through the API: rolls seen from the stop lines and declared by POST, the `expected` mark in
GET /alerts, and pages through a real Alertmanager (a healthy roll's symptoms page nothing; a bad roll pages)."""

from __future__ import annotations

import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from benchmarks.anchors.pager import Pager
from benchmarks.anchors.servers import AnchorServers
from pipelines.roll_awareness import EXPECTED, MIN_RECOVERY_S
from schemas.events import Event
from schemas.tables import ALERTS, STATE_CHANGE_EVENTS
from tests.api.conftest import AUTH, ClientFactory
from tests.api.lake import alert, write
from tests.polling import wait_until

# A page must reach the pager within this long of its alert's commit (issue: "within 10 s of the condition
# becoming visible"): push every 0.5 s, Alertmanager with group_wait 0.
PAGE_WITHIN_S = 10.0
# After the pages, a healthy roll's symptoms must still not have paged this much later (4 push rounds).
QUIET_FOR_S = 2.0


def stop(broker: int, at: datetime, cluster: str = "c1") -> dict[str, Any]:
    return {"cluster": cluster, "broker_id": broker, "ts": at, "level": "INFO", "logger": "kafka.server.KafkaServer",
            "role": "broker", "event": Event.CONTROLLED_SHUTDOWN_STARTED.value,
            "message": f"[KafkaServer id={broker}] Starting controlled shutdown", "date": at.date(),
            "source": f"c1/broker-{broker}/server.log", "source_offset": 0}


@pytest.fixture
def rolling_lake(tmp_path: Path) -> tuple[Path, datetime]:
    """A roll of c1 going on: broker 1 stopped 300 s ago, broker 2 240 s ago (pace 60 s, so its symptoms are
    expected for MIN_RECOVERY_S)."""
    now = datetime.now(UTC)
    lake = tmp_path / "lake"
    write(lake, STATE_CHANGE_EVENTS, [stop(1, now - timedelta(seconds=300)), stop(2, now - timedelta(seconds=240))])
    return lake, now


def test_get_alerts_marks_what_the_roll_explains(make_client: ClientFactory, rolling_lake: tuple[Path, datetime]
                                                 ) -> None:
    lake, now = rolling_lake
    write(lake, ALERTS, [
        alert(1, started=now - timedelta(seconds=100), broker_id=2),
        alert(2, started=now - timedelta(seconds=240), type="ROLL_TOO_FAST"),
        alert(3, started=now - timedelta(hours=3)),
    ])
    c = make_client(lake)
    got = {a["alert_id"]: a for a in c.get("/alerts", headers=AUTH).json()["data"]}
    assert got["a00001"]["expected"] == EXPECTED
    assert "roll seen from stop lines of c1" in got["a00001"]["roll_note"]
    assert got["a00002"]["expected"] is None
    assert "ROLL_TOO_FAST is what a bad roll does" in got["a00002"]["roll_note"]
    assert (got["a00003"]["expected"], got["a00003"]["roll_note"]) == (None, None)
    assert c.get("/alerts/a00001", headers=AUTH).json()["expected"] == EXPECTED
    (roll,) = c.get("/clusters/c1/rolls", headers=AUTH).json()["data"]
    assert (roll["roll_id"], roll["nodes"], roll["pace_s"], roll["recovery_s"]) == (None, [1, 2], 60.0, MIN_RECOVERY_S)


def test_a_declared_roll_is_recorded_once_and_ended(make_client: ClientFactory, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    write(lake, ALERTS, [alert(1, started=datetime.now(UTC))])
    c = make_client(lake)
    r = c.post("/clusters/c1/rolls", json={"nodes": [3, 1, 2], "roll_id": "nightly-7"}, headers=AUTH)
    assert r.status_code == 201, r.text
    assert (r.json()["roll_id"], r.json()["nodes"], r.json()["ended_at"]) == ("nightly-7", [1, 2, 3], None)
    assert c.post("/clusters/c1/rolls", json={"roll_id": "nightly-7"}, headers=AUTH).status_code == 201
    assert c.post("/clusters/c2/rolls", json={"roll_id": "nightly-7"}, headers=AUTH).status_code == 409
    assert c.get("/alerts/a00001", headers=AUTH).json()["expected"] == EXPECTED
    ended = c.post("/clusters/c1/rolls/nightly-7/end", headers=AUTH)
    assert ended.status_code == 200
    assert ended.json()["ended_at"] is not None
    assert c.post("/clusters/c1/rolls/nightly-7/end", headers=AUTH).status_code == 200  # once: nothing new
    assert c.post("/clusters/c1/rolls/nope/end", headers=AUTH).status_code == 404
    assert c.post("/clusters/c1/rolls", json={"nodes": [1]}).status_code == 401  # the token rule holds
    from deltalake import DeltaTable

    steps = DeltaTable(str(lake / "roll_steps")).to_pyarrow_table().to_pylist()
    assert sorted((s["roll_id"], s["step"], s["kind"]) for s in steps) == [("nightly-7", 1, "plan"),
                                                                           ("nightly-7", 2, "rolled")]


@pytest.mark.integration
@pytest.mark.skipif(not (shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")),
                    reason="Alertmanager is not installed (scripts/bootstrap.sh installs it)")
def test_through_alertmanager_a_healthy_rolls_symptoms_page_nothing_and_a_bad_roll_pages_at_once(
        make_client: ClientFactory, rolling_lake: tuple[Path, datetime]) -> None:
    lake, now = rolling_lake
    with Pager() as pager, AnchorServers((), webhook_url=pager.url) as servers:
        make_client(lake, alertmanager_url=servers.alertmanager_url, push_interval_s=0.5, resend_interval_s=3600)
        symptoms = [alert(1, started=now - timedelta(seconds=100), broker_id=2),
                    alert(2, started=now - timedelta(seconds=235), broker_id=2, type="METADATA_APPLY_LAG",
                          status="resolved", resolved_at=now - timedelta(seconds=200))]
        write(lake, ALERTS, symptoms)
        bad = [alert(3, started=now - timedelta(seconds=240), type="ROLL_TOO_FAST"),
               # a restart not recovered: broker 1's apply lag open since its stop, past the roll's recovery bound
               alert(4, started=now - timedelta(seconds=290), broker_id=1, type="METADATA_APPLY_LAG")]
        written = time.time()
        write(lake, ALERTS, bad)
        wait_until(lambda: {p["alert_id"] for p in pager.pages()} >= {"a00003", "a00004"}, PAGE_WITHIN_S,
                   "ROLL_TOO_FAST and the unrecovered restart paged")
        delay = max(p["at"] for p in pager.pages()) - written
        time.sleep(QUIET_FOR_S)
        paged = sorted(p["alert_id"] for p in pager.pages())
    assert paged == ["a00003", "a00004"], paged
    assert delay < PAGE_WITHIN_S
