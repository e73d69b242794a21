"""Pure controller decisions: replica assignment, leader election, ISR changes (no I/O, no threads).

The controller's view of a partition is :class:`PartitionInfo` (Kafka's ``LeaderIsrAndControllerEpoch`` plus the
assignment); every change returns a new value with ``leader_epoch`` / ``partition_epoch`` moved as Kafka's
``LeaderAndIsr.newLeaderAndIsr`` and ZooKeeper's ``zkVersion`` do.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["NO_LEADER", "PartitionInfo", "assign_replicas", "elect_leader", "remove_from_isr"]

NO_LEADER = -1
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
