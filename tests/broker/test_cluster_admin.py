"""Admin APIs the reference cluster's controller carries out, with real clients: electing the preferred leader
after a leadership move, reassigning a partition's replicas (the new replica catches up, the old one is dropped),
adding partitions to a replicated topic.

Each test starts a controller and brokers as separate processes (``broker.cluster.launcher``) and always stops them.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import ElectionType, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)
from kafka import KafkaAdminClient
from kafka.structs import TopicPartition as KTopicPartition

from tests.broker.cluster_helpers import CLUSTER_POLL, CLUSTER_S, partition, running_cluster
from tests.polling import wait_until

pytestmark = [pytest.mark.timeout(180), pytest.mark.integration, pytest.mark.slow]
CALL_TIMEOUT_S = 30.0


def _produce(bootstrap: str, topic: str, n: int, partition_index: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(n):
        p.produce(topic, value=str(i).encode(), partition=partition_index)
    assert p.flush(60) == 0


def test_preferred_leader_election_after_a_leadership_move_and_new_partitions(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "c", brokers=2, session_timeout_ms=6000) as cluster:
        bs = cluster.bootstrap_servers()
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic("pe", 1, 2)])["pe"].result(CALL_TIMEOUT_S)
        first = wait_until(lambda: partition(cluster, "pe", 0), CLUSTER_S, "leader of pe-0", **CLUSTER_POLL)
        preferred = first["replicas"][0]
        assert first["leader"] == preferred
        cluster.kill_broker(preferred)
        wait_until(lambda: (p := partition(cluster, "pe", 0)) and p["leader"] not in (preferred, -1) and p,
                   CLUSTER_S, "leadership moved", **CLUSTER_POLL)
        cluster.start_broker(preferred)
        wait_until(lambda: preferred in (partition(cluster, "pe", 0) or {}).get("isr", []) or None,
                   60, "the preferred replica back in the ISR", **CLUSTER_POLL)

        results = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("pe", 0)]).result(CALL_TIMEOUT_S)
        assert results == {TopicPartition("pe", 0): None}
        wait_until(lambda: (partition(cluster, "pe", 0) or {}).get("leader") == preferred or None,
                   CLUSTER_S, "the preferred replica leads", **CLUSTER_POLL)
        again = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("pe", 0)]).result(CALL_TIMEOUT_S)
        assert again[TopicPartition("pe", 0)].code() == 84  # ELECTION_NOT_NEEDED
        _produce(bs, "pe", 10, 0)  # the elected leader serves

        admin.create_partitions([NewPartitions("pe", 3)])["pe"].result(CALL_TIMEOUT_S)
        added = [wait_until(lambda q=q: partition(cluster, "pe", q),
                            CLUSTER_S, f"leader of pe-{q}", **CLUSTER_POLL) for q in (1, 2)]
        assert all(len(p["replicas"]) == 2 for p in added)
        for q in (1, 2):
            _produce(bs, "pe", 5, q)


def test_reassigned_replica_catches_up_and_the_old_one_is_dropped(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "c", brokers=3) as cluster:
        bs = cluster.bootstrap_servers()
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic("ra", 1, 2)])["ra"].result(CALL_TIMEOUT_S)
        before = wait_until(lambda: partition(cluster, "ra", 0), CLUSTER_S, "leader of ra-0", **CLUSTER_POLL)
        _produce(bs, "ra", 300, 0)
        [outside] = [b for b in (1, 2, 3) if b not in before["replicas"]]
        dropped = before["replicas"][1]
        target = [before["replicas"][0], outside]

        kp = KafkaAdminClient(bootstrap_servers=bs)
        try:
            ra0 = KTopicPartition("ra", 0)
            assert kp.alter_partition_reassignments({ra0: target}) == {ra0: None}
            done = wait_until(lambda: (p := partition(cluster, "ra", 0))
                              and p["replicas"] == target and sorted(p["isr"]) == sorted(target) and p,
                              60, "reassignment complete", **CLUSTER_POLL)
            assert kp.list_partition_reassignments() == {}
        finally:
            kp.close()
        assert done["leader"] in target
        moved_log = cluster.broker_dir(outside) / "data" / "ra-0"
        wait_until(lambda: sum(f.stat().st_size for f in moved_log.glob("*.log")) > 0 or None,
                   CLUSTER_S, "the new replica holds every record", **CLUSTER_POLL)
        wait_until(lambda: not (cluster.broker_dir(dropped) / "data" / "ra-0").exists() or None,
                   CLUSTER_S, "the dropped replica deleted its copy", **CLUSTER_POLL)
        _produce(bs, "ra", 10, 0)


def _gauge(port: int, metric: str) -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=CALL_TIMEOUT_S) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith(metric + " ") or line.startswith(metric + "{"):
                return float(line.rsplit(" ", 1)[1])
    return None


@pytest.mark.timeout(180)
def test_under_min_isr_gauges_follow_the_topics_min_insync_replicas(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "c", brokers=1) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers()})
        admin.create_topics([NewTopic("mi", 1, 1)])["mi"].result(CALL_TIMEOUT_S)
        wait_until(lambda: (p := partition(cluster, "mi", 0)) and p["leader"] == 1 and p,
                   CLUSTER_S, "mi-0 led", **CLUSTER_POLL)
        port = cluster.ports[1]["prometheus"]
        under = "kafka_server_replicamanager_underminisrpartitioncount"
        at = "kafka_server_replicamanager_atminisrpartitioncount"
        wait_until(lambda: _gauge(port, at) == 1.0 or None,
                   CLUSTER_S, "mi-0 at its min ISR (1, the default)", **CLUSTER_POLL)
        assert _gauge(port, under) == 0.0
        resource = ConfigResource("topic", "mi", incremental_configs=[
            ConfigEntry("min.insync.replicas", "2", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(CALL_TIMEOUT_S)
        wait_until(lambda: _gauge(port, under) == 1.0 or None,
                   CLUSTER_S, "mi-0 under its min ISR of 2", **CLUSTER_POLL)
        assert _gauge(port, at) == 0.0
