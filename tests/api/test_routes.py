"""Routes against small real Delta tables: filters, pagination, 401/404/422/503, brokers, metrics, control requests."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import AUTH, TOKEN, ClientFactory
from tests.api.lake import (
    ALERTS,
    CONTROL_REQUEST_LATENCY,
    METRIC_ROLLUPS_1M,
    METRIC_SAMPLES,
    T0,
    alert,
    rollup,
    samples,
    write,
)
from tests.polling import wait_until

OPEN_PATHS = {"/health", "/livez", "/", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"}
PATH_VALUES = {"alert_id": "a00001", "incident_id": "i0001", "broker_id": "1", "panel": "open_alerts", "cluster": "c1",
               "roll_id": "r1"}


def _iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _data_routes(client: TestClient) -> list[tuple[str, str]]:
    """Every (method, path) of the OpenAPI schema except the open paths, with example path parameters."""
    routes = []
    for p, ops in client.get("/openapi.json").json()["paths"].items():
        if p in OPEN_PATHS:
            continue
        for k, v in PATH_VALUES.items():
            p = p.replace("{" + k + "}", v)
        routes += [(m.upper(), p + ("?name=RequestQueueSize" if p.endswith("/metrics") else "")) for m in ops]
    return routes


def _data_paths(client: TestClient) -> list[str]:
    """Every GET path of the OpenAPI schema except the open ones, with example path parameters."""
    return [p for m, p in _data_routes(client) if m == "GET"]


def test_every_data_route_needs_the_token(client: TestClient) -> None:
    routes = _data_routes(client)
    assert {"/alerts", "/alerts/a00001", "/brokers", "/control-requests", "/cluster", "/api/v2/alerts"} <= {
        p.split("?")[0] for m, p in routes if m == "GET"
    }
    assert ("POST", "/clusters/c1/rolls") in routes
    for m, p in routes:
        body: dict[str, Any] = {"json": {}} if m == "POST" else {}
        missing = client.request(m, p, **body)
        assert missing.status_code == 401, (m, p)
        assert missing.headers["www-authenticate"] == "Bearer"
        assert client.request(m, p, headers={"Authorization": "Bearer wrong"}, **body).status_code == 401, (m, p)
        assert client.request(m, p, headers={"Authorization": f"Basic {TOKEN}"}, **body).status_code == 401, (m, p)
        assert client.request(m, p, headers=AUTH, **body).status_code in (200, 201, 404, 503), (m, p)


def test_open_routes_need_no_token(client: TestClient) -> None:
    for p in ("/health", "/", "/docs", "/openapi.json"):
        assert client.get(p).status_code == 200, p


def test_no_token_configured_means_open(make_client: ClientFactory, lake: Path) -> None:
    c = make_client(lake, api_token=None)
    assert c.get("/alerts").status_code == 200


def test_alerts_page_shape_order_and_evidence(client: TestClient) -> None:
    r = client.get("/alerts?limit=5", headers=AUTH)
    assert r.status_code == 200
    body = r.json()
    assert body["count"] == 30
    assert [a["alert_id"] for a in body["data"]] == ["a00029", "a00028", "a00027", "a00026", "a00025"]
    assert body["data"][0]["evidence"] == {"correlation_id": 29, "end_to_end_ms": 1029}
    assert body["next_cursor"]
    one = client.get("/alerts/a00007", headers=AUTH).json()
    assert one["broker_id"] == 1
    assert one["evidence"]["correlation_id"] == 7


def test_alert_filters(client: TestClient, lake: Path) -> None:
    write(lake, ALERTS, [alert(100, type="ACCEPTOR_BLOCKED", status="resolved", cluster="c2", listener="PLAINTEXT")])

    def ids(q: str) -> list[str]:
        r = client.get("/alerts?" + q, headers=AUTH)
        assert r.status_code == 200, r.text
        return [a["alert_id"] for a in r.json()["data"]]

    assert ids("type=ACCEPTOR_BLOCKED") == ["a00100"]
    assert ids("status=resolved") == ["a00100"]
    assert ids("cluster=c2") == ["a00100"]
    assert set(ids("broker_id=2&status=open&limit=1000")) == {f"a{i:05d}" for i in range(30) if i % 3 == 2}
    assert set(ids("severity=warning&cluster=c1&limit=1000")) == {f"a{i:05d}" for i in range(30) if i % 2 == 0}
    # active in [T0+10m, T0+12m): last seen >= 10m (started >= 9m) and started < 12m
    assert ids(f"since={_iso(T0 + timedelta(minutes=10))}&until={_iso(T0 + timedelta(minutes=12))}") == [
        "a00011",
        "a00010",
        "a00009",
    ]


def test_limit_is_capped(make_client: ClientFactory, tmp_path: Path) -> None:
    lake = tmp_path / "big"
    write(lake, ALERTS, [alert(i) for i in range(1200)])
    c = make_client(lake)
    body = c.get("/alerts?limit=1000000", headers=AUTH).json()
    assert len(body["data"]) == 1000
    assert body["count"] == 1200
    assert body["next_cursor"]
    rest = c.get("/alerts?limit=1000000&cursor=" + body["next_cursor"], headers=AUTH).json()
    assert len(rest["data"]) == 200
    assert rest["next_cursor"] is None


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=firing", "status"),
        ("severity=high", "severity"),
        ("broker_id=-1", "broker_id"),
        ("broker_id=abc", "broker_id"),
        ("limit=0", "limit"),
        ("since=yesterday", "since"),
        ("since=0001-01-01T00:00:00%2B00:01", "since"),  # year 0 in UTC: out of datetime's range (schemathesis)
        ("since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", "until"),
        ("cursor=not-a-cursor", "cursor"),
        ("type=x'; DROP TABLE alerts;--", "type"),
        ("cluster=" + "c" * 300, "cluster"),
    ],
)
def test_bad_alert_filters_are_422_naming_the_field(client: TestClient, query: str, field: str) -> None:
    r = client.get("/alerts?" + query, headers=AUTH)
    assert r.status_code == 422, r.text
    assert any(d["loc"][-1] == field for d in r.json()["detail"]), r.json()


def test_unknown_alert_is_404(client: TestClient) -> None:
    r = client.get("/alerts/nope", headers=AUTH)
    assert r.status_code == 404
    assert "nope" in r.json()["detail"]


def test_pagination_is_stable_while_alerts_are_written(client: TestClient, lake: Path) -> None:
    """Walk pages of 7 while new alerts are appended and existing ones resolved between pages: every alert
    present at the start is seen exactly once, in order."""
    seen: list[str] = []
    r = client.get("/alerts?limit=7", headers=AUTH).json()
    seen += [a["alert_id"] for a in r["data"]]
    n = 1000
    while r["next_cursor"]:
        write(lake, ALERTS, [alert(n, started=T0 + timedelta(hours=1, minutes=n)), alert(n + 1, started=T0)])
        n += 2
        r = client.get("/alerts?limit=7&cursor=" + r["next_cursor"], headers=AUTH).json()
        seen += [a["alert_id"] for a in r["data"]]
    original = [f"a{i:05d}" for i in range(29, -1, -1)]
    # every alert present at the start, once and in order; alerts written mid-walk at a position not yet walked
    # (started_at = T0) may show up too, but never twice, and the newer ones (started an hour later) never
    assert [a for a in seen if a in original] == original
    assert len(seen) == len(set(seen))
    assert all(a in original or int(a[1:]) % 2 == 1 for a in seen)
    # a status change rewrites the row (MERGE): the cursor still continues after the same position
    rows = [alert(i, status="resolved") if i == 5 else alert(i) for i in range(30)]
    write(lake, ALERTS, rows, mode="overwrite")
    first = client.get("/alerts?limit=25", headers=AUTH).json()
    rest = client.get("/alerts?limit=25&cursor=" + first["next_cursor"], headers=AUTH).json()
    assert [a["alert_id"] for a in rest["data"]] == ["a00004", "a00003", "a00002", "a00001", "a00000"]


def test_duplicate_alert_rows_keep_the_newest(client: TestClient, lake: Path) -> None:
    a = alert(3, status="resolved", updated_at=T0 + timedelta(hours=5), resolved_at=T0 + timedelta(hours=5))
    write(lake, ALERTS, [a])
    body = client.get("/alerts/a00003", headers=AUTH).json()
    assert body["status"] == "resolved"
    assert client.get("/alerts?limit=1000", headers=AUTH).json()["count"] == 30


def test_missing_tables_are_503_not_500(make_client: ClientFactory, tmp_path: Path) -> None:
    c = make_client(tmp_path / "empty-lake")
    for p in (
        "/alerts",
        "/alerts/a1",
        "/control-requests",
        "/brokers",
        "/brokers/1/metrics?name=X",
        "/api/v2/alerts",
        "/panels/open_alerts",
    ):
        r = c.get(p, headers=AUTH)
        assert r.status_code == 503, (p, r.text)
        assert "unavailable" in r.json()["detail"]
        assert "Traceback" not in r.text
    h = c.get("/health").json()
    assert h["status"] == "degraded"
    assert not any(t["available"] for t in h["tables"])


def test_a_corrupt_commit_is_503(make_client: ClientFactory, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    (lake / "alerts" / "_delta_log").mkdir(parents=True)
    (lake / "alerts" / "_delta_log" / "00000000000000000000.json").write_text('{"commitInfo": {half a commit')
    c = make_client(lake)
    r = c.get("/alerts", headers=AUTH)
    assert r.status_code == 503
    assert r.json()["table"] == "alerts"


def test_health_reports_ages(client: TestClient) -> None:
    h = client.get("/health").json()
    by = {t["name"]: t for t in h["tables"]}
    assert by["alerts"]["available"]
    assert by["alerts"]["rows"] == 30
    assert by["alerts"]["newest_data"] == "2026-11-20T12:30:00Z"
    assert by["alerts"]["keeping_up"]
    assert by["alerts"]["commit_age_s"] < 120
    assert not by["metric_rollups_1m"]["available"]
    assert h["keeping_up"] is True
    assert h["status"] == "degraded"


def test_brokers_latest_metrics_and_open_alerts(client: TestClient) -> None:
    body = client.get("/brokers", headers=AUTH).json()
    by = {b["broker_id"]: b for b in body["data"]}
    assert set(by) == {0, 1, 2}
    assert by[1]["open_alerts"] == 10
    assert by[1]["open_alert_types"] == ["DELAYED_LEADER_AND_ISR"]
    assert by[1]["metrics"] == [
        {
            "signal": "RequestQueueSize",
            "attribute": "Value",
            "listener": None,
            "value": 599.0,
            "ts": "2026-11-20T12:09:59Z",
        }
    ]
    assert body["metrics_source"] == "metric_samples"


def test_brokers_of_one_cluster(client: TestClient) -> None:
    assert {b["broker_id"] for b in client.get("/brokers?cluster=c1", headers=AUTH).json()["data"]} == {0, 1, 2}
    assert client.get("/brokers?cluster=other", headers=AUTH).json() | {"unavailable": []} == {
        "data": [], "count": 0, "metrics_source": "metric_samples", "unavailable": []}
    assert client.get("/brokers?cluster=bad name", headers=AUTH).status_code == 422


def test_metrics_downsampled_from_samples(client: TestClient) -> None:
    q = f"name=RequestQueueSize&since={_iso(T0)}&until={_iso(T0 + timedelta(minutes=10))}&points=10"
    body = client.get("/brokers/1/metrics?" + q, headers=AUTH).json()
    assert body["source"] == "metric_samples"
    assert body["bucket_seconds"] == 60
    pts = body["series"][0]["points"]
    assert len(pts) == 10
    assert pts[0] == {"t": "2026-11-20T12:00:00Z", "avg": 29.5, "min": 0.0, "max": 59.0, "last": 59.0, "samples": 60}
    capped = client.get("/brokers/1/metrics?" + q.replace("points=10", "points=99999"), headers=AUTH).json()
    assert capped["bucket_seconds"] == 1
    assert len(capped["series"][0]["points"]) == 600
    assert client.get("/brokers/2/metrics?" + q, headers=AUTH).json()["series"] == []
    same = client.get("/brokers/1/metrics?cluster=c1&" + q, headers=AUTH).json()
    assert same["series"][0]["points"] == pts
    assert client.get("/brokers/1/metrics?cluster=c2&" + q, headers=AUTH).json()["series"] == []


def test_metrics_prefer_rollups(client: TestClient, lake: Path) -> None:
    write(lake, METRIC_ROLLUPS_1M, [rollup(1, "RequestQueueSize", T0 + timedelta(minutes=m), 7.0) for m in range(5)])
    q = f"name=RequestQueueSize&since={_iso(T0)}&until={_iso(T0 + timedelta(minutes=10))}&points=5"
    body = client.get("/brokers/1/metrics?" + q, headers=AUTH).json()
    assert body["source"] == "metric_rollups_1m"
    assert body["bucket_seconds"] == 120
    assert [p["samples"] for p in body["series"][0]["points"]] == [120, 120, 60]
    assert body["series"][0]["points"][0]["avg"] == 7.0


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("", "name"),
        ("name=Bad%20Name'", "name"),
        ("name=X&since=2026-01-01T00:00:00Z&until=2026-03-01T00:00:00Z", "since"),
        ("name=X&points=0", "points"),
    ],
)
def test_bad_metrics_queries_are_422(client: TestClient, query: str, field: str) -> None:
    r = client.get("/brokers/1/metrics?" + query, headers=AUTH)
    assert r.status_code == 422, r.text
    assert any(d["loc"][-1] == field for d in r.json()["detail"]), r.text


def test_control_requests_filters(client: TestClient) -> None:
    body = client.get("/control-requests?broker_id=2&min_latency_ms=500", headers=AUTH).json()
    assert [r["correlation_id"] for r in body["data"]] == [11, 8, 5]
    assert body["count"] == 3
    assert body["data"][0]["queue_ms"] == 550.0
    lim = client.get("/control-requests?limit=2", headers=AUTH).json()
    assert [r["correlation_id"] for r in lim["data"]] == [11, 10]
    assert lim["count"] == 12
    since = client.get(f"/control-requests?since={_iso(T0 + timedelta(seconds=100))}", headers=AUTH).json()
    assert since["count"] == 2
    assert client.get("/control-requests?request=Produce", headers=AUTH).status_code == 422


def test_cluster_without_dir_is_404(client: TestClient) -> None:
    assert client.get("/cluster", headers=AUTH).status_code == 404


def test_cluster_reads_cluster_json(make_client: ClientFactory, lake: Path, tmp_path: Path) -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there: metadata must fail within the bound, cluster.json still shows
    cdir = tmp_path / "cluster"
    cdir.mkdir()
    (cdir / "cluster.json").write_text(
        json.dumps(
            {
                "bootstrap.servers": f"127.0.0.1:{port}",
                "brokers": [
                    {
                        "id": 1,
                        "pid": 4242,
                        "host": "127.0.0.1",
                        "port": port,
                        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{port + 1}",
                        "control.plane.listener.name": "CONTROLLER",
                        "prometheus_port": 9404,
                    }
                ],
            }
        )
    )
    c = make_client(lake, cluster_dir=cdir)
    body = c.get("/cluster", headers=AUTH).json()
    b = body["brokers"][0]
    assert b["listeners"] == {"PLAINTEXT": f"127.0.0.1:{port}", "CONTROLLER": f"127.0.0.1:{port + 1}"}
    assert b["control_listener"] == "CONTROLLER"
    assert b["prometheus"] == "http://127.0.0.1:9404/metrics"
    assert b["live"] is False
    assert body["metadata_error"]
    (cdir / "cluster.json").unlink()
    assert c.get("/cluster", headers=AUTH).status_code == 503


def test_panels_run_their_sql_files(client: TestClient, lake: Path) -> None:
    body = client.get("/panels/leader_and_isr_latency", headers=AUTH).json()
    assert body["columns"][:3] == ["cluster", "broker_id", "sent_ts"]
    assert [r["correlation_id"] for r in body["rows"]][:3] == [11, 10, 9]
    assert client.get("/panels/queue_sizes", headers=AUTH).status_code == 503  # no rollups table yet
    write(lake, METRIC_ROLLUPS_1M, [rollup(1, "RequestQueueSize", T0 + timedelta(minutes=m), 3.0) for m in range(3)])
    q = client.get("/panels/queue_sizes", headers=AUTH).json()
    assert len(q["rows"]) == 3
    assert q["rows"][0]["signal"] == "RequestQueueSize"
    assert client.get("/panels/nope", headers=AUTH).status_code == 422
    alerts = client.get("/panels/open_alerts", headers=AUTH).json()
    assert [r["alert_id"] for r in alerts["rows"][:2]] == ["a00029", "a00028"]
    assert alerts["rows"][0]["type"] == "DELAYED_LEADER_AND_ISR"


def test_samples_table_is_reached_only_through_datafusion(client: TestClient, lake: Path) -> None:
    """Data appended to metric_samples shows up once the version moves (no restart, no reopen per request)."""
    q = f"name=RequestQueueSize&since={_iso(T0)}&until={_iso(T0 + timedelta(minutes=20))}&points=2"
    before = client.get("/brokers/1/metrics?" + q, headers=AUTH).json()["series"][0]["points"]
    write(lake, METRIC_SAMPLES, samples(1, "RequestQueueSize", T0 + timedelta(minutes=10), 60))
    after = client.get("/brokers/1/metrics?" + q, headers=AUTH).json()["series"][0]["points"]
    assert [p["samples"] for p in before] == [600]
    assert [p["samples"] for p in after] == [600, 60]


def test_control_request_table_version_moves(client: TestClient, lake: Path) -> None:
    from tests.api.lake import control_request

    assert client.get("/control-requests", headers=AUTH).json()["count"] == 12
    write(lake, CONTROL_REQUEST_LATENCY, [control_request(50, 1, 5.0)])
    assert client.get("/control-requests", headers=AUTH).json()["count"] == 13


def test_background_reload_serves_the_previous_snapshot_then_the_new_one(
    make_client: ClientFactory, lake: Path
) -> None:
    """With background_reload (the default), a moved table is reloaded off the request path: requests keep being
    answered from the previous version and the new rows appear shortly after."""
    c = make_client(lake, background_reload=True)
    assert c.get("/alerts", headers=AUTH).json()["count"] == 30
    write(lake, ALERTS, [alert(500)])
    counts = set()

    def reloaded() -> bool:
        counts.add(c.get("/alerts", headers=AUTH).json()["count"])
        return 31 in counts

    wait_until(reloaded, 10, lambda: f"the new alert served (counts seen: {sorted(counts)})", interval=0.02)
    assert 31 in counts
    assert counts <= {30, 31}


def test_query_time_is_capped(make_client: ClientFactory, lake: Path) -> None:
    """A DataFusion query running past query_timeout_s is abandoned: a 503 that says so, not a hung request."""
    c = make_client(lake, query_timeout_s=0.000001)
    r = c.get("/brokers/1/metrics?name=RequestQueueSize", headers=AUTH)
    assert r.status_code == 503
    assert "longer than" in r.json()["reason"]
