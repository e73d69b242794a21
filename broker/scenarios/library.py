"""The incident scenarios of the seeds, each bounded in time and leaving a cluster that recovers.

=====================  ===========================================================================================
``healthy``            3 brokers, replicated topic, bounded acks=all load, every record consumed back
``broker-bounce``      kill -9 a broker mid-load, restart it: new broker epoch, stale requests fenced, ISR restored
``controller-failover``kill -9 the controller, restart it: controller epoch moves, brokers re-register, topics work
``produce-backlog``    KIP-291: saturating acks=all produce, then leadership moves; once with and once without the
                       control-plane listener; LeaderAndIsr round trips on the controller side for both
``connection-storm``   KIP-402: thousands of connections opened against one broker while produce runs
``fetcher-lock``       KAFKA-6974: slow checkpoint flushes (log start offsets moved by retention), leadership
                       changes; the locked fetcher model, then the async one; LeaderAndIsr p50/p99 per model
=====================  ===========================================================================================
"""

from __future__ import annotations

import re
import resource
import signal
import socket
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from broker.cluster.launcher import Cluster, ClusterSpec
from broker.controller.requests import leader_and_isr_body
from broker.protocol import ApiKey, decode_response, encode_request
from broker.protocol.error_codes import ErrorCode
from broker.scenarios.base import (
    Load,
    Timeline,
    controller_status,
    create_topic,
    finished_times_ms,
    open_connections,
    percentiles,
    started_cluster,
    verify_load,
    wait_until,
)

__all__ = ["SCENARIOS", "fetcher_lock_run", "produce_backlog_run"]

# connection-storm: the PLAINTEXT listener's max.connections, far below the storm (the acceptor blocks at it), and
# how long one storm connect may wait once the listen backlog is full too (then the storm stops growing).
STORM_LISTENER_MAX_CONNECTIONS = 500
STORM_CONNECT_TIMEOUT_S = 3.0

# fetcher-lock: each leader-epoch checkpoint flush is slowed by this much (a slow disk's fsync, KAFKA-6974). The
# locked fetcher holds partitionMapLock over a whole fetch response, i.e. over several such flushes: at 100 ms the
# LeaderAndIsr waits stayed under 0.5 s on 2 busy cores; at 300 ms a quieter machine's
# longest wait was 988 ms, under LOCK_CONTENTION's 1 s; at 500 ms it was 1174 ms.
FETCHER_CHECKPOINT_DELAY_MS = 500
# fetcher-lock: partitions of its topic. The LeaderAndIsr waits for what is left of the fetch response being processed,
# and each partition of it whose batches start a new leader epoch flushes the checkpoint once: with 24 partitions
# the waits after the second bounce were 0.9-3.1 s over five demo runs (one under LOCK_CONTENTION's 1 s, a missed
# incident), with 48 partitions 1.5-1.7 s over three (2026-11-27). A slower flush did not help: at 1000 ms the wait
# was 0.9 s (the request arrived near a response's end).
FETCHER_LOCK_PARTITIONS = 48

_LOCK_WAIT = re.compile(r"LeaderAndIsr waited (\d+) ms for partitionMapLock")
_TS = r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]"
_SEND = re.compile(_TS + r" INFO \[Controller id=\d+ epoch=\d+\] Sending LeaderAndIsr request to broker (\d+) ")
_RECV = re.compile(_TS + r" TRACE \[Controller id=\d+ epoch=\d+\] Received response LeaderAndIsrResponseData.*"
                   r"sent to broker \S+ \(id: (\d+) ")


def healthy(d: Path, tl: Timeline) -> None:
    """A healthy cluster under a bounded load."""
    with started_cluster(ClusterSpec(d / "cluster"), tl) as cluster:
        create_topic(cluster, "healthy", 6, 3)
        tl.emit("topic-created", topic="healthy", partitions=6, replication_factor=3)
        load = Load(cluster.bootstrap_servers(), "healthy", 6, max_records=5000, max_seconds=15).start()
        tl.emit("load-started", topic="healthy")
        load.wait()
        tl.emit("load-stopped", acked=len(load.acked))
        verify_load(tl, cluster.bootstrap_servers(), "healthy", 6, load)


def _stale_leader_and_isr(cluster: Cluster, broker: int, epoch: int, st: dict[str, Any]) -> int:
    body = leader_and_isr_body(5, controller_id=st["controller_id"], controller_epoch=st["controller_epoch"],
                               broker_epoch=epoch, partitions=[], live_leaders=[])
    port = cluster.ports[broker].get("CONTROLLER") if cluster.spec.brokers_advertise_control else None
    port = port or cluster.ports[broker]["PLAINTEXT"]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(encode_request(ApiKey.LEADER_AND_ISR, 5, 1, "stale-controller", body))
        size = int.from_bytes(s.recv(4, socket.MSG_WAITALL), "big")
        _, resp = decode_response(ApiKey.LEADER_AND_ISR, 5, s.recv(size, socket.MSG_WAITALL))
    return int(resp["error_code"])


def broker_bounce(d: Path, tl: Timeline) -> None:
    """kill -9 broker 2 under load, restart it; the controller sees a new epoch; stale requests are fenced."""
    with started_cluster(ClusterSpec(d / "cluster", session_timeout_ms=6000), tl) as cluster:
        create_topic(cluster, "bounce", 6, 3)
        load = Load(cluster.bootstrap_servers(), "bounce", 6, max_records=300_000, max_seconds=40).start()
        tl.emit("load-started", topic="bounce")
        time.sleep(3)
        old = controller_status(cluster)["brokers"]["2"]["epoch"]
        cluster.kill_broker(2)
        tl.emit("broker-killed", broker=2, signal="SIGKILL", broker_epoch=old)
        time.sleep(1)
        cluster.start_broker(2)
        st = wait_until("broker 2 re-registered", lambda: (s := controller_status(cluster))["brokers"]["2"]["epoch"]
                        != old and s)
        tl.emit("broker-restarted", broker=2, broker_epoch=st["brokers"]["2"]["epoch"], previous_epoch=old)
        code = _stale_leader_and_isr(cluster, 2, old, st)
        tl.emit("stale-request-sent", broker=2, api="LeaderAndIsr", broker_epoch=old, error_code=code,
                fenced=code == ErrorCode.STALE_BROKER_EPOCH)
        wait_until("ISR restored", lambda: all(2 in p["isr"] for p in controller_status(cluster)["partitions"]),
                   timeout_s=60)
        tl.emit("isr-restored", broker=2)
        load.stop()
        tl.emit("load-stopped", acked=len(load.acked))
        verify_load(tl, cluster.bootstrap_servers(), "bounce", 6, load)


def controller_failover(d: Path, tl: Timeline) -> None:
    """kill -9 the controller under load and restart it: a new controller epoch; the cluster keeps working."""
    with started_cluster(ClusterSpec(d / "cluster"), tl) as cluster:
        create_topic(cluster, "failover", 6, 3)
        load = Load(cluster.bootstrap_servers(), "failover", 6, max_records=300_000, max_seconds=30).start()
        tl.emit("load-started", topic="failover")
        time.sleep(3)
        before = controller_status(cluster)
        cluster.kill_controller(signal.SIGKILL)
        tl.emit("controller-killed", controller_id=before["controller_id"],
                controller_epoch=before["controller_epoch"])
        time.sleep(2)
        cluster.start_controller()
        st = wait_until("controller failover", lambda: (s := controller_status(cluster))["controller_epoch"]
                        > before["controller_epoch"] and len(s["brokers"]) == 3 and s, timeout_s=60)
        tl.emit("controller-restarted", controller_id=st["controller_id"], controller_epoch=st["controller_epoch"],
                broker_epochs={b: v["epoch"] for b, v in st["brokers"].items()})
        cluster.write_json()
        create_topic(cluster, "after-failover", 3, 3)
        tl.emit("topic-created", topic="after-failover")
        load.stop()
        tl.emit("load-stopped", acked=len(load.acked))
        verify_load(tl, cluster.bootstrap_servers(), "failover", 6, load)


def _controller_round_trips(cluster: Cluster) -> list[float]:
    """LeaderAndIsr send -> response times (ms) from the controller's state-change.log."""
    text = "".join(f.read_text(errors="replace") for f in (cluster.dir / "controller" / "logs")
                   .glob("state-change.log*"))
    sent: dict[str, list[datetime]] = {}
    out: list[float] = []
    for line in text.splitlines():
        if (m := _SEND.match(line)) is not None:
            sent.setdefault(m.group(2), []).append(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f"))
        elif (m := _RECV.match(line)) is not None and sent.get(m.group(2)):
            t0 = sent[m.group(2)].pop(0)
            out.append((datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f") - t0).total_seconds() * 1000)
    return out


def produce_backlog_run(d: Path, tl: Timeline, control: bool) -> None:
    """One half of produce-backlog: saturating acks=all produce, then leadership moves (cluster under ``d/cluster``)."""
    name = "with-control-plane" if control else "without-control-plane"
    spec = ClusterSpec(d / "cluster", brokers_advertise_control=control,
                       extra={"num.io.threads": "2", "queued.max.requests": "50"})
    with started_cluster(spec, tl) as cluster:
        create_topic(cluster, "backlog", 6, 3)
        loads = [Load(cluster.bootstrap_servers(), "backlog", 6, max_records=40000, max_seconds=20,
                      value_bytes=10_000).start() for _ in range(4)]
        tl.emit("load-started", run=name, producers=len(loads), value_bytes=10_000)
        time.sleep(6)
        # a broker other than the one whose id the controller holds: killing that one is a controller failover
        # (another incident: its requests die with it), not leadership moving under a backlog
        victim = max(b for b in (1, 2, 3) if b != controller_status(cluster)["controller_id"])
        cluster.kill_broker(victim)
        tl.emit("broker-killed", run=name, broker=victim, reason="move leadership under backlog")
        wait_until("new leaders", lambda: all(p["leader"] not in (victim, -1)
                                              for p in controller_status(cluster)["partitions"]))
        tl.emit("leaders-moved", run=name)
        for load in loads:
            load.stop()
        trips = _controller_round_trips(cluster)
        tl.emit("leader-and-isr-round-trips", run=name, **percentiles([int(t) for t in trips]))
        tl.emit("leader-and-isr-local-times", run=name, **percentiles(finished_times_ms(cluster)))


def produce_backlog(d: Path, tl: Timeline) -> None:
    """KIP-291: saturating acks=all produce, then leadership moves; with and then without the control plane."""
    for control in (True, False):
        produce_backlog_run(d / ("with-control-plane" if control else "without-control-plane"), tl, control)


def connection_storm(d: Path, tl: Timeline) -> None:
    """KIP-402: open many connections against broker 1 while produce runs, then close them.

    The PLAINTEXT listener is capped (``listener.name.plaintext.max.connections``, a listener limit applies even to
    the inter-broker listener) well below the storm, so the acceptor really blocks waiting for a slot, as a broker
    at its limit does; without a cap the acceptor hands thousands of connections to its processors in a few ms.
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = max(100, min(3000, soft - 300))
    cap = max(20, min(STORM_LISTENER_MAX_CONNECTIONS, n // 3))
    spec = ClusterSpec(d / "cluster", brokers=1, extra={"listener.name.plaintext.max.connections": str(cap)})
    with started_cluster(spec, tl) as cluster:
        create_topic(cluster, "storm", 3, 1)
        load = Load(cluster.bootstrap_servers(), "storm", 3, max_records=200_000, max_seconds=25, rate=4000).start()
        tl.emit("load-started", topic="storm")
        time.sleep(3)
        port = cluster.ports[1]["PLAINTEXT"]
        tl.emit("storm-started", broker=1, listener="PLAINTEXT", target_connections=n,
                listener_max_connections=cap)
        with open_connections(port, n, STORM_CONNECT_TIMEOUT_S) as socks:
            tl.emit("storm-peak", broker=1, connections=len(socks))
            time.sleep(8)
        tl.emit("storm-stopped", broker=1)
        load.stop()
        tl.emit("load-stopped", acked=len(load.acked))
        verify_load(tl, cluster.bootstrap_servers(), "storm", 3, load)


def fetcher_lock_run(d: Path, tl: Timeline, model: str) -> dict[str, Any]:
    """One half of fetcher-lock with fetcher model ``locked`` or ``async`` (cluster under ``d/cluster``)."""
    spec = ClusterSpec(d / "cluster", fetcher_model=model, checkpoint_delay_ms=FETCHER_CHECKPOINT_DELAY_MS,
                       session_timeout_ms=4000,
                       extra={"log.segment.bytes": "20000", "log.retention.bytes": "40000",
                              "log.retention.check.interval.ms": "1000"})
    with started_cluster(spec, tl) as cluster:
        create_topic(cluster, "lock", FETCHER_LOCK_PARTITIONS, 3)
        load = Load(cluster.bootstrap_servers(), "lock", FETCHER_LOCK_PARTITIONS, max_records=100_000, max_seconds=40,
                    value_bytes=500, acks="1", rate=2000).start()
        tl.emit("load-started", run=model, topic="lock", checkpoint_delay_ms=FETCHER_CHECKPOINT_DELAY_MS)
        time.sleep(5)
        for victim in (3, 2):
            cluster.kill_broker(victim)
            tl.emit("broker-killed", run=model, broker=victim)
            time.sleep(2)
            cluster.start_broker(victim)
            tl.emit("broker-restarted", run=model, broker=victim)
            time.sleep(4)
        load.stop()
        times = finished_times_ms(cluster)
        waits = [int(m.group(1)) for bid in cluster.brokers
                 for f in (cluster.broker_dir(bid) / "logs").glob("server.log*")
                 for m in _LOCK_WAIT.finditer(f.read_text(errors="replace"))]
        result = {"leader_and_isr_ms": percentiles(times), "partition_map_lock_wait_ms": percentiles(waits)}
        tl.emit("leader-and-isr-times", run=model, **result["leader_and_isr_ms"])
        tl.emit("partition-map-lock-waits", run=model, **result["partition_map_lock_wait_ms"])
        return result


def fetcher_lock(d: Path, tl: Timeline) -> None:
    """KAFKA-6974: slow checkpoint flushes while leadership moves; locked model first, then async."""
    results = {model: fetcher_lock_run(d / model, tl, model) for model in ("locked", "async")}
    tl.emit("summary", **{f"{m}_p99_ms": r["leader_and_isr_ms"]["p99"] for m, r in results.items()})


SCENARIOS: dict[str, Callable[[Path, Timeline], None]] = {
    "healthy": healthy,
    "produce-backlog": produce_backlog,
    "connection-storm": connection_storm,
    "fetcher-lock": fetcher_lock,
    "broker-bounce": broker_bounce,
    "controller-failover": controller_failover,
}
