"""The pure decisions of broker/state (no locks, no logs, no frames)."""

from __future__ import annotations

import pytest

from broker.protocol.error_codes import ErrorCode
from broker.state.decisions import (
    Outcome,
    is_broker_epoch_stale,
    is_controller_epoch_stale,
    plan_leader_and_isr,
    plan_stop_replica,
)
from broker.state.model import LeaderAndIsrPartition, PartitionState, Role, StopReplicaPartition, TopicPartition


@pytest.mark.parametrize(("request_epoch", "current", "max_epoch", "stale"), [
    (-1, 10, None, False),   # unknown in the request: never stale
    (9, 10, None, True),     # 2.6+: request < current
    (10, 10, None, False),
    (11, 10, None, False),   # the controller may learn a newer epoch first
    (5, -1, None, False),    # the broker does not know its epoch
    (-1, 10, 9, True),       # max_broker_epoch decides when present
    (3, 10, 10, False),
    (12, 10, -1, False),     # -1 = absent: the Apache rule
])
def test_broker_epoch_rule(request_epoch: int, current: int, max_epoch: int | None, stale: bool) -> None:
    assert is_broker_epoch_stale(request_epoch, current, max_epoch) is stale


def test_controller_epoch_rule() -> None:
    assert is_controller_epoch_stale(4, 5)
    assert not is_controller_epoch_stale(5, 5)
    assert not is_controller_epoch_stale(6, 5)


def _hosted(p: int, epoch: int) -> PartitionState:
    return PartitionState(TopicPartition("t", p), Role.LEADER, 1, epoch, (1, 2), (1, 2), 0, 5)


def _req(p: int, *, leader: int, epoch: int, replicas: tuple[int, ...] = (1, 2)) -> LeaderAndIsrPartition:
    return LeaderAndIsrPartition("t", p, 5, leader, epoch, replicas, 0, replicas)


def test_plan_leader_and_isr() -> None:
    hosted = {TopicPartition("t", 0): _hosted(0, 3), TopicPartition("t", 1): _hosted(1, 3)}
    plan = plan_leader_and_isr(hosted, (
        _req(0, leader=1, epoch=3),             # equal epoch
        _req(1, leader=2, epoch=2),             # smaller epoch
        _req(2, leader=1, epoch=0),             # new partition, this broker leads
        _req(3, leader=2, epoch=0),             # new partition, follower
        _req(4, leader=2, epoch=0, replicas=(2, 3)),  # not a replica here
    ), local_broker_id=1)
    assert [(d.state.partition, d.outcome, d.error, d.current_leader_epoch) for d in plan] == [
        (0, Outcome.STALE_EQUAL, ErrorCode.STALE_CONTROLLER_EPOCH, 3),
        (1, Outcome.STALE_SMALLER, ErrorCode.STALE_CONTROLLER_EPOCH, 3),
        (2, Outcome.BECOME_LEADER, ErrorCode.NONE, -1),
        (3, Outcome.BECOME_FOLLOWER, ErrorCode.NONE, -1),
        (4, Outcome.NOT_IN_REPLICAS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
    ]


def test_plan_stop_replica() -> None:
    hosted = {TopicPartition("t", p): _hosted(p, 3) for p in range(5)}
    plan = plan_stop_replica(hosted, (
        StopReplicaPartition("t", 0, -1, True),   # no epoch (v0-2): stop
        StopReplicaPartition("t", 1, -2, True),   # deleting sentinel: stop
        StopReplicaPartition("t", 2, 4, False),   # newer: stop
        StopReplicaPartition("t", 3, 3, True),    # equal: fenced
        StopReplicaPartition("t", 4, 2, True),    # older: fenced
        StopReplicaPartition("t", 9, 0, True),    # not hosted: stop (delete leftovers)
    ))
    assert [(d.state.partition, d.outcome, d.error) for d in plan] == [
        (0, Outcome.STOP, ErrorCode.NONE), (1, Outcome.STOP, ErrorCode.NONE), (2, Outcome.STOP, ErrorCode.NONE),
        (3, Outcome.STALE_EQUAL, ErrorCode.FENCED_LEADER_EPOCH),
        (4, Outcome.STALE_SMALLER, ErrorCode.FENCED_LEADER_EPOCH),
        (9, Outcome.STOP, ErrorCode.NONE),
    ]
    assert plan[-1].current_leader_epoch is None
