"""ListOffsets (api key 2, v1-7): Kafka 2.8's ``KafkaApis.handleListOffsetRequest`` (``fetchOffsetForTimestamp``).

Timestamp -2 answers the log start offset, -1 the high watermark (consumers; ``isolation_level`` is
READ_UNCOMMITTED-equivalent: no transactions here) or the log end offset (replicas), any other timestamp the first
offset whose batch max timestamp is >= it (timestamp/offset -1 when there is none). Only the leader answers
consumers (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, and the v4+ current-leader-epoch checks). Every
occurrence of a partition named more than once is answered INVALID_REQUEST, without a lookup (Kafka's
``duplicatePartitions``).
"""

from __future__ import annotations

from typing import Any

from broker.apis.data_plane import DataPlane
from broker.apis.distinct import repeated
from broker.apis.kafka_apis import HandlerResult
from broker.log import LATEST_TIMESTAMP
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.state import TopicPartition

__all__ = ["handle_list_offsets"]

def handle_list_offsets(dp: DataPlane, request: Request, header: RequestHeader,
                        body: dict[str, Any]) -> HandlerResult:
    """Answer every partition of a ListOffsets request; see the module docstring."""
    del request, header
    consumer = int(body.get("replica_id", -1)) < 0
    topics: list[dict[str, Any]] = []
    codes: list[int] = []
    twice = repeated((t["name"], int(p["partition_index"])) for t in body["topics"] for p in t["partitions"])
    for t in body["topics"]:
        parts: list[dict[str, Any]] = []
        for p in t["partitions"]:
            index = int(p["partition_index"])
            resp: dict[str, Any] = {"partition_index": index, "error_code": ErrorCode.NONE, "timestamp": -1,
                                    "offset": -1, "leader_epoch": -1, "old_style_offsets": []}
            if (t["name"], index) in twice:
                resp["error_code"] = ErrorCode.INVALID_REQUEST
                codes.append(resp["error_code"])
                parts.append(resp)
                continue
            lookup = dp.leader_log(TopicPartition(t["name"], index), int(p.get("current_leader_epoch", -1)))
            if lookup.error or lookup.log is None or lookup.state is None:
                resp["error_code"] = lookup.error
            else:
                log = lookup.log
                ts = int(p["timestamp"])
                found = log.offset_for_timestamp(ts, log.high_watermark if consumer else None)
                if found is not None:
                    resp["timestamp"], resp["offset"] = found
                    if ts == LATEST_TIMESTAMP:
                        resp["leader_epoch"] = lookup.state.leader_epoch
            codes.append(resp["error_code"])
            parts.append(resp)
        topics.append({"name": t["name"], "partitions": parts})
    return HandlerResult({"throttle_time_ms": 0, "topics": topics}, tuple(codes) or (ErrorCode.NONE,))
