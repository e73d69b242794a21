"""Pure controller decisions: round-robin assignment, clean leader election, ISR removal."""

from __future__ import annotations

import pytest

from broker.cluster.model import NO_LEADER, PartitionInfo, assign_replicas, elect_leader, remove_from_isr


def test_assignment_round_robin_distinct_replicas() -> None:
    out = assign_replicas([3, 1, 2], 6, 3, start_index=1)
    assert out[0] == (2, 3, 1)
    assert [r[0] for r in out] == [2, 3, 1, 2, 3, 1]  # leaders spread evenly
    assert all(len(set(r)) == 3 for r in out)


@pytest.mark.parametrize(("rf", "message"), [(0, "larger than 0"), (4, "larger than available brokers: 3")])
def test_assignment_rejects_bad_replication_factor(rf: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        assign_replicas([1, 2, 3], 1, rf)


def _p(leader: int, isr: tuple[int, ...]) -> PartitionInfo:
    return PartitionInfo("t", 0, (1, 2, 3), leader, 5, isr, 7, 1)


def test_election_picks_first_live_isr_replica_and_moves_epochs() -> None:
    new = elect_leader(_p(1, (1, 2, 3)), live={2, 3}, controller_epoch=2)
    assert (new.leader, new.isr, new.leader_epoch, new.partition_epoch, new.controller_epoch) == (2, (2, 3), 6, 8, 2)


def test_election_without_live_isr_goes_offline_keeping_the_isr() -> None:
    new = elect_leader(_p(1, (1,)), live={2, 3}, controller_epoch=2)
    assert (new.leader, new.isr) == (NO_LEADER, (1,))  # no unclean election: 2 and 3 may miss acked records


def test_remove_follower_from_isr() -> None:
    assert remove_from_isr(_p(1, (1, 2, 3)), 3, 1).isr == (1, 2)
    unchanged = _p(1, (1, 2))
    assert remove_from_isr(unchanged, 3, 1) is unchanged
    assert remove_from_isr(unchanged, 1, 1) is unchanged  # the leader leaves through an election, not here
