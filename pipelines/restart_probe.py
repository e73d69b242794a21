"""What restarting one node would do, read from the cluster's own description (pure: a snapshot in, reasons out).

The snapshot (:class:`ClusterState`) is what Kafka's Admin API answers at one moment: every partition's leader,
replicas and ISR, each topic's effective ``min.insync.replicas`` and ``unclean.leader.election.enable``, the live
brokers (DescribeCluster), and on KRaft the metadata quorum (DescribeQuorum: each voter's last caught-up time).
:mod:`api.kafka_admin` takes it; :func:`admin_reasons` turns it into roll-safety reasons for the node asked about:

* **before a broker's restart** (:func:`exposure`): the partitions it would take offline (it is their only in-sync
  replica: no leader until it is back, unless unclean election is on, which loses data instead), those whose ISR
  without it is below ``min.insync.replicas`` (acks=all producers get NotEnoughReplicas), and those it leads that
  will fail over (acks=1 producers see a leader change; what the old leader acknowledged alone may be lost). A risk
  is ``unsafe`` when it is structural (:func:`structural`: too few replicas for the topic's min.insync.replicas,
  every restart hits it) and ``wait`` when it comes from replicas still catching up (the last restart's);
* **after a broker's restart** (:func:`recovery`): the share of its replicas back in their ISR, and of the partitions
  it is preferred leader of that it leads again;
* **before a controller's restart** (:func:`quorum_reasons`): whether a majority of the voters stays caught up
  (within ``controller.quorum.fetch.timeout.ms`` of the leader) without it, Strimzi's rule for KRaft controllers.

A snapshot that could not be taken is ``unknown``, never ``safe``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pipelines.roll_safety import Reason
from schemas.roll_safety import CheckStatus, RestartRisk, RollCheck

__all__ = ["DEFAULT_FETCH_TIMEOUT_MS", "NAMES_SHOWN", "PARTITIONS_LISTED", "ClusterState", "Exposure",
           "PartitionState", "QuorumState", "Recovery", "VoterState", "admin_reasons", "exposure", "quorum_reasons",
           "recovery", "recovery_eta_s", "roll_order", "structural"]

# Kafka's default `controller.quorum.fetch.timeout.ms` (QuorumConfig): a voter that has not caught up with the
# leader within it is not counted as caught up (Strimzi's rule, strimzi/proposals #91).
DEFAULT_FETCH_TIMEOUT_MS = 2000
# Partition names quoted per consequence (every count is complete; the names are the first ones, sorted).
NAMES_SHOWN = 10
# Partitions listed per reason (the API's `partitions`): a check's full list up to this many; the count is always
# complete. A broker of a large cluster hosts a few thousand replicas: the list stays a few hundred kB at most.
PARTITIONS_LISTED = 10_000
# The default of `min.insync.replicas` (a topic without the config, on a broker without the override).
DEFAULT_MIN_ISR = 1


@dataclass(frozen=True)
class PartitionState:
    """One partition as the Admin API describes it."""

    topic: str
    partition: int
    leader: int  # -1: none (offline)
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class VoterState:
    """A voter (or observer) of the KRaft metadata quorum, as DescribeQuorum reports it."""

    node: int
    log_end_offset: int
    last_caught_up_ms: int  # leader's wall clock; -1: unknown


@dataclass(frozen=True)
class QuorumState:
    """The KRaft metadata quorum as DescribeQuorum answers it, at the leader's `now_ms`."""

    leader: int
    epoch: int
    high_watermark: int
    voters: tuple[VoterState, ...]
    observers: tuple[VoterState, ...]
    now_ms: int  # when it was asked (the asker's clock: DescribeQuorum's times are the leader's wall clock)


@dataclass(frozen=True)
class ClusterState:
    """A cluster described through the Admin API at `taken_ms` (epoch ms)."""

    taken_ms: int
    brokers: tuple[int, ...]  # the live (registered, unfenced) brokers DescribeCluster lists
    partitions: tuple[PartitionState, ...]
    min_isr: Mapping[str, int] = field(default_factory=dict)  # topic -> effective min.insync.replicas
    unclean: Mapping[str, bool] = field(default_factory=dict)  # topic -> unclean.leader.election.enable
    quorum: QuorumState | None = None  # KRaft only
    fetch_timeout_ms: int = DEFAULT_FETCH_TIMEOUT_MS
    controller: int = -1  # DescribeCluster's controller: ZooKeeper mode's true one (KRaft: a random broker)


@dataclass(frozen=True)
class Exposure:
    """The partitions a broker's restart would put at risk, per consequence (sorted names)."""

    broker: int
    partitions: int  # replicas the broker hosts
    risks: Mapping[RestartRisk, tuple[str, ...]]

    def count(self, risk: RestartRisk) -> int:
        return len(self.risks.get(risk, ()))


@dataclass(frozen=True)
class Recovery:
    """How far a restarted broker is back: its replicas in their ISR, its preferred leaderships back."""

    broker: int
    replicas: int
    in_sync: int
    preferred: int  # partitions whose first replica (preferred leader) it is
    leading_preferred: int  # of those, the ones it leads now
    out_of_sync: tuple[str, ...]

    @property
    def in_sync_share(self) -> float:
        return 1.0 if self.replicas == 0 else self.in_sync / self.replicas


def exposure(state: ClusterState, broker: int) -> Exposure:
    """What restarting `broker` now would do to each partition it hosts (module docstring)."""
    out: dict[RestartRisk, list[str]] = {r: [] for r in RestartRisk}
    hosted = 0
    for p in state.partitions:
        if broker not in p.replicas:
            continue
        hosted += 1
        if broker not in p.isr:
            continue  # already out of the ISR: its restart changes nothing for this partition
        rest = [b for b in p.isr if b != broker]
        if not rest:
            out[RestartRisk.data_loss if state.unclean.get(p.topic, False) else RestartRisk.offline].append(p.name)
        elif len(rest) < _min_isr(state, p):
            out[RestartRisk.acks_all_blocked].append(p.name)
        if rest and p.leader == broker:
            out[RestartRisk.leader_moves].append(p.name)
    return Exposure(broker, hosted, {r: tuple(sorted(v)) for r, v in out.items() if v})


def _min_isr(state: ClusterState, p: PartitionState) -> int:
    return state.min_isr.get(p.topic, DEFAULT_MIN_ISR)


def structural(state: ClusterState, p: PartitionState) -> bool:
    """Whether partition `p`'s risk stays however long one waits: its replicas without any one of them are
    fewer than min.insync.replicas (or it has one replica), so every restart of a replica puts it at risk. Other
    risks come from replicas out of the ISR now (catching up after the last restart): waiting ends them."""
    return len(p.replicas) - 1 < max(1, _min_isr(state, p))


def recovery(state: ClusterState, broker: int) -> Recovery:
    """How far `broker` is back in its partitions' ISRs and leaderships."""
    mine = [p for p in state.partitions if broker in p.replicas]
    out = sorted(p.name for p in mine if broker not in p.isr)
    preferred = [p for p in mine if p.replicas and p.replicas[0] == broker]
    return Recovery(broker, len(mine), len(mine) - len(out), len(preferred),
                    sum(1 for p in preferred if p.leader == broker), tuple(out))


def recovery_eta_s(progress: Sequence[tuple[float, float]]) -> float | None:
    """Seconds until a restarted broker is back in every ISR, from its own catch-up so far: `progress` is (seconds,
    share of its replicas in sync) as successive descriptions saw it; the share's rate from the first to the last
    extrapolated to 1. None while it has not moved forward (nothing to extrapolate from)."""
    if len(progress) < 2:
        return None
    (t0, s0), (t1, s1) = progress[0], progress[-1]
    if s1 >= 1.0:
        return 0.0
    if t1 <= t0 or s1 <= s0:
        return None
    return (1.0 - s1) * (t1 - t0) / (s1 - s0)


def _names(names: Iterable[str]) -> str:
    names = list(names)
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


_RISK_CHECKS: dict[RestartRisk, tuple[RollCheck, CheckStatus, str]] = {
    RestartRisk.offline: (RollCheck.RESTART_OFFLINE, CheckStatus.unsafe,
                          "partition(s) it is the only in-sync replica of would go offline"),
    RestartRisk.data_loss: (RollCheck.RESTART_OFFLINE, CheckStatus.unsafe,
                            "partition(s) it is the only in-sync replica of would elect an out-of-sync leader "
                            "(unclean.leader.election.enable): acknowledged records lost"),
    RestartRisk.acks_all_blocked: (RollCheck.RESTART_UNDER_MIN_ISR, CheckStatus.unsafe,
                                   "partition(s) would fall below min.insync.replicas: acks=all producers blocked"),
}


def _broker_reasons(state: ClusterState, broker: int) -> list[Reason]:
    age = 0.0
    if broker not in state.brokers:
        rec = recovery(state, broker)
        return [Reason(RollCheck.RESTART_OFFLINE, CheckStatus.wait,
                       f"broker {broker} is not registered as a live broker: it is down, starting or fenced "
                       f"({rec.in_sync}/{rec.replicas} of its replicas in sync)", "DescribeCluster", None, None,
                       broker, age)]
    exp = exposure(state, broker)
    by_name = {p.name: p for p in state.partitions}
    out = []
    for risk, (check, status, what) in _RISK_CHECKS.items():
        names = exp.risks.get(risk, ())
        lasting = tuple(n for n in names if structural(state, by_name[n]))
        passing = tuple(n for n in names if n not in lasting)
        if lasting:
            out.append(Reason(check, status, f"restarting broker {broker}: {len(lasting)} {what} (too few replicas "
                              f"for min.insync.replicas: waiting does not help): {_names(lasting)}", "Admin API",
                              float(len(lasting)), 0, broker, age, lasting[:PARTITIONS_LISTED]))
        if passing:
            out.append(Reason(check, CheckStatus.wait, f"restarting broker {broker} now: {len(passing)} {what} "
                              f"until their other replicas are back in sync: {_names(passing)}", "Admin API",
                              float(len(passing)), 0, broker, age, passing[:PARTITIONS_LISTED]))
    for check in (RollCheck.RESTART_OFFLINE, RollCheck.RESTART_UNDER_MIN_ISR):
        if not any(r.check == check for r in out):
            out.append(Reason(check, CheckStatus.ok, f"restarting broker {broker}: no partition of its "
                              f"{exp.partitions} at risk", "Admin API", 0.0, 0, broker, age))
    moves = exp.risks.get(RestartRisk.leader_moves, ())
    out.append(Reason(RollCheck.RESTART_LEADERSHIP, CheckStatus.ok,
                      f"restarting broker {broker}: {len(moves)} partition(s) it leads fail over to another in-sync "
                      f"replica (acks=1 producers see a leader change)" + (f": {_names(moves)}" if moves else ""),
                      "Admin API", float(len(moves)), None, broker, age, moves[:PARTITIONS_LISTED]))
    out.append(_in_sync(state, broker, f"broker {broker}"))
    return out


def quorum_reasons(quorum: QuorumState, node: int | None, fetch_timeout_ms: int,
                   restarted: int | None = None) -> list[Reason]:
    """The quorum's state, and whether restarting `node` (a voter) leaves a caught-up majority. A voter not caught
    up because it was `restarted` last is catching up: what it holds back is waited for; any other voter not caught
    up may stay so (down, partitioned, overloaded): what it holds back is unsafe."""
    voters = sorted(v.node for v in quorum.voters)
    # the leader reports its own wall clock as its last caught-up time: the followers' times are measured against
    # it, so a skew between the asker's clock and the leader's does not count
    now = next((v.last_caught_up_ms for v in quorum.voters if v.node == quorum.leader and v.last_caught_up_ms > 0),
               quorum.now_ms)
    caught = sorted(v.node for v in quorum.voters
                    if v.node == quorum.leader
                    or (v.last_caught_up_ms >= 0 and now - v.last_caught_up_ms <= fetch_timeout_ms))
    majority = len(voters) // 2 + 1
    head = (f"voters {voters}, leader {quorum.leader} (epoch {quorum.epoch}), caught up within "
            f"{fetch_timeout_ms} ms: {caught}")
    if quorum.leader < 0:
        return [Reason(RollCheck.CONTROLLER_QUORUM, CheckStatus.wait, f"{head}: no quorum leader, an election is "
                       "under way", "DescribeQuorum", float(len(caught)), float(majority), node)]
    recovering = restarted in voters and restarted not in caught
    short = CheckStatus.wait if recovering else CheckStatus.unsafe
    if recovering:
        head += f"; controller {restarted} (restarted last) is catching up"
    if len(caught) < majority:
        return [Reason(RollCheck.CONTROLLER_QUORUM, short, f"{head}: fewer than a majority "
                       f"({majority}) caught up", "DescribeQuorum", float(len(caught)), float(majority), node)]
    if node is None or node not in voters:
        status = CheckStatus.wait if recovering else CheckStatus.ok
        return [Reason(RollCheck.CONTROLLER_QUORUM, status, head, "DescribeQuorum", float(len(caught)),
                       float(majority), node)]
    left = [v for v in caught if v != node]
    if len(left) < majority:
        return [Reason(RollCheck.CONTROLLER_QUORUM, short,
                       f"{head}: without controller {node}, {len(left)} caught-up voter(s) of {len(voters)} is "
                       f"below a majority ({majority}): restarting it stops the metadata quorum",
                       "DescribeQuorum", float(len(left)), float(majority), node)]
    lead = " (the active controller: a new leader is elected)" if node == quorum.leader else ""
    return [Reason(RollCheck.CONTROLLER_QUORUM, CheckStatus.ok,
                   f"{head}: without controller {node}{lead}, {len(left)} caught-up voter(s) keep a majority "
                   f"({majority})", "DescribeQuorum", float(len(left)), float(majority), node)]


def roll_order(state: ClusterState) -> list[int]:
    """The order to restart every node in: the brokers by id with ZooKeeper mode's controller last among them, then
    the KRaft controllers, the quorum leader last (each restart of the active controller moves it: once is enough)."""
    quorum = state.quorum
    zk_controller = state.controller if quorum is None else -1
    brokers = sorted(state.brokers, key=lambda b: (b == zk_controller, b))
    if quorum is None:
        return brokers
    voters = sorted((v.node for v in quorum.voters), key=lambda n: (n == quorum.leader, n))
    return [*brokers, *(v for v in voters if v not in brokers)]


def _in_sync(state: ClusterState, broker: int, who: str) -> Reason:
    """REPLICAS_IN_SYNC of `broker` (`who` names it): registered, every replica in its ISR, and how many of the
    partitions it is preferred leader of it leads again."""
    if broker not in state.brokers:
        return Reason(RollCheck.REPLICAS_IN_SYNC, CheckStatus.wait, f"{who} is not registered as a live broker yet",
                      "DescribeCluster", 0.0, 1.0, broker, 0.0)
    rec = recovery(state, broker)
    status = CheckStatus.ok if rec.in_sync == rec.replicas else CheckStatus.wait
    return Reason(RollCheck.REPLICAS_IN_SYNC, status,
                  f"{who}: {rec.in_sync} of {rec.replicas} replica(s) in their ISR"
                  + (f"; out: {_names(rec.out_of_sync)}" if rec.out_of_sync else "")
                  + f"; leads {rec.leading_preferred} of the {rec.preferred} it is preferred leader of",
                  "Admin API", rec.in_sync_share, 1.0, broker, 0.0, rec.out_of_sync[:PARTITIONS_LISTED])


def admin_reasons(state: ClusterState | None, error: str | None, node: int | None,
                  restarted: int | None = None) -> list[Reason]:
    """Roll-safety reasons from an Admin API snapshot for the node asked about (a broker or a KRaft voter; None:
    the cluster only) and, when given, the node `restarted` last (a broker must be back in every ISR; a voter is
    judged by the quorum check). `state` None with `error`: the cluster could not be described (unknown, never
    safe)."""
    if state is None:
        return [Reason(RollCheck.ADMIN_API, CheckStatus.unknown,
                       f"the cluster could not be described through the Admin API: {error or 'no answer'}",
                       "Admin API")]
    out = [Reason(RollCheck.ADMIN_API, CheckStatus.ok, f"{len(state.brokers)} live broker(s), "
                  f"{len(state.partitions)} partition(s) described", "Admin API", float(len(state.partitions)))]
    offline = sorted(p.name for p in state.partitions if p.leader < 0)
    if offline:
        out.append(Reason(RollCheck.RESTART_OFFLINE, CheckStatus.unsafe, f"{len(offline)} partition(s) have no "
                          f"leader now: {_names(offline)}", "Admin API", float(len(offline)), 0, None, 0.0,
                          tuple(offline[:PARTITIONS_LISTED])))
    voters = {v.node for v in state.quorum.voters} if state.quorum else set()
    if state.quorum is not None:
        out += quorum_reasons(state.quorum, node if node in voters else None, state.fetch_timeout_ms,
                              restarted if restarted in voters else None)
    if node is not None and node not in voters:
        out += _broker_reasons(state, node)
    if restarted is not None and restarted != node and restarted not in voters:
        out.append(_in_sync(state, restarted, f"broker {restarted} (restarted last)"))
    return out
