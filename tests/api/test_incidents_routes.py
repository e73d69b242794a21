"""GET /incidents and /incidents/{id} over a real Delta lake whose incidents the pipeline's grouping made."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.api.conftest import AUTH


def test_incidents_list_one_per_broker_newest_first_with_filters(client: TestClient) -> None:
    body = client.get("/incidents", headers=AUTH).json()
    # 30 alerts a minute apart on brokers 0, 1, 2 in turn: each broker's overlap (5-minute hysteresis)
    assert body["count"] == 3
    assert [i["broker_id"] for i in body["data"]] == [2, 1, 0]
    first = body["data"][-1]
    assert (first["cause"], first["alerts"], first["status"]) == ("SLOW_CONTROL_REQUEST", 10, "open")
    assert first["alert_types"] == ["DELAYED_LEADER_AND_ISR"]
    assert "kafka.request.logger" in first["action"]
    # what it cost, and against what: every incident says both (its alerts' numbers, its cause's history)
    assert first["impact"].startswith("leadership changes waited up to ")
    assert first["baseline"].startswith("broker 0's earlier SLOW_CONTROL_REQUEST incidents in the previous 24 h: 0")
    one = client.get("/incidents?broker_id=1&status=open&cause=SLOW_CONTROL_REQUEST", headers=AUTH).json()
    assert [i["broker_id"] for i in one["data"]] == [1]
    assert client.get("/incidents?cause=CONNECTION_STORM", headers=AUTH).json() == {"data": [], "count": 0}
    assert client.get("/incidents?cause=NOT_A_CAUSE", headers=AUTH).status_code == 422
    assert client.get("/incidents").status_code == 401


def test_an_incident_shows_its_member_alerts(client: TestClient) -> None:
    listed = client.get("/incidents?broker_id=0", headers=AUTH).json()["data"][0]
    got = client.get(f"/incidents/{listed['incident_id']}", headers=AUTH).json()
    assert [m["alert_id"] for m in got["members"]] == listed["alert_ids"]
    assert [m["broker_id"] for m in got["members"]] == [0] * 10
    assert client.get("/incidents/0123456789abcdef0123", headers=AUTH).status_code == 404
