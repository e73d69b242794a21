"""No absolute filesystem path leaves the API: 503 bodies, /health errors and alert evidence; /health agrees with
/alerts about the alerts table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.public_paths import PATH_TAIL_PARTS, scrub_text, scrub_value
from tests.api.conftest import AUTH, ClientFactory
from tests.api.lake import ALERTS, CONTROL_REQUEST_LATENCY, alert, control_request, write

LAKE = "/srv/planewatch/var/lake"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # delta-rs / object_store spell a file with and without the leading slash, or as a URI
        ("Failed to fetch metadata for file srv/planewatch/var/lake/alerts/p-0.parquet", "file alerts/p-0.parquet"),
        ("Object at location /srv/planewatch/var/lake/alerts/p-0.parquet not found", "location alerts/p-0.parquet not"),
        ("log at file:///srv/planewatch/var/lake/alerts/_delta_log/0.json", "log at alerts/_delta_log/0.json"),
        ("no table under /srv/planewatch/var/lake.", "no table under <lake>."),
        ("source '/home/bob/clusters/run/cluster/broker-1/logs/server.log'", "'broker-1/logs/server.log'"),
        ("file:///home/bob/x/y/z.log", "x/y/z.log"),
        # not paths: left alone
        ("kafka.network:type=RequestChannel,name=RequestQueueSize", "kafka.network:type=RequestChannel,name="),
        ("3/4 of the requests, a/b", "3/4 of the requests, a/b"),
        ("s3://bucket/lake/alerts", "s3://bucket/lake/alerts"),
    ],
)
def test_scrub_text(text: str, shown: str) -> None:
    out = scrub_text(text, LAKE)
    assert shown in out
    assert "srv/planewatch" not in out
    assert "/home/" not in out


def test_scrub_value_walks_evidence() -> None:
    evidence = {"latest": {"source": "/a/b/c/d/kafka-request.log", "n": 3}, "lines": ["/x/y/z/w", 1.5, None]}
    assert scrub_value(evidence, LAKE) == {
        "latest": {"source": "c/d/kafka-request.log", "n": 3},
        "lines": ["y/z/w", 1.5, None],
    }
    assert PATH_TAIL_PARTS == 3
    deep: object = "/very/deep/secret/path/file"
    for _ in range(40):
        deep = [deep]
    assert "/very/" not in json.dumps(scrub_value(deep, LAKE))


@pytest.fixture
def broken_lake(tmp_path: Path) -> Path:
    """alerts whose data file is gone (the log still names it); control requests intact."""
    lake = tmp_path / "lake"
    write(lake, ALERTS, [alert(i) for i in range(3)])
    write(lake, CONTROL_REQUEST_LATENCY, [control_request(1, 1, 30.0)])
    for f in (lake / "alerts").glob("*.parquet"):
        f.unlink()
    return lake


def _no_path(body: str, lake: Path) -> None:
    for spelled in (str(lake), str(lake).lstrip("/"), str(lake.resolve()).lstrip("/"), str(lake.parent)):
        assert spelled not in body, body


def test_error_bodies_name_files_relative_to_the_lake(make_client: ClientFactory, broken_lake: Path) -> None:
    c = make_client(broken_lake)
    for url in ("/panels/open_alerts", "/alerts", "/alerts/a00001", "/brokers"):
        r = c.get(url, headers=AUTH)
        assert r.status_code in (200, 503), (url, r.text)
        _no_path(r.text, broken_lake)
    r = c.get("/panels/open_alerts", headers=AUTH)
    assert r.status_code == 503
    assert "alerts/part-" in r.json()["reason"]
    h = c.get("/health")
    _no_path(h.text, broken_lake)
    assert "alerts/part-" in next(t for t in h.json()["tables"] if t["name"] == "alerts")["error"]


def _alerts_available(c: TestClient) -> bool:
    return bool(next(t for t in c.get("/health").json()["tables"] if t["name"] == "alerts")["available"])


def test_health_agrees_with_alerts(make_client: ClientFactory, tmp_path: Path, broken_lake: Path) -> None:
    # data file gone: /alerts answers 503, so /health must not call the table available
    c = make_client(broken_lake)
    assert c.get("/alerts", headers=AUTH).status_code == 503
    assert not _alerts_available(c)
    # no table yet in an existing lake: no alert was ever written, so /alerts lists none; /health says the table
    # is not there (the pipeline has not created it)
    empty = tmp_path / "empty"
    write(empty, CONTROL_REQUEST_LATENCY, [control_request(1, 1, 30.0)])
    c = make_client(empty)
    assert c.get("/alerts", headers=AUTH).json()["count"] == 0
    assert not _alerts_available(c)
    # readable: both say so
    good = tmp_path / "good"
    write(good, ALERTS, [alert(1)])
    c = make_client(good)
    assert _alerts_available(c)
    assert c.get("/alerts", headers=AUTH).status_code == 200
    # a new version whose file is gone: /alerts keeps serving the snapshot it has, and /health agrees
    write(good, ALERTS, [alert(2)])
    newest = max((good / "alerts").glob("*.parquet"), key=lambda p: p.stat().st_mtime_ns)
    newest.unlink()
    assert c.get("/alerts", headers=AUTH).status_code == 200
    assert _alerts_available(c)


def test_alert_evidence_carries_no_absolute_path(make_client: ClientFactory, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    source = tmp_path / "clusters" / "run-1" / "cluster" / "broker-1" / "logs" / "kafka-request.log"
    evidence = {"firings": 2, "latest": {"api_name": "UpdateMetadata", "source": str(source), "source_offset": 7}}
    write(lake, ALERTS, [alert(1, type="CONTROL_REQUEST_QUEUED_BEHIND_DATA", evidence=json.dumps(evidence))])
    c = make_client(lake)
    listed = c.get("/alerts", headers=AUTH)
    one = c.get("/alerts/a00001", headers=AUTH)
    for r in (listed, one):
        assert r.status_code == 200
        assert str(tmp_path).lstrip("/") not in r.text
    assert one.json()["evidence"]["latest"] == {
        "api_name": "UpdateMetadata",
        "source": "broker-1/logs/kafka-request.log",
        "source_offset": 7,
    }
    assert listed.json()["data"][0]["evidence"] == one.json()["evidence"]
