"""LeaderAndIsr (api key 4), hand-written from Kafka 3.8's LeaderAndIsrRequest.json / LeaderAndIsrResponse.json.

Versions: 1 adds IsNew; 2 adds BrokerEpoch and groups partitions by topic; 3 adds AddingReplicas and
RemovingReplicas; 4 is the first flexible version; 5 adds TopicId and Type (KIP-516) and the response
groups errors by topic id; 6 adds LeaderRecoveryState (KIP-704); 7 adds isKRaftController (KIP-866).

planewatch extension: ``MaxBrokerEpoch`` (int64, default -1) as TAGGED field 100 in the flexible versions
(4+).  Apache never shipped it; LinkedIn's fork (KAFKA-7186 hotfix) added it as a regular field under
version numbers that collide with Apache's, so a tagged field is the only compatible place for it: an
Apache peer skips the unknown tag, ours reads it (FACTS.md section 5).

Field order checked against code generated from the Apache JSON (kafka-protocol-rs) and byte-level tests
(tests/broker/test_protocol_control.py).
"""

from __future__ import annotations

from ..schema import f, msg

#: Tag of the planewatch ``MaxBrokerEpoch`` extension in LeaderAndIsr/UpdateMetadata/StopReplica.
MAX_BROKER_EPOCH_TAG = 100

_PARTITION_STATE = [
    f("TopicName", "string", "0-1"),
    f("PartitionIndex", "int32", "0+"),
    f("ControllerEpoch", "int32", "0+"),
    f("Leader", "int32", "0+"),
    f("LeaderEpoch", "int32", "0+"),
    f("Isr", "[]int32", "0+"),
    f("PartitionEpoch", "int32", "0+"),
    f("Replicas", "[]int32", "0+"),
    f("AddingReplicas", "[]int32", "3+"),
    f("RemovingReplicas", "[]int32", "3+"),
    f("IsNew", "bool", "1+", default="false"),
    f("LeaderRecoveryState", "int8", "6+", default="0"),
]

REQUEST = msg(
    "LeaderAndIsrRequest",
    4,
    "0-7",
    "4+",
    [
        f("ControllerId", "int32", "0+"),
        f("isKRaftController", "bool", "7+", default="false"),
        f("ControllerEpoch", "int32", "0+"),
        f("BrokerEpoch", "int64", "2+", default="-1"),
        f("Type", "int8", "5+"),
        f("UngroupedPartitionStates", "[]LeaderAndIsrPartitionState", "0-1", fields=_PARTITION_STATE),
        f(
            "TopicStates",
            "[]LeaderAndIsrTopicState",
            "2+",
            fields=[
                f("TopicName", "string", "2+"),
                f("TopicId", "uuid", "5+"),
                f("PartitionStates", "[]LeaderAndIsrPartitionState", "2+", fields=_PARTITION_STATE),
            ],
        ),
        f(
            "LiveLeaders",
            "[]LeaderAndIsrLiveLeader",
            "0+",
            fields=[
                f("BrokerId", "int32", "0+"),
                f("HostName", "string", "0+"),
                f("Port", "int32", "0+"),
            ],
        ),
        f("MaxBrokerEpoch", "int64", "4+", default="-1", tag=MAX_BROKER_EPOCH_TAG, tagged="4+"),
    ],
)

_PARTITION_ERROR = [
    f("TopicName", "string", "0-4"),
    f("PartitionIndex", "int32", "0+"),
    f("ErrorCode", "int16", "0+"),
]

RESPONSE = msg(
    "LeaderAndIsrResponse",
    4,
    "0-7",
    "4+",
    [
        f("ErrorCode", "int16", "0+"),
        f("PartitionErrors", "[]LeaderAndIsrPartitionError", "0-4", fields=_PARTITION_ERROR),
        f(
            "Topics",
            "[]LeaderAndIsrTopicError",
            "5+",
            fields=[
                f("TopicId", "uuid", "5+"),
                f("PartitionErrors", "[]LeaderAndIsrPartitionError", "5+", fields=_PARTITION_ERROR),
            ],
        ),
    ],
)
