"""The event names of `state_change_events.event`, and the control requests of `control_request_latency.request`.

The log parsers give every Kafka log line they recognise one :class:`Event` (the message patterns of
:mod:`pipelines.parsing.patterns` are declared with these members); detection picks the lines it pairs and judges by
these names. The comment above each member quotes the start of the Kafka message text it stands for and who writes
it (broker, controller, a KRaft broker, the log layer, the replica fetchers, or the reference broker). Kafka versions
and the exact texts are in FACTS.md sections 1, 2 and 6.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ControlRequest", "Event", "LatencyStatus"]


class ControlRequest(StrEnum):
    """The controller-to-broker requests planewatch pairs and times (`request` of control_request_latency; the
    `request` of state_change_events and the `api_name` of request_events spell them the same way)."""

    LEADER_AND_ISR = "LeaderAndIsr"
    UPDATE_METADATA = "UpdateMetadata"
    STOP_REPLICA = "StopReplica"


class LatencyStatus(StrEnum):
    """`status` of a control_request_latency row."""

    #: sent, handled and finished
    COMPLETED = "completed"
    #: sent (or started) and not finished yet, within the timeout, and running past its alert's warning level (a
    #: younger request gets its row when it ends)
    IN_FLIGHT = "in_flight"
    #: sent (or started) and not finished within the timeout
    NEVER_COMPLETED = "never_completed"
    #: still open when the pairing state's bound for its key was reached (pipelines.detection.pairing
    #: MAX_PENDING_SENDS / MAX_OPEN_RECORDS): emitted as seen so far and no longer tracked; its outcome is unknown
    EVICTED = "evicted"


class Event(StrEnum):
    """Canonical `event` names of state_change_events."""

    # ---- broker, per request (2.6+ INFO summaries; 2.2-2.5 per-partition lines)
    #: `Handling LeaderAndIsr request correlationId C from controller N epoch E starting the become-leader ...`
    BECOME_LEADER_STARTED = "become_leader_started"
    #: `Handling LeaderAndIsr request correlationId C ... starting the become-follower transition ...`
    BECOME_FOLLOWER_STARTED = "become_follower_started"
    #: `Handling LeaderAndIsr request correlationId C from controller N for P partitions` (2.6+)
    LEADER_AND_ISR_HANDLING = "leader_and_isr_handling"
    #: `Finished LeaderAndIsr request in Xms correlationId C from controller N for P partitions` (2.7+)
    LEADER_AND_ISR_FINISHED = "leader_and_isr_finished"
    #: `Stopped fetchers as part of LeaderAndIsr request ...` / `... become-follower request ...`
    FETCHERS_STOPPED = "fetchers_stopped"
    #: `Add P partitions and deleted D partitions from metadata cache in response to UpdateMetadata request ...`
    METADATA_CACHE_UPDATED = "metadata_cache_updated"
    #: `Handling StopReplica request correlationId C ...` (2.6+) / `Handling stop replica (delete=..)` (2.2-2.5)
    STOP_REPLICA_HANDLING = "stop_replica_handling"
    #: `Leader t-0 starts at leader epoch E from offset O ...`
    LEADER_STARTED = "leader_started"
    #: `Follower t-0 starts at leader epoch E from offset O ...`
    FOLLOWER_STARTED = "follower_started"
    # ---- controller
    #: `Sending LeaderAndIsr request to broker B with L become-leader and F become-follower partitions`
    LEADER_AND_ISR_SENDING = "leader_and_isr_sending"
    #: `Sending UpdateMetadata request to brokers Set(..) for P partitions`
    UPDATE_METADATA_SENDING = "update_metadata_sending"
    #: `Sending StopReplica request for P replicas to broker B`
    STOP_REPLICA_SENDING = "stop_replica_sending"
    #: `Sending StopReplica request ... to broker B for partition t-0` (TRACE)
    STOP_REPLICA_PARTITION_SENDING = "stop_replica_partition_sending"
    #: `Sending become-leader|become-follower LeaderAndIsr request PartitionState(..) to broker B ...` (TRACE)
    LEADER_AND_ISR_PARTITION_SENDING = "leader_and_isr_partition_sending"
    #: `Sending UpdateMetadata request ... to brokers Set(..) for partition t-0` (TRACE, 2.2-2.5)
    UPDATE_METADATA_PARTITION_SENDING = "update_metadata_partition_sending"
    #: `Received response ... for request LEADER_AND_ISR with correlation id C sent to broker ...` (TRACE)
    RESPONSE_RECEIVED = "response_received"
    #: `Changed partition t-0 from S to S with state LeaderAndIsr(leader=.., leaderEpoch=..)`
    PARTITION_STATE_CHANGED = "partition_state_changed"
    # ---- broker, rejections
    #: `Received LeaderAndIsr request with broker epoch B smaller than the current broker epoch C` (and LinkedIn's)
    STALE_BROKER_EPOCH = "stale_broker_epoch"
    #: `Ignoring LeaderAndIsr request from controller N ... since its controller epoch E is old.` (and the others)
    STALE_CONTROLLER_EPOCH = "stale_controller_epoch"
    #: `Ignoring LeaderAndIsr|StopReplica request ... since its associated leader epoch E ...`
    STALE_LEADER_EPOCH = "stale_leader_epoch"
    #: `Ignoring LeaderAndIsr request from controller N ... for partition t-0 as ...`
    LEADER_AND_ISR_PARTITION_IGNORED = "leader_and_isr_partition_ignored"
    # ---- broker, per partition (TRACE)
    #: `Received LeaderAndIsr request PartitionState(..) correlation id C from controller N epoch E ...`
    LEADER_AND_ISR_PARTITION_RECEIVED = "leader_and_isr_partition_received"
    #: `Completed LeaderAndIsr request correlationId C ... for the become-leader transition ...` (2.2-2.5)
    BECOME_LEADER_COMPLETED = "become_leader_completed"
    #: `Completed LeaderAndIsr request correlationId C ... for the become-follower transition ...` (2.2-2.5)
    BECOME_FOLLOWER_COMPLETED = "become_follower_completed"
    #: `Truncated logs and checkpointed recovery boundaries for partition t-0 ...` (2.2-2.5)
    LOGS_TRUNCATED = "logs_truncated"
    #: `Started fetcher to new leader as part of become-follower request ...` (2.2-2.5)
    FETCHER_STARTED = "fetcher_started"
    #: `Skipped the become-leader state change after marking its partition as leader ...`
    LEADER_SKIPPED = "leader_skipped"
    #: `Skipped the become-follower state change after marking its partition as follower ...`
    FOLLOWER_SKIPPED = "follower_skipped"
    #: `Received LeaderAndIsrRequest with correlation id C ... since the new leader L is unavailable.`
    BECOME_FOLLOWER_FAILED = "become_follower_failed"
    #: `Error while processing LeaderAndIsr request correlationId C received from controller N ...`
    LEADER_AND_ISR_ERROR = "leader_and_isr_error"
    #: `Cached leader info PartitionState(..) for partition t-0 in response to UpdateMetadata request ...`
    LEADER_INFO_CACHED = "leader_info_cached"
    #: `Deleted partition t-0 from metadata cache in response to UpdateMetadata request ...`
    PARTITION_DELETED_FROM_CACHE = "partition_deleted_from_cache"
    #: `Finished handling stop replica (delete=..) for partition t-0` (2.2-2.5)
    STOP_REPLICA_FINISHED = "stop_replica_finished"
    #: `Ignoring stop replica (delete=..) for partition t-0 ...` (2.2-2.5)
    STOP_REPLICA_IGNORED = "stop_replica_ignored"
    #: `Received StopReplica request ... correlation id C from controller N epoch E for partition t-0` (2.6+)
    STOP_REPLICA_PARTITION_RECEIVED = "stop_replica_partition_received"
    #: LinkedIn: `Breakdown time in milliseconds for LeaderAndIsr request with correlationId C ...`
    LEADER_AND_ISR_BREAKDOWN = "leader_and_isr_breakdown"
    # ---- KRaft broker (ReplicaManager.applyDelta)
    #: `Transitioning P partition(s) to local leaders.`
    KRAFT_LEADERS_TRANSITION = "kraft_leaders_transition"
    #: `Transitioning P partition(s) to local followers.`
    KRAFT_FOLLOWERS_TRANSITION = "kraft_followers_transition"
    #: `Skipped the become-leader state change for t-0 with topic id .., partition registration .. since it is
    #: already the leader with leader epoch E. Current high watermark H, ISR [1,2,3], ...`: a metadata change of a
    #: partition it leads that keeps its leader (an ISR change applied from the metadata log, logged with the ISR)
    KRAFT_LEADER_UNCHANGED = "kraft_leader_unchanged"
    #: `Deleting P partition(s).`
    KRAFT_PARTITIONS_DELETING = "kraft_partitions_deleting"
    #: `Stopped fetchers as part of become-follower for P partitions`
    KRAFT_FETCHERS_STOPPED = "kraft_fetchers_stopped"
    #: `Started fetchers as part of become-follower for P partitions`
    KRAFT_FETCHERS_STARTED = "kraft_fetchers_started"
    # ---- KRaft control plane (controller.log of a controller node; a broker's server.log)
    #: controller: `Fencing broker N at epoch E because its session has timed out.` (4.x; 3.x: without the epoch):
    #: no heartbeat within the session timeout
    KRAFT_BROKER_FENCED = "kraft_broker_fenced"
    #: controller: `The request from broker N to unfence has been granted because it has caught up ...`
    KRAFT_BROKER_UNFENCED = "kraft_broker_unfenced"
    #: controller: `The request from broker N to shut down has been granted since the lowest active offset ...`:
    #: a controlled shutdown done (the broker is fenced by it; 4.4 still logs a session-timeout fencing ~10 s later)
    KRAFT_SHUTDOWN_GRANTED = "kraft_shutdown_granted"
    #: controller (ERROR): `processExpiredBrokerHeartbeat: controller event queue overloaded. Timed out heartbeat
    #: from broker N.` (the heartbeat waited past its deadline in the controller's event queue, KAFKA-15019)
    KRAFT_HEARTBEAT_EXPIRED = "kraft_heartbeat_expired"
    #: broker: `Unable to send a heartbeat because the RPC got timed out before it could be sent.`
    KRAFT_HEARTBEAT_NOT_SENT = "kraft_heartbeat_not_sent"
    #: controller: `Becoming the active controller at epoch E, next write offset O.`
    KRAFT_ACTIVE_CONTROLLER = "kraft_active_controller"
    # ---- server.log: a broker leaving the cluster on purpose (SIGTERM: a roll, a stop)
    #: ZooKeeper mode: `[KafkaServer id=N] Starting controlled shutdown`; KRaft: `[BrokerLifecycleManager id=N]
    #: Beginning controlled shutdown.` (a kill -9 logs nothing)
    CONTROLLED_SHUTDOWN_STARTED = "controlled_shutdown_started"
    #: any Kafka process (LoggingSignalHandler): `Terminating process due to signal SIGTERM` (the broker of the log
    #: file that holds it; a stop of the whole cluster SIGTERMs every broker, and a KRaft broker stopped with the
    #: others may log no controlled shutdown)
    PROCESS_SIGTERM = "process_sigterm"
    # ---- server.log: log and fetcher activity that contends for the partition-map lock (FACTS.md 6)
    #: `Incremented log start offset to O ...`
    LOG_START_OFFSET_INCREMENTED = "log_start_offset_incremented"
    #: `Cleared earliest N entries from epoch cache based on passed offset O ...`
    EPOCH_CACHE_CLEARED = "epoch_cache_cleared"
    #: `Cleared entries ... from epoch cache after truncating to end|start offset O`
    EPOCH_CACHE_TRUNCATED = "epoch_cache_truncated"
    #: `Shrinking ISR from 1,2 to 1 ...`
    ISR_SHRINKING = "isr_shrinking"
    #: `Expanding ISR from 1 to 1,2 ...`
    ISR_EXPANDING = "isr_expanding"
    #: `ISR updated to 1,2 ...` (3.x)
    ISR_UPDATED = "isr_updated"
    #: `Added fetcher to broker B for partitions Map(..)`
    FETCHER_ADDED = "fetcher_added"
    #: `Removed fetcher for partitions Set(..)`
    FETCHER_REMOVED = "fetcher_removed"
    # ---- controller.log (ZooKeeper mode)
    #: `Newly added brokers: .., deleted brokers: .., bounced brokers: .., all live brokers: ..`
    BROKER_CHANGE = "broker_change"
    #: `N successfully elected as the controller. Epoch incremented to E`
    CONTROLLER_ELECTED = "controller_elected"
    # ---- the reference broker's own lines
    #: `LeaderAndIsr correlationId C waited N ms for replicaStateChangeLock` / `... for partitionMapLock of ...`
    LOCK_WAIT = "lock_wait"
    #: a leader-epoch-checkpoint flush (`... leader-epoch-checkpoint ... in N ms`)
    LEADER_EPOCH_CHECKPOINT_FLUSHED = "leader_epoch_checkpoint_flushed"
