"""UpdateMetadata (api key 6), hand-written from Kafka 3.8's UpdateMetadataRequest.json / UpdateMetadataResponse.json.

Versions: 1 replaces V0Host/V0Port by Endpoints; 2 adds Rack; 3 adds the listener name; 4 adds
OfflineReplicas; 5 adds BrokerEpoch and groups partitions by topic; 6 is the first flexible version;
7 adds TopicId; 8 adds isKRaftController and the tagged Type (KIP-866).

planewatch extension: ``MaxBrokerEpoch`` (int64, default -1) as TAGGED field 100 in flexible versions (6+);
see :mod:`.leader_and_isr`.

Field order checked against code generated from the Apache JSON (kafka-protocol-rs) and byte-level tests
(tests/broker/test_protocol_control.py).
"""

from __future__ import annotations

from ..schema import f, msg
from .leader_and_isr import MAX_BROKER_EPOCH_TAG

_PARTITION_STATE = [
    f("TopicName", "string", "0-4"),
    f("PartitionIndex", "int32", "0+"),
    f("ControllerEpoch", "int32", "0+"),
    f("Leader", "int32", "0+"),
    f("LeaderEpoch", "int32", "0+"),
    f("Isr", "[]int32", "0+"),
    f("ZkVersion", "int32", "0+"),
    f("Replicas", "[]int32", "0+"),
    f("OfflineReplicas", "[]int32", "4+"),
]

REQUEST = msg(
    "UpdateMetadataRequest",
    6,
    "0-8",
    "6+",
    [
        f("ControllerId", "int32", "0+"),
        f("isKRaftController", "bool", "8+", default="false"),
        f("Type", "int8", "8+", default="0", tag=0, tagged="8+"),
        f("ControllerEpoch", "int32", "0+"),
        f("BrokerEpoch", "int64", "5+", default="-1"),
        f("UngroupedPartitionStates", "[]UpdateMetadataPartitionState", "0-4", fields=_PARTITION_STATE),
        f(
            "TopicStates",
            "[]UpdateMetadataTopicState",
            "5+",
            fields=[
                f("TopicName", "string", "5+"),
                f("TopicId", "uuid", "7+"),
                f("PartitionStates", "[]UpdateMetadataPartitionState", "5+", fields=_PARTITION_STATE),
            ],
        ),
        f(
            "LiveBrokers",
            "[]UpdateMetadataBroker",
            "0+",
            fields=[
                f("Id", "int32", "0+"),
                f("V0Host", "string", "0"),
                f("V0Port", "int32", "0"),
                f(
                    "Endpoints",
                    "[]UpdateMetadataEndpoint",
                    "1+",
                    fields=[
                        f("Port", "int32", "1+"),
                        f("Host", "string", "1+"),
                        f("Listener", "string", "3+"),
                        f("SecurityProtocol", "int16", "1+"),
                    ],
                ),
                f("Rack", "string", "2+", nullable="0+", default="null"),
            ],
        ),
        f("MaxBrokerEpoch", "int64", "6+", default="-1", tag=MAX_BROKER_EPOCH_TAG, tagged="6+"),
    ],
)

RESPONSE = msg(
    "UpdateMetadataResponse",
    6,
    "0-8",
    "6+",
    [f("ErrorCode", "int16", "0+")],
)
