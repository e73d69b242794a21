"""Schema tables per API (one module each) and the registry the codec dispatches on.

``REGISTRY[api_key] = (request Message, response Message)``.  The modules list every version the
schema files describe; :data:`SUPPORTED` is the subset this broker implements and advertises in
ApiVersions (it is what ``decode_request`` accepts).

Modules: `alter_configs` (AlterConfigs (api key 33)); `alter_partition_reassignments` (AlterPartitionReassignments
(api key 45)); `alter_replica_log_dirs` (AlterReplicaLogDirs (api key 34)); `api_versions` (ApiVersions (api key
18)); `controlled_shutdown` (ControlledShutdown (api key 7), hand-written from Kafka 3.8's...); `create_acls`
(CreateAcls (api key 30)); `create_partitions` (CreatePartitions (api key 37)); `create_topics` (CreateTopics (api
key 19)); `delete_acls` (DeleteAcls (api key 31)); `delete_groups` (DeleteGroups (api key 42)); `delete_records`
(DeleteRecords (api key 21)); `delete_topics` (DeleteTopics (api key 20)); `describe_acls` (DescribeAcls (api key
29)); `describe_cluster` (DescribeCluster (api key 60)); `describe_configs` (DescribeConfigs (api key 32));
`describe_groups` (DescribeGroups (api key 15)); `describe_log_dirs` (DescribeLogDirs (api key 35));
`describe_quorum` (DescribeQuorum (api key 55)); `elect_leaders` (ElectLeaders (api key 43)); `fetch` (Fetch (api
key 1)); `find_coordinator` (FindCoordinator (api key 10)); `heartbeat` (Heartbeat (api key 12));
`incremental_alter_configs` (IncrementalAlterConfigs (api key 44)); `init_producer_id` (InitProducerId (api key
22)); `join_group` (JoinGroup (api key 11)); `leader_and_isr` (LeaderAndIsr (api key 4), hand-written from Kafka
3.8's LeaderAndIsrRequest.json /...); `leave_group` (LeaveGroup (api key 13)); `list_groups` (ListGroups (api key
16)); `list_offsets` (ListOffsets (api key 2)); `list_partition_reassignments` (ListPartitionReassignments (api key
46)); `metadata` (Metadata (api key 3)); `offset_commit` (OffsetCommit (api key 8)); `offset_fetch` (OffsetFetch
(api key 9)); `offset_for_leader_epoch` (OffsetForLeaderEpoch (api key 23)); `produce` (Produce (api key 0));
`sasl_authenticate` (SaslAuthenticate (api key 36)); `sasl_handshake` (SaslHandshake (api key 17)); `stop_replica`
(StopReplica (api key 5), hand- written from Kafka 3.8's StopReplicaRequest.json /...); `sync_group` (SyncGroup
(api key 14)); `update_metadata` (UpdateMetadata (api key 6), hand-written from Kafka 3.8's UpdateMetadataRequest.json
/...).
"""

from __future__ import annotations

from ..api_keys import ApiKey
from ..schema import Message
from . import (
    alter_configs,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    api_versions,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_quorum,
    elect_leaders,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leader_and_isr,
    leave_group,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    metadata,
    offset_commit,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    stop_replica,
    sync_group,
    update_metadata,
)

__all__ = ["REGISTRY", "SUPPORTED"]

_MODULES = (
    produce,
    fetch,
    list_offsets,
    metadata,
    offset_for_leader_epoch,
    leader_and_isr,
    stop_replica,
    update_metadata,
    controlled_shutdown,
    offset_commit,
    offset_fetch,
    find_coordinator,
    join_group,
    heartbeat,
    leave_group,
    sync_group,
    describe_groups,
    list_groups,
    api_versions,
    create_topics,
    delete_topics,
    init_producer_id,
    describe_configs,
    alter_configs,
    incremental_alter_configs,
    describe_cluster,
    # the admin APIs
    delete_records,
    describe_acls,
    create_acls,
    delete_acls,
    alter_replica_log_dirs,
    describe_log_dirs,
    create_partitions,
    delete_groups,
    elect_leaders,
    alter_partition_reassignments,
    list_partition_reassignments,
    # client side only: planewatch's roll probe asks a KRaft cluster (over a SASL listener, after authenticating);
    # the broker does not serve them
    describe_quorum,
    sasl_handshake,
    sasl_authenticate,
)

REGISTRY: dict[int, tuple[Message, Message]] = {m.REQUEST.api_key: (m.REQUEST, m.RESPONSE) for m in _MODULES}

#: api_key -> (min, max) version implemented and advertised.  Newer versions than these change broker
#: semantics (topic ids in Fetch 13+/Produce 13+, Metadata 13's top-level error, KIP-848 groups), so
#: they stay out until the handlers support them.
SUPPORTED: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 9),
    ApiKey.FETCH: (4, 12),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 4),
    ApiKey.METADATA: (0, 12),
    ApiKey.LEADER_AND_ISR: (0, 7),
    ApiKey.STOP_REPLICA: (0, 4),
    ApiKey.UPDATE_METADATA: (0, 8),
    ApiKey.CONTROLLED_SHUTDOWN: (0, 3),
    ApiKey.OFFSET_COMMIT: (0, 8),
    ApiKey.OFFSET_FETCH: (0, 8),
    ApiKey.FIND_COORDINATOR: (0, 4),
    ApiKey.JOIN_GROUP: (0, 7),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 4),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.LIST_GROUPS: (0, 4),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.CREATE_TOPICS: (0, 7),
    ApiKey.DELETE_TOPICS: (0, 6),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.DESCRIBE_ACLS: (0, 3),
    ApiKey.CREATE_ACLS: (0, 3),
    ApiKey.DELETE_ACLS: (0, 3),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: (0, 4),
    ApiKey.ALTER_REPLICA_LOG_DIRS: (0, 2),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
}

for _key, (_lo, _hi) in SUPPORTED.items():
    _req, _resp = REGISTRY[_key]
    if not (_lo in _req.valid and _hi in _req.valid and _lo in _resp.valid and _hi in _resp.valid):
        raise AssertionError(f"SUPPORTED[{_key}] = {_lo}-{_hi} outside the schema's valid versions")
