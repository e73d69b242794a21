"""Multi-process reference cluster on 127.0.0.1: leadership changes, bounced brokers, fencing, KIP-291 routing.

Each test starts a controller and brokers as separate processes (``broker.cluster.launcher``) and always stops them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.cluster.http import ControllerClient
from broker.controller.requests import leader_and_isr_body, stop_replica_bodies
from broker.protocol import ApiKey
from tests.broker.cluster_helpers import (
    CLUSTER_POLL,
    CLUSTER_S,
    control_request,
    partition,
    running_cluster,
    status,
)
from tests.polling import wait_until

pytestmark = [pytest.mark.timeout(180), pytest.mark.integration, pytest.mark.slow]
STALE_BROKER_EPOCH = 77


def _create(bootstrap: str, topic: str, partitions: int, rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf)]).values():
        fut.result(30)


def _produce(bootstrap: str, topic: str, keys: range, partitions: int) -> list[int]:
    acked: list[int] = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in keys:
        p.produce(topic, key=str(i).encode(), value=b"v" * 20, partition=i % partitions,
                  on_delivery=lambda e, m: e is None and acked.append(int(m.key())))
    assert p.flush(60) == 0
    return acked


def _consume_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list[int]:
    # earliest: an offset reset while leadership churns (a full restart elects keep-0's leader six times in 7 s)
    # goes back to the start instead of skipping the partition's records (librdkafka's default is latest)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{topic}", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, q, 0) for q in range(partitions)])
        got: list[int] = []

        def consumed() -> bool:
            got.extend(int(m.key()) for m in c.consume(500, 0.5) if m.error() is None)
            return len(got) >= expected

        wait_until(consumed, 60, lambda: f"{expected} records of {topic} (got {len(got)})")
        return got
    finally:
        c.close()


def test_leadership_change_every_record_seen_once(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "c", brokers=3) as cluster:
        bs = cluster.bootstrap_servers()
        _create(bs, "lc", 2, 3)
        first = wait_until(lambda: partition(cluster, "lc", 0), CLUSTER_S, "leader of lc-0", **CLUSTER_POLL)
        assert sorted(first["replicas"]) == [1, 2, 3]
        acked = _produce(bs, "lc", range(400), 2)
        assert len(acked) == 400
        old = first["leader"]
        cluster.kill_broker(old)
        new = wait_until(lambda: (p := partition(cluster, "lc", 0)) and p["leader"] not in (old, -1) and p,
                         CLUSTER_S, "new leader of lc-0", **CLUSTER_POLL)
        assert new["leader_epoch"] > first["leader_epoch"]
        assert old not in new["isr"]
        acked += _produce(bs, "lc", range(400, 800), 2)
        assert len(acked) == 800
        got = _consume_all(bs, "lc", 2, 800)
        assert sorted(got) == list(range(800))  # every acknowledged record, each exactly once
        text = (Path(cluster.dir) / "controller" / "logs" / "state-change.log").read_text()
        assert re.search(rf"Changed partition lc-0 from OfflinePartition to OnlinePartition with state "
                         rf"LeaderAndIsr\(leader={new['leader']}, leaderEpoch={new['leader_epoch']}", text)
        assert re.search(r"\] INFO \[Controller id=\d+ epoch=\d+\] Sending LeaderAndIsr request to broker \d+ with "
                         r"\d+ become-leader and \d+ become-follower partitions", text)


def test_bounced_broker_detected_and_stale_requests_fenced(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "c", brokers=2, session_timeout_ms=6000) as cluster:
        before = status(cluster)
        old_epoch = before["brokers"]["2"]["epoch"]
        old_max = max(b["epoch"] for b in before["brokers"].values())
        cluster.kill_broker(2)
        cluster.start_broker(2)  # back before the session expires: a bounce, seen by the new epoch
        after = wait_until(lambda: (s := status(cluster))["brokers"]["2"]["epoch"] != old_epoch and s,
                           CLUSTER_S, "broker 2 re-registered", **CLUSTER_POLL)
        new_epoch = after["brokers"]["2"]["epoch"]
        assert new_epoch > old_max  # monotonic like a czxid
        log = (Path(cluster.dir) / "controller" / "logs" / "controller.log").read_text()
        assert "bounced brokers: 2, all live brokers: 1,2" in log
        # The controller fences the old incarnation: its heartbeat carries the old epoch.
        assert ControllerClient(cluster.controller_url).heartbeat(2, old_epoch) == STALE_BROKER_EPOCH

        port = cluster.ports[2]["CONTROLLER"]
        cid, cepoch = after["controller_id"], after["controller_epoch"]

        def lai(broker_epoch: int, max_epoch: int | None) -> int:
            body = leader_and_isr_body(5, controller_id=cid, controller_epoch=cepoch, broker_epoch=broker_epoch,
                                       partitions=[], live_leaders=[], max_broker_epoch=max_epoch)
            return int(control_request(port, ApiKey.LEADER_AND_ISR, 5, body)["error_code"])

        def stop(broker_epoch: int, max_epoch: int | None) -> int:
            [(_, body)] = stop_replica_bodies(3, controller_id=cid, controller_epoch=cepoch,
                                              broker_epoch=broker_epoch, partitions=[], max_broker_epoch=max_epoch)
            return int(control_request(port, ApiKey.STOP_REPLICA, 3, body)["error_code"])

        for send in (lai, stop):
            # per-broker epoch: a request built for the old incarnation is stale, one for the new one is not
            assert send(old_epoch, None) == STALE_BROKER_EPOCH
            assert send(new_epoch, None) == 0
            # max_broker_epoch: built before the bounce (max < new epoch) -> stale; after it -> accepted
            assert send(-1, old_max) == STALE_BROKER_EPOCH
            assert send(-1, new_epoch) == 0
        # a stale controller (older controller epoch) is refused whatever its broker epochs say
        old_controller = leader_and_isr_body(5, controller_id=cid, controller_epoch=cepoch - 1, broker_epoch=-1,
                                             partitions=[], live_leaders=[], max_broker_epoch=new_epoch)
        assert control_request(port, ApiKey.LEADER_AND_ISR, 5, old_controller)["error_code"] == 11
        server_log = (cluster.broker_dir(2) / "logs" / "server.log").read_text()
        assert f"max broker epoch:{old_max}) when the current broker epoch is {new_epoch}" in server_log


@pytest.mark.parametrize(("controller_side", "broker_side"), [(False, False), (False, True), (True, False),
                                                            (True, True)],
                         ids=["old-old", "old-controller-new-broker", "new-controller-old-broker", "new-new"])
def test_kip291_migration_combinations(tmp_path: Path, controller_side: bool, broker_side: bool) -> None:
    with running_cluster(tmp_path / "c", brokers=1, controller_control_listener=controller_side,
                         brokers_advertise_control=broker_side) as cluster:
        _create(cluster.bootstrap_servers(), "k", 1, 1)
        wait_until(lambda: (p := partition(cluster, "k", 0)) and p["leader"] == 1,
                   CLUSTER_S, "leader of k-0", **CLUSTER_POLL)
        log_path = Path(cluster.dir) / "controller" / "logs" / "controller.log"
        ports = cluster.ports[1]
        expected = ports["CONTROLLER"] if controller_side and broker_side else ports["PLAINTEXT"]
        text = wait_until(lambda: (t := log_path.read_text()) and "connected to" in t and t,
                          CLUSTER_S, "controller connection line", **CLUSTER_POLL)
        assert f"connected to 127.0.0.1:{expected} (id: 1 rack: null)" in text
        other = ports["CONTROLLER"] if expected == ports["PLAINTEXT"] else ports["PLAINTEXT"]
        assert f"connected to 127.0.0.1:{other} " not in text
        acked = _produce(cluster.bootstrap_servers(), "k", range(20), 1)
        assert len(acked) == 20


def test_per_broker_update_metadata_mode_replicates(tmp_path: Path) -> None:
    """controller.update.metadata.cached=false: per-broker epochs in every control request; the cluster works."""
    with running_cluster(tmp_path / "c", brokers=2, cached_update_metadata=False) as cluster:
        _create(cluster.bootstrap_servers(), "pb", 2, 2)
        assert len(_produce(cluster.bootstrap_servers(), "pb", range(100), 2)) == 100
        wait_until(lambda: all(len(p["isr"]) == 2 for p in status(cluster)["partitions"]),
                   CLUSTER_S, "ISR of both", **CLUSTER_POLL)
        assert status(cluster)["cached_update_metadata"] is False
        assert sorted(_consume_all(cluster.bootstrap_servers(), "pb", 2, 100)) == list(range(100))


def test_full_cluster_restart_keeps_every_record_and_restores_the_isr(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "c", brokers=3) as cluster:
        _create(cluster.bootstrap_servers(), "keep", 3, 3)
        wait_until(lambda: all(p["leader"] >= 0 for p in status(cluster)["partitions"]),
                   CLUSTER_S, "leaders", **CLUSTER_POLL)
        assert len(_produce(cluster.bootstrap_servers(), "keep", range(600), 3)) == 600
    with running_cluster(tmp_path / "c", brokers=3) as cluster:  # same directory: persisted controller state, logs
        wait_until(lambda: all(p["leader"] >= 0 for p in status(cluster)["partitions"]),
                   CLUSTER_S, "leaders after the restart", **CLUSTER_POLL)
        assert sorted(set(_consume_all(cluster.bootstrap_servers(), "keep", 3, 600))) == list(range(600))
        wait_until(lambda: all(len(p["isr"]) == 3 for p in status(cluster)["partitions"]),
                   60, "ISR restored", **CLUSTER_POLL)
