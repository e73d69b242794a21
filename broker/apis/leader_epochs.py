"""OffsetForLeaderEpoch (api key 23, v0-4): Kafka 2.8's ``KafkaApis.handleOffsetForLeaderEpochRequest``.

A follower that becomes a follower asks its new leader where the newest epoch it holds ends in the leader's log
(KIP-101, KIP-279) and truncates to that offset instead of its local high watermark, so records every ISR member
acknowledged survive a leadership change; consumers ask the same question to detect log truncation (KIP-320). Each
partition is answered from the leader's epoch cache (``endOffsetFor``): the requested epoch itself (or the largest
epoch below it) and the start offset of the first later epoch, or the log end offset when the requested epoch is the
newest. Only the leader answers (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION), with the v2+ current-leader-epoch
checks (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH). A partition named twice is answered once per occurrence from one
lookup.
"""

from __future__ import annotations

from typing import Any

from broker.apis.data_plane import DataPlane
from broker.apis.kafka_apis import HandlerResult
from broker.log.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.state import TopicPartition

__all__ = ["epoch_end_offset", "handle_offset_for_leader_epoch"]


def epoch_end_offset(dp: DataPlane, tp: TopicPartition, current_leader_epoch: int,
                     leader_epoch: int) -> tuple[int, int, int]:
    """``(error code, epoch, end offset)`` of ``leader_epoch`` in the log of ``tp`` this broker leads."""
    lookup = dp.leader_log(tp, current_leader_epoch)
    if lookup.error or lookup.log is None:
        return int(lookup.error), UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    epoch, end = lookup.log.end_offset_for_epoch(leader_epoch)
    return int(ErrorCode.NONE), epoch, end


def handle_offset_for_leader_epoch(dp: DataPlane, request: Request, header: RequestHeader,
                                   body: dict[str, Any]) -> HandlerResult:
    """Answer every partition of an OffsetForLeaderEpoch request; see the module docstring."""
    del request, header
    answers: dict[tuple[str, int, int, int], tuple[int, int, int]] = {}
    topics: list[dict[str, Any]] = []
    codes: list[int] = []
    for t in body["topics"]:
        parts: list[dict[str, Any]] = []
        for p in t["partitions"]:
            index = int(p["partition"])
            key = (t["topic"], index, int(p.get("current_leader_epoch", -1)), int(p["leader_epoch"]))
            if key not in answers:
                answers[key] = epoch_end_offset(dp, TopicPartition(t["topic"], index), key[2], key[3])
            code, epoch, end = answers[key]
            codes.append(code)
            parts.append({"error_code": code, "partition": index, "leader_epoch": epoch, "end_offset": end})
        topics.append({"topic": t["topic"], "partitions": parts})
    return HandlerResult({"throttle_time_ms": 0, "topics": topics}, tuple(codes) or (ErrorCode.NONE,))
