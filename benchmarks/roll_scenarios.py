"""Roll scenarios on Apache Kafka: planewatch's pre-restart verdict against the cluster's own truth, side by side
with what Strimzi's and Redpanda's rules answer on the same cluster at the same moment.

    .venv/bin/python -m benchmarks.roll_scenarios [--kafka 3.9.1,4.4.0] [--dir var/bench-roll-scenarios] [--json F]

Per Kafka version, one cluster of three brokers (4.4.0: and three KRaft controllers) plays, in order:

* ``healthy``: every ISR full; ask each broker;
* ``min-insync-edge``: a topic with two replicas and min.insync.replicas=2 (every restart blocks acks=all);
* ``rf1``: a topic with one replica (a restart takes its partitions offline);
* ``acks1-leaders``: a topic with two replicas and min.insync.replicas=1 led by the broker asked (acks=1 leadership
  moves; nothing lost while the follower is in sync);
* ``broker-down``: a third broker killed; ask another;
* ``slow-catch-up``: a broker restarted after ~30 MB were written without it, replication throttled to 800 KB/s:
  the next broker and the restarted one are asked every 0.5 s until it is back in every ISR;
* ``lagging-voter`` (KRaft): a follower voter paused (SIGSTOP); ask the other follower and the paused one;
* ``admin-unreachable``: the Admin API pointed at a closed port.

Each ask prints planewatch's verdict and reasons, the truth read by a second Admin client (kafka-python: the
partitions the restart would take offline or below min.insync.replicas, and, for voters, whether a caught-up majority
would remain), whether planewatch's partition lists equal the truth's, whether it said ``safe`` while the truth was
at risk (a **false safe**), and what :mod:`benchmarks.anchors.restart_rules` says Strimzi's KafkaRoller and
Redpanda's pre-restart probe would answer. The rolls themselves (timer, gated, Strimzi-style, planewatch roll) and
their pages are :mod:`benchmarks.real_kafka`'s runs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from api.kafka_admin import AdminUnavailable, describe_cluster
from benchmarks.anchors.restart_rules import Truth, redpanda_pre_restart, strimzi_can_roll, truth
from pipelines.restart_probe import admin_reasons
from pipelines.roll_safety import worst
from planewatch.kafka.cluster import KafkaCluster, KafkaClusterSpec, free_port
from planewatch.kafka.rolls import throttle_replication
from schemas.roll_safety import CheckStatus, RollVerdict

__all__ = ["Ask", "main", "play"]

VERSIONS = ("3.9.1", "4.4.0")
# Data written while the slow broker is down: at the 800 KB/s replication throttle, ~40 s of catching up.
CATCH_UP_BYTES = 30_000_000
VALUE_BYTES = 10_000
# How often the slow catch-up is asked, and for how long at most.
POLL_S = 0.5
CATCH_UP_TIMEOUT_S = 240.0
# Topics settle (leaders elected, ISRs full) or vanish within this long.
SETTLE_TIMEOUT_S = 90.0
# A paused voter is no longer caught up after controller.quorum.fetch.timeout.ms (2 s default); wait at most this.
LAG_TIMEOUT_S = 60.0
ADMIN_TIMEOUT_S = 10.0
# The anchors when the cluster cannot be asked (benchmarks.anchors.restart_rules cites their source): Strimzi's
# KafkaRoller retries with back-off (~128 s) and fails the reconciliation (it force-restarts only a pod whose Admin
# client cannot even be created); the redpanda-operator skips a pod whose probe errs.
STRIMZI_UNREACHABLE = "defers, then fails"
REDPANDA_UNREACHABLE = "skips the pod"


@dataclass
class Ask:
    """One question to planewatch (may `node` restart now?) with the truth and the other tools' answers."""

    kafka: str
    scenario: str
    node: int
    verdict: str
    reasons: list[str]
    truth_at_risk: bool
    lists_equal: bool | None  # planewatch's offline / under-min-ISR lists equal the truth's (None: no lists)
    strimzi: str
    redpanda: str
    seconds: float = 0.0  # since the scenario's change (slow-catch-up)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def false_safe(self) -> bool:
        return self.verdict == RollVerdict.safe.value and self.truth_at_risk


def _short(text: str, n: int = 110) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


class Player:
    """Asks planewatch, the truth and the rules about one node of one cluster, and keeps the answers."""

    def __init__(self, cluster: KafkaCluster, version: str) -> None:
        self.cluster = cluster
        self.version = version
        self.asks: list[Ask] = []

    def props(self) -> dict[str, str]:
        return {"bootstrap.servers": self.cluster.bootstrap_servers()}

    def ask(self, scenario: str, node: int, *, restarted: int | None = None, paused: int | None = None,
            props: dict[str, str] | None = None, seconds: float = 0.0, say: bool = True) -> Ask:
        try:
            state = describe_cluster(props or self.props(), timeout=ADMIN_TIMEOUT_S)
            reasons = admin_reasons(state, None, node, restarted)
        except AdminUnavailable as e:
            state, reasons = None, admin_reasons(None, str(e), node)
        verdict = worst(r.status for r in reasons)
        t: Truth | None = None if state is None else truth(self.cluster.bootstrap_servers(), node, state, paused)
        lists = None
        if t is not None:
            got = {r.check.value: set(r.partitions) for r in reasons if r.partitions}
            lists = (got.get("RESTART_OFFLINE", set()) == set(t.offline)
                     and got.get("RESTART_UNDER_MIN_ISR", set()) == set(t.under_min_isr))
        a = Ask(self.version, scenario, node, verdict.value,
                [f"{r.check.value} {r.status.value}: {_short(r.text)}" for r in reasons
                 if r.status is not CheckStatus.ok],
                bool(t and t.at_risk), lists,
                STRIMZI_UNREACHABLE if state is None else strimzi_can_roll(state, node),
                REDPANDA_UNREACHABLE if state is None else redpanda_pre_restart(state, node), seconds)
        if t is not None:
            a.extra = {"truth_offline": len(t.offline), "truth_under_min_isr": len(t.under_min_isr),
                       "truth_quorum_at_risk": t.quorum_at_risk}
        self.asks.append(a)
        if say:
            flag = "  FALSE SAFE" if a.false_safe else ""
            print(f"  {scenario:<18} node {node:>4}  {a.verdict:<7} truth {'at risk' if a.truth_at_risk else 'ok':<7}"
                  f" lists {'=' if lists else ('-' if lists is None else '!=')}  strimzi: {a.strimzi}; "
                  f"redpanda: {a.redpanda}{flag}", flush=True)
            for r in a.reasons[:3]:
                print(f"      {r}")
        return a


def _admin(c: KafkaCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": c.bootstrap_servers(), "log_level": "4"})


def _wait(cond: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if cond():
                return
        except AdminUnavailable:
            pass
        time.sleep(POLL_S)
    raise TimeoutError(f"{what}: not within {timeout:g} s")


def _settled(c: KafkaCluster, topics: dict[str, int]) -> bool:
    parts = [p for p in describe_cluster({"bootstrap.servers": c.bootstrap_servers()}).partitions
             if p.topic in topics]
    return (len(parts) == sum(topics.values())
            and all(p.leader >= 0 and len(p.isr) == len(p.replicas) for p in parts))


@contextmanager
def topic(c: KafkaCluster, name: str, partitions: int, rf: int, min_isr: int, **config: str) -> Iterator[None]:
    """A topic for one scenario, led and in sync before it starts, deleted (and gone) after it."""
    admin = _admin(c)
    cfg = {"min.insync.replicas": str(min_isr), **config}
    for f in admin.create_topics([NewTopic(name, partitions, rf, config=cfg)]).values():
        f.result(60)
    _wait(lambda: _settled(c, {name: partitions}), SETTLE_TIMEOUT_S, f"topic {name} settled")
    try:
        yield
    finally:
        admin = _admin(c)  # kept: a future outlived by its client fails with "handle destroyed"
        for f in admin.delete_topics([name]).values():
            f.result(60)
        _wait(lambda: all(p.topic != name for p in describe_cluster(
            {"bootstrap.servers": c.bootstrap_servers()}).partitions), SETTLE_TIMEOUT_S, f"topic {name} deleted")


def _produce(c: KafkaCluster, name: str, total: int) -> None:
    p = Producer({"bootstrap.servers": c.bootstrap_servers(), "acks": "all", "linger.ms": 20,
                  "log_level": 4})
    value = b"x" * VALUE_BYTES
    for i in range(total // VALUE_BYTES):
        while True:
            try:
                p.produce(name, value, key=str(i).encode())
                break
            except BufferError:
                p.poll(0.1)
    left = p.flush(120)
    if left:
        raise RuntimeError(f"{left} records not delivered")


def play(p: Player) -> None:
    """Every scenario of the module docstring on `p`'s cluster, in order."""
    c = p.cluster
    brokers = sorted(c.brokers)
    with topic(c, "wide", 6, 3, 2):
        for b in brokers:
            p.ask("healthy", b)
        with topic(c, "edge", 3, 2, 2):
            p.ask("min-insync-edge", brokers[0])
        with topic(c, "rf1", 3, 1, 1):
            p.ask("rf1", brokers[0])
        with topic(c, "acks1", 6, 2, 1):
            leads = [x.leader for x in describe_cluster(p.props()).partitions if x.topic == "acks1"]
            p.ask("acks1-leaders", max(set(leads), key=leads.count))
        c.kill_broker(brokers[-1])
        _wait(lambda: brokers[-1] not in describe_cluster(p.props()).brokers, SETTLE_TIMEOUT_S, "broker gone")
        p.ask("broker-down", brokers[0])
        c.start_broker(brokers[-1])
        _wait(lambda: _settled(c, {"wide": 6}), SETTLE_TIMEOUT_S, "broker back in sync")
        _slow_catch_up(p, brokers)
    if c.controllers:
        _lagging_voter(p)
    p.ask("admin-unreachable", brokers[0], props={"bootstrap.servers": f"127.0.0.1:{free_port()}"})


def _slow_catch_up(p: Player, brokers: list[int]) -> None:
    c, slow, nxt = p.cluster, brokers[1], brokers[2]
    throttle_replication(c)
    alter = _admin(c)
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource  # type: ignore[attr-defined]

    res = ConfigResource("TOPIC", "wide", incremental_configs=[
        ConfigEntry(k, "*", incremental_operation=AlterConfigOpType.SET)
        for k in ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")])
    for f in alter.incremental_alter_configs([res]).values():
        f.result(60)
    c.kill_broker(slow, signal.SIGTERM)
    c.brokers[slow].popen.wait(60)
    _produce(c, "wide", CATCH_UP_BYTES)
    c.start_broker(slow)
    t0 = time.monotonic()
    first_safe = in_sync = None
    while time.monotonic() - t0 < CATCH_UP_TIMEOUT_S:
        s = time.monotonic() - t0
        a = p.ask("slow-catch-up", nxt, restarted=slow, seconds=s, say=False)
        if a.false_safe:
            print(f"  slow-catch-up at {s:.1f} s: FALSE SAFE {a.reasons}", flush=True)
        if a.verdict == "safe" and first_safe is None:
            first_safe = s
        if not a.truth_at_risk and in_sync is None:
            in_sync = s
        if first_safe is not None and in_sync is not None:
            break
        time.sleep(POLL_S)
    asked = [a for a in p.asks if a.scenario == "slow-catch-up"]
    waits = sum(1 for a in asked if a.verdict == "wait")
    print(f"  slow-catch-up      node {nxt:>4}  asked {len(asked)} times over {asked[-1].seconds:.1f} s: "
          f"{waits} wait, first safe at {first_safe if first_safe is None else round(first_safe, 1)} s, truth in sync "
          f"at {in_sync if in_sync is None else round(in_sync, 1)} s, false safe "
          f"{sum(a.false_safe for a in asked)}", flush=True)
    for r in next((a.reasons for a in asked if a.verdict == "wait"), [])[:3]:
        print(f"      {r}")


def _lagging_voter(p: Player) -> None:
    c = p.cluster
    state = describe_cluster(p.props())
    assert state.quorum is not None
    followers = sorted(v.node for v in state.quorum.voters if v.node != state.quorum.leader)
    p.ask("voters-caught-up", followers[0])
    paused = followers[1]
    c.controllers[paused].popen.send_signal(signal.SIGSTOP)
    try:
        def lagging() -> bool:
            q = describe_cluster(p.props()).quorum
            return q is not None and any(v.node == paused and q.now_ms - v.last_caught_up_ms > 2_000
                                         for v in q.voters)

        _wait(lagging, LAG_TIMEOUT_S, "the paused voter lagging")
        p.ask("lagging-voter", followers[0], paused=paused)
        p.ask("lagging-voter", paused, paused=paused)
    finally:
        c.controllers[paused].popen.send_signal(signal.SIGCONT)


def run_version(version: str, d: Path) -> list[Ask]:
    controllers = 3 if version.startswith("4.") else 1
    shutil.rmtree(d / version, ignore_errors=True)  # a fresh cluster: an earlier run's topics and quorum are gone
    cluster = KafkaCluster(KafkaClusterSpec(d / version, version, brokers=3, controllers=controllers,
                                            jmx_exporter=False))
    print(f"\nApache Kafka {version} ({'KRaft' if controllers == 3 else 'ZooKeeper mode'}, 3 brokers)", flush=True)
    cluster.start()
    p = Player(cluster, version)
    try:
        play(p)
    finally:
        cluster.stop()
    return p.asks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kafka", default=",".join(VERSIONS))
    parser.add_argument("--dir", type=Path, default=Path("var/bench-roll-scenarios"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    asks: list[Ask] = []
    for v in args.kafka.split(","):
        asks += run_version(v, args.dir)
    false_safe = [a for a in asks if a.false_safe]
    lists = [a.lists_equal for a in asks if a.lists_equal is not None]
    print(f"\n{len(asks)} asks: {len(false_safe)} false safe; partition lists equal the truth's in "
          f"{sum(lists)}/{len(lists)}")
    if args.json:
        args.json.write_text(json.dumps([asdict(a) | {"false_safe": a.false_safe} for a in asks], indent=2))
    return 1 if false_safe else 0


if __name__ == "__main__":
    sys.exit(main())
