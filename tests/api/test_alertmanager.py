"""Alertmanager export: GET /api/v2/alerts in Alertmanager's shape, the push plan, and the background push of new
and resolved alerts to a tiny local HTTP receiver on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.alertmanager import plan_push
from api.push import INCIDENT_WAIT_S, AlertPusher, push_url
from schemas.alerts import AlertType
from tests.api.conftest import AUTH, ClientFactory
from tests.api.lake import ALERTS, INCIDENTS, T0, alert, incidents, write
from tests.polling import wait_until

RECEIVE_TIMEOUT_S = 15.0


def test_get_alerts_in_alertmanager_shape(client: TestClient, lake: Path) -> None:
    write(lake, ALERTS, [alert(200, status="resolved", resolved_at=T0 + timedelta(hours=2), listener="CONTROLLER")])
    body = client.get("/api/v2/alerts", headers=AUTH).json()
    assert len(body) == 30
    a = body[0]
    # the incident it belongs to is a label: an Alertmanager grouping by it pages once per cause
    (incident,) = client.get("/incidents?broker_id=2", headers=AUTH).json()["data"]
    assert "a00029" in incident["alert_ids"]
    assert a["labels"] == {
        "alertname": "DELAYED_LEADER_AND_ISR",
        "service": "planewatch",
        "cluster": "c1",
        "severity": "critical",
        "broker_id": "2",
        "incident_id": incident["incident_id"],
    }
    assert a["annotations"]["summary"] == "LeaderAndIsr to broker 2 took 1029 ms"
    assert a["annotations"]["alert_id"] == "a00029"
    # the incident describes the page: its cause, impact and action, and links to it and to the type's runbook
    assert a["annotations"]["incident_cause"] == incident["cause"]
    assert a["annotations"]["description"].startswith(incident["summary"])
    assert f"Do: {incident['action']}" in a["annotations"]["description"]
    assert a["annotations"]["incident_url"].endswith(f"/incidents/{incident['incident_id']}")
    runbook = a["annotations"]["runbook_url"]
    assert runbook.endswith("/runbook/DELAYED_LEADER_AND_ISR")
    page = client.get(runbook.removeprefix("http://127.0.0.1:8080").removeprefix("http://testserver"))
    assert page.status_code == 200
    assert page.text.startswith("## DELAYED_LEADER_AND_ISR\n")
    assert "**Do.**" in page.text
    assert a["startsAt"] == "2026-11-20T12:29:00Z"
    assert datetime.fromisoformat(a["endsAt"]) > datetime.now(UTC)  # firing: endsAt in the future
    assert a["generatorURL"].endswith("/alerts/a00029")
    assert a["status"] == {"state": "active", "silencedBy": [], "inhibitedBy": []}
    assert len({x["fingerprint"] for x in body}) == 30
    both = client.get("/api/v2/alerts?resolved=true", headers=AUTH).json()
    resolved = [x for x in both if x["annotations"]["alert_id"] == "a00200"]
    assert resolved[0]["endsAt"] == "2026-11-20T14:00:00Z"
    assert resolved[0]["labels"]["listener"] == "CONTROLLER"
    assert client.get("/api/v2/alerts?active=false", headers=AUTH).json() == []


def test_a_runbook_is_served_for_every_alert_type_and_only_for_those(client: TestClient) -> None:
    for t in AlertType:
        page = client.get(f"/runbook/{t.value}")  # documentation: no token needed
        assert page.status_code == 200, t
        assert page.text.startswith(f"## {t.value}\n")
    assert client.get("/runbook/NOT_A_TYPE").status_code == 404


def test_push_plan() -> None:
    a, b, c = alert(1), alert(2, status="resolved"), alert(3)
    first = plan_push(None, [a, b], resend_all_open=True)
    assert [x["alert_id"] for x in first.send] == ["a00001"]  # open ones; already-resolved ones only remembered
    same = plan_push(first.state, [a, b], resend_all_open=False)
    assert same.send == []
    changed = plan_push(first.state, [alert(1, status="resolved"), b, c], resend_all_open=False)
    assert [x["alert_id"] for x in changed.send] == ["a00001", "a00003"]
    resend = plan_push(changed.state, [alert(1, status="resolved"), b, c], resend_all_open=True)
    assert [x["alert_id"] for x in resend.send] == ["a00003"]


def test_push_url() -> None:
    assert push_url("http://am:9093") == "http://am:9093/api/v2/alerts"
    assert push_url("http://am:9093/") == "http://am:9093/api/v2/alerts"
    assert push_url("http://hooks.local/planewatch") == "http://hooks.local/planewatch"


class _Receiver(BaseHTTPRequestHandler):
    posts: list[tuple[str, Any]]
    fail_next: list[bool]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.fail_next and self.fail_next.pop():
            self.send_response(500)
        else:
            self.posts.append((self.path, json.loads(body)))
            self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[tuple[str, Any]], list[bool]]]:
    posts: list[tuple[str, Any]] = []
    fail: list[bool] = []
    handler = type("Receiver", (_Receiver,), {"posts": posts, "fail_next": fail})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", posts, fail
    srv.shutdown()
    srv.server_close()
    t.join(timeout=5)


def test_background_push_of_new_and_resolved_alerts(
    make_client: ClientFactory, tmp_path: Path, receiver: tuple[str, list[tuple[str, Any]], list[bool]]
) -> None:
    url, posts, fail = receiver
    lake = tmp_path / "lake"
    write(lake, ALERTS, [alert(1), alert(2)])
    fail.append(True)  # the first delivery fails: it must be retried, not lost
    make_client(lake, alertmanager_url=url, push_interval_s=0.1, resend_interval_s=3600)
    wait_until(lambda: len(posts) >= 1, RECEIVE_TIMEOUT_S, "the first push")
    path, first = posts[0]
    assert path == "/api/v2/alerts"
    assert sorted(a["annotations"]["alert_id"] for a in first) == ["a00001", "a00002"]
    assert set(first[0]) == {"labels", "annotations", "startsAt", "endsAt", "generatorURL"}
    # a new alert and a resolved one
    rows = [
        alert(1, status="resolved", resolved_at=T0 + timedelta(hours=1), updated_at=T0 + timedelta(hours=1)),
        alert(3),
    ]
    write(lake, ALERTS, rows)
    wait_until(lambda: len(posts) >= 2, RECEIVE_TIMEOUT_S, "the second push")
    _, second = posts[1]
    by = {a["annotations"]["alert_id"]: a for a in second}
    assert set(by) == {"a00001", "a00003"}
    assert by["a00001"]["endsAt"] == "2026-11-20T13:00:00+00:00"
    time.sleep(0.5)
    assert len(posts) == 2  # nothing changed since: nothing more is sent


def test_an_open_alert_is_pushed_with_its_incident_once_the_incident_is_written(
    make_client: ClientFactory, tmp_path: Path, receiver: tuple[str, list[tuple[str, Any]], list[bool]]
) -> None:
    """The pipeline commits an alert a moment before its incident: the push waits for the incident, so the alert
    reaches Alertmanager once, with its incident_id label (a label added later would page it again)."""
    url, posts, _fail = receiver
    lake = tmp_path / "lake"
    write(lake, ALERTS, [alert(1), alert(2)])
    write(lake, INCIDENTS, incidents([alert(1)]))  # alert 2's incident is not written yet
    make_client(lake, alertmanager_url=url, push_interval_s=0.1, resend_interval_s=3600)
    wait_until(lambda: len(posts) >= 1, RECEIVE_TIMEOUT_S, "the first push")
    assert [a["annotations"]["alert_id"] for a in posts[0][1]] == ["a00001"]
    write(lake, INCIDENTS, incidents([alert(1), alert(2)]), mode="overwrite")
    wait_until(lambda: len(posts) >= 2, RECEIVE_TIMEOUT_S, "the second push")
    (second,) = posts[1][1]
    assert second["annotations"]["alert_id"] == "a00002"
    assert second["labels"]["incident_id"]


def test_an_alert_whose_incident_never_comes_is_pushed_without_it_after_the_wait() -> None:
    pusher = AlertPusher.__new__(AlertPusher)  # the hold-back alone: no store, no HTTP
    pusher._held = {}
    waiting = {"alert_id": "a1", "status": "open", "incident_id": None}
    grouped = {"alert_id": "a2", "status": "open", "incident_id": "i1"}
    assert pusher._hold_for_incidents([waiting, grouped], 100.0) == [grouped]
    assert pusher._hold_for_incidents([waiting, grouped], 100.0 + INCIDENT_WAIT_S / 2) == [grouped]
    assert pusher._hold_for_incidents([waiting, grouped], 100.0 + INCIDENT_WAIT_S) == [waiting, grouped]
