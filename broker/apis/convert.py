"""Decoded control-request bodies (snake_case dicts of any version) -> the version-independent state models.

Also the inverse helpers the controller side uses to build bodies for a given version.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from broker.state.model import (
    NO_EPOCH,
    CachedPartition,
    Endpoint,
    LeaderAndIsrPartition,
    LeaderAndIsrRequestModel,
    LiveBroker,
    StopReplicaPartition,
    StopReplicaRequestModel,
    UpdateMetadataRequestModel,
)

__all__ = [
    "SECURITY_PROTOCOLS",
    "kafka_string_to_uuid",
    "leader_and_isr_from_body",
    "stop_replica_from_body",
    "update_metadata_from_body",
    "uuid_to_kafka_string",
]

# SecurityProtocol ids (org.apache.kafka.common.security.auth.SecurityProtocol).
SECURITY_PROTOCOLS: dict[int, str] = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
_ZERO_UUID = uuid.UUID(int=0)


def uuid_to_kafka_string(value: Any) -> str:
    """Kafka's ``Uuid.toString`` (URL-safe base64, no padding) of a decoded uuid field."""
    raw = value.bytes if isinstance(value, uuid.UUID) else bytes(value)
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def kafka_string_to_uuid(text: str) -> uuid.UUID:
    """Inverse of :func:`uuid_to_kafka_string`.

    Raises:
        ValueError: not a 22-character Kafka Uuid string.
    """
    raw = base64.urlsafe_b64decode(text + "==")
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    return uuid.UUID(bytes=raw)


def _ints(values: Iterable[Any] | None) -> tuple[int, ...]:
    return tuple(int(v) for v in values or ())


def _max_broker_epoch(body: Mapping[str, Any]) -> int | None:
    value = body.get("max_broker_epoch")
    return None if value is None or int(value) == -1 else int(value)


def leader_and_isr_from_body(body: Mapping[str, Any], version: int) -> LeaderAndIsrRequestModel:
    """LeaderAndIsr v0-7 body -> model (v0-1 ungrouped partition states, v2+ grouped by topic)."""
    del version  # the body's keys already say which layout it has
    partitions: list[LeaderAndIsrPartition] = []
    topic_ids: dict[str, str] = {}

    def add(topic: str, ps: Mapping[str, Any]) -> None:
        partitions.append(LeaderAndIsrPartition(
            topic=topic, partition=int(ps["partition_index"]), controller_epoch=int(ps["controller_epoch"]),
            leader=int(ps["leader"]), leader_epoch=int(ps["leader_epoch"]), isr=_ints(ps.get("isr")),
            partition_epoch=int(ps.get("partition_epoch", 0)), replicas=_ints(ps.get("replicas")),
            adding_replicas=_ints(ps.get("adding_replicas")), removing_replicas=_ints(ps.get("removing_replicas")),
            is_new=bool(ps.get("is_new", False))))

    for ps in body.get("ungrouped_partition_states") or ():
        add(str(ps["topic_name"]), ps)
    for ts in body.get("topic_states") or ():
        topic = str(ts["topic_name"])
        tid = ts.get("topic_id")
        if tid is not None and tid != _ZERO_UUID:
            topic_ids[topic] = uuid_to_kafka_string(tid)
        for ps in ts.get("partition_states") or ():
            add(topic, ps)
    return LeaderAndIsrRequestModel(
        controller_id=int(body["controller_id"]), controller_epoch=int(body["controller_epoch"]),
        broker_epoch=int(body.get("broker_epoch", -1)), partitions=tuple(partitions), topic_ids=topic_ids,
        max_broker_epoch=_max_broker_epoch(body))


def update_metadata_from_body(body: Mapping[str, Any], version: int) -> UpdateMetadataRequestModel:
    """UpdateMetadata v0-8 body -> model (v0 host/port, v1-2 endpoints named by protocol, v3+ listener names)."""
    partitions: list[CachedPartition] = []
    topic_ids: dict[str, str] = {}

    def add(topic: str, ps: Mapping[str, Any]) -> None:
        partitions.append(CachedPartition(
            topic=topic, partition=int(ps["partition_index"]), controller_epoch=int(ps["controller_epoch"]),
            leader=int(ps["leader"]), leader_epoch=int(ps["leader_epoch"]), isr=_ints(ps.get("isr")),
            zk_version=int(ps.get("zk_version", 0)), replicas=_ints(ps.get("replicas")),
            offline_replicas=_ints(ps.get("offline_replicas"))))

    for ps in body.get("ungrouped_partition_states") or ():
        add(str(ps["topic_name"]), ps)
    for ts in body.get("topic_states") or ():
        topic = str(ts["topic_name"])
        tid = ts.get("topic_id")
        if tid is not None and tid != _ZERO_UUID:
            topic_ids[topic] = uuid_to_kafka_string(tid)
        for ps in ts.get("partition_states") or ():
            add(topic, ps)
    brokers: list[LiveBroker] = []
    for b in body.get("live_brokers") or ():
        endpoints: list[Endpoint] = []
        if version == 0:
            endpoints.append(Endpoint("PLAINTEXT", str(b["v0_host"]), int(b["v0_port"]), 0))
        for ep in b.get("endpoints") or ():
            proto = int(ep.get("security_protocol", 0))
            listener = ep.get("listener") if version >= 3 else None
            endpoints.append(Endpoint(str(listener or SECURITY_PROTOCOLS.get(proto, str(proto))), str(ep["host"]),
                                      int(ep["port"]), proto))
        rack = b.get("rack")
        brokers.append(LiveBroker(int(b["id"]), tuple(endpoints), None if rack is None else str(rack)))
    return UpdateMetadataRequestModel(
        controller_id=int(body["controller_id"]), controller_epoch=int(body["controller_epoch"]),
        broker_epoch=int(body.get("broker_epoch", -1)), partitions=tuple(partitions), live_brokers=tuple(brokers),
        topic_ids=topic_ids, max_broker_epoch=_max_broker_epoch(body))


def stop_replica_from_body(body: Mapping[str, Any], version: int) -> StopReplicaRequestModel:
    """StopReplica v0-4 body -> model (v0-2: one delete flag, no leader epochs; v3+: per partition)."""
    del version
    delete = bool(body.get("delete_partitions", False))
    partitions: list[StopReplicaPartition] = []
    for p in body.get("ungrouped_partitions") or ():
        partitions.append(StopReplicaPartition(str(p["topic_name"]), int(p["partition_index"]), NO_EPOCH, delete))
    for t in body.get("topics") or ():
        for idx in t.get("partition_indexes") or ():
            partitions.append(StopReplicaPartition(str(t["name"]), int(idx), NO_EPOCH, delete))
    for ts in body.get("topic_states") or ():
        for ps in ts.get("partition_states") or ():
            partitions.append(StopReplicaPartition(str(ts["topic_name"]), int(ps["partition_index"]),
                                                   int(ps.get("leader_epoch", NO_EPOCH)),
                                                   bool(ps.get("delete_partition", False))))
    return StopReplicaRequestModel(
        controller_id=int(body["controller_id"]), controller_epoch=int(body["controller_epoch"]),
        broker_epoch=int(body.get("broker_epoch", -1)), partitions=tuple(partitions),
        max_broker_epoch=_max_broker_epoch(body))
