"""Pure controller decisions: replica assignment, leader election, ISR changes (no I/O, no threads).

The controller's view of a partition is :class:`PartitionInfo` (Kafka's ``LeaderIsrAndControllerEpoch`` plus the
assignment); every change returns a new value with ``leader_epoch`` / ``partition_epoch`` moved as Kafka's
``LeaderAndIsr.newLeaderAndIsr`` and ZooKeeper's ``zkVersion`` do.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from broker.protocol.error_codes import ErrorCode

__all__ = ["MAX_PARTITIONS_PER_TOPIC", "NO_LEADER", "NO_REASSIGNMENT", "Election", "PartitionInfo", "Reassignment",
           "assign_replicas", "cancel_reassignment", "elect_leader", "elect_preferred", "elect_unclean",
           "finish_reassignment", "leader_and_isr_text", "remove_from_isr", "start_reassignment",
           "validate_reassignment"]

NO_LEADER = -1
#: Kafka's message for cancelling a reassignment of a partition that has none (NO_REASSIGNMENT_IN_PROGRESS).
NO_REASSIGNMENT = "No partition reassignment is in progress."
# Partitions one CreateTopics may ask for (a typo must not create 100k directories on a laptop).
MAX_PARTITIONS_PER_TOPIC = 10_000
# Kafka refuses replication factors above the number of live brokers (INVALID_REPLICATION_FACTOR).


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """The controller's state of one partition."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int  # zkVersion
    controller_epoch: int

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (the controller's persisted state, ``--status``)."""
        return {"topic": self.topic, "partition": self.partition, "replicas": list(self.replicas),
                "leader": self.leader, "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                "partition_epoch": self.partition_epoch, "controller_epoch": self.controller_epoch}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PartitionInfo:
        """Inverse of :meth:`to_json`."""
        return cls(str(d["topic"]), int(d["partition"]), tuple(int(r) for r in d["replicas"]), int(d["leader"]),
                   int(d["leader_epoch"]), tuple(int(r) for r in d["isr"]), int(d["partition_epoch"]),
                   int(d["controller_epoch"]))


def leader_and_isr_text(p: PartitionInfo) -> str:
    """Kafka 2.8's ``LeaderAndIsr.toString`` (the partition state machine's INFO lines)."""
    return (f"LeaderAndIsr(leader={p.leader}, leaderEpoch={p.leader_epoch}, isr=List({', '.join(map(str, p.isr))}), "
            f"zkVersion={p.partition_epoch})")


def assign_replicas(brokers: Sequence[int], num_partitions: int, replication_factor: int,
                    start_index: int = 0) -> list[tuple[int, ...]]:
    """Round-robin assignment (Kafka's rack-unaware ``assignReplicasToBrokers`` without the follower shift).

    Raises:
        ValueError: replication factor larger than the number of brokers, or < 1.
    """
    ids = sorted(brokers)
    n = len(ids)
    if replication_factor < 1:
        raise ValueError("Replication factor must be larger than 0.")
    if replication_factor > n:
        raise ValueError(f"Replication factor: {replication_factor} larger than available brokers: {n}.")
    return [tuple(ids[(start_index + p + j) % n] for j in range(replication_factor))
            for p in range(num_partitions)]


def elect_leader(info: PartitionInfo, live: Collection[int], controller_epoch: int) -> PartitionInfo:
    """OfflinePartitionLeaderElectionStrategy (clean): the first assigned replica that is live and in the ISR.

    Without one the partition goes offline (leader -1) and keeps its last ISR, as Kafka does without unclean
    election. Leader epoch and partition epoch move in both cases.
    """
    candidates = [r for r in info.replicas if r in live and r in info.isr]
    if candidates:
        leader = candidates[0]
        isr = tuple(r for r in info.isr if r in live)
    else:
        leader, isr = NO_LEADER, info.isr
    return replace(info, leader=leader, isr=isr, leader_epoch=info.leader_epoch + 1,
                   partition_epoch=info.partition_epoch + 1, controller_epoch=controller_epoch)


def remove_from_isr(info: PartitionInfo, broker: int, controller_epoch: int) -> PartitionInfo:
    """A follower went offline: drop it from the ISR (new leader epoch, as ``newLeaderAndIsr``)."""
    if broker not in info.isr or info.leader == broker:
        return info
    return replace(info, isr=tuple(r for r in info.isr if r != broker), leader_epoch=info.leader_epoch + 1,
                   partition_epoch=info.partition_epoch + 1, controller_epoch=controller_epoch)


@dataclass(frozen=True, slots=True)
class Election:
    """The outcome of a requested election: the new state (None: nothing changes) and the error code to answer."""

    info: PartitionInfo | None
    error: int


def _new_leader(info: PartitionInfo, leader: int, isr: tuple[int, ...], controller_epoch: int) -> PartitionInfo:
    return replace(info, leader=leader, isr=isr, leader_epoch=info.leader_epoch + 1,
                   partition_epoch=info.partition_epoch + 1, controller_epoch=controller_epoch)


def elect_preferred(info: PartitionInfo, live: Collection[int], controller_epoch: int) -> Election:
    """PreferredReplicaPartitionLeaderElectionStrategy: the first assigned replica leads, if it is live and in the
    ISR; ELECTION_NOT_NEEDED when it already leads, PREFERRED_LEADER_NOT_AVAILABLE when it cannot."""
    preferred = info.replicas[0]
    if info.leader == preferred:
        return Election(None, ErrorCode.ELECTION_NOT_NEEDED)
    if preferred not in live or preferred not in info.isr:
        return Election(None, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)
    return Election(_new_leader(info, preferred, info.isr, controller_epoch), ErrorCode.NONE)


def elect_unclean(info: PartitionInfo, live: Collection[int], controller_epoch: int) -> tuple[Election, bool]:
    """ElectionType.UNCLEAN for a partition: ELECTION_NOT_NEEDED while its leader is live; else a live ISR member
    (clean), else any live replica, which then is the whole ISR (unclean: the second value is True);
    ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live."""
    if info.leader != NO_LEADER and info.leader in live:
        return Election(None, ErrorCode.ELECTION_NOT_NEEDED), False
    clean = [r for r in info.replicas if r in live and r in info.isr]
    if clean:
        isr = tuple(r for r in info.isr if r in live)
        return Election(_new_leader(info, clean[0], isr, controller_epoch), ErrorCode.NONE), False
    unclean = [r for r in info.replicas if r in live]
    if not unclean:
        return Election(None, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE), False
    return Election(_new_leader(info, unclean[0], (unclean[0],), controller_epoch), ErrorCode.NONE), True


@dataclass(frozen=True, slots=True)
class Reassignment:
    """A partition reassignment in progress: the target replicas (TRS) and the replicas before it (ORS)."""

    target: tuple[int, ...]
    original: tuple[int, ...]

    @property
    def adding(self) -> tuple[int, ...]:
        """Replicas of the target that were not assigned before (AR)."""
        return tuple(r for r in self.target if r not in self.original)

    @property
    def removing(self) -> tuple[int, ...]:
        """Replicas assigned before that the target drops (RR)."""
        return tuple(r for r in self.original if r not in self.target)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (the controller's persisted state)."""
        return {"target": list(self.target), "original": list(self.original)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Reassignment:
        """Inverse of :meth:`to_json`."""
        return cls(tuple(int(r) for r in d["target"]), tuple(int(r) for r in d["original"]))


def validate_reassignment(target: Sequence[int], live: Collection[int]) -> tuple[int, str] | None:
    """Kafka's checks of a requested replica list (INVALID_REPLICA_ASSIGNMENT with its message), None when valid."""
    if not target:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Empty replica list specified in partition reassignment."
    if len(set(target)) != len(target):
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate replica ids in partition reassignment replica list: {list(target)}")
    if any(r not in live for r in target):
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Replica assignment has brokers that are not alive. Replica "
                f"list: {','.join(map(str, target))}, live broker list: {','.join(map(str, sorted(live)))}")
    return None


def start_reassignment(info: PartitionInfo, move: Reassignment, controller_epoch: int) -> PartitionInfo:
    """Phase A of ``onPartitionReassignment``: assign target plus removing replicas (RS = TRS + RR), new leader
    epoch, so the adding replicas become followers and catch up."""
    return replace(info, replicas=(*move.target, *move.removing), leader_epoch=info.leader_epoch + 1,
                   partition_epoch=info.partition_epoch + 1, controller_epoch=controller_epoch)


def finish_reassignment(info: PartitionInfo, move: Reassignment, live: Collection[int],
                        controller_epoch: int) -> PartitionInfo | None:
    """Phase B, once every target replica is in the ISR (else None): RS = TRS, the removed replicas leave the ISR,
    and a target replica leads (the current leader if it is one and live, else the first live one in the ISR)."""
    if not all(r in info.isr for r in move.target):
        return None
    isr = tuple(r for r in info.isr if r in move.target)
    leader = info.leader
    if leader not in move.target or leader not in live:
        candidates = [r for r in move.target if r in isr and r in live]
        leader = candidates[0] if candidates else NO_LEADER
    return replace(info, replicas=move.target, leader=leader, isr=isr, leader_epoch=info.leader_epoch + 1,
                   partition_epoch=info.partition_epoch + 1, controller_epoch=controller_epoch)


def cancel_reassignment(info: PartitionInfo, move: Reassignment, live: Collection[int],
                        controller_epoch: int) -> PartitionInfo:
    """A cancelled reassignment: back to the original replicas; the adding ones leave the ISR (and the leadership)."""
    isr = tuple(r for r in info.isr if r in move.original) or info.isr
    leader = info.leader
    if leader not in move.original:
        candidates = [r for r in move.original if r in isr and r in live]
        leader = candidates[0] if candidates else NO_LEADER
    return replace(info, replicas=move.original, leader=leader, isr=isr, leader_epoch=info.leader_epoch + 1,
                   partition_epoch=info.partition_epoch + 1, controller_epoch=controller_epoch)
