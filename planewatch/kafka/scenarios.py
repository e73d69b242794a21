"""The incident scenarios on Apache Kafka itself: the mechanisms Kafka has, caused the way an operator would meet them.

=========================================  ====================================================================
``healthy``                                3 brokers, replicated topic, bounded acks=all load, all consumed back
``produce-backlog-with-control-plane``     KIP-291 (ZooKeeper mode): request handlers saturated by produce
``produce-backlog-without-control-plane``  requests the broker must recompress (gzip topic, uncompressed 1 MB
                                           batches, one I/O thread), then a broker is killed: the controller's
                                           LeaderAndIsr/UpdateMetadata queue behind the produce backlog unless
                                           the brokers have a control-plane listener
``connection-storm``                       KIP-402: thousands of connections against a listener capped by
                                           ``listener.name.plaintext.max.connections``: the acceptor waits for
                                           slots (AcceptorBlockedPercent)
``broker-bounce``                          kill -9 a broker, restart it (new broker epoch = ZooKeeper czxid); a
                                           LeaderAndIsr carrying the old epoch is fenced (STALE_BROKER_EPOCH)
``controller-failover``                    kill -9 the broker that is the active controller under load: another
                                           broker wins the election, the cluster goes on (nothing to alert)
``metadata-lag`` (KRaft)                   the controller quorum is paused (SIGSTOP) under load: brokers stop
                                           applying metadata (last-applied-record-lag-ms grows) until it resumes
``broker-fenced`` (KRaft)                  a broker is paused (SIGSTOP: a long GC pause, a frozen VM) under load
                                           past its session timeout: the active controller fences it and moves
                                           leadership away, then unfences it when its heartbeats resume
``controller-overload`` (KRaft)            bursts of topic creation (thousands of partitions a request) keep the
                                           active controller's single event thread busy: broker heartbeats wait in
                                           its event queue past their deadline and time out (KAFKA-15019)
``quorum-unstable`` (KRaft)                the active controller of three voters paused until another is elected,
                                           three times under load
``elections`` (KRaft, 4.1+)                every broker shut down cleanly in turn, then brought back: an unclean
                                           election on a topic that allows it, an election from the eligible
                                           leader replicas (KIP-966) on one that does not
``metadata-publish-slow`` (KRaft)          one broker starved of CPU (cgroup quota; root) while topic-creation
                                           waves grow the metadata log: it applies the log late, its peers do not
``rolling-restart-timer`` / ``-gated``     every broker restarted once under acks=all load, on a fixed timer or
                                           each after `planewatch roll-check` says safe (planewatch.kafka.rolls)
``rolling-restart-driven``                 `planewatch roll` restarts every node (KRaft: three controllers too),
                                           each after the Admin API's verdict says safe
``rolling-restart-isr-gated``              each broker restarted once every ISR is full again, as Strimzi rolls
=========================================  ====================================================================

KAFKA-6974's asynchronous fetcher and the cacheable UpdateMetadata were never shipped by Apache Kafka; their
scenarios run on the reference broker only. Every scenario prints the same JSON-lines timeline as the reference
ones (``broker.scenarios.base.Timeline``), starts its cluster under ``DIR/cluster`` and stops it at the end.
"""

from __future__ import annotations

import re
import resource
import signal
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from broker.protocol.error_codes import ErrorCode
from broker.scenarios.base import Load, Timeline, open_connections, verify_load, wait_until
from planewatch.kafka.cluster import KafkaCluster, KafkaSetup
from planewatch.kafka.rolls import ROLLS, rolling_restart
from planewatch.kafka.runs import CLIENT_LOG, admin_client, create_topic, started

__all__ = ["KRAFT_ONLY", "SCENARIOS", "ZOOKEEPER_ONLY", "scenario_names"]

# produce-backlog: what makes the request handler the bottleneck. The topic's compression.type (gzip) differs from
# the producers' (none), so the handler recompresses every batch; one I/O thread; large batches from many
# connections (a broker processes one request per connection at a time: the queue holds at most one per connection).
# Followers fetch through the same saturated queue: Kafka's default replica.lag.time.max.ms (30 s since 2.5) keeps
# them in the ISR through the backlog (at 10 s the ISR shrank to the leader and killing it left partitions offline),
# and its default ZooKeeper session (18 s) keeps a starved broker registered.
BACKLOG_PRODUCERS = 12
BACKLOG_VALUE_BYTES = 100_000
BACKLOG_SECONDS = 30.0
# The with-control-plane run also creates a topic of this many partitions (replication factor 2, over the two
# brokers left) under the backlog: the control plane hands its LeaderAndIsr to the handler at once, and the handler
# creates the partitions' logs on brokers the backlog keeps busy, so the time goes to the handler, not the queue.
# Apache Kafka 3.9.1 here: 100 partitions took 5.1 and 6.4 s in the two handlers (3 ms queued), against the 5 s
# DELAYED_LEADER_AND_ISR warning; 150 leave a margin.
UNDER_LOAD_PARTITIONS = 150
BACKLOG_BROKER_CONFIG = {"num.io.threads": "1", "queued.max.requests": "100", "message.max.bytes": "2000000",
                         "replica.lag.time.max.ms": "30000", "zookeeper.session.timeout.ms": "18000"}
# connection-storm: the PLAINTEXT listener's cap (the acceptor blocks at it) and the storm's size.
STORM_LISTENER_MAX_CONNECTIONS = 300
STORM_CONNECT_TIMEOUT_S = 3.0
# how long the storm holds the listener at its cap, closing one connection every STORM_CHURN_S
STORM_HOLD_S = 12.0
STORM_CHURN_S = 0.25
# the cluster stays up this long after an incident so that a scraper at 5 s intervals reads the last marks; a
# scraper at a longer interval gets that interval and SCRAPE_MARGIN_S more (_settle)
SCRAPE_SETTLE_S = 8.0
SCRAPE_MARGIN_S = 5.0
# metadata-lag: how long the KRaft controller stays paused (METADATA_APPLY_LAG warns at 5 s; scrapes every 5 s).
CONTROLLER_PAUSE_S = 20.0
# broker-fenced: how long the broker stays paused. Past broker.session.timeout.ms (Kafka's default 9 s) without a
# heartbeat (sent every broker.heartbeat.interval.ms, 2 s) the active controller fences it; 20 s leaves a scrape of
# the controller at 15 s intervals a sample while it is fenced.
BROKER_PAUSE_S = 20.0
# controller-overload: topic-creation bursts. Each wave asks for OVERLOAD_TOPICS topics of OVERLOAD_PARTITIONS
# partitions (one replica: the brokers' share stays light) in one CreateTopics request; the controller builds every
# partition's records on its event thread, and a heartbeat queued behind that for more than half the heartbeat
# interval (1 s of Kafka's 2 s) times out. Three waves of 5,000 partitions timed out a heartbeat on Apache Kafka
# 4.4.0 here (2 cores); five give margin.
OVERLOAD_WAVES = 5
OVERLOAD_TOPICS = 25
OVERLOAD_PARTITIONS = 200
OVERLOAD_TIMEOUT_S = 180.0
# quorum-unstable: a quorum of three voters whose active controller is paused QUORUM_PAUSES times, each until another
# voter has won an election (controller.quorum.fetch.timeout.ms, 2 s by default, then the election), then resumed:
# with the cluster's first election, four within a minute or two (QUORUM_UNSTABLE warns at three in 10 minutes).
QUORUM_VOTERS = 3
QUORUM_PAUSES = 3
QUORUM_ELECTION_TIMEOUT_S = 30.0
# metadata-publish-slow: one broker starved of CPU (a throttled container, a noisy neighbour) while topic-creation
# waves grow the metadata log: the others apply it at once, the starved one falls behind. At 5 % of a core, 3 waves
# of 20 topics x 100 partitions took broker 3 of Apache Kafka 4.4.0 to 185 s behind (the others under 1 s once the
# waves were done); its heartbeats still reached the controller (not fenced).
STARVED_CPU_SHARE = 0.05
STARVE_WAVES = 3
STARVE_TOPICS = 20
STARVE_PARTITIONS = 100
# how long the broker stays starved after the waves: a few scrapes at 30 s see it behind
STARVE_HOLD_S = 45.0
# elections: two topics of three replicas with min.insync.replicas=2 (one also with unclean leader election), every
# broker shut down cleanly one after another, then brought back: each topic's leaders come back from a broker the
# other election kind allows. ELR (KIP-966) is on in a cluster formatted by Kafka 4.1+ (eligible.leader.replicas
# .version=1 is the default feature level of 4.1's metadata versions and later).
ELECTION_MIN_ISR = "2"
ELECTION_PARTITIONS = 3
ELECTION_TIMEOUT_S = 90.0
_ELECTED = re.compile(r"\[QuorumController id=(\d+)\] Becoming the active controller at epoch (\d+)")
# after the resume: the broker catches up, is unfenced and rejoins the ISR (Kafka's defaults)
UNFENCE_TIMEOUT_S = 90.0
_EPOCH = re.compile(r"Registered broker (\d+) at path \S+ with addresses: .*czxid \(broker epoch\): (\d+)")
_CONTROLLER_EPOCH = re.compile(r"\[Controller id=(\d+) epoch=(\d+)\]")


def _settle(setup: KafkaSetup) -> float:
    """How long a cluster stays up after its incident: the scrapers' next scrape must find it."""
    return max(SCRAPE_SETTLE_S, setup.scrape_interval_s + SCRAPE_MARGIN_S)


def leaders(admin: Any, topic: str) -> dict[int, int]:
    """partition -> leader (-1: none) from the cluster's metadata; {} while the metadata request times out (a
    saturated data plane answers Metadata late too)."""
    from confluent_kafka import KafkaException

    try:
        md = admin.list_topics(topic, timeout=10)
    except KafkaException:
        return {}
    return {pid: p.leader for pid, p in md.topics[topic].partitions.items()}


def _broker_count(admin: Any) -> int:
    """How many brokers the cluster's metadata lists (0 while a Metadata request times out)."""
    from confluent_kafka import KafkaException

    try:
        return len(admin.list_topics(timeout=10).brokers)
    except KafkaException:
        return 0


def controller_id(cluster: KafkaCluster) -> int:
    """The active controller's id as the cluster's metadata names it."""
    return int(admin_client(cluster).list_topics(timeout=10).controller_id)


def healthy(d: Path, tl: Timeline, setup: KafkaSetup) -> None:
    """A healthy cluster under a bounded load: nothing to alert on."""
    with started(setup.spec(d / "cluster"), tl) as cluster:
        create_topic(cluster, "healthy", 6, 3)
        tl.emit("topic-created", topic="healthy", partitions=6, replication_factor=3)
        load = Load(cluster.bootstrap_servers(), "healthy", 6, max_records=20_000, max_seconds=20, rate=1000).start()
        tl.emit("load-started", topic="healthy")
        load.wait()
        tl.emit("load-stopped", acked=len(load.acked))
        verify_load(tl, cluster.bootstrap_servers(), "healthy", 6, load)


class _BacklogLoad:
    """Many producer connections sending large uncompressed batches as fast as the broker takes them (bounded)."""

    def __init__(self, bootstrap: str, topic: str, producers: int, max_seconds: float) -> None:
        import threading

        self.bootstrap, self.topic, self.max_seconds = bootstrap, topic, max_seconds
        self.acked = 0
        self.failed = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, name=f"backlog-{i}", daemon=True)
                         for i in range(producers)]

    def start(self) -> _BacklogLoad:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(self.max_seconds + 60)

    def _done(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked += 1
        else:
            self.failed += 1

    def _run(self) -> None:
        import os

        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "1", "compression.type": "none",
                      "linger.ms": 20, "batch.size": 1_000_000, "message.max.bytes": 1_900_000,
                      "queue.buffering.max.kbytes": 16_384, "message.timeout.ms": 60_000}, logger=CLIENT_LOG)
        value = os.urandom(BACKLOG_VALUE_BYTES // 2).hex().encode()  # text: gzip has work to do
        end = time.monotonic() + self.max_seconds
        while not self._stop.is_set() and time.monotonic() < end:
            try:
                p.produce(self.topic, value=value, on_delivery=self._done)
            except BufferError:
                p.poll(0.05)
                continue
            p.poll(0)
        p.flush(30)


def produce_backlog_run(d: Path, tl: Timeline, setup: KafkaSetup, *, control: bool) -> None:
    """KIP-291 on Apache Kafka: a produce backlog in the data plane, then the controller moves leadership."""
    name = "with-control-plane" if control else "without-control-plane"
    spec = setup.spec(d / "cluster", control_plane=control, extra=BACKLOG_BROKER_CONFIG)
    with started(spec, tl) as cluster:
        create_topic(cluster, "backlog", 6, 3, {"compression.type": "gzip", "max.message.bytes": "2000000"})
        # chosen before the backlog (which delays Metadata answers too): not the active controller, whose stop would
        # be a controller failover, another incident
        admin = admin_client(cluster)
        active = controller_id(cluster)
        victim = max(b for b in cluster.brokers if b != active)
        load = _BacklogLoad(cluster.bootstrap_servers(), "backlog", BACKLOG_PRODUCERS, BACKLOG_SECONDS).start()
        tl.emit("load-started", run=name, producers=BACKLOG_PRODUCERS, value_bytes=BACKLOG_VALUE_BYTES)
        time.sleep(8)
        # SIGTERM: a controlled shutdown, the controller moves leadership at once (LeaderAndIsr, UpdateMetadata)
        tl.emit("broker-killed", run=name, broker=victim, controller=active, signal="SIGTERM",
                reason="move leadership under backlog")
        cluster.kill_broker(victim, signal.SIGTERM)
        wait_until("new leaders", lambda: (got := leaders(admin, "backlog")) and all(
            v not in (victim, -1) for v in got.values()), timeout_s=90)
        tl.emit("leaders-moved", run=name)
        if control:  # its LeaderAndIsr may take seconds, all of them in the handler (SLOW_HANDLER, expected.EXPLAINED)
            tl.emit("topic-creating-under-load", run=name, partitions=UNDER_LOAD_PARTITIONS)
            create_topic(cluster, "created-under-load", UNDER_LOAD_PARTITIONS, 2)
            tl.emit("topic-created-under-load", run=name)
        time.sleep(5)
        load.stop()
        tl.emit("load-stopped", run=name, acked=load.acked, failed=load.failed)


def connection_storm(d: Path, tl: Timeline, setup: KafkaSetup) -> None:
    """KIP-402 on Apache Kafka: the acceptor of a capped listener blocks while a storm of connections waits."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = max(100, min(2000, soft - 300))
    cap = max(20, min(STORM_LISTENER_MAX_CONNECTIONS, n // 3))
    spec = setup.spec(d / "cluster", brokers=1,
                      extra={"listener.name.plaintext.max.connections": str(cap), "num.network.threads": "1"})
    with started(spec, tl) as cluster:
        create_topic(cluster, "storm", 3, 1)
        load = Load(cluster.bootstrap_servers(), "storm", 3, max_records=200_000, max_seconds=30, rate=2000).start()
        tl.emit("load-started", topic="storm")
        time.sleep(3)
        port = cluster.ports[1]["PLAINTEXT"]
        tl.emit("storm-started", broker=1, listener="PLAINTEXT", target_connections=n, listener_max_connections=cap)
        with open_connections(port, n, STORM_CONNECT_TIMEOUT_S) as socks:
            tl.emit("storm-peak", broker=1, connections=len(socks))
            # Kafka marks AcceptorBlockedPercent when a wait for a connection slot ends: storm clients churn, each
            # close lets one waiting connection in and ends one wait (a storm that only holds its sockets shows
            # nothing until it ends)
            end = time.monotonic() + STORM_HOLD_S
            while socks and time.monotonic() < end:
                socks.pop(0).close()
                time.sleep(STORM_CHURN_S)
        tl.emit("storm-stopped", broker=1)
        load.stop()
        tl.emit("load-stopped", acked=len(load.acked))
        verify_load(tl, cluster.bootstrap_servers(), "storm", 3, load)
        time.sleep(_settle(setup))


def _broker_epoch(cluster: KafkaCluster, broker: int, after: int = -1) -> int:
    """The broker's epoch (its registration's czxid, from its server.log); waits for one newer than ``after``."""
    def newest() -> int | None:
        epochs = [int(m.group(2)) for f in sorted((cluster.broker_dir(broker) / "logs").glob("server.log*"))
                  for m in _EPOCH.finditer(f.read_text(errors="replace")) if int(m.group(1)) == broker]
        return epochs[-1] if epochs and epochs[-1] > after else None
    return int(wait_until(f"broker {broker} registered with an epoch above {after}", newest))


def _controller_epoch(cluster: KafkaCluster) -> tuple[int, int]:
    """(controller id, controller epoch) of the newest controller line any broker wrote."""
    best = (-1, -1)
    for bid in cluster.brokers:
        for f in (cluster.broker_dir(bid) / "logs").glob("controller.log*"):
            for m in _CONTROLLER_EPOCH.finditer(f.read_text(errors="replace")):
                if int(m.group(2)) >= best[1]:
                    best = (int(m.group(1)), int(m.group(2)))
    return best


def _stale_leader_and_isr(cluster: KafkaCluster, broker: int, epoch: int) -> int:
    """Send a LeaderAndIsr carrying ``epoch`` as a controller would; Kafka's error code."""
    from broker.controller.requests import leader_and_isr_body
    from broker.protocol import ApiKey, decode_response, encode_request

    cid, cepoch = _controller_epoch(cluster)
    body = leader_and_isr_body(5, controller_id=cid, controller_epoch=cepoch, broker_epoch=epoch, partitions=[],
                               live_leaders=[])
    ports = cluster.ports[broker]
    port = ports.get("CONTROLLER") if cluster.control_plane else ports["PLAINTEXT"]
    with socket.create_connection(("127.0.0.1", port or ports["PLAINTEXT"]), timeout=10) as s:
        s.sendall(encode_request(ApiKey.LEADER_AND_ISR, 5, 1, str(cid), body))
        size = int.from_bytes(s.recv(4, socket.MSG_WAITALL), "big")
        _, resp = decode_response(ApiKey.LEADER_AND_ISR, 5, s.recv(size, socket.MSG_WAITALL))
    return int(resp["error_code"])


def broker_bounce(d: Path, tl: Timeline, setup: KafkaSetup) -> None:
    """kill -9 broker 2 under load, restart it: a new broker epoch; a request with the old one is fenced."""
    with started(setup.spec(d / "cluster"), tl) as cluster:
        create_topic(cluster, "bounce", 6, 3)
        load = Load(cluster.bootstrap_servers(), "bounce", 6, max_records=300_000, max_seconds=45, rate=2000).start()
        tl.emit("load-started", topic="bounce")
        time.sleep(3)
        victim = max(b for b in cluster.brokers if b != controller_id(cluster))
        old = _broker_epoch(cluster, victim)
        cluster.kill_broker(victim)
        tl.emit("broker-killed", broker=victim, signal="SIGKILL", broker_epoch=old)
        # its ZooKeeper session must expire first: a broker restarted while /brokers/ids/N still holds the old
        # session's node exits with NodeExistsException (Kafka 3.9)
        admin = admin_client(cluster)
        wait_until(f"broker {victim}'s session expired", lambda: _broker_count(admin) == len(cluster.brokers) - 1)
        cluster.start_broker(victim)
        new = _broker_epoch(cluster, victim, after=old)
        tl.emit("broker-restarted", broker=victim, broker_epoch=new, previous_epoch=old)
        code = _stale_leader_and_isr(cluster, victim, old)
        tl.emit("stale-request-sent", broker=victim, api="LeaderAndIsr", broker_epoch=old, error_code=code,
                fenced=code == ErrorCode.STALE_BROKER_EPOCH)
        wait_until("ISR restored", lambda: all(
            victim in p.isrs for p in admin.list_topics("bounce", timeout=10).topics["bounce"].partitions.values()),
            timeout_s=90)
        tl.emit("isr-restored", broker=victim)
        load.stop()
        tl.emit("load-stopped", acked=len(load.acked))
        verify_load(tl, cluster.bootstrap_servers(), "bounce", 6, load)


def controller_failover(d: Path, tl: Timeline, setup: KafkaSetup) -> None:
    """kill -9 the active controller (a broker, ZooKeeper mode) under load: a new one is elected; no incident."""
    with started(setup.spec(d / "cluster"), tl) as cluster:
        create_topic(cluster, "failover", 6, 3)
        load = Load(cluster.bootstrap_servers(), "failover", 6, max_records=300_000, max_seconds=40,
                    rate=2000).start()
        tl.emit("load-started", topic="failover")
        time.sleep(3)
        active = controller_id(cluster)
        cluster.kill_broker(active)
        tl.emit("controller-killed", controller_id=active)
        new = wait_until("a new controller", lambda: (c := controller_id(cluster)) not in (active, -1) and c,
                         timeout_s=90)
        tl.emit("controller-elected", controller_id=new)
        cluster.start_broker(active)
        admin = admin_client(cluster)
        wait_until(f"broker {active} registered again", lambda: _broker_count(admin) == len(cluster.brokers))
        tl.emit("broker-restarted", broker=active)
        create_topic(cluster, "after-failover", 3, 3)
        tl.emit("topic-created", topic="after-failover")
        load.stop()
        tl.emit("load-stopped", acked=len(load.acked))
        verify_load(tl, cluster.bootstrap_servers(), "failover", 6, load)


# KRaft scenarios: the load runs this long after it starts before the incident is injected (leaders settled, the
# scrapers' first samples taken).
KRAFT_SETTLE_S = 8.0


@contextmanager
def _kraft_under_load(d: Path, tl: Timeline, setup: KafkaSetup, scenario: str, topic: str,
                      max_seconds: float, controllers: int = 1) -> Iterator[KafkaCluster]:
    """A KRaft cluster (`controllers` voters) with a 6-partition topic of 3 replicas under bounded acks=all load;
    after the body, the load is stopped and every acknowledged record is read back."""
    spec = setup.spec(d / "cluster", controllers=controllers)
    if not spec.is_kraft:
        raise ValueError(f"{scenario} needs a KRaft cluster (Kafka 4.x, or --kraft)")
    with started(spec, tl) as cluster:
        create_topic(cluster, topic, 6, 3)
        load = Load(cluster.bootstrap_servers(), topic, 6, max_records=300_000, max_seconds=max_seconds,
                    rate=1000).start()
        tl.emit("load-started", topic=topic)
        time.sleep(KRAFT_SETTLE_S)
        try:
            yield cluster
        finally:
            load.stop()
        tl.emit("load-stopped", acked=len(load.acked))
        verify_load(tl, cluster.bootstrap_servers(), topic, 6, load)


def metadata_lag(d: Path, tl: Timeline, setup: KafkaSetup) -> None:
    """KRaft: the controller quorum is paused under load; the brokers' metadata stops moving until it resumes."""
    with _kraft_under_load(d, tl, setup, "metadata-lag", "lag", 40) as cluster:
        for nid, proc in cluster.controllers.items():
            proc.popen.send_signal(signal.SIGSTOP)
            tl.emit("controller-paused", controller_id=nid, seconds=CONTROLLER_PAUSE_S)
        time.sleep(CONTROLLER_PAUSE_S)
        for nid, proc in cluster.controllers.items():
            proc.popen.send_signal(signal.SIGCONT)
            tl.emit("controller-resumed", controller_id=nid)
        time.sleep(KRAFT_SETTLE_S)


def broker_fenced(d: Path, tl: Timeline, setup: KafkaSetup) -> None:
    """KRaft: a broker paused under load past its session timeout is fenced by the controller, then unfenced."""
    with _kraft_under_load(d, tl, setup, "broker-fenced", "fence", 60) as cluster:
        victim = max(cluster.brokers)
        proc = cluster.brokers[victim].popen
        proc.send_signal(signal.SIGSTOP)
        tl.emit("broker-paused", broker=victim, seconds=BROKER_PAUSE_S)
        try:
            time.sleep(BROKER_PAUSE_S)
        finally:
            proc.send_signal(signal.SIGCONT)
        tl.emit("broker-resumed", broker=victim)
        admin = admin_client(cluster)
        wait_until("ISR restored", lambda: all(
            victim in p.isrs for p in admin.list_topics("fence", timeout=10).topics["fence"].partitions.values()),
            timeout_s=UNFENCE_TIMEOUT_S)
        tl.emit("isr-restored", broker=victim)
        time.sleep(_settle(setup))  # the scrapers read the controller's last marks while the cluster is up


def controller_overload(d: Path, tl: Timeline, setup: KafkaSetup) -> None:
    """KRaft: topic-creation bursts under load keep the controller's event thread busy; heartbeats time out."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    with _kraft_under_load(d, tl, setup, "controller-overload", "overload", 90) as cluster:
        admin = admin_client(cluster)
        tl.emit("controller-overload-started", waves=OVERLOAD_WAVES, partitions_per_wave=OVERLOAD_TOPICS *
                OVERLOAD_PARTITIONS)
        for wave in range(OVERLOAD_WAVES):
            topics = [NewTopic(f"burst{wave}-{i}", OVERLOAD_PARTITIONS, 1) for i in range(OVERLOAD_TOPICS)]
            for future in admin.create_topics(topics, request_timeout=OVERLOAD_TIMEOUT_S).values():
                future.result(OVERLOAD_TIMEOUT_S)
            tl.emit("topics-created", wave=wave, topics=OVERLOAD_TOPICS)
        tl.emit("controller-overload-stopped")
        time.sleep(_settle(setup))


def _active_controller(cluster: KafkaCluster) -> tuple[int, int]:
    """(node, epoch) of the newest election any controller logged (`Becoming the active controller at epoch E`);
    (-1, -1) before the first."""
    best = (-1, -1)
    for nid in cluster.controllers:
        for f in sorted((cluster.controller_dir(nid) / "logs").glob("controller.log*")):
            for m in _ELECTED.finditer(f.read_text(errors="replace")):
                best = max(best, (int(m.group(2)), int(m.group(1))))
    return best[1], best[0]


def quorum_unstable(d: Path, tl: Timeline, setup: KafkaSetup) -> None:
    """KRaft: the active controller of a three-voter quorum paused until another wins an election, three times under
    load: the leadership moves again and again."""
    with _kraft_under_load(d, tl, setup, "quorum-unstable", "quorum", 90, controllers=QUORUM_VOTERS) as cluster:
        tl.emit("quorum-flapping-started", voters=QUORUM_VOTERS, pauses=QUORUM_PAUSES)
        for _ in range(QUORUM_PAUSES):
            node, epoch = _active_controller(cluster)
            proc = cluster.controllers[node].popen
            proc.send_signal(signal.SIGSTOP)
            tl.emit("controller-paused", controller_id=node, epoch=epoch)
            try:
                wait_until("another active controller", lambda e=epoch: _active_controller(cluster)[1] > e,
                           timeout_s=QUORUM_ELECTION_TIMEOUT_S)
            finally:
                proc.send_signal(signal.SIGCONT)
            new_node, new_epoch = _active_controller(cluster)
            tl.emit("controller-elected", controller_id=new_node, epoch=new_epoch, paused=node)
        time.sleep(KRAFT_SETTLE_S)


def metadata_publish_slow(d: Path, tl: Timeline, setup: KafkaSetup) -> None:
    """KRaft: one broker starved of CPU (cgroup quota) while topic-creation waves grow the metadata log: it applies
    the log late (last-applied-record-lag-ms) while its peers keep up; released, it catches up."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    from planewatch.kafka.cgroup import cpu_quota

    with _kraft_under_load(d, tl, setup, "metadata-publish-slow", "publish", 120) as cluster:
        victim = max(cluster.brokers)
        admin = admin_client(cluster)
        with cpu_quota(cluster.brokers[victim].popen.pid, STARVED_CPU_SHARE, f"planewatch-starve-{victim}"):
            tl.emit("broker-starved", broker=victim, cpu_share=STARVED_CPU_SHARE)
            for wave in range(STARVE_WAVES):
                topics = [NewTopic(f"grow{wave}-{i}", STARVE_PARTITIONS, 1) for i in range(STARVE_TOPICS)]
                for future in admin.create_topics(topics, request_timeout=OVERLOAD_TIMEOUT_S).values():
                    future.result(OVERLOAD_TIMEOUT_S)
                tl.emit("topics-created", wave=wave, partitions=STARVE_TOPICS * STARVE_PARTITIONS)
            time.sleep(max(STARVE_HOLD_S, 2 * setup.scrape_interval_s))
        tl.emit("broker-released", broker=victim)
        time.sleep(_settle(setup))


def _isrs(admin: Any, topic: str) -> list[set[int]]:
    """Each partition's ISR ([] while the metadata request fails)."""
    from confluent_kafka import KafkaException

    try:
        return [set(p.isrs) for p in admin.list_topics(topic, timeout=10).topics[topic].partitions.values()]
    except KafkaException:
        return []


def elections(d: Path, tl: Timeline, setup: KafkaSetup) -> None:
    """KRaft (4.1+): every replica of two topics shut down cleanly, one broker after another. The last ISR member's
    shutdown leaves each partition leaderless with an empty ISR and its last two brokers as eligible leader replicas
    (ELR). The first broker stopped, in neither, comes back first: the topic with unclean.leader.election.enable
    elects it at once (an unclean election: what it had not replicated is lost), the other topic waits. Then an ELR
    member comes back and is elected leader from the ELR, nothing lost."""
    spec = setup.spec(d / "cluster")
    if not spec.is_kraft:
        raise ValueError("elections needs a KRaft cluster (Kafka 4.x, or --kraft)")
    with started(spec, tl) as cluster:
        topics = {"elr": {"min.insync.replicas": ELECTION_MIN_ISR},
                  "unclean": {"min.insync.replicas": ELECTION_MIN_ISR, "unclean.leader.election.enable": "true"}}
        for topic, config in topics.items():
            create_topic(cluster, topic, ELECTION_PARTITIONS, 3, config)
            tl.emit("topic-created", topic=topic, partitions=ELECTION_PARTITIONS, replication_factor=3, **config)
        load = Load(cluster.bootstrap_servers(), "elr", ELECTION_PARTITIONS, max_records=300_000, max_seconds=240,
                    rate=500).start()
        tl.emit("load-started", topic="elr")
        time.sleep(KRAFT_SETTLE_S)
        admin = admin_client(cluster)
        out_of_sync, eligible, last = sorted(cluster.brokers)
        for victim, left in ((out_of_sync, {eligible, last}), (eligible, {last})):
            cluster.kill_broker(victim, signal.SIGTERM)
            tl.emit("broker-stopped", broker=victim, signal="SIGTERM")
            wait_until(f"ISR {sorted(left)}", lambda left=left: all(
                isrs and all(isr == left for isr in isrs) for isrs in map(partial(_isrs, admin), topics)),
                timeout_s=ELECTION_TIMEOUT_S)
        cluster.kill_broker(last, signal.SIGTERM)
        tl.emit("broker-stopped", broker=last, signal="SIGTERM", partitions_offline=sorted(topics))
        cluster.start_broker(out_of_sync)
        tl.emit("out-of-sync-broker-started", broker=out_of_sync)
        wait_until("an unclean leader", lambda: set(leaders(admin, "unclean").values()) == {out_of_sync},
                   timeout_s=ELECTION_TIMEOUT_S)
        tl.emit("leaders-elected", topic="unclean", leader=out_of_sync, election="unclean",
                still_offline=sorted(p for p, b in leaders(admin, "elr").items() if b < 0))
        time.sleep(_settle(setup))  # the scrapers read each election kind on its own
        cluster.start_broker(eligible)
        tl.emit("eligible-broker-started", broker=eligible)
        wait_until("a leader from the ELR", lambda: set(leaders(admin, "elr").values()) == {eligible},
                   timeout_s=ELECTION_TIMEOUT_S)
        tl.emit("leaders-elected", topic="elr", leader=eligible, election="eligible leader replicas")
        cluster.start_broker(last)
        tl.emit("broker-restarted", broker=last)
        wait_until("ISR restored", lambda: all(
            isrs and all(len(isr) == 3 for isr in isrs) for isrs in map(partial(_isrs, admin), topics)),
            timeout_s=UNFENCE_TIMEOUT_S)
        tl.emit("isr-restored")
        time.sleep(_settle(setup))
        load.stop()
        tl.emit("load-stopped", acked=len(load.acked))
        verify_load(tl, cluster.bootstrap_servers(), "elr", ELECTION_PARTITIONS, load)


Scenario = Callable[[Path, Timeline, KafkaSetup], None]
SCENARIOS: dict[str, Scenario] = {
    "healthy": healthy,
    "produce-backlog-with-control-plane": partial(produce_backlog_run, control=True),
    "produce-backlog-without-control-plane": partial(produce_backlog_run, control=False),
    "connection-storm": connection_storm,
    "broker-bounce": broker_bounce,
    "controller-failover": controller_failover,
    "metadata-lag": metadata_lag,
    "broker-fenced": broker_fenced,
    "controller-overload": controller_overload,
    "quorum-unstable": quorum_unstable,
    "elections": elections,
    "metadata-publish-slow": metadata_publish_slow,
    **{name: partial(rolling_restart, mode=mode) for name, mode in ROLLS.items()},
}
# ZooKeeper-mode mechanisms (KIP-291 control plane, broker epochs fenced by the broker, a broker as controller).
ZOOKEEPER_ONLY = frozenset({"produce-backlog-with-control-plane", "produce-backlog-without-control-plane",
                            "broker-bounce", "controller-failover"})
KRAFT_ONLY = frozenset({"metadata-lag", "broker-fenced", "controller-overload", "quorum-unstable", "elections",
                        "metadata-publish-slow"})


def scenario_names(setup: KafkaSetup) -> list[str]:
    """The scenarios Apache Kafka as set up (its version, in its mode) has the mechanism for."""
    excluded = ZOOKEEPER_ONLY if setup.is_kraft else KRAFT_ONLY
    return [n for n in SCENARIOS if n not in excluded]
