"""benchmarks.anchors.restart_rules: Strimzi's and Redpanda's restart rules as modelled from their source."""

from __future__ import annotations

from benchmarks.anchors.restart_rules import redpanda_pre_restart, strimzi_can_roll
from pipelines.restart_probe import ClusterState, PartitionState, QuorumState, VoterState


def cluster(*parts: PartitionState, min_isr: dict[str, int] | None = None, brokers: tuple[int, ...] = (1, 2, 3),
            quorum: QuorumState | None = None) -> ClusterState:
    return ClusterState(0, brokers, parts, min_isr or {}, quorum=quorum)


def p(topic: str, leader: int, replicas: tuple[int, ...], isr: tuple[int, ...], n: int = 0) -> PartitionState:
    return PartitionState(topic, n, leader, replicas, isr)


def test_strimzi_blocks_at_min_isr_and_below_and_never_for_rf_at_or_under_min_isr() -> None:
    wide = {"w": 2}
    assert strimzi_can_roll(cluster(p("w", 1, (1, 2, 3), (1, 2, 3)), min_isr=wide), 1) == "rolls"
    assert strimzi_can_roll(cluster(p("w", 1, (1, 2, 3), (1, 2)), min_isr=wide), 1) == "defers (1 at min ISR)"
    assert strimzi_can_roll(cluster(p("w", 1, (1, 2, 3), (1, 2)), min_isr=wide), 3) == "rolls"  # not in the ISR
    assert strimzi_can_roll(cluster(p("w", 1, (1, 2, 3), (1,)), min_isr=wide), 3) == "defers (1 at min ISR)"
    # RF <= min ISR (an edge topic of 2 replicas for min ISR 2, an RF=1 topic) never holds Strimzi's roll
    assert strimzi_can_roll(cluster(p("e", 1, (1, 2), (1, 2)), min_isr={"e": 2}), 1) == "rolls"
    assert strimzi_can_roll(cluster(p("r", 1, (1,), (1,))), 1) == "rolls"


def test_strimzi_quorum_needs_a_strict_majority_without_the_node_by_the_leaders_clock() -> None:
    def q(times: dict[int, int]) -> ClusterState:
        voters = tuple(VoterState(n, 100, t) for n, t in times.items())
        return cluster(quorum=QuorumState(100, 1, 100, voters, (), 10_000))

    caught = q({100: 10_000, 101: 9_500, 102: 9_000})
    assert strimzi_can_roll(caught, 101) == "rolls (quorum)"
    lagging = q({100: 10_000, 101: 9_500, 102: 5_000})  # 102 behind the leader by more than 2 s
    assert strimzi_can_roll(lagging, 101) == "defers (quorum)"
    assert strimzi_can_roll(lagging, 102) == "rolls (quorum)"


def test_redpanda_lists_each_partition_in_its_most_severe_risk_and_rf1_does_not_hold() -> None:
    assert redpanda_pre_restart(cluster(p("r", 1, (1,), (1,))), 1) == "rolls (rf1_offline 1)"
    assert redpanda_pre_restart(cluster(p("w", 1, (1, 2, 3), (1, 2, 3))), 1) == "rolls"
    # two of three in sync, one of them the node: acks=all loses its majority
    assert redpanda_pre_restart(cluster(p("w", 1, (1, 2, 3), (1, 2))), 1) == "holds (full_acks_produce_unavailable 1)"
    # the node the only one in sync, the others live but behind: acks=1 data at risk
    assert redpanda_pre_restart(cluster(p("w", 1, (1, 2, 3), (1,))), 1) == "holds (acks1_data_loss 1)"
    # ... and with the others down too
    assert redpanda_pre_restart(cluster(p("w", 1, (1, 2, 3), (1,)), brokers=(1,)), 1) == (
        "holds (acks1_data_loss 1, unavailable 1)")
    assert redpanda_pre_restart(cluster(p("w", -1, (1, 2), ())), 1) == "holds (acks1_data_loss 1, unavailable 1)"
