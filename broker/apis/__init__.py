"""The broker's request handlers (Kafka's ``KafkaApis``).

Modules: `acls` (DescribeAcls (29), CreateAcls (30), DeleteAcls (31) on a broker without an authorizer); `admin`
(The admin APIs clients call beyond topics, configs and groups); `config_entries` (DescribeConfigs entries as Kafka
3.9's `ConfigHelper` builds them (pure); `configs` (DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs
(44)); `convert` (Decoded control-request bodies (snake_case dicts of any version) -> the...); `data_plane` (The
data plane of one broker); `distinct` (Repeated names in one request, collapsed as Kafka's handlers collapse them
(pure helpers)); `factory` (Build a broker's KafkaApis from its server configuration (the `apis_factory` of...);
`fetch` (Fetch (api key 1, v4-12)); `group_state` (The state of one consumer group (Kafka's `GroupMetadata` /
`MemberMetadata`), without...); `groups` (FindCoordinator (10), OffsetCommit (8), OffsetFetch (9)); `handler` (What
a request handler is); `install` (Plug the data plane into a KafkaApis); `kafka_apis` (KafkaApis); `leader_epochs`
(OffsetForLeaderEpoch (api key 23, v0-4)); `list_offsets` (ListOffsets (api key 2, v1-7)); `log_dirs`
(DescribeLogDirs (35) and AlterReplicaLogDirs (34)); `membership` (A single-broker group coordinator); `metadata`
(Pure builders of the ApiVersions and Metadata responses (Kafka 2.8 `KafkaApis` /...); `metrics_topic` (The metrics
reporter's topic output (`metric.reporter.topic`), like Cruise Control's...); `offsets` (Committed consumer offsets
of one broker, persisted under the first log dir (a...); `partitions` (CreatePartitions (37), ElectLeaders (43),
AlterPartitionReassignments (45),...); `produce` (Produce (api key 0, v3-9)); `producers` (Idempotent producers);
`records` (DeleteRecords (21)); `topic_configs` (Topic configs over the admin APIs); `topics` (CreateTopics (19),
DeleteTopics (20) and Metadata's auto topic creation, for topics...); `transactions` (Transactions are out of
scope).
"""

from __future__ import annotations

from broker.apis.kafka_apis import Handler, HandlerResult, KafkaApis

__all__ = ["Handler", "HandlerResult", "KafkaApis"]
