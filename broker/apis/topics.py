"""CreateTopics (19), DeleteTopics (20) and Metadata's auto topic creation, for topics this broker manages itself.

A standalone broker is its own controller (see :mod:`broker.apis.data_plane`): CreateTopics creates the logs and
publishes the partitions with this broker as leader; with another controller in charge it answers NOT_CONTROLLER,
as a Kafka broker that is not the controller does. Replication factor above 1 is refused with
INVALID_REPLICATION_FACTOR (one broker), an explicit assignment must name this broker only
(INVALID_REPLICA_ASSIGNMENT). A topic named twice in one request gets INVALID_REQUEST, as in Kafka (answered once
here, where Kafka repeats the answer for every occurrence). An internal topic (``__consumer_offsets``) is not a user
topic: the group coordinator creates it with ``offsets.topic.num.partitions``; asked for before that, CreateTopics
answers INVALID_TOPIC_EXCEPTION (as Produce to it does), after it TOPIC_ALREADY_EXISTS. Kafka 2.8 would create it
with whatever partitions and configs the client asked for.

A topic is created all or nothing: when one partition's log cannot be created (no descriptor left, disk full), the
partitions created before it are deleted again and the answer is KAFKA_STORAGE_ERROR with the reason.

Metadata: when ``auto.create.topics.enable`` is true and the request allows it (v4+ ``allow_auto_topic_creation``,
always before v4), requested topics that do not exist are created with ``num.partitions`` before the answer is
built (Kafka answers LEADER_NOT_AVAILABLE first and creates them asynchronously; here they are ready at once).
"""

from __future__ import annotations

from typing import Any

from broker.apis.convert import kafka_string_to_uuid, uuid_to_kafka_string
from broker.apis.data_plane import DataPlane
from broker.apis.distinct import last_by_key, repeated
from broker.apis.kafka_apis import Handler, HandlerResult
from broker.apis.metadata import INTERNAL_TOPICS, internal_topic_message
from broker.log import validate_topic_name
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode

__all__ = ["handle_create_topics", "handle_delete_topics", "metadata_with_auto_create"]

def handle_create_topics(dp: DataPlane, request: Request, header: RequestHeader,
                         body: dict[str, Any]) -> HandlerResult:
    """Create every requested topic (or only validate, ``validate_only``); a name given more than once is answered
    once, with INVALID_REQUEST, and not created."""
    del request
    twice = repeated(t["name"] for t in body["topics"])
    validate_only = bool(body.get("validate_only", False))
    out: list[dict[str, Any]] = []
    for name, t in last_by_key(body["topics"], lambda t: str(t["name"])).items():
        n, rf = int(t["num_partitions"]), int(t["replication_factor"])
        configs = {c["name"]: c["value"] for c in t.get("configs") or [] if c.get("value") is not None}
        assignments = t.get("assignments") or []
        message: str | None = None
        code: int
        if name in twice:
            code, message = ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic."
        elif name in INTERNAL_TOPICS and not dp.topic_exists(name):
            code, message = ErrorCode.INVALID_TOPIC_EXCEPTION, internal_topic_message(name)
        elif assignments and (n != -1 or rf != -1):
            code = ErrorCode.INVALID_REQUEST
            message = ("Both numPartitions or replicationFactor and replicasAssignments were set. "
                       "Both cannot be used at the same time.")
        elif assignments and any(list(a["broker_ids"]) != [dp.state.broker_id] for a in assignments):
            code, message = ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Replica assignment must name this broker only."
        else:
            if assignments:
                n, rf = len(assignments), 1
            code, message = dp.create_topic(name, n, rf, configs, validate_only=validate_only)
        created = code == ErrorCode.NONE
        entry: dict[str, Any] = {"name": name, "error_code": code, "error_message": message,
                                 "topic_config_error_code": ErrorCode.NONE,
                                 "num_partitions": (n if n != -1 else dp.config.num_partitions) if created else -1,
                                 "replication_factor": 1 if created else -1, "configs": []}
        if created and not validate_only:
            entry["topic_id"] = kafka_string_to_uuid(dp.topic_id(name))
        out.append(entry)
    del header
    codes = tuple(int(e["error_code"]) for e in out) or (ErrorCode.NONE,)
    return HandlerResult({"throttle_time_ms": 0, "topics": out}, codes)


def handle_delete_topics(dp: DataPlane, request: Request, header: RequestHeader,
                         body: dict[str, Any]) -> HandlerResult:
    """Delete the named topics (by name; v6 topic ids of locally created topics are resolved too); a topic named
    more than once is deleted and answered once."""
    del request
    names: list[str | None] = []
    if header.api_version < 6:
        names = list(dict.fromkeys(body.get("topic_names") or []))
    else:
        by_id = {dp.topic_id(t): t for t in dp.state.metadata_cache.snapshot.partitions}
        for t in last_by_key(body.get("topics") or [], lambda t: (t.get("name"), t.get("topic_id"))).values():
            names.append(t.get("name") or by_id.get(uuid_to_kafka_string(t["topic_id"])))
    out: list[dict[str, Any]] = []
    for name in names:
        code = dp.delete_topic(name) if name is not None else ErrorCode.UNKNOWN_TOPIC_ID
        out.append({"name": name, "error_code": code, "error_message": None})
    codes = tuple(int(e["error_code"]) for e in out) or (ErrorCode.NONE,)
    return HandlerResult({"throttle_time_ms": 0, "responses": out}, codes)


def metadata_with_auto_create(dp: DataPlane, base: Handler) -> Handler:
    """Wrap KafkaApis' Metadata handler with auto topic creation (see the module docstring)."""

    def handler(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        topics = body.get("topics")
        allowed = header.api_version < 4 or bool(body.get("allow_auto_topic_creation", True))
        if topics and allowed and dp.config.auto_create_topics:
            wanted = []
            for name in dict.fromkeys(t.get("name") for t in topics):
                if name is None or dp.topic_exists(name):
                    continue
                try:
                    validate_topic_name(name)
                except ValueError:
                    continue  # not creatable: Metadata answers INVALID_TOPIC_EXCEPTION for it
                wanted.append(name)
            dp.maybe_auto_create(wanted)
        return base(request, header, body)

    return handler
