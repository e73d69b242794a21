"""What restarting one node would do (pure): each partition's consequence, a restarted broker's recovery, the
controller quorum's majority without a voter, and a cluster that cannot be described."""

from __future__ import annotations

import pytest

from pipelines.restart_probe import (
    ClusterState,
    PartitionState,
    QuorumState,
    VoterState,
    admin_reasons,
    exposure,
    quorum_reasons,
    recovery,
    recovery_eta_s,
    roll_order,
)
from schemas.roll_safety import CheckStatus, RestartRisk, RollCheck

P = PartitionState


def state(*parts: PartitionState, min_isr: dict[str, int] | None = None, unclean: dict[str, bool] | None = None,
          brokers: tuple[int, ...] = (1, 2, 3), quorum: QuorumState | None = None) -> ClusterState:
    return ClusterState(0, brokers, parts, min_isr or {}, unclean or {}, quorum)


def test_each_partition_gets_the_consequence_of_its_own_isr() -> None:
    s = state(P("rf1", 0, 1, (1,), (1,)),                     # only replica: offline
              P("lagging", 0, 1, (1, 2, 3), (1,)),            # only in-sync replica: offline
              P("edge", 0, 2, (2, 1, 3), (2, 1)),             # ISR 2 at min 2: acks=all blocked
              P("edge", 1, 1, (1, 2, 3), (1, 2, 3)),          # ISR 3 at min 2: fine, but it leads: moves
              P("out", 0, 2, (2, 1), (2,)),                   # broker 1 already out of the ISR: nothing changes
              P("other", 0, 2, (2, 3), (2, 3)),               # not hosted
              P("unclean", 0, 1, (1, 2), (1,)),               # only in-sync replica, unclean allowed: data loss
              min_isr={"edge": 2, "lagging": 2}, unclean={"unclean": True})
    exp = exposure(s, 1)
    assert exp.partitions == 6
    assert exp.risks[RestartRisk.offline] == ("lagging-0", "rf1-0")
    assert exp.risks[RestartRisk.data_loss] == ("unclean-0",)
    assert exp.risks[RestartRisk.acks_all_blocked] == ("edge-0",)
    assert exp.risks[RestartRisk.leader_moves] == ("edge-1",)
    assert exposure(s, 3).risks == {}


def test_reasons_name_the_partitions_and_the_verdict_status() -> None:
    s = state(*(P("t", i, 1, (1, 2), (1, 2)) for i in range(12)), P("solo", 0, 1, (1,), (1,)),
              min_isr={"t": 2})
    got = {r.check: r for r in admin_reasons(s, None, 1)}
    assert got[RollCheck.RESTART_OFFLINE].status == CheckStatus.unsafe
    assert got[RollCheck.RESTART_OFFLINE].partitions == ("solo-0",)
    blocked = got[RollCheck.RESTART_UNDER_MIN_ISR]
    assert (blocked.status, blocked.value, len(blocked.partitions)) == (CheckStatus.unsafe, 12.0, 12)
    assert "and 2 more" in blocked.text  # the text quotes the first ten; the list is whole
    assert got[RollCheck.RESTART_LEADERSHIP].status == CheckStatus.ok
    assert got[RollCheck.REPLICAS_IN_SYNC].status == CheckStatus.ok
    assert {r.status for r in admin_reasons(s, None, 3)} == {CheckStatus.ok}  # hosts none of them


def test_a_restarted_broker_waits_until_every_replica_is_back_in_sync() -> None:
    behind = state(P("t", 0, 2, (1, 2), (2,)), P("t", 1, 2, (1, 2), (2, 1)), P("t", 2, 2, (2, 1), (2, 1)))
    rec = recovery(behind, 1)
    assert (rec.replicas, rec.in_sync, rec.out_of_sync, rec.preferred, rec.leading_preferred) == \
        (3, 2, ("t-0",), 2, 0)
    got = {r.check: r for r in admin_reasons(behind, None, 1)}
    assert got[RollCheck.REPLICAS_IN_SYNC].status == CheckStatus.wait
    assert got[RollCheck.REPLICAS_IN_SYNC].partitions == ("t-0",)


def test_a_broker_not_registered_is_waited_for_and_a_leaderless_partition_is_unsafe() -> None:
    s = state(P("t", 0, -1, (3,), ()), P("t", 1, 1, (1, 3), (1,)), brokers=(1, 2))
    got = admin_reasons(s, None, 3)
    assert [(r.check, r.status) for r in got if r.status != CheckStatus.ok] == [
        (RollCheck.RESTART_OFFLINE, CheckStatus.unsafe), (RollCheck.RESTART_OFFLINE, CheckStatus.wait)]
    assert "not registered" in got[-1].text


def test_a_cluster_that_cannot_be_described_is_unknown_never_safe() -> None:
    (r,) = admin_reasons(None, "no answer within 10 s", 1)
    assert (r.check, r.status) == (RollCheck.ADMIN_API, CheckStatus.unknown)
    assert "no answer within 10 s" in r.text


def quorum(caught_ms_ago: dict[int, int], leader: int = 100) -> QuorumState:
    now = 1_000_000
    voters = tuple(VoterState(n, 50, -1 if ago < 0 else now - ago) for n, ago in caught_ms_ago.items())
    return QuorumState(leader, 3, 50, voters, (), now + 123_456)  # the asker's clock is off: the leader's counts


@pytest.mark.parametrize(("ago", "node", "status"), [
    ({100: 0, 101: 100, 102: 100}, 101, CheckStatus.ok),        # all caught up: any one may go
    ({100: 0, 101: 100, 102: 100}, 100, CheckStatus.ok),        # even the leader (an election follows)
    ({100: 0, 101: 100, 102: 9_000}, 101, CheckStatus.unsafe),  # 102 lags: 101 is needed for the majority
    ({100: 0, 101: 100, 102: 9_000}, 102, CheckStatus.ok),      # restarting the lagging voter keeps 100 + 101
    ({100: 0, 101: 9_000, 102: -1}, None, CheckStatus.unsafe),  # no caught-up majority at all
])
def test_a_controller_may_restart_only_if_a_caught_up_majority_remains(ago: dict[int, int], node: int | None,
                                                                      status: CheckStatus) -> None:
    (r,) = quorum_reasons(quorum(ago), node, 2000)
    assert (r.check, r.status) == (RollCheck.CONTROLLER_QUORUM, status), r.text


def test_no_quorum_leader_is_an_election_to_wait_for() -> None:
    (r,) = quorum_reasons(quorum({100: 0, 101: 0, 102: 0}, leader=-1), 101, 2000)
    assert r.status == CheckStatus.wait


def test_asking_about_a_controller_skips_the_broker_checks() -> None:
    s = state(P("t", 0, 1, (1,), (1,)), quorum=quorum({100: 0, 101: 0, 102: 0}))
    checks = [r.check for r in admin_reasons(s, None, 101)]
    assert checks == [RollCheck.ADMIN_API, RollCheck.CONTROLLER_QUORUM]


def test_a_risk_from_replicas_still_catching_up_is_waited_for_and_one_from_too_few_replicas_is_unsafe() -> None:
    """Broker 2 just restarted and is not back in `wide`'s ISR: restarting broker 1 now would leave `wide` below
    min.insync.replicas, but only until broker 2 catches up (wait); `narrow` has two replicas for a min of two: every
    restart of either blocks acks=all producers, however long one waits (unsafe)."""
    s = state(P("wide", 0, 1, (1, 2, 3), (1, 3)), P("narrow", 0, 1, (1, 3), (1, 3)),
              min_isr={"wide": 2, "narrow": 2})
    got = [(r.status, r.partitions) for r in admin_reasons(s, None, 1) if r.check == RollCheck.RESTART_UNDER_MIN_ISR]
    assert got == [(CheckStatus.unsafe, ("narrow-0",)), (CheckStatus.wait, ("wide-0",))]


def test_a_voter_catching_up_after_its_restart_holds_the_next_one_back_as_wait_not_unsafe() -> None:
    """Controller 101 was restarted last and is not caught up yet: restarting 102 now would leave one caught-up voter
    of three, but only until 101 catches up (wait); were 101 not the one restarted last, nothing says it will
    (unsafe). The final gate (no next node) waits for it too."""
    q = quorum({100: 0, 101: 9_000, 102: 100})
    (r,) = quorum_reasons(q, 102, 2000, restarted=101)
    assert r.status == CheckStatus.wait, r.text
    assert "101 (restarted last) is catching up" in r.text
    (r,) = quorum_reasons(q, 102, 2000)
    assert r.status == CheckStatus.unsafe
    (r,) = quorum_reasons(q, None, 2000, restarted=101)
    assert r.status == CheckStatus.wait
    (r,) = quorum_reasons(quorum({100: 0, 101: 100, 102: 100}), None, 2000, restarted=101)
    assert r.status == CheckStatus.ok


def test_a_restarted_brokers_recovery_is_extrapolated_from_its_own_catch_up_rate() -> None:
    assert recovery_eta_s([(0.0, 0.5)]) is None  # one look: no rate yet
    assert recovery_eta_s([(0.0, 0.5), (4.0, 0.5)]) is None  # not moving: nothing to extrapolate
    assert recovery_eta_s([(0.0, 0.25), (5.0, 0.5)]) == pytest.approx(10.0)
    assert recovery_eta_s([(0.0, 0.25), (5.0, 1.0)]) == 0.0


def test_the_roll_order_puts_zookeepers_controller_last_among_the_brokers() -> None:
    state = ClusterState(0, (3, 1, 2), (), controller=2)
    assert roll_order(state) == [1, 3, 2]


def test_the_roll_order_restarts_the_brokers_then_the_kraft_controllers_the_quorum_leader_last() -> None:
    voters = tuple(VoterState(n, 10, 0) for n in (102, 100, 101))
    state = ClusterState(0, (2, 1, 3), (), controller=1,  # KRaft's DescribeCluster controller: any broker
                         quorum=QuorumState(101, 5, 10, voters, (), 0))
    assert roll_order(state) == [1, 2, 3, 100, 102, 101]
