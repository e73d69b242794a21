"""DeleteRecords (21): move a partition's log start offset forward on its leader (Kafka's
``ReplicaManager.deleteRecords`` / ``Partition.deleteRecordsOnLeader``).

Per partition, as Kafka answers it:

* offset -1 (``DeleteRecordsRequest.HIGH_WATERMARK``) means the high watermark; another negative offset, or one above
  the high watermark, is OFFSET_OUT_OF_RANGE;
* an offset at or below the current log start offset changes nothing; the answer is the log start offset either way
  (``low_watermark``);
* UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER where this broker does not lead the partition;
* a partition named more than once is handled and answered once, with its last offset (Kafka's map).

Segments wholly below the new log start offset are deleted by the retention pass; fetches below it answer
OFFSET_OUT_OF_RANGE at once, and ListOffsets EARLIEST answers it.

Kafka parks the answer until every follower's log start offset has reached the new one (``DelayedDeleteRecords``);
here the leader answers as soon as its own log moved, and followers adopt the leader's log start offset from their
next fetch response.
"""

from __future__ import annotations

from typing import Any

from broker.apis.data_plane import DataPlane
from broker.apis.distinct import last_by_key
from broker.apis.kafka_apis import HandlerResult
from broker.log import LogStartOffsetIncrementReason, OffsetOutOfRangeError
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.topic_partition import TopicPartition

__all__ = ["HIGH_WATERMARK", "handle_delete_records"]

HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK: delete everything below the high watermark
_NO_WATERMARK = -1


def _delete_one(dp: DataPlane, tp: TopicPartition, offset: int) -> tuple[int, int]:
    """(low watermark, error code) for one partition."""
    found = dp.leader_log(tp)
    if found.error != ErrorCode.NONE or found.log is None:
        return _NO_WATERMARK, found.error
    log = found.log
    target = log.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0:
        return _NO_WATERMARK, ErrorCode.OFFSET_OUT_OF_RANGE
    try:
        log.increment_log_start_offset(target, LogStartOffsetIncrementReason.CLIENT_RECORD_DELETION)
    except OffsetOutOfRangeError:
        return _NO_WATERMARK, ErrorCode.OFFSET_OUT_OF_RANGE
    return log.log_start_offset, ErrorCode.NONE


def handle_delete_records(dp: DataPlane, request: Request, header: RequestHeader,
                          body: dict[str, Any]) -> HandlerResult:
    """Delete the records below each requested offset (see the module docstring)."""
    del request, header
    wanted = last_by_key(((TopicPartition(str(t["name"]), int(p["partition_index"])), int(p["offset"]))
                          for t in body.get("topics") or [] for p in t.get("partitions") or []), lambda e: e[0])
    by_topic: dict[str, list[dict[str, Any]]] = {}
    codes: list[int] = []
    for tp, offset in wanted.values():
        low, code = _delete_one(dp, tp, offset)
        by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition, "low_watermark": low,
                                                  "error_code": code})
        codes.append(code)
    topics = [{"name": name, "partitions": parts} for name, parts in by_topic.items()]
    return HandlerResult({"throttle_time_ms": 0, "topics": topics}, tuple(codes) or (ErrorCode.NONE,))
