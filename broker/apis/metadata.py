"""Pure builders of the ApiVersions and Metadata responses (Kafka 2.8 ``KafkaApis`` / ``MetadataCache``)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from broker.apis.convert import kafka_string_to_uuid, uuid_to_kafka_string
from broker.log import validate_topic_name
from broker.protocol.error_codes import ErrorCode
from broker.state.metadata_cache import MetadataSnapshot
from broker.state.model import LiveBroker

_ZERO_UUID = uuid.UUID(int=0)

__all__ = ["CLIENT_SOFTWARE_RE", "INTERNAL_TOPICS", "OFFSETS_TOPIC", "api_versions_body", "internal_topic_message",
           "metadata_body", "requested_topics", "valid_client_software"]

OFFSETS_TOPIC = "__consumer_offsets"  # Topic.GROUP_METADATA_TOPIC_NAME
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, "__transaction_state"})  # Topic.isInternal
NO_LEADER_ID = -1  # MetadataResponse.NO_LEADER_ID


def internal_topic_message(topic: str) -> str:
    """Why CreateTopics refuses an internal topic (one place, for the standalone broker and a cluster member)."""
    return f"Topic {topic} is internal: its coordinator creates it, not a client."


NO_CONTROLLER_ID = -1  # MetadataResponse.NO_CONTROLLER_ID
AUTHORIZED_OPERATIONS_OMITTED = -2147483648  # Integer.MIN_VALUE: not requested

# ApiVersions v3+ FinalizedFeaturesEpoch (KIP-584): a ZooKeeper-mode broker at IBP >= 2.7 answers the version of the
# /feature znode the controller created enabled and empty on a fresh cluster: 0, with no finalized features.
FINALIZED_FEATURES_EPOCH = 0

# ApiVersionsRequest.isValid (KIP-511): client software name and version must match this.
CLIENT_SOFTWARE_RE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def valid_client_software(body: Mapping[str, Any], version: int) -> bool:
    """ApiVersions v3+ must carry a valid ClientSoftwareName and ClientSoftwareVersion."""
    if version < 3:
        return True
    name, ver = body.get("client_software_name"), body.get("client_software_version")
    return (isinstance(name, str) and CLIENT_SOFTWARE_RE.fullmatch(name) is not None
            and isinstance(ver, str) and CLIENT_SOFTWARE_RE.fullmatch(ver) is not None)


def api_versions_body(advertised: Mapping[int, tuple[int, int]], error_code: int = ErrorCode.NONE) -> dict[str, Any]:
    """The ApiVersions response body advertising ``advertised`` (api_key -> (min, max)), sorted by key; v3+ also
    carry :data:`FINALIZED_FEATURES_EPOCH` (a tagged field; no supported or finalized features)."""
    return {
        "error_code": error_code,
        "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi}
                     for k, (lo, hi) in sorted(advertised.items())],
        "throttle_time_ms": 0,
        "finalized_features_epoch": FINALIZED_FEATURES_EPOCH,
    }


def _valid_topic_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except ValueError:
        return False
    return True


def _alive(snapshot: MetadataSnapshot, self_broker: LiveBroker) -> Mapping[int, LiveBroker]:
    # A broker that has heard from no controller yet still answers with itself, so clients can bootstrap.
    return snapshot.alive_brokers or {self_broker.id: self_broker}


def requested_topics(snapshot: MetadataSnapshot,
                     requested: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[uuid.UUID]]:
    """The distinct topic names a Metadata request asks for, in the order they first appear (Kafka: ``toSet``),
    names looked up from v10+ topic ids included, and the distinct ids that name no topic."""
    names: dict[str, None] = {}
    resolved: dict[uuid.UUID, str | None] = {}
    by_id: dict[str, str] | None = None
    for t in requested:
        name = t.get("name")
        if name is None:  # v10+: lookup by topic id (name null)
            tid = t.get("topic_id") or _ZERO_UUID
            if tid not in resolved:
                if by_id is None:
                    by_id = {kid: n for n, kid in snapshot.topic_ids.items()}
                resolved[tid] = by_id.get(uuid_to_kafka_string(tid)) if tid != _ZERO_UUID else None
            name = resolved[tid]
            if name is None:
                continue
        names[str(name)] = None
    return list(names), [tid for tid, name in resolved.items() if name is None]


def metadata_body(snapshot: MetadataSnapshot, body: Mapping[str, Any], version: int, listener: str,
                  self_broker: LiveBroker, cluster_id: str | None) -> dict[str, Any]:
    """The Metadata response for a request that arrived on ``listener`` (Kafka 2.8 semantics, no auto-creation).

    A topic named (or looked up by id) more than once is answered once (:func:`requested_topics`).

    Brokers are the live brokers with an endpoint on ``listener`` (this broker alone while no UpdateMetadata has
    arrived). Requested topics the cache does not know get UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION
    when their name is not a legal topic name (Kafka 2.8+: whether or not auto-creation is allowed). A partition
    whose leader is not alive gets LEADER_NOT_AVAILABLE with leader -1; v0 filters unavailable replicas and reports
    REPLICA_NOT_AVAILABLE, as Kafka does (``errorUnavailableEndpoints``).
    """
    alive = _alive(snapshot, self_broker)
    brokers = []
    for b in sorted(alive.values(), key=lambda x: x.id):
        ep = b.endpoint(listener)
        if ep is not None:
            brokers.append({"node_id": b.id, "host": ep.host, "port": ep.port, "rack": b.rack})
    requested = body.get("topics")
    topics: list[dict[str, Any]] = []
    if requested is None or (version == 0 and not requested):
        names: list[str] = sorted(snapshot.partitions)
    else:
        names, unknown_ids = requested_topics(snapshot, requested)
        topics = [{"error_code": ErrorCode.UNKNOWN_TOPIC_ID, "name": None, "topic_id": tid, "is_internal": False,
                   "partitions": [], "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}
                  for tid in unknown_ids]
    for name in names:
        parts = snapshot.partitions.get(name)
        topic: dict[str, Any] = {"error_code": ErrorCode.NONE, "name": name, "is_internal": name in INTERNAL_TOPICS,
                                 "partitions": [], "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}
        tid = snapshot.topic_ids.get(name)
        if tid is not None:
            topic["topic_id"] = kafka_string_to_uuid(tid)
        if not parts:
            topic["error_code"] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if _valid_topic_name(name)
                                   else ErrorCode.INVALID_TOPIC_EXCEPTION)
            topics.append(topic)
            continue
        for idx in sorted(parts):
            p = parts[idx]
            replicas, isr = list(p.replicas), list(p.isr)
            if version == 0:  # errorUnavailableEndpoints
                replicas = [r for r in replicas if r in alive]
                isr = [r for r in isr if r in alive]
            leader = alive.get(p.leader)
            if leader is None or leader.endpoint(listener) is None:
                error, leader_id = ErrorCode.LEADER_NOT_AVAILABLE, NO_LEADER_ID
            else:
                leader_id = p.leader
                missing = len(replicas) < len(p.replicas) or len(isr) < len(p.isr)
                error = ErrorCode.REPLICA_NOT_AVAILABLE if missing else ErrorCode.NONE
            topic["partitions"].append({"error_code": error, "partition_index": idx, "leader_id": leader_id,
                                        "leader_epoch": p.leader_epoch, "replica_nodes": replicas, "isr_nodes": isr,
                                        "offline_replicas": list(p.offline_replicas)})
        topics.append(topic)
    controller = snapshot.controller_id if snapshot.controller_id is not None else NO_CONTROLLER_ID
    return {"throttle_time_ms": 0, "brokers": brokers, "cluster_id": cluster_id, "controller_id": controller,
            "topics": topics, "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}
