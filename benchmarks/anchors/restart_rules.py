"""The truth about restarting one node, read by a second Admin client (kafka-python, independent of planewatch's
confluent-kafka reading), and what the anchors' own restart rules answer on the same cluster: Strimzi's KafkaRoller
(KafkaAvailability, the KRaft quorum check) and Redpanda's pre-restart probe, modelled from their source (the rules
and their citations are on each function).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from pipelines.restart_probe import ClusterState

__all__ = ["Truth", "redpanda_pre_restart", "strimzi_can_roll", "truth"]

# Kafka's controller.quorum.fetch.timeout.ms default: a voter that has not caught up within it is lagging.
FETCH_TIMEOUT_MS = 2000


@dataclass(frozen=True)
class Truth:
    """What restarting the node would do now: partitions taken offline (it is their only in-sync replica), below
    min.insync.replicas (acks=all blocked), and for a KRaft voter whether a caught-up majority would remain."""

    offline: tuple[str, ...]
    under_min_isr: tuple[str, ...]
    quorum_at_risk: bool

    @property
    def at_risk(self) -> bool:
        return bool(self.offline or self.under_min_isr or self.quorum_at_risk)


def _min_isr(admin: KafkaAdminClient, topics: list[str]) -> dict[str, int]:
    got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t) for t in topics])
    out = {}
    for name, configs in got.get("topic", {}).items():
        value = configs.get("min.insync.replicas", {}).get("value")
        out[name] = int(value) if value is not None else 1
    return out


def truth(bootstrap: str, node: int, state: ClusterState, paused: int | None = None) -> Truth:
    """The truth for `node` as a second Admin client reads the cluster now (`state`: planewatch's reading, used
    only to know the voters' fetch timeout; `paused`: a voter known to be stopped)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="truth", request_timeout_ms=10_000)
    try:
        topics = admin.describe_topics()
        min_isr = _min_isr(admin, [t["name"] for t in topics])
        quorum = admin.describe_metadata_quorum() if state.quorum is not None else None
    finally:
        admin.close()
    offline, blocked = [], []
    for t in topics:
        for p in t["partitions"]:
            isr = list(p["isr_nodes"])
            if node not in isr:
                continue
            name = f"{t['name']}-{p['partition_index']}"
            if isr == [node]:
                offline.append(name)
            elif len(isr) - 1 < min_isr.get(t["name"], 1):
                blocked.append(name)
    at_risk = False
    if quorum is not None:
        (part,) = quorum["topics"][0]["partitions"]
        voters = part["current_voters"]
        if node in {v["replica_id"] for v in voters}:
            now = int(time.time() * 1000)
            timeout = state.fetch_timeout_ms or FETCH_TIMEOUT_MS
            caught = [v["replica_id"] for v in voters if v["replica_id"] not in (node, paused)
                      and (v["replica_id"] == part["leader_id"] or now - v["last_caught_up_timestamp"] <= timeout)]
            at_risk = len(caught) < len(voters) // 2 + 1
    return Truth(tuple(sorted(offline)), tuple(sorted(blocked)), at_risk)


def _strimzi_quorum(state: ClusterState, node: int) -> bool:
    """Strimzi's KafkaQuorumCheck.canRollController (strimzi-kafka-operator 8541da1e, cluster-operator
    .../resource/KafkaQuorumCheck.java L82-139): voters caught up by the leader's own last-caught-up time, the
    leader always, the node to restart never; N=1 rolls, N=2 needs the other, else a strict majority."""
    q = state.quorum
    assert q is not None
    if q.leader < 0:
        return False
    ts = {v.node: v.last_caught_up_ms for v in q.voters}
    n, lead = len(ts), ts.get(q.leader, -1)
    if n == 1:
        return True
    timeout = state.fetch_timeout_ms or FETCH_TIMEOUT_MS
    caught = sum(1 for i, t in ts.items() if t >= 0 and (i == q.leader or lead - t < timeout) and i != node)
    return caught == 1 if n == 2 else caught >= (n + 2) // 2


def strimzi_can_roll(state: ClusterState, node: int) -> str:
    """What Strimzi's KafkaRoller decides before restarting `node`: a voter by its quorum check, a broker by
    KafkaAvailability.canRoll (KafkaAvailability.java L62-154): for each partition of a topic the broker hosts, with
    the topic's effective min.insync.replicas m, skipped when RF <= m (RF=1 never blocks); blocks when the ISR is
    already below m and the broker is a replica, or the ISR is exactly m and holds the broker. A roll that cannot
    go now is retried with back-off (~128 s) and then fails the reconciliation."""
    if state.quorum is not None and node in {v.node for v in state.quorum.voters}:
        return "rolls (quorum)" if _strimzi_quorum(state, node) else "defers (quorum)"
    blocking = []
    for p in state.partitions:
        m = state.min_isr.get(p.topic, 1)
        if node not in p.replicas or len(p.replicas) <= m:
            continue
        if len(p.isr) < m or (len(p.isr) == m and node in p.isr):
            blocking.append(p.name)
    return f"defers ({len(blocking)} at min ISR)" if blocking else "rolls"


def redpanda_pre_restart(state: ClusterState, node: int) -> str:
    """Redpanda's pre_restart_probe (health_monitor_backend.cc record_risks_in_report, read at forks of
    redpanda-data/redpanda 25.1+) applied to Kafka's metadata, ISR as Redpanda's in-sync followers and the leader,
    live replicas outside it as out of sync, the rest down: per partition the node hosts, with V replicas and
    majority V//2+1, i (o) the in-sync (out-of-sync live) replicas other than the node: V=1 rf1_offline; i < maj
    full_acks_produce_unavailable; i+o < maj unavailable; i = 0 acks1_data_loss (a partition in its most severe
    lists; leaderless: rf1_offline or acks1_data_loss + unavailable). The redpanda-operator (PR #1547) holds a
    restart on acks1_data_loss, unavailable or full_acks_produce_unavailable; rf1_offline does not hold it."""
    risks: dict[str, int] = {}
    live = set(state.brokers)

    def add(*names: str) -> None:
        for n in names:
            risks[n] = risks.get(n, 0) + 1

    for p in state.partitions:
        if node not in p.replicas:
            continue
        v = len(p.replicas)
        if p.leader < 0:
            add("rf1_offline") if v == 1 else add("acks1_data_loss", "unavailable")
            continue
        if v == 1:
            add("rf1_offline")
            continue
        maj = v // 2 + 1
        i = len(p.isr) - (node in p.isr)
        o = sum(1 for r in p.replicas if r != node and r not in p.isr and r in live)
        full, unavailable, loss = i < maj, i + o < maj, i == 0
        if loss:
            add("acks1_data_loss", *(("unavailable",) if unavailable else ()))
        elif unavailable:
            add("unavailable")
        elif full:
            add("full_acks_produce_unavailable")
    held = {k: n for k, n in risks.items() if k != "rf1_offline"}
    listed = ", ".join(f"{k} {n}" for k, n in sorted(risks.items()))
    return f"holds ({listed})" if held else (f"rolls ({listed})" if risks else "rolls")
