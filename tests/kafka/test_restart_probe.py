"""The roll probe against Apache Kafka itself: each broker's pre-restart partition lists equal what a second Admin
client (kafka-python) shows at that moment, on 3.9.1 (ZooKeeper mode) and 4.4.0 (KRaft); a killed broker is waited
for and its RF=1 partitions are offline; a restarted broker is recovered once every replica is back in sync; a
controller may restart only while a caught-up majority remains (a voter paused with SIGSTOP lags); an unreachable
cluster is unknown."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient

from api.kafka_admin import AdminUnavailable, describe_cluster
from pipelines.restart_probe import admin_reasons
from pipelines.roll_safety import Reason
from planewatch.kafka.cluster import KafkaCluster, KafkaClusterSpec, free_port
from schemas.roll_safety import CheckStatus, RollCheck
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

# The console script of the environment running the tests.
PLANEWATCH = Path(sys.executable).with_name("planewatch")

# brokers' metadata caches agree within this after a change (ZooKeeper mode: UpdateMetadata is sent to each broker)
METADATA_CONVERGED_S = 20

# topic -> (partitions, replication factor, min.insync.replicas): one of each consequence on three brokers
TOPICS = {"rf1": (3, 1, 1), "edge": (3, 2, 2), "wide": (3, 3, 2)}


def _start(tmp: Path, version: str, controllers: int = 1) -> KafkaCluster:
    cluster = KafkaCluster(KafkaClusterSpec(tmp, version, brokers=3, controllers=controllers, jmx_exporter=False))
    cluster.start()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers()})
    futures = admin.create_topics([NewTopic(t, n, rf, config={"min.insync.replicas": str(m)})
                                   for t, (n, rf, m) in TOPICS.items()])
    for f in futures.values():
        f.result(60)
    want = sum(n for n, _, _ in TOPICS.values())

    def led() -> bool:  # a created topic's partitions get their leaders and full ISRs a moment later
        got = describe_cluster({"bootstrap.servers": cluster.bootstrap_servers()}).partitions
        mine = [p for p in got if p.topic in TOPICS]
        return len(mine) == want and all(p.leader >= 0 and len(p.isr) == len(p.replicas) for p in mine)

    wait_until(led, timeout=60, what="the test topics led and fully in sync")
    return cluster


@pytest.fixture(scope="module", params=["3.9.1", "4.4.0"])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """One cluster per version for the module (its tests run in file order: the killed broker's last)."""
    c = _start(tmp_path_factory.mktemp("probe") / "c", request.param)
    try:
        yield c
    finally:
        c.stop()


def _oracle(bootstrap: str, broker: int) -> dict[RollCheck, tuple[str, ...]]:
    """What kafka-python's Admin client shows: the partitions whose only in-sync replica is `broker`, and those
    whose ISR without it is below the topic's min.insync.replicas."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="oracle")
    try:
        topics: list[dict[str, Any]] = admin.describe_topics(list(TOPICS))
    finally:
        admin.close()
    offline, blocked = [], []
    for t in topics:
        for p in t["partitions"]:
            isr = list(p["isr_nodes"])  # Kafka's Metadata response field names (kafka-python 3)
            if broker not in isr:
                continue
            name = f"{t['name']}-{p['partition_index']}"
            if isr == [broker]:
                offline.append(name)
            elif len(isr) - 1 < TOPICS[t["name"]][2]:
                blocked.append(name)
    return {RollCheck.RESTART_OFFLINE: tuple(sorted(offline)), RollCheck.RESTART_UNDER_MIN_ISR: tuple(sorted(blocked))}


def _reasons(c: KafkaCluster, node: int) -> dict[RollCheck, list[Reason]]:
    out: dict[RollCheck, list[Reason]] = {}
    for r in admin_reasons(describe_cluster({"bootstrap.servers": c.bootstrap_servers()}), None, node):
        out.setdefault(r.check, []).append(r)
    return out


def _lists(c: KafkaCluster, broker: int) -> tuple[dict[RollCheck, list[Reason]], dict[RollCheck, tuple[str, ...]]]:
    """planewatch's reasons and the oracle's lists once they read the same metadata: each asks whichever broker
    its client picks, and in ZooKeeper mode a broker's metadata cache follows the controller's UpdateMetadata a
    moment later than another's (the lists differed for one read in a run)."""
    seen: list[tuple[dict[RollCheck, list[Reason]], dict[RollCheck, tuple[str, ...]]]] = []

    def agree() -> bool:
        got, want = _reasons(c, broker), _oracle(c.bootstrap_servers(), broker)
        seen[:] = [(got, want)]
        return all(len(got.get(k, [])) == 1 and got[k][0].partitions == v for k, v in want.items())

    try:
        wait_until(agree, timeout=METADATA_CONVERGED_S, what=f"broker {broker}'s lists read the same metadata")
    except AssertionError:
        pass  # the assertions below say what differs
    return seen[0]


def test_each_brokers_pre_restart_lists_equal_what_the_admin_api_shows(cluster: KafkaCluster) -> None:
    for broker in (1, 2, 3):
        got, want = _lists(cluster, broker)
        for check, names in want.items():
            (reason,) = got[check]
            assert reason.partitions == names, (broker, check)
            assert reason.status == (CheckStatus.unsafe if names else CheckStatus.ok)
        assert want[RollCheck.RESTART_OFFLINE]  # every broker hosts an RF=1 partition: the check is exercised
        assert got[RollCheck.REPLICAS_IN_SYNC][0].status == CheckStatus.ok


def test_planewatch_roll_stops_before_a_restart_that_waiting_cannot_make_safe(cluster: KafkaCluster,
                                                                             tmp_path: Path) -> None:
    """`rf1` (one replica) and `edge` (two replicas for a min.insync.replicas of two) put every broker's restart at
    risk however long one waits: the roll stops at its first gate, unsafe, and restarts nothing."""
    marker = tmp_path / "restarted"
    done = subprocess.run([str(PLANEWATCH), "roll", "--cluster", "probe", "--bootstrap-server",
                           cluster.bootstrap_servers(), "--restart-cmd", f"touch {marker}", "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    steps = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [s["step"] for s in steps] == ["plan", "gate", "stopped"], done.stderr[-3000:]
    assert steps[-1]["why"] == "unsafe"
    assert any("RESTART_OFFLINE" in r for r in steps[-1]["reasons"])
    assert not marker.exists()


def test_a_killed_broker_is_waited_for_and_recovered_once_back_in_sync(cluster: KafkaCluster) -> None:
    cluster.kill_broker(3)

    def gone() -> bool:  # until the controller notices, requests routed to broker 3 time out: unknown meanwhile
        try:
            return 3 not in describe_cluster({"bootstrap.servers": cluster.bootstrap_servers()}, timeout=5).brokers
        except AdminUnavailable:
            return False

    wait_until(gone, timeout=60, what="broker 3 gone from DescribeCluster")
    got = _reasons(cluster, 3)
    statuses = {(r.check, r.status) for rs in got.values() for r in rs}
    assert (RollCheck.RESTART_OFFLINE, CheckStatus.wait) in statuses  # not registered: down
    assert (RollCheck.RESTART_OFFLINE, CheckStatus.unsafe) in statuses  # its RF=1 partitions have no leader
    cluster.start_broker(3)
    cluster.write_json()

    def recovered() -> bool:
        try:
            got = _reasons(cluster, 3)
        except AdminUnavailable:  # the restarting broker chosen to answer: unknown meanwhile
            return False
        return RollCheck.REPLICAS_IN_SYNC in got and got[RollCheck.REPLICAS_IN_SYNC][0].status == CheckStatus.ok

    wait_until(recovered, timeout=120, what="broker 3's replicas back in sync")


def test_a_controller_may_restart_only_while_a_caught_up_majority_remains(tmp_path: Path) -> None:
    c = _start(tmp_path / "k", "4.4.0", controllers=3)
    paused: int | None = None
    try:
        quorum = describe_cluster({"bootstrap.servers": c.bootstrap_servers()}).quorum
        assert quorum is not None
        assert len(quorum.voters) == 3
        followers = sorted(v.node for v in quorum.voters if v.node != quorum.leader)
        (r,) = _reasons(c, followers[0])[RollCheck.CONTROLLER_QUORUM]
        assert r.status == CheckStatus.ok, r.text
        paused = followers[1]
        c.controllers[paused].popen.send_signal(signal.SIGSTOP)  # a voter that stops fetching: it lags

        def lagging_blocks_the_other() -> bool:
            (r,) = _reasons(c, followers[0])[RollCheck.CONTROLLER_QUORUM]
            return r.status == CheckStatus.unsafe

        wait_until(lagging_blocks_the_other, timeout=60, what="the paused voter no longer caught up")
        (r,) = _reasons(c, paused)[RollCheck.CONTROLLER_QUORUM]
        assert r.status == CheckStatus.ok, r.text  # restarting the lagging voter itself keeps the majority
    finally:
        if paused is not None:
            c.controllers[paused].popen.send_signal(signal.SIGCONT)
        c.stop()


def test_an_unreachable_cluster_is_unknown_within_the_timeout() -> None:
    with pytest.raises(AdminUnavailable) as err:
        describe_cluster({"bootstrap.servers": f"127.0.0.1:{free_port()}"}, timeout=2.0)
    (r,) = admin_reasons(None, str(err.value), 1)
    assert r.status == CheckStatus.unknown
