"""GET /clusters/{cluster}/roll-safety and `planewatch roll-check` over a real Delta lake: the same verdict from the
same tables."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from planewatch.cli import main
from schemas.tables import CONTROL_REQUEST_LATENCY, METRIC_SAMPLES
from tests.api.conftest import AUTH, ClientFactory
from tests.api.lake import control_request, samples, write

KRAFT_HEALTHY = {(n, "RaftCurrentLeader"): 100.0 for n in (1, 2, 3, 100)} | {
    (1, "UnderReplicatedPartitions"): 0.0, (2, "UnderReplicatedPartitions"): 0.0, (3, "UnderReplicatedPartitions"): 0.0,
    (1, "UnderMinIsrPartitionCount"): 0.0, (2, "UnderMinIsrPartitionCount"): 0.0, (3, "UnderMinIsrPartitionCount"): 0.0,
    (1, "MetadataApplyLagMs"): 90.0, (2, "MetadataApplyLagMs"): 90.0, (3, "MetadataApplyLagMs"): 90.0,
    (100, "ActiveControllerCount"): 1.0, (100, "OfflinePartitionsCount"): 0.0, (100, "FencedBrokerCount"): 0.0,
    (100, "PreferredReplicaImbalanceCount"): 0.0}


def scrape(lake: Path, values: dict[tuple[int, str], float], at: datetime) -> None:
    rows = []
    for (node, signal), v in values.items():
        (row,) = samples(node, signal, at, 1)
        rows.append({**row, "value": v})
    write(lake, METRIC_SAMPLES, rows)


def test_the_verdict_follows_the_lake(make_client: ClientFactory, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    lake = tmp_path / "lake"
    now = datetime.now(UTC)
    scrape(lake, KRAFT_HEALTHY, now - timedelta(seconds=5))
    client = make_client(lake)
    body = client.get("/clusters/c1/roll-safety?broker_id=2", headers=AUTH).json()
    assert body["verdict"] == "safe", body
    assert body["mode"] == "kraft"
    assert body["nodes"] == [1, 2, 3, 100]
    assert body["broker_id"] == 2
    assert {r["check"] for r in body["reasons"]} >= {"OFFLINE_PARTITIONS", "QUORUM_LEADER", "METADATA_LAG"}
    # a restart 2 s ago: the 5 s old samples say nothing of the cluster since
    restarted = (now - timedelta(seconds=2)).isoformat()
    assert client.get("/clusters/c1/roll-safety", params={"since": restarted}, headers=AUTH).json()["verdict"] == \
        "unknown"
    assert main(["roll-check", "--cluster", "c1", "--lake", str(lake), "--since", restarted]) == 2
    capsys.readouterr()
    assert main(["roll-check", "--cluster", "c1", "--lake", str(lake)]) == 0
    assert "c1: SAFE" in capsys.readouterr().out

    # broker 3 restarted: its replicas are not back in the ISR yet, a LeaderAndIsr to it is in flight
    scrape(lake, KRAFT_HEALTHY | {(1, "UnderReplicatedPartitions"): 4.0}, now - timedelta(seconds=1))
    write(lake, CONTROL_REQUEST_LATENCY, [control_request(1, 3, 0.0, status="in_flight",
                                                          sent_ts=now - timedelta(seconds=3), handling_ts=None,
                                                          finished_ts=None, date=now.date())])
    body = client.get("/clusters/c1/roll-safety", headers=AUTH).json()
    assert body["verdict"] == "wait"
    waiting = {r["check"]: r for r in body["reasons"] if r["status"] == "wait"}
    assert waiting["UNDER_REPLICATED"]["value"] == 4.0
    assert waiting["UNDER_REPLICATED"]["broker_id"] == 1
    assert waiting["CONTROL_REQUESTS"]["broker_id"] == 3
    assert main(["roll-check", "--cluster", "c1", "--lake", str(lake), "--json"]) == 1
    printed = json.loads(capsys.readouterr().out)
    assert printed["verdict"] == "wait"
    # a threshold the caller sets
    loose = client.get("/clusters/c1/roll-safety?max_under_replicated=10&in_flight_window_s=1", headers=AUTH).json()
    assert loose["verdict"] == "safe"


def test_stale_or_missing_data_is_never_safe(make_client: ClientFactory, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    scrape(lake, KRAFT_HEALTHY, datetime.now(UTC) - timedelta(seconds=200))
    client = make_client(lake)
    body = client.get("/clusters/c1/roll-safety", headers=AUTH).json()
    assert body["verdict"] == "unknown"
    assert {r["check"] for r in body["reasons"] if r["status"] == "unknown"} == {"NODES_FRESH"}
    assert client.get("/clusters/other/roll-safety", headers=AUTH).json()["verdict"] == "unknown"
    assert main(["roll-check", "--cluster", "c1", "--lake", str(lake)]) == 2
    assert main(["roll-check", "--cluster", "c1", "--lake", str(tmp_path / "empty")]) == 2


def test_a_configured_cluster_that_cannot_be_described_is_unknown_never_safe(
        make_client: ClientFactory, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The lake says safe; the Admin API connection configured for the cluster answers nothing: unknown, with the
    reason, in the API and in roll-check, and no librdkafka line per failed connection on the terminal; a malformed
    connections file is the service's error, named."""
    from planewatch.kafka.cluster import free_port

    lake = tmp_path / "lake"
    scrape(lake, KRAFT_HEALTHY, datetime.now(UTC) - timedelta(seconds=5))
    admin = tmp_path / "admin.yaml"
    admin.write_text(f"clusters:\n  c1:\n    bootstrap.servers: 127.0.0.1:{free_port()}\n")
    client = make_client(lake, admin_clusters=admin)
    body = client.get("/clusters/c1/roll-safety?broker_id=2", headers=AUTH).json()
    assert body["verdict"] == "unknown", body
    (reason,) = [r for r in body["reasons"] if r["check"] == "ADMIN_API"]
    assert reason["status"] == "unknown"
    assert "could not be described" in reason["text"]
    assert "Connection refused" in reason["text"]  # librdkafka's own line, kept as the reason's detail
    assert main(["roll-check", "--cluster", "c1", "--lake", str(lake), "--admin-config", str(admin)]) == 2
    out, err = capfd.readouterr()  # the process's own descriptors: librdkafka writes to fd 2 itself
    assert "ADMIN_API" in out
    assert "|FAIL|" not in err, err[:500]
    assert "Connect to" not in err
    admin.write_text("clusters: [not, a, mapping]\n")
    assert client.get("/clusters/c1/roll-safety", headers=AUTH).status_code == 500
    assert main(["roll-check", "--cluster", "c1", "--lake", str(lake), "--admin-config", str(admin)]) == 4
    assert "expected a mapping" in capfd.readouterr().err


def test_the_api_reads_the_per_broker_gauges_from_the_lake(make_client: ClientFactory, tmp_path: Path) -> None:
    """GET /clusters/{cluster}/roll-safety over a Delta lake: the `broker` label of the controller's gauges names
    the broker in the reason (the SQL reads the label), and the heartbeat threshold is a query parameter."""
    lake = tmp_path / "lake"
    at = datetime.now(UTC) - timedelta(seconds=3)
    rows = []
    for (node, signal), v in KRAFT_HEALTHY.items():
        (row,) = samples(node, signal, at, 1)
        rows.append({**row, "value": v})
    for b, state, beat in ((1, 30.0, 20.0), (2, 30.0, 5200.0), (3, 10.0, 9000.0)):
        for signal, v in (("BrokerRegistrationState", state), ("TimeSinceLastHeartbeatReceivedMs", beat)):
            (row,) = samples(100, signal, at, 1, labels=[("broker", str(b))])
            rows.append({**row, "value": v, "mbean": f"kafka.controller:type=KafkaController,name={signal}"})
    write(lake, METRIC_SAMPLES, rows)
    client = make_client(lake)
    body = client.get("/clusters/c1/roll-safety", headers=AUTH).json()
    assert body["verdict"] == "wait", body
    mine = [(r["broker_id"], r["signal"], r["value"]) for r in body["reasons"] if r["check"] == "BROKER_REGISTRATION"]
    assert mine == [(3, "BrokerRegistrationState", 10.0), (2, "TimeSinceLastHeartbeatReceivedMs", 5200.0)]
    loose = client.get("/clusters/c1/roll-safety?max_heartbeat_age_ms=9000", headers=AUTH).json()
    assert [r["broker_id"] for r in loose["reasons"] if r["check"] == "BROKER_REGISTRATION"] == [3]
