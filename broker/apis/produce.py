"""Produce (api key 0, v3-9): Kafka 2.8's ``KafkaApis.handleProduceRequest`` + ``ReplicaManager.appendRecords``.

Per partition, in Kafka's order: the request-level record checks (``ProduceRequest.validateRecords``: one batch,
magic 2, no zstd before v7; CORRUPT_MESSAGE / INVALID_RECORD / UNSUPPORTED_COMPRESSION_TYPE), the partition lookup
(UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER), then the log's validation and append (CORRUPT_MESSAGE,
MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, KAFKA_STORAGE_ERROR). A bad partition never affects the others, and
nothing is appended for it.

acks: 0 answers nothing (and closes the connection if any partition failed, as Kafka does so the client notices);
1 answers after the append; -1 (all) appends durably (fsync) and then waits in the purgatory until the high
watermark covers the appended records (ISR = {self}: at once), up to ``timeout_ms``, else REQUEST_TIMED_OUT for
that partition (the records stay in the log, as in Kafka). An acks=all partition whose ISR is smaller than the
topic's ``min.insync.replicas`` (at most its replica count, Kafka 3.9's ``effectiveMinIsr``) is refused before the
append with NOT_ENOUGH_REPLICAS, and answers NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below it while
the high watermark moved.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from broker.apis.data_plane import DataPlane
from broker.apis.kafka_apis import HandlerResult
from broker.apis.metadata import INTERNAL_TOPICS
from broker.log import Log, LogError
from broker.network.request import Request
from broker.protocol import CorruptRecord, RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.protocol.records import validate_produce_records
from broker.state import TopicPartition
from broker.state.model import PartitionState

__all__ = ["handle_produce"]



@dataclass(frozen=True, slots=True)
class _Pending:
    """An acks=all partition waiting in the purgatory for the high watermark to reach ``required``."""

    response: dict[str, Any]
    log: Log
    required: int
    tp: TopicPartition
    state: PartitionState


def _partition_response(index: int, code: int, base_offset: int = -1, log_start_offset: int = -1,
                        message: str | None = None) -> dict[str, Any]:
    return {"index": index, "error_code": code, "base_offset": base_offset, "log_append_time_ms": -1,
            "log_start_offset": log_start_offset, "record_errors": [], "error_message": message}


def _effective_min_isr(log: Log, state: PartitionState) -> int:
    """Kafka 3.9's ``Partition.effectiveMinIsr``: the topic's ``min.insync.replicas``, at most the replica count."""
    return min(log.config.min_insync_replicas, len(state.replicas))


def handle_produce(dp: DataPlane, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
    """Append every partition's records where this broker leads; see the module docstring."""
    acks = int(body["acks"])
    timeout_ms = int(body["timeout_ms"])
    responses: list[dict[str, Any]] = []
    codes: list[int] = []
    pending: list[_Pending] = []  # acks=all: waiting for the high watermark
    for topic in body["topic_data"]:
        name = topic["name"]
        parts: list[dict[str, Any]] = []
        for pdata in topic["partition_data"]:
            index = int(pdata["index"])
            resp = _append_one(dp, name, index, pdata.get("records"), acks, header.api_version, pending)
            parts.append(resp)
        responses.append({"name": name, "partition_responses": parts})
    if acks == -1 and pending:
        def completed() -> bool:
            return all(p.log.high_watermark >= p.required or not dp.still_leader(p.tp, p.state) for p in pending)
        if not completed():
            request.api_local_complete_ns = time.monotonic_ns()  # the wait is RemoteTimeMs, as in Kafka
        dp.purgatory.await_completion(completed, timeout_ms)
        for p in pending:
            if p.log.high_watermark >= p.required:
                now = dp.state.partition(p.tp) or p.state
                if len(now.isr) < _effective_min_isr(p.log, now):  # the ISR shrank while waiting
                    p.response["error_code"] = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
                continue
            # DelayedProduce: leadership lost while waiting -> NOT_LEADER_OR_FOLLOWER, else the timeout
            p.response["error_code"] = (ErrorCode.REQUEST_TIMED_OUT if dp.still_leader(p.tp, p.state)
                                         else ErrorCode.NOT_LEADER_OR_FOLLOWER)
            p.response["base_offset"] = -1
    for t in responses:
        codes.extend(p["error_code"] for p in t["partition_responses"])
    errors = tuple(codes) or (0,)
    if acks == 0:
        return HandlerResult({}, errors, no_response=True, close=any(codes))
    return HandlerResult({"responses": responses, "throttle_time_ms": 0}, errors)


def _append_one(dp: DataPlane, topic: str, index: int, records: Any, acks: int, version: int,
                pending: list[_Pending]) -> dict[str, Any]:
    if acks not in (0, 1, -1):
        return _partition_response(index, ErrorCode.INVALID_REQUIRED_ACKS)
    if topic in INTERNAL_TOPICS:  # Kafka: "Cannot append to internal topic" (only the coordinators write there)
        return _partition_response(index, ErrorCode.INVALID_TOPIC_EXCEPTION)
    try:
        batch = validate_produce_records(records, version)
    except CorruptRecord as exc:
        return _partition_response(index, int(exc.error_code), message=str(exc))
    tp = TopicPartition(topic, index)
    lookup = dp.leader_log(tp)
    if lookup.error or lookup.log is None or lookup.state is None:
        return _partition_response(index, lookup.error or ErrorCode.UNKNOWN_SERVER_ERROR)
    log, state = lookup.log, lookup.state
    if acks == -1 and len(state.isr) < _effective_min_isr(log, state):
        return _partition_response(index, ErrorCode.NOT_ENOUGH_REPLICAS)
    pid = batch.producer_id
    try:
        if pid < 0:
            info = log.append_as_leader(records, state.leader_epoch, durable=(acks == -1))
        else:
            first = batch.base_sequence
            last = (first + batch.last_offset_delta) % (2**31)
            with dp.producers.lock(tp):
                verdict = dp.producers.check(tp, pid, batch.producer_epoch, first, last)
                if verdict.error:
                    return _partition_response(index, verdict.error)
                if verdict.duplicate_of is not None:  # a retry of an appended batch: answer its offset again
                    resp = _partition_response(index, 0, verdict.duplicate_of, log.log_start_offset)
                    if acks == -1:
                        pending.append(_Pending(resp, log, verdict.duplicate_of + batch.last_offset_delta + 1, tp,
                                                state))
                    return resp
                info = log.append_as_leader(records, state.leader_epoch, durable=(acks == -1))
                dp.producers.record(tp, pid, batch.producer_epoch, first, last, info.first_offset)
    except LogError as exc:
        return _partition_response(index, int(exc.error_code), message=str(exc))
    dp.after_leader_append(tp, log, state)
    if not dp.still_leader(tp, state):
        # A LeaderAndIsr made this broker a follower while the append ran (Kafka excludes this with the partition's
        # leaderIsrUpdateLock): the records are in the log but never acknowledged; the new leader's follower
        # truncation removes them, as KIP-291 describes.
        return _partition_response(index, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    dp.meters.mark("MessagesInPerSec", topic, info.message_count)
    dp.meters.mark("BytesInPerSec", topic, info.valid_bytes)
    resp = _partition_response(index, 0, info.first_offset, info.log_start_offset)
    resp["log_append_time_ms"] = info.log_append_time
    if acks == -1:
        pending.append(_Pending(resp, log, info.last_offset + 1, tp, state))
    return resp
