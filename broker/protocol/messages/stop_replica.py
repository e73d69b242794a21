"""StopReplica (api key 5), hand-written from Kafka 3.8's StopReplicaRequest.json / StopReplicaResponse.json.

Versions: 1 adds BrokerEpoch and groups partitions per topic; 2 is the first flexible version; 3 adds
per-partition LeaderEpoch and DeletePartition (KIP-570); 4 adds isKRaftController (KIP-866).

planewatch extension: ``MaxBrokerEpoch`` (int64, default -1) as TAGGED field 100 in flexible versions (2+);
see :mod:`.leader_and_isr`.

Field order checked against code generated from the Apache JSON (kafka-protocol-rs) and byte-level tests
(tests/broker/test_protocol_control.py).
"""

from __future__ import annotations

from ..schema import f, msg
from .leader_and_isr import MAX_BROKER_EPOCH_TAG

REQUEST = msg(
    "StopReplicaRequest",
    5,
    "0-4",
    "2+",
    [
        f("ControllerId", "int32", "0+"),
        f("isKRaftController", "bool", "4+", default="false"),
        f("ControllerEpoch", "int32", "0+"),
        f("BrokerEpoch", "int64", "1+", default="-1"),
        f("DeletePartitions", "bool", "0-2"),
        f(
            "UngroupedPartitions",
            "[]StopReplicaPartitionV0",
            "0",
            fields=[f("TopicName", "string", "0"), f("PartitionIndex", "int32", "0")],
        ),
        f(
            "Topics",
            "[]StopReplicaTopicV1",
            "1-2",
            fields=[f("Name", "string", "1-2"), f("PartitionIndexes", "[]int32", "1-2")],
        ),
        f(
            "TopicStates",
            "[]StopReplicaTopicState",
            "3+",
            fields=[
                f("TopicName", "string", "3+"),
                f(
                    "PartitionStates",
                    "[]StopReplicaPartitionState",
                    "3+",
                    fields=[
                        f("PartitionIndex", "int32", "3+"),
                        f("LeaderEpoch", "int32", "3+", default="-1"),
                        f("DeletePartition", "bool", "3+"),
                    ],
                ),
            ],
        ),
        f("MaxBrokerEpoch", "int64", "2+", default="-1", tag=MAX_BROKER_EPOCH_TAG, tagged="2+"),
    ],
)

RESPONSE = msg(
    "StopReplicaResponse",
    5,
    "0-4",
    "2+",
    [
        f("ErrorCode", "int16", "0+"),
        f(
            "PartitionErrors",
            "[]StopReplicaPartitionError",
            "0+",
            fields=[
                f("TopicName", "string", "0+"),
                f("PartitionIndex", "int32", "0+"),
                f("ErrorCode", "int16", "0+"),
            ],
        ),
    ],
)
