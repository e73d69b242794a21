"""The controller's admin events: ElectLeaders (preferred and unclean), CreatePartitions and partition
reassignments (Alter/ListPartitionReassignments), as the ZooKeeper-era Kafka controller carries them out.

:class:`AdminEvents` is a part of :class:`broker.cluster.controller.Controller` (its base class), kept in a module of
its own: the public methods submit an event to the controller's one event thread (``Controller.call``, with the
``ControllerState`` it is timed in), the private ones run on it, update the partition states (pure decisions in
:mod:`broker.cluster.model`), persist them and send the control requests through the controller's senders.

A reassignment (Kafka's ``/admin/reassign_partitions``): the partition's replicas become original + target (the
adding ones catch up as followers), and once every target replica is in the ISR the assignment becomes the target;
the dropped replicas get StopReplica with delete. A cancellation goes back to the original replicas the same way.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from broker.cluster.model import (
    MAX_PARTITIONS_PER_TOPIC,
    NO_REASSIGNMENT,
    PartitionInfo,
    Reassignment,
    assign_replicas,
    cancel_reassignment,
    elect_preferred,
    elect_unclean,
    finish_reassignment,
    leader_and_isr_text,
    start_reassignment,
    validate_reassignment,
)
from broker.protocol.error_codes import ErrorCode
from broker.state.model import StopReplicaPartition

if TYPE_CHECKING:
    from broker.log4j import KafkaLogger
    from broker.metrics.registry import Meter

__all__ = ["PREFERRED_ELECTION", "UNCLEAN_ELECTION", "AdminEvents"]

T = TypeVar("T")
# ElectLeaders' ElectionType (org.apache.kafka.common.ElectionType)
PREFERRED_ELECTION, UNCLEAN_ELECTION = 0, 1


class AdminEvents:
    """The admin events of the controller (mixed into :class:`~broker.cluster.controller.Controller`)."""

    if TYPE_CHECKING:  # what the controller provides
        brokers: Mapping[int, object]  # the live brokers by id (the registrations are the controller's)
        partitions: dict[tuple[str, int], PartitionInfo]
        reassignments: dict[tuple[str, int], Reassignment]
        controller_epoch: int
        _log: KafkaLogger
        _unclean: Meter

        def call(self, fn: Callable[[], T], state: str | None = None) -> T: ...
        def _save(self) -> None: ...
        def _state_change_log(self) -> Any: ...
        def _send_leader_and_isr(self, partitions: list[PartitionInfo], *, is_new: bool = False,
                                 only: set[int] | None = None) -> None: ...
        def _send_update_metadata(self, broker_ids: list[int], partitions: list[PartitionInfo]) -> None: ...
        def _send_stop_replica(self, broker_ids: list[int], partitions: list[StopReplicaPartition]) -> None: ...

    def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None) -> list[dict[str, Any]]:
        """ElectLeaders forwarded by a broker: ``[{topic, partition, error_code, error_message}]``; with
        ``partitions`` None every partition, answering only those an election was needed for (as Kafka)."""
        return self.call(lambda: self._on_elect_leaders(election_type, partitions), "ManualLeaderBalance")

    def create_partitions(self, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """CreatePartitions forwarded by a broker: ``[{name, count, assignments, validate_only}]`` -> results."""
        return self.call(lambda: [self._create_partitions(t) for t in topics], "TopicChange")

    def alter_reassignments(self, moves: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """AlterPartitionReassignments forwarded by a broker: ``[{topic, partition, replicas (None: cancel)}]``."""
        return self.call(lambda: [self._alter_reassignment(m) for m in moves], "AlterPartitionReassignment")

    def list_reassignments(self, partitions: list[tuple[str, int]] | None) -> list[dict[str, Any]]:
        """The reassignments in progress (of ``partitions``; None: all): ``[{topic, partition, replicas, adding,
        removing}]``."""
        def listed() -> list[dict[str, Any]]:
            out = []
            for key, move in sorted(self.reassignments.items()):
                info = self.partitions.get(key)
                if info is None or (partitions is not None and key not in partitions):
                    continue
                out.append({"topic": key[0], "partition": key[1], "replicas": list(info.replicas),
                            "adding": list(move.adding), "removing": list(move.removing)})
            return out
        return self.call(listed, "ListPartitionReassignment")

    def _on_elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None) -> list[dict[str, Any]]:
        keys = sorted(self.partitions) if partitions is None else partitions
        live = set(self.brokers)
        sc = self._state_change_log()
        out: list[dict[str, Any]] = []
        changed: list[PartitionInfo] = []
        for key in keys:
            info = self.partitions.get(key)
            if info is None:
                out.append({"topic": key[0], "partition": key[1], "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            "error_message": "The partition does not exist."})
                continue
            if election_type == UNCLEAN_ELECTION:
                election, unclean = elect_unclean(info, live, self.controller_epoch)
                if unclean:
                    self._unclean.mark()
            else:
                election = elect_preferred(info, live, self.controller_epoch)
            if election.error == ErrorCode.ELECTION_NOT_NEEDED and partitions is None:
                continue  # Kafka answers only the partitions an election was needed for when asked for all
            message: str | None = None
            if election.error == ErrorCode.ELECTION_NOT_NEEDED:
                message = "Leader election not needed for topic partition."
            elif election.error != ErrorCode.NONE:
                message = f"Failed to elect leader for partition {key[0]}-{key[1]}"
            out.append({"topic": key[0], "partition": key[1], "error_code": election.error, "error_message": message})
            if election.info is not None:
                self.partitions[key] = election.info
                changed.append(election.info)
                sc.info(f"Changed partition {key[0]}-{key[1]} from OnlinePartition to OnlinePartition with state "
                        f"{leader_and_isr_text(election.info)}")
        if changed:
            self._save()
            self._send_leader_and_isr(changed)
            self._send_update_metadata(list(self.brokers), changed)
        return out

    def _create_partitions(self, spec: dict[str, Any]) -> dict[str, Any]:
        name, count = str(spec["name"]), int(spec["count"])
        existing = sorted(p for (t, p) in self.partitions if t == name)
        if not existing:
            return {"name": name, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "error_message": f"The topic '{name}' does not exist."}
        old = len(existing)
        if count <= old:
            return {"name": name, "error_code": ErrorCode.INVALID_PARTITIONS,
                    "error_message": f"Topic currently has {old} partitions, which is higher than the requested "
                                     f"{count}." if count < old else f"Topic already has {old} partitions."}
        if count > MAX_PARTITIONS_PER_TOPIC:
            return {"name": name, "error_code": ErrorCode.INVALID_PARTITIONS,
                    "error_message": f"Number of partitions must be between 1 and {MAX_PARTITIONS_PER_TOPIC}."}
        rf = len(self.partitions[(name, 0)].replicas)
        given = spec.get("assignments")
        if given is not None:
            assignment = [tuple(int(r) for r in a) for a in given]
            bad = (len(assignment) != count - old or any(len(a) != rf or len(set(a)) != rf for a in assignment)
                   or any(r not in self.brokers for a in assignment for r in a))
            if bad:
                return {"name": name, "error_code": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        "error_message": f"Invalid replica assignment {given} for {count - old} new partitions of "
                                         f"replication factor {rf} on live brokers {sorted(self.brokers)}."}
        else:
            try:
                start = zlib.crc32(name.encode()) + old
                assignment = assign_replicas(list(self.brokers), count - old, rf, start_index=start)
            except ValueError as exc:
                return {"name": name, "error_code": ErrorCode.INVALID_REPLICATION_FACTOR, "error_message": str(exc)}
        if spec.get("validate_only"):
            return {"name": name, "error_code": ErrorCode.NONE, "error_message": None}
        created = [PartitionInfo(name, old + i, replicas, replicas[0], 0, replicas, 0, self.controller_epoch)
                   for i, replicas in enumerate(assignment)]
        for info in created:
            self.partitions[(name, info.partition)] = info
        self._save()
        self._log.info("New partitions to be added " + ", ".join(
            f"{name}-{i.partition} -> ReplicaAssignment(replicas={','.join(map(str, i.replicas))}, addingReplicas=, "
            "removingReplicas=)" for i in created))
        self._send_leader_and_isr(created, is_new=True)
        self._send_update_metadata(list(self.brokers), list(self.partitions.values()))
        return {"name": name, "error_code": ErrorCode.NONE, "error_message": None}

    def _alter_reassignment(self, move: dict[str, Any]) -> dict[str, Any]:
        key = (str(move["topic"]), int(move["partition"]))
        answer = {"topic": key[0], "partition": key[1], "error_code": ErrorCode.NONE, "error_message": None}
        info = self.partitions.get(key)
        if info is None:
            return {**answer, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "error_message": "The partition does not exist."}
        current = self.reassignments.get(key)
        if move.get("replicas") is None:
            if current is None:
                return {**answer, "error_code": ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                        "error_message": NO_REASSIGNMENT}
            self._end_reassignment(key, cancel_reassignment(info, current, set(self.brokers), self.controller_epoch),
                                   current, dropped=current.adding)
            return answer
        target = tuple(int(r) for r in move["replicas"])
        invalid = validate_reassignment(target, set(self.brokers))
        if invalid is not None:
            return {**answer, "error_code": invalid[0], "error_message": invalid[1]}
        original = current.original if current is not None else info.replicas
        if current is None and target == info.replicas:
            return answer  # nothing to move: complete at once
        plan = Reassignment(target, original)
        self.reassignments[key] = plan
        started = start_reassignment(replace(info, replicas=original), plan, self.controller_epoch)
        self.partitions[key] = started
        self._save()
        self._log.info(f"Handling reassignment of partition {key[0]}-{key[1]} to new replicas "
                       f"{','.join(map(str, target))}")
        self._send_leader_and_isr([started])
        self._send_update_metadata(list(self.brokers), [started])
        self._maybe_finish_reassignment(key)
        return answer

    def _maybe_finish_reassignment(self, key: tuple[str, int]) -> None:
        move, info = self.reassignments.get(key), self.partitions.get(key)
        if move is None or info is None:
            return
        done = finish_reassignment(info, move, set(self.brokers), self.controller_epoch)
        if done is not None:
            self._end_reassignment(key, done, move, dropped=move.removing)

    def _end_reassignment(self, key: tuple[str, int], new: PartitionInfo, move: Reassignment,
                          dropped: tuple[int, ...]) -> None:
        """Adopt ``new`` (the finished or cancelled assignment), tell its replicas, and have the dropped replicas
        delete their copies (StopReplica with delete)."""
        del self.reassignments[key]
        self.partitions[key] = new
        self._save()
        self._log.info(f"Partition {key[0]}-{key[1]} reassignment to {','.join(map(str, move.target))} "
                       f"{'completed' if new.replicas == move.target else 'cancelled'}")
        self._send_leader_and_isr([new])
        self._send_update_metadata(list(self.brokers), [new])
        self._send_stop_replica([bid for bid in dropped if bid in self.brokers],
                                [StopReplicaPartition(key[0], key[1], new.leader_epoch, delete=True)])
