"""The roll-safety vocabulary: whether a cluster may have its next broker restarted now, and why.

A verdict is the worst of its checks' outcomes (:data:`SEVERITY_ORDER`): ``unsafe`` (restarting a broker now would
take partitions offline or below min.insync.replicas), ``wait`` (the cluster is still recovering from the last
change: replicas catching up, leadership moving, control requests in flight), ``unknown`` (a check's data is
missing or stale: never read as safe), ``safe``. :data:`EXIT_CODES` is what `planewatch roll-check` exits with.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["EXIT_CODES", "SEVERITY_ORDER", "CheckStatus", "RestartRisk", "RollCheck", "RollVerdict"]


class RollVerdict(StrEnum):
    """The answer to "may I restart the next broker now?"."""

    safe = "safe"
    wait = "wait"
    unsafe = "unsafe"
    unknown = "unknown"


class CheckStatus(StrEnum):
    """One check's outcome: as a verdict, or ``skipped`` (the check does not apply to the cluster's mode, or an
    optional signal its exporter does not give)."""

    ok = "ok"
    wait = "wait"
    unsafe = "unsafe"
    unknown = "unknown"
    skipped = "skipped"


class RollCheck(StrEnum):
    """What the verdict looks at (docs/roll-safety.md says each one's signal and default threshold)."""

    #: every node seen in the membership window answered its scrape recently
    NODES_FRESH = "NODES_FRESH"
    #: partitions without a live leader (the active controller's OfflinePartitionsCount)
    OFFLINE_PARTITIONS = "OFFLINE_PARTITIONS"
    #: partitions whose ISR is below min.insync.replicas (each broker's UnderMinIsrPartitionCount)
    UNDER_MIN_ISR = "UNDER_MIN_ISR"
    #: partitions whose ISR lacks a replica: a restarted broker not back in every ISR (UnderReplicatedPartitions)
    UNDER_REPLICATED = "UNDER_REPLICATED"
    #: exactly one active controller (ActiveControllerCount summed over the nodes)
    ACTIVE_CONTROLLER = "ACTIVE_CONTROLLER"
    #: KRaft: every node sees the same quorum leader (raft-metrics current-leader)
    QUORUM_LEADER = "QUORUM_LEADER"
    #: KRaft: brokers the active controller holds fenced (FencedBrokerCount)
    FENCED_BROKERS = "FENCED_BROKERS"
    #: KRaft 4.1+: every broker active on the controller, its heartbeats on time (KIP-1131's per-broker
    #: BrokerRegistrationState and TimeSinceLastHeartbeatReceivedMs)
    BROKER_REGISTRATION = "BROKER_REGISTRATION"
    #: KRaft: how far each node's applied metadata is behind (last-applied-record-lag-ms)
    METADATA_LAG = "METADATA_LAG"
    #: time controller events wait in the active controller's queue (EventQueueTimeMs, its median)
    CONTROLLER_EVENT_QUEUE = "CONTROLLER_EVENT_QUEUE"
    #: leadership back on the preferred replicas (the active controller's PreferredReplicaImbalanceCount)
    PREFERRED_LEADERS = "PREFERRED_LEADERS"
    #: control requests in flight, or open alerts about slow or stuck ones (control_request_latency, alerts)
    CONTROL_REQUESTS = "CONTROL_REQUESTS"
    #: the cluster answered the Admin API (topics, configs, DescribeCluster, DescribeQuorum)
    ADMIN_API = "ADMIN_API"
    #: restarting the broker asked about would leave partitions without an in-sync replica (offline, or an unclean
    #: leader); or partitions have no leader now
    RESTART_OFFLINE = "RESTART_OFFLINE"
    #: restarting the broker asked about would leave partitions' ISR below min.insync.replicas
    RESTART_UNDER_MIN_ISR = "RESTART_UNDER_MIN_ISR"
    #: the partitions the broker asked about leads, which fail over when it stops (informational)
    RESTART_LEADERSHIP = "RESTART_LEADERSHIP"
    #: the broker asked about has every replica back in its ISR (a restarted broker has recovered)
    REPLICAS_IN_SYNC = "REPLICAS_IN_SYNC"
    #: KRaft: a majority of the controller quorum's voters is caught up, and stays so without the controller asked
    #: about (DescribeQuorum)
    CONTROLLER_QUORUM = "CONTROLLER_QUORUM"


class RestartRisk(StrEnum):
    """What a broker's restart would do to one partition it hosts (pipelines.restart_probe.exposure)."""

    #: it is the only in-sync replica: no leader until it is back
    offline = "offline"
    #: it is the only in-sync replica and the topic allows unclean election: an out-of-sync replica leads, records
    #: acknowledged only by this broker are lost
    data_loss = "data_loss"
    #: the ISR without it is below min.insync.replicas: acks=all producers get NotEnoughReplicas
    acks_all_blocked = "acks_all_blocked"
    #: it leads the partition and another in-sync replica takes over: acks=1 producers see a leader change
    leader_moves = "leader_moves"


# A verdict is its worst check: lower index is worse. `skipped` and `ok` never make it worse than safe.
SEVERITY_ORDER: tuple[RollVerdict, ...] = (RollVerdict.unsafe, RollVerdict.wait, RollVerdict.unknown,
                                           RollVerdict.safe)
# `planewatch roll-check`'s exit status: 0 restart now, 1 do not (wait or unsafe), 2 nothing vouches either way.
EXIT_CODES: dict[RollVerdict, int] = {RollVerdict.safe: 0, RollVerdict.wait: 1, RollVerdict.unsafe: 1,
                                      RollVerdict.unknown: 2}
