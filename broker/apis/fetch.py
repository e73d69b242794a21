"""Fetch (api key 1, v4-12): Kafka 2.8's ``KafkaApis.handleFetchRequest`` + ``ReplicaManager.fetchMessages``.

* Consumers (``replica_id`` -1) read only from partitions this broker leads (else NOT_LEADER_OR_FOLLOWER) and only
  below the high watermark; followers (``replica_id`` >= 0) read up to the log end offset, and their fetch offset
  moves the high watermark (acks=all waits for it). RequestMetrics names: ``FetchConsumer`` / ``FetchFollower``.
* Whole batches from the one holding the fetch offset; the first partition with data may exceed
  ``partition_max_bytes``/``max_bytes`` by one batch so a consumer always makes progress; records are ``b""``, never
  null, when there is nothing.
* Long poll: when fewer than ``min_bytes`` are available and no partition has an error, the request waits in the
  purgatory (``broker.purgatory``) until appends make ``min_bytes`` available or ``max_wait_ms`` passes (DelayedFetch).
* Errors per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE (with the log start
  offset and high watermark so the client can reset), FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (v9+ current leader
  epoch checks).
* A partition named more than once is read and answered once, at its first position with its last fetch position
  (Kafka's ``LinkedHashMap`` of fetch data).
* Fetch sessions (KIP-227, v7+) are not cached: every answer has session id 0, which tells clients to send full
  fetch requests (Kafka with ``max.incremental.fetch.session.cache.slots=0``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from broker.apis.data_plane import DataPlane
from broker.apis.distinct import last_by_key
from broker.apis.kafka_apis import HandlerResult
from broker.log import Log, OffsetOutOfRangeError
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.state import TopicPartition

__all__ = ["handle_fetch"]

CONSUMER_REPLICA_ID = -1


@dataclass(slots=True)
class _Target:
    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    log: Log | None
    error: int


def _targets(dp: DataPlane, body: dict[str, Any], follower: bool, replica_id: int) -> list[_Target]:
    out: list[_Target] = []
    wanted = last_by_key(((TopicPartition(t["topic"], int(p["partition"])), p)
                          for t in body["topics"] for p in t["partitions"]), lambda e: e[0])
    for tp, p in wanted.values():
        name = tp.topic
        offset, max_bytes = int(p["fetch_offset"]), int(p["partition_max_bytes"])
        if follower:
            log = dp.hosted_log(tp)
            ps = dp.state.partition(tp)
            error: int = ErrorCode.NONE
            if log is None or ps is None:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif ps.leader != dp.state.broker_id:
                error = ErrorCode.NOT_LEADER_OR_FOLLOWER
            if error == ErrorCode.NONE:
                dp.record_follower_offset(tp, replica_id, offset)
            readable = log if error == ErrorCode.NONE else None
            out.append(_Target(name, tp.partition, offset, max_bytes, readable, error))
            continue
        lookup = dp.leader_log(tp, int(p.get("current_leader_epoch", -1)))
        readable = lookup.log if lookup.error == ErrorCode.NONE else None
        out.append(_Target(name, tp.partition, offset, max_bytes, readable, lookup.error))
    return out


def _read(targets: list[_Target], max_bytes: int, follower: bool) -> tuple[list[dict[str, Any]], int, bool]:
    """One pass over the partitions: (responses in request order grouped by topic, bytes read, any error)."""
    topics: list[dict[str, Any]] = []
    by_name: dict[str, dict[str, Any]] = {}
    total, any_error, budget = 0, False, max_bytes
    for t in targets:
        resp: dict[str, Any] = {"partition_index": t.partition, "error_code": t.error, "high_watermark": -1,
                                "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                                "preferred_read_replica": -1, "records": b""}
        if t.log is not None:
            log = t.log
            try:
                data = log.read(t.fetch_offset, min(t.max_bytes, max(budget, 0)),
                                None if follower else log.high_watermark, min_one_batch=(total == 0))
                resp["records"] = data.records
                resp["high_watermark"] = data.high_watermark
                resp["last_stable_offset"] = data.high_watermark
                resp["log_start_offset"] = data.log_start_offset
                total += len(data.records)
                budget -= len(data.records)
            except OffsetOutOfRangeError:
                resp["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
                resp["high_watermark"] = log.high_watermark
                resp["last_stable_offset"] = log.high_watermark
                resp["log_start_offset"] = log.log_start_offset
        if resp["error_code"]:
            any_error = True
        topic = by_name.get(t.topic)
        if topic is None or topics[-1] is not topic:
            topic = {"topic": t.topic, "partitions": []}
            topics.append(topic)
            by_name[t.topic] = topic
        topic["partitions"].append(resp)
    return topics, total, any_error


def _has_new_data(targets: list[_Target], follower: bool) -> bool:
    for t in targets:
        if t.log is None:
            continue
        limit = t.log.log_end_offset if follower else t.log.high_watermark
        if limit > t.fetch_offset or t.fetch_offset > t.log.log_end_offset or t.fetch_offset < t.log.log_start_offset:
            return True
    return False


def handle_fetch(dp: DataPlane, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
    """Answer a Fetch, long-polling when ``min_bytes`` are not yet available; see the module docstring."""
    del header
    replica_id = int(body.get("replica_id", CONSUMER_REPLICA_ID))
    follower = replica_id >= 0
    max_bytes = int(body.get("max_bytes", 0x7FFFFFFF))
    min_bytes = max(int(body.get("min_bytes", 1)), 1)
    max_wait_ms = int(body.get("max_wait_ms", 0))
    targets = _targets(dp, body, follower, replica_id)
    topics, total, any_error = _read(targets, max_bytes, follower)
    if total < min_bytes and not any_error and max_wait_ms > 0 and any(t.log is not None for t in targets):
        leaders = {(t.topic, t.partition): dp.state.partition(TopicPartition(t.topic, t.partition)) for t in targets}

        def ready() -> bool:
            if any(dp.state.partition(TopicPartition(t, p)) is not s for (t, p), s in leaders.items()):
                return True  # leadership changed while parked: answer with the new errors (DelayedFetch)
            if not _has_new_data(targets, follower):
                return False
            return min_bytes <= 1 or _read(targets, max_bytes, follower)[1] >= min_bytes

        request.api_local_complete_ns = time.monotonic_ns()  # the long poll is RemoteTimeMs, as in Kafka
        dp.purgatory.await_completion(ready, max_wait_ms, optional=True)
        targets = _targets(dp, body, follower, replica_id)
        topics, total, any_error = _read(targets, max_bytes, follower)
    if not follower:
        for topic in topics:
            dp.meters.mark("BytesOutPerSec", topic["topic"], sum(len(p["records"]) for p in topic["partitions"]))
    codes = tuple(p["error_code"] for t in topics for p in t["partitions"]) or (ErrorCode.NONE,)
    body = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0, "responses": topics}
    return HandlerResult(body, codes,
                         metric_name="FetchFollower" if follower else "FetchConsumer")
