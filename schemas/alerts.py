"""The alert vocabulary: alert types, incident causes, the writers (:class:`DetectQuery`), severities and statuses of
the `alerts` table.

Every alert type has exactly one writer: the detector registry (:data:`pipelines.detection.registry.DETECTORS`)
names the family (:class:`DetectQuery`) that opens, updates and resolves its alerts, by the event time of the input
it reads, its detector functions and its default levels. A signal seen by two inputs is two alert types (the request
log's CONTROL_REQUEST_QUEUED_BEHIND_DATA and the metrics' CONTROL_REQUEST_QUEUE_DELAY), so no writer touches
another's alerts and no column value encodes who owns a row. The REST API and the dashboard show the same strings.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["AlertStatus", "AlertType", "DetectQuery", "IncidentCause", "Severity"]


class AlertType(StrEnum):
    """The alert types (ARCHITECTURE.md section 3); the detector registry names the detector(s) of each."""

    #: a completed LeaderAndIsr took longer than the threshold from controller send to broker finish
    DELAYED_LEADER_AND_ISR = "DELAYED_LEADER_AND_ISR"
    #: a LeaderAndIsr was sent (or started) and not finished within the timeout
    LEADER_AND_ISR_NOT_COMPLETED = "LEADER_AND_ISR_NOT_COMPLETED"
    #: a control request waited in a shared data-plane queue (the request log's requestQueueTimeMs of that request)
    CONTROL_REQUEST_QUEUED_BEHIND_DATA = "CONTROL_REQUEST_QUEUED_BEHIND_DATA"
    #: on a broker without a control plane, the metrics show control requests waiting in the shared request queue
    #: (RequestMetrics RequestQueueTimeMs of LeaderAndIsr/UpdateMetadata/StopReplica, or RequestQueueSize saturated)
    CONTROL_REQUEST_QUEUE_DELAY = "CONTROL_REQUEST_QUEUE_DELAY"
    #: Kafka's RequestMetrics TotalTimeMs of LeaderAndIsr (broker-side: receive to response) high
    LEADER_AND_ISR_TOTAL_TIME_HIGH = "LEADER_AND_ISR_TOTAL_TIME_HIGH"
    #: ControlPlaneRequestQueueSize stayed high against its capacity of 20
    CONTROL_PLANE_QUEUE_BACKLOG = "CONTROL_PLANE_QUEUE_BACKLOG"
    #: RequestQueueSize stayed near `queued.max.requests`
    REQUEST_QUEUE_SATURATED = "REQUEST_QUEUE_SATURATED"
    #: AcceptorBlockedPercent high: a connection storm or backpressure on the processors
    ACCEPTOR_BLOCKED = "ACCEPTOR_BLOCKED"
    #: a control request waited for a lock (replicaStateChangeLock, or the fetchers' partitionMapLock)
    LOCK_CONTENTION = "LOCK_CONTENTION"
    #: an UpdateMetadata reached the broker's metadata cache late: its clients saw stale metadata
    DELAYED_UPDATE_METADATA = "DELAYED_UPDATE_METADATA"
    #: a StopReplica took (or is taking) longer than the threshold: replicas are not stopped or deleted meanwhile
    DELAYED_STOP_REPLICA = "DELAYED_STOP_REPLICA"
    #: a broker rejected control requests as carrying a stale broker epoch
    STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
    #: network processors' idle ratio (data or control plane) below the threshold
    NETWORK_PROCESSOR_SATURATED = "NETWORK_PROCESSOR_SATURATED"
    #: request handlers' idle ratio (data or control plane) below the threshold
    REQUEST_HANDLER_SATURATED = "REQUEST_HANDLER_SATURATED"
    #: KRaft: a broker applies metadata records late (last-applied-record-lag-ms high)
    METADATA_APPLY_LAG = "METADATA_APPLY_LAG"
    #: controller events wait in the ControllerEventManager queue (EventQueueTimeMs high)
    CONTROLLER_EVENT_QUEUE_DELAY = "CONTROLLER_EVENT_QUEUE_DELAY"
    #: KRaft: the active controller fenced a broker because its session timed out (no heartbeat in time)
    BROKER_FENCED = "BROKER_FENCED"
    #: KRaft: the active controller timed out a broker's heartbeats in its overloaded event queue (KAFKA-15019)
    BROKER_HEARTBEAT_TIMEOUT = "BROKER_HEARTBEAT_TIMEOUT"
    #: KRaft: the controller quorum elected new active controllers again and again (leader changes in a window)
    QUORUM_UNSTABLE = "QUORUM_UNSTABLE"
    #: the active controller elected a leader from outside the ISR (UncleanLeaderElectionsPerSec): data may be lost
    UNCLEAN_LEADER_ELECTION = "UNCLEAN_LEADER_ELECTION"
    #: KRaft 4.1+: a leader was elected from a partition's eligible leader replicas (KIP-966): its ISR had fallen
    #: below min.insync.replicas, and ELR kept it from going offline or unclean
    LEADER_ELECTED_FROM_ELR = "LEADER_ELECTED_FROM_ELR"
    #: a broker began a controlled shutdown while the cluster was not safe to roll (the roll-safety verdict just
    #: before it said wait or unsafe): a roll going faster than the cluster recovers
    ROLL_TOO_FAST = "ROLL_TOO_FAST"


class IncidentCause(StrEnum):
    """The mechanism an incident (`incidents`: the alerts of one broker, or of a cluster, in one time span) is put
    down to: :mod:`pipelines.detection.incidents` chooses it from the member alerts and their evidence."""

    #: a replica outside the ISR became leader: acknowledged messages may be lost
    UNCLEAN_LEADER_ELECTION = "UNCLEAN_LEADER_ELECTION"
    #: a broker was stopped before the cluster had recovered from the previous change (a roll too fast)
    ROLL_TOO_FAST = "ROLL_TOO_FAST"
    #: KRaft: the controller quorum stopped publishing metadata: every broker's metadata fell behind at once (and
    #: brokers it could not hear from meanwhile were fenced, alive)
    CONTROLLER_STALLED = "CONTROLLER_STALLED"
    #: KRaft: the active controller fenced the broker (no heartbeat in time, or heartbeats timed out in its queue)
    BROKER_FENCED = "BROKER_FENCED"
    #: KRaft: the controller quorum keeps electing new active controllers
    QUORUM_UNSTABLE = "QUORUM_UNSTABLE"
    #: new connections faster than the broker accepts them (KIP-402): the acceptor blocked
    CONNECTION_STORM = "CONNECTION_STORM"
    #: control requests waited in a request queue shared with data requests (no or a saturated control plane)
    QUEUED_BEHIND_DATA = "QUEUED_BEHIND_DATA"
    #: the request handler held a control request: a lock (replicaStateChangeLock, the fetchers' partitionMapLock)
    LOCK_CONTENTION = "LOCK_CONTENTION"
    #: the control request reached the handler quickly and the handler was slow (the broker's request log says so)
    SLOW_HANDLER = "SLOW_HANDLER"
    #: the broker's network or request handler threads had no idle time (no queueing of control requests seen)
    BROKER_SATURATED = "BROKER_SATURATED"
    #: the controller's event queue held events (and the heartbeats among them) for long
    CONTROLLER_OVERLOADED = "CONTROLLER_OVERLOADED"
    #: KRaft: the broker applies the metadata log late
    METADATA_LAG = "METADATA_LAG"
    #: KRaft 4.1+: leaders elected from eligible leader replicas (a partition's ISR fell below min.insync.replicas)
    ELR_ELECTION = "ELR_ELECTION"
    #: the broker rejected control requests carrying a stale broker epoch (a restart raced the controller)
    STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
    #: a control request was slow or did not complete, and no witness says where its time went
    SLOW_CONTROL_REQUEST = "SLOW_CONTROL_REQUEST"


class Severity(StrEnum):
    """`severity` of an alert."""

    warning = "warning"
    critical = "critical"


class AlertStatus(StrEnum):
    """`status` of an alert: open while its condition holds, resolved once clear for `resolve_after_s`."""

    open = "open"
    resolved = "resolved"


class DetectQuery(StrEnum):
    """The alert writers, by the input family whose event time they resolve alerts by."""

    #: the log family's micro-batches: state_change_events and request_events rows, and the control requests their
    #: pairing timed (control_request_latency, with state_change_events' fetcher, lock and election lines)
    LOG = "log"
    #: the metric family's micro-batches: sliding windows over metric_samples
    METRIC = "metric"
