"""Pure helpers of the controller side: request bodies per version, Kafka's toString forms, KIP-291 routing.

Nothing here does I/O. Bodies are the snake_case dicts of ``broker.protocol``; partition states are the
version-independent models of :mod:`broker.state.model`, so one controller decision can be sent to brokers that
speak different versions.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from broker.apis.convert import kafka_string_to_uuid, uuid_to_kafka_string
from broker.state.model import CachedPartition, Endpoint, LeaderAndIsrPartition, LiveBroker, StopReplicaPartition

__all__ = [
    "BrokerNode",
    "endpoints_of",
    "leader_and_isr_body",
    "parse_partitions",
    "response_to_kafka_string",
    "scala_set",
    "select_control_endpoint",
    "stop_replica_bodies",
    "update_metadata_body",
]

_ZERO_UUID = uuid.UUID(int=0)
_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


@dataclass(frozen=True, slots=True)
class BrokerNode:
    """Where the controller sends a broker's control requests (Kafka's ``Node``; ``str()`` is its toString)."""

    id: int
    host: str
    port: int
    listener: str = "PLAINTEXT"
    rack: str | None = None

    def __str__(self) -> str:
        return f"{self.host}:{self.port} (id: {self.id} rack: {self.rack if self.rack is not None else 'null'})"


def select_control_endpoint(broker_id: int, advertised: Mapping[str, tuple[str, int]],
                            control_plane_listener: str | None, inter_broker_listener: str) -> BrokerNode:
    """KIP-291: the broker's control-plane listener when it advertises one, else its inter-broker listener.

    Raises:
        ValueError: the broker advertises neither listener.
    """
    for name in ([control_plane_listener] if control_plane_listener else []) + [inter_broker_listener]:
        if name in advertised:
            host, port = advertised[name]
            return BrokerNode(broker_id, host, port, name)
    raise ValueError(f"broker {broker_id} advertises neither control.plane.listener.name={control_plane_listener} "
                     f"nor the inter-broker listener {inter_broker_listener} (advertised: {sorted(advertised)})")


def parse_partitions(spec: str) -> list[int]:
    """``"0-9"``, ``"0,3,5-7"`` -> sorted distinct partition ids.

    Raises:
        ValueError: malformed text or a negative partition.
    """
    out: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        lo_text, sep, hi_text = part.partition("-")
        try:
            lo = int(lo_text)
            hi = int(hi_text) if sep else lo
        except ValueError:
            raise ValueError(f"bad partition list {spec!r}: expected e.g. 0-9 or 0,3,5-7") from None
        if lo < 0 or hi < lo:
            raise ValueError(f"bad partition range {part!r} in {spec!r}")
        out.update(range(lo, hi + 1))
    if not out:
        raise ValueError(f"empty partition list {spec!r}")
    return sorted(out)


def scala_set(ids: Iterable[int]) -> str:
    """A Scala 2.13 ``mutable.HashSet`` of small ints as ControllerChannelManager prints it: ``HashSet(1, 2)``."""
    return "HashSet(" + ", ".join(str(i) for i in sorted(set(ids))) + ")"


def _by_topic(items: Iterable[Any]) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = {}
    for item in items:
        grouped.setdefault(item.topic, []).append(item)
    return grouped


def _topic_uuid(topic_ids: Mapping[str, str], topic: str) -> uuid.UUID:
    tid = topic_ids.get(topic)
    return kafka_string_to_uuid(tid) if tid else _ZERO_UUID


def leader_and_isr_body(version: int, *, controller_id: int, controller_epoch: int, broker_epoch: int,
                        partitions: Sequence[LeaderAndIsrPartition], live_leaders: Iterable[BrokerNode],
                        topic_ids: Mapping[str, str] | None = None, max_broker_epoch: int | None = None,
                        ) -> dict[str, Any]:
    """A LeaderAndIsr request body for ``version`` (0-7)."""
    ids = topic_ids or {}

    def state(p: LeaderAndIsrPartition, with_topic: bool) -> dict[str, Any]:
        d: dict[str, Any] = {"partition_index": p.partition, "controller_epoch": p.controller_epoch,
                             "leader": p.leader, "leader_epoch": p.leader_epoch, "isr": list(p.isr),
                             "partition_epoch": p.partition_epoch, "replicas": list(p.replicas),
                             "adding_replicas": list(p.adding_replicas),
                             "removing_replicas": list(p.removing_replicas), "is_new": p.is_new,
                             "leader_recovery_state": 0}
        if with_topic:
            d["topic_name"] = p.topic
        return d

    body: dict[str, Any] = {
        "controller_id": controller_id, "is_kraft_controller": False, "controller_epoch": controller_epoch,
        "broker_epoch": broker_epoch, "type": 0,
        "live_leaders": [{"broker_id": n.id, "host_name": n.host, "port": n.port} for n in live_leaders],
        "max_broker_epoch": -1 if max_broker_epoch is None else max_broker_epoch,
    }
    if version < 2:
        body["ungrouped_partition_states"] = [state(p, True) for p in partitions]
    else:
        body["topic_states"] = [{"topic_name": t, "topic_id": _topic_uuid(ids, t),
                                 "partition_states": [state(p, False) for p in ps]}
                                for t, ps in _by_topic(partitions).items()]
    return body


def update_metadata_body(version: int, *, controller_id: int, controller_epoch: int, broker_epoch: int,
                         partitions: Sequence[CachedPartition], live_brokers: Iterable[LiveBroker],
                         topic_ids: Mapping[str, str] | None = None, max_broker_epoch: int | None = None,
                         ) -> dict[str, Any]:
    """An UpdateMetadata request body for ``version`` (0-8)."""
    ids = topic_ids or {}

    def state(p: CachedPartition, with_topic: bool) -> dict[str, Any]:
        d: dict[str, Any] = {"partition_index": p.partition, "controller_epoch": p.controller_epoch,
                             "leader": p.leader, "leader_epoch": p.leader_epoch, "isr": list(p.isr),
                             "zk_version": p.zk_version, "replicas": list(p.replicas),
                             "offline_replicas": list(p.offline_replicas)}
        if with_topic:
            d["topic_name"] = p.topic
        return d

    brokers = []
    for b in live_brokers:
        first = b.endpoints[0] if b.endpoints else None
        brokers.append({
            "id": b.id, "v0_host": first.host if first else "", "v0_port": first.port if first else -1,
            "endpoints": [{"port": e.port, "host": e.host, "listener": e.listener,
                           "security_protocol": e.security_protocol} for e in b.endpoints],
            "rack": b.rack,
        })
    body: dict[str, Any] = {
        "controller_id": controller_id, "is_kraft_controller": False, "type": 0,
        "controller_epoch": controller_epoch, "broker_epoch": broker_epoch, "live_brokers": brokers,
        "max_broker_epoch": -1 if max_broker_epoch is None else max_broker_epoch,
    }
    if version < 5:
        body["ungrouped_partition_states"] = [state(p, True) for p in partitions]
    else:
        body["topic_states"] = [{"topic_name": t, "topic_id": _topic_uuid(ids, t),
                                 "partition_states": [state(p, False) for p in ps]}
                                for t, ps in _by_topic(partitions).items()]
    return body


def stop_replica_bodies(version: int, *, controller_id: int, controller_epoch: int, broker_epoch: int,
                        partitions: Sequence[StopReplicaPartition], max_broker_epoch: int | None = None,
                        ) -> list[tuple[bool | None, dict[str, Any]]]:
    """StopReplica request bodies for ``version`` (0-4) as ``[(delete flag or None, body)]``.

    Versions 0-2 carry one delete flag per request, so partitions with and without delete become two requests
    (delete first, as Kafka 2.8's ``sendStopReplicaRequests``); v3+ is one request (flag None).
    """
    common: dict[str, Any] = {"controller_id": controller_id, "is_kraft_controller": False,
                              "controller_epoch": controller_epoch, "broker_epoch": broker_epoch,
                              "max_broker_epoch": -1 if max_broker_epoch is None else max_broker_epoch}
    if version >= 3:
        body = dict(common, topic_states=[
            {"topic_name": t, "partition_states": [{"partition_index": p.partition, "leader_epoch": p.leader_epoch,
                                                    "delete_partition": p.delete} for p in ps]}
            for t, ps in _by_topic(partitions).items()])
        return [(None, body)]
    out: list[tuple[bool | None, dict[str, Any]]] = []
    for delete in (True, False):
        chosen = [p for p in partitions if p.delete == delete]
        if not chosen:
            continue
        body = dict(common, delete_partitions=delete)
        if version == 0:
            body["ungrouped_partitions"] = [{"topic_name": p.topic, "partition_index": p.partition} for p in chosen]
        else:
            body["topics"] = [{"name": t, "partition_indexes": [p.partition for p in ps]}
                              for t, ps in _by_topic(chosen).items()]
        out.append((delete, body))
    return out


def response_to_kafka_string(api_key: int, body: Mapping[str, Any]) -> str:
    """The generated ``*ResponseData.toString`` of a control response (2.8 field sets), for the TRACE line."""
    def pe(e: Mapping[str, Any], with_topic: bool = True) -> str:
        topic = f"topicName='{e.get('topic_name', '')}', " if with_topic else "topicName='', "
        cls = "StopReplicaPartitionError" if api_key == 5 else "LeaderAndIsrPartitionError"
        return f"{cls}({topic}partitionIndex={e.get('partition_index')}, errorCode={e.get('error_code')})"

    if api_key == 4:
        parts = ", ".join(pe(e) for e in body.get("partition_errors") or ())
        topics = ", ".join(
            "LeaderAndIsrTopicError(topicId=" + _uuid_text(t.get("topic_id")) + ", partitionErrors=["
            + ", ".join(pe(e, False) for e in t.get("partition_errors") or ()) + "])"
            for t in body.get("topics") or ())
        return (f"LeaderAndIsrResponseData(errorCode={body.get('error_code')}, partitionErrors=[{parts}], "
                f"topics=[{topics}])")
    if api_key == 5:
        parts = ", ".join(pe(e) for e in body.get("partition_errors") or ())
        return f"StopReplicaResponseData(errorCode={body.get('error_code')}, partitionErrors=[{parts}])"
    if api_key == 6:
        return f"UpdateMetadataResponseData(errorCode={body.get('error_code')})"
    return str(dict(body))


def _uuid_text(value: Any) -> str:
    return uuid_to_kafka_string(value) if value is not None else "AAAAAAAAAAAAAAAAAAAAAA"


def endpoints_of(broker_id: int, advertised: Mapping[str, tuple[str, int]],
                 protocols: Mapping[str, str] | None = None, rack: str | None = None) -> LiveBroker:
    """A :class:`LiveBroker` (UpdateMetadata's live broker) from ``listener -> (host, port)``."""
    protos = protocols or {}
    return LiveBroker(broker_id, tuple(Endpoint(name, host, port, _PROTOCOL_IDS.get(protos.get(name, "PLAINTEXT"), 0))
                                       for name, (host, port) in advertised.items()), rack)

