"""Pure decisions of the control requests: staleness, which partitions become leader/follower, error codes.

Nothing here locks, logs or mutates: :mod:`broker.state.replica_manager` applies these plans under
``replicaStateChangeLock`` and writes the state-change lines. The rules are Kafka 2.8's
(``KafkaApis.isBrokerEpochStale``, ``ReplicaManager.becomeLeaderOrFollower`` / ``stopReplicas``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from broker.protocol.error_codes import ErrorCode
from broker.state.model import (
    EPOCH_DURING_DELETE,
    INITIAL_LEADER_EPOCH,
    NO_EPOCH,
    UNKNOWN_BROKER_EPOCH,
    LeaderAndIsrPartition,
    PartitionState,
    StopReplicaPartition,
    TopicPartition,
)

__all__ = [
    "LeaderAndIsrDecision",
    "Outcome",
    "StopReplicaDecision",
    "is_broker_epoch_stale",
    "is_controller_epoch_stale",
    "plan_leader_and_isr",
    "plan_stop_replica",
]

# Kafka error codes used by the control requests (Errors.java).
def is_broker_epoch_stale(request_epoch: int, current_epoch: int, max_broker_epoch: int | None = None) -> bool:
    """STALE_BROKER_EPOCH rule.

    Apache 2.6+: an unknown epoch in the request (-1, a controller without KIP-380) is never stale; otherwise stale
    iff ``request < current`` (a *larger* request epoch is fine: the controller may learn the new epoch first).
    With the LinkedIn-fork ``max_broker_epoch`` field present and not -1: stale iff ``max_broker_epoch < current``.
    """
    if max_broker_epoch is not None and max_broker_epoch != UNKNOWN_BROKER_EPOCH:
        return max_broker_epoch < current_epoch
    if request_epoch == UNKNOWN_BROKER_EPOCH:
        return False
    return request_epoch < current_epoch


def is_controller_epoch_stale(request_epoch: int, current_epoch: int) -> bool:
    """STALE_CONTROLLER_EPOCH for a whole request: the request's controller epoch is older than the latest seen."""
    return request_epoch < current_epoch


class Outcome(Enum):
    """What happens to one partition of a control request."""

    BECOME_LEADER = "become-leader"
    BECOME_FOLLOWER = "become-follower"
    STALE_SMALLER = "leader epoch smaller"  # WARN, STALE_CONTROLLER_EPOCH (LeaderAndIsr) / FENCED_LEADER_EPOCH
    STALE_EQUAL = "leader epoch matches"  # INFO, same error codes
    NOT_IN_REPLICAS = "not in assigned replicas"  # WARN, UNKNOWN_TOPIC_OR_PARTITION
    STOP = "stop"  # StopReplica accepted


@dataclass(frozen=True, slots=True)
class LeaderAndIsrDecision:
    """The plan for one partition of a LeaderAndIsr request."""

    state: LeaderAndIsrPartition
    current_leader_epoch: int
    outcome: Outcome
    error: int


def plan_leader_and_isr(hosted: Mapping[TopicPartition, PartitionState], partitions: tuple[LeaderAndIsrPartition, ...],
                        local_broker_id: int) -> list[LeaderAndIsrDecision]:
    """Classify each partition as ReplicaManager.becomeLeaderOrFollower does (2.6+ rules), in request order.

    A partition whose requested leader epoch is not higher than the hosted one is stale (STALE_CONTROLLER_EPOCH,
    WARN when smaller, INFO when equal); a partition whose replica list lacks this broker is
    UNKNOWN_TOPIC_OR_PARTITION; the rest become leader (leader == this broker) or follower. Errors of partitions
    that change role are NONE (makeLeaders/makeFollowers set them).
    """
    plan: list[LeaderAndIsrDecision] = []
    for state in partitions:
        current = hosted.get(state.tp)
        current_epoch = current.leader_epoch if current is not None else INITIAL_LEADER_EPOCH
        if state.leader_epoch > current_epoch:
            if local_broker_id not in state.replicas:
                plan.append(LeaderAndIsrDecision(state, current_epoch, Outcome.NOT_IN_REPLICAS,
                                                 ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            elif state.leader == local_broker_id:
                plan.append(LeaderAndIsrDecision(state, current_epoch, Outcome.BECOME_LEADER, ErrorCode.NONE))
            else:
                plan.append(LeaderAndIsrDecision(state, current_epoch, Outcome.BECOME_FOLLOWER, ErrorCode.NONE))
        elif state.leader_epoch < current_epoch:
            stale = ErrorCode.STALE_CONTROLLER_EPOCH
            plan.append(LeaderAndIsrDecision(state, current_epoch, Outcome.STALE_SMALLER, stale))
        else:
            stale = ErrorCode.STALE_CONTROLLER_EPOCH
            plan.append(LeaderAndIsrDecision(state, current_epoch, Outcome.STALE_EQUAL, stale))
    return plan


@dataclass(frozen=True, slots=True)
class StopReplicaDecision:
    """The plan for one partition of a StopReplica request."""

    state: StopReplicaPartition
    current_leader_epoch: int | None  # None: not hosted here
    outcome: Outcome
    error: int


def plan_stop_replica(hosted: Mapping[TopicPartition, PartitionState],
                      partitions: tuple[StopReplicaPartition, ...]) -> list[StopReplicaDecision]:
    """Classify each partition as ReplicaManager.stopReplicas does (2.6+, KIP-570).

    Not hosted: stop (delete leftovers). Hosted: stop when the request epoch is the delete sentinel (-2), absent
    (-1, versions < 3) or higher than the hosted leader epoch; otherwise FENCED_LEADER_EPOCH (WARN when smaller,
    INFO when equal).
    """
    plan: list[StopReplicaDecision] = []
    for state in partitions:
        current = hosted.get(state.tp)
        if current is None:
            plan.append(StopReplicaDecision(state, None, Outcome.STOP, ErrorCode.NONE))
            continue
        epoch = current.leader_epoch
        if state.leader_epoch in (EPOCH_DURING_DELETE, NO_EPOCH) or state.leader_epoch > epoch:
            plan.append(StopReplicaDecision(state, epoch, Outcome.STOP, ErrorCode.NONE))
        elif state.leader_epoch < epoch:
            plan.append(StopReplicaDecision(state, epoch, Outcome.STALE_SMALLER, ErrorCode.FENCED_LEADER_EPOCH))
        else:
            plan.append(StopReplicaDecision(state, epoch, Outcome.STALE_EQUAL, ErrorCode.FENCED_LEADER_EPOCH))
    return plan
