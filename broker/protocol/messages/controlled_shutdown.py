"""ControlledShutdown (api key 7), hand-written from Kafka 3.8's ControlledShutdownRequest/Response.json.

Version 0 uses request header v0 (no client id); 2 adds BrokerEpoch; 3 is the first flexible version.
"""

from __future__ import annotations

from ..schema import f, msg

REQUEST = msg(
    "ControlledShutdownRequest",
    7,
    "0-3",
    "3+",
    [
        f("BrokerId", "int32", "0+"),
        f("BrokerEpoch", "int64", "2+", default="-1"),
    ],
)

RESPONSE = msg(
    "ControlledShutdownResponse",
    7,
    "0-3",
    "3+",
    [
        f("ErrorCode", "int16", "0+"),
        f(
            "RemainingPartitions",
            "[]RemainingPartition",
            "0+",
            fields=[f("TopicName", "string", "0+"), f("PartitionIndex", "int32", "0+")],
        ),
    ],
)
