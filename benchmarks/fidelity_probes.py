"""The wire probes of the fidelity comparison: the same requests to a reference broker and to Apache Kafka (good
answers, bad requests, control requests as a controller sends them), each reduced to an ``Outcome`` to compare."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from benchmarks import fidelity_compare as fc
from benchmarks.fidelity_wire import ClosedByBroker, Connection, KafkaSchemas, record_batch

TOPIC = "fidelity-orders"
MISSING_TOPIC = "fidelity-missing"
PROBE_TOPIC = "fidelity-probe"
PROBE_TOPIC_ID = uuid.UUID("6f1d3c2a-9b8e-4f70-a1b2-c3d4e5f60718")
#: A probe's answer: a broker answers in milliseconds; closing a connection may take a network-thread poll.
PROBE_TIMEOUT_S = 15.0
#: One above ``socket.request.max.bytes`` (100 MiB, Kafka's default, the reference's too).
OVERSIZED_FRAME = 104_857_600 + 1
UNKNOWN_API_KEY = 32_000
#: Kafka's initial controller epoch (KafkaController.InitialControllerEpoch): below any elected controller's.
STALE_CONTROLLER_EPOCH = 0
#: A broker epoch below any live one (Kafka: the czxid of /brokers/ids/N; the reference: a counter from 1).
STALE_BROKER_EPOCH = 0


class ProbeTarget(Protocol):
    """What the probes need of a cluster under comparison (:class:`benchmarks.fidelity.Target` is one)."""

    def port(self, broker_id: int, listener: str) -> int: ...


@dataclass
class ProbeContext:
    """Who the probes pretend to be and where they go."""

    schemas: KafkaSchemas
    target: ProbeTarget
    brokers: int
    controller_id: int
    controller_epoch: int
    broker_id: int = 1

    def live_brokers(self) -> list[dict[str, Any]]:
        return [{"Id": b, "Endpoints": [{"Port": self.target.port(b, name), "Host": "127.0.0.1", "Listener": name,
                                         "SecurityProtocol": 0} for name in ("PLAINTEXT", "CONTROLLER")],
                 "Rack": None} for b in range(1, self.brokers + 1)]


class Scratch:
    """The requests a probe's script sends before the probed one, on the probe's listener: each on a connection of
    its own, answered before the next (:meth:`call`), or left unanswered (:meth:`send`: a request the broker parks,
    such as a JoinGroup waiting for a rebalance; its connection stays open until the probe has its answer)."""

    def __init__(self, ctx: ProbeContext, port: int) -> None:
        self.ctx = ctx
        self.port = port
        self.held: list[Connection] = []

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        with Connection(self.ctx.schemas, "127.0.0.1", self.port, timeout_s=PROBE_TIMEOUT_S) as conn:
            return conn.call(api_key, version, body)[0]

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> None:
        conn = Connection(self.ctx.schemas, "127.0.0.1", self.port, timeout_s=PROBE_TIMEOUT_S)
        self.held.append(conn)
        conn.send_raw(conn.frame(api_key, version, body))

    def close(self) -> None:
        for conn in self.held:
            conn.close()


@dataclass(frozen=True)
class Probe:
    """One request (or raw bytes) and the listener it goes to.

    ``script`` sends the requests that set the scene (through a :class:`Scratch`) and returns the probed request's
    body; ``facts_of`` picks the compared facts from the answer (default: the values of the ``facts`` keys).
    """

    name: str
    listener: str
    api_key: int
    version: int
    body: Callable[[ProbeContext], dict[str, Any]] | None = None
    raw: Callable[[Connection], bytes] | None = None
    facts: tuple[str, ...] = ()  # response keys whose values are compared too
    script: Callable[[ProbeContext, Scratch], dict[str, Any]] | None = None
    facts_of: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def _batch() -> bytes:
    return record_batch([b"fidelity-probe"], 1_700_000_000_000)


def _produce_body(topic: str, partition: int, acks: int = 1) -> Callable[[ProbeContext], dict[str, Any]]:
    return lambda _ctx: {"TransactionalId": None, "Acks": acks, "TimeoutMs": 5000,
                         "TopicData": [{"Name": topic, "PartitionData": [{"Index": partition, "Records": _batch()}]}]}


def _fetch_body(topic: str) -> Callable[[ProbeContext], dict[str, Any]]:
    return lambda _ctx: {"ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 0, "MaxBytes": 1 << 20, "IsolationLevel": 0,
                         "SessionId": 0, "SessionEpoch": -1, "RackId": "",
                         "Topics": [{"Topic": topic, "Partitions": [{
                             "Partition": 0, "CurrentLeaderEpoch": -1, "FetchOffset": 0, "LastFetchedEpoch": -1,
                             "LogStartOffset": -1, "PartitionMaxBytes": 1 << 20}]}]}


def _metadata_body(_ctx: ProbeContext) -> dict[str, Any]:
    return {"Topics": [{"Name": TOPIC}, {"Name": MISSING_TOPIC}], "AllowAutoTopicCreation": False}


def _lai(leader_epoch: int, *, controller_epoch: int | None = None, broker_epoch: int = -1
         ) -> Callable[[ProbeContext], dict[str, Any]]:
    def body(ctx: ProbeContext) -> dict[str, Any]:
        epoch = ctx.controller_epoch if controller_epoch is None else controller_epoch
        state = {"PartitionIndex": 0, "ControllerEpoch": epoch, "Leader": ctx.broker_id, "LeaderEpoch": leader_epoch,
                 "Isr": [ctx.broker_id], "PartitionEpoch": leader_epoch, "Replicas": [ctx.broker_id],
                 "AddingReplicas": [], "RemovingReplicas": [], "IsNew": leader_epoch == 1, "LeaderRecoveryState": 0}
        return {"ControllerId": ctx.controller_id, "isKRaftController": False, "ControllerEpoch": epoch,
                "BrokerEpoch": broker_epoch, "Type": 0,
                "TopicStates": [{"TopicName": PROBE_TOPIC, "TopicId": PROBE_TOPIC_ID, "PartitionStates": [state]}],
                "LiveLeaders": [{"BrokerId": ctx.broker_id, "HostName": "127.0.0.1",
                                 "Port": ctx.target.port(ctx.broker_id, "PLAINTEXT")}]}
    return body


def _um(*, controller_epoch: int | None = None, broker_epoch: int = -1) -> Callable[[ProbeContext], dict[str, Any]]:
    def body(ctx: ProbeContext) -> dict[str, Any]:
        epoch = ctx.controller_epoch if controller_epoch is None else controller_epoch
        state = {"PartitionIndex": 0, "ControllerEpoch": epoch, "Leader": ctx.broker_id, "LeaderEpoch": 3,
                 "Isr": [ctx.broker_id], "ZkVersion": 3, "Replicas": [ctx.broker_id], "OfflineReplicas": []}
        return {"ControllerId": ctx.controller_id, "isKRaftController": False, "ControllerEpoch": epoch,
                "BrokerEpoch": broker_epoch,
                "TopicStates": [{"TopicName": PROBE_TOPIC, "TopicId": PROBE_TOPIC_ID, "PartitionStates": [state]}],
                "LiveBrokers": ctx.live_brokers()}
    return body


def _sr(partition: int, leader_epoch: int, *, controller_epoch: int | None = None, broker_epoch: int = -1
        ) -> Callable[[ProbeContext], dict[str, Any]]:
    def body(ctx: ProbeContext) -> dict[str, Any]:
        epoch = ctx.controller_epoch if controller_epoch is None else controller_epoch
        return {"ControllerId": ctx.controller_id, "isKRaftController": False, "ControllerEpoch": epoch,
                "BrokerEpoch": broker_epoch, "DeletePartitions": False,
                "Topics": [{"Name": PROBE_TOPIC, "PartitionIndexes": [partition]}],
                "TopicStates": [{"TopicName": PROBE_TOPIC, "PartitionStates": [
                    {"PartitionIndex": partition, "LeaderEpoch": leader_epoch, "DeletePartition": False}]}]}
    return body


def _header(api_key: int, version: int, correlation_id: int) -> bytes:
    client = b"fidelity"
    return (api_key.to_bytes(2, "big", signed=True) + version.to_bytes(2, "big", signed=True)
            + correlation_id.to_bytes(4, "big", signed=True) + len(client).to_bytes(2, "big") + client)


def _size(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def _unknown_api(conn: Connection) -> bytes:
    conn.correlation_id += 1
    payload = _header(UNKNOWN_API_KEY, 0, conn.correlation_id)
    return _size(len(payload)) + payload


def _truncated_metadata(conn: Connection) -> bytes:
    conn.correlation_id += 1
    payload = _header(3, 1, conn.correlation_id) + _size(5)  # five topics announced, none follows
    return _size(len(payload)) + payload


def _oversized(conn: Connection) -> bytes:
    conn.correlation_id += 1
    return _size(OVERSIZED_FRAME) + _header(3, 1, conn.correlation_id)


def _negative_size(conn: Connection) -> bytes:
    conn.correlation_id += 1
    return _size(-5) + _header(3, 1, conn.correlation_id)


# ---- topic configs: DescribeConfigs / IncrementalAlterConfigs (validate_only: nothing changes on either side)
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 44
RESOURCE_TOPIC = 2
#: Topic configs both apply, compared by value, source, read_only and synonyms (name, source).
COMPARED_TOPIC_CONFIGS = ("cleanup.policy", "max.message.bytes", "message.timestamp.type", "min.insync.replicas",
                          "retention.bytes", "retention.ms", "segment.bytes", "segment.ms")


def _describe_configs(topic: str) -> Callable[[ProbeContext], dict[str, Any]]:
    return lambda _ctx: {"Resources": [{"ResourceType": RESOURCE_TOPIC, "ResourceName": topic,
                                        "ConfigurationKeys": list(COMPARED_TOPIC_CONFIGS)}],
                         "IncludeSynonyms": True, "IncludeDocumentation": False}


def _alter_topic(topic: str, name: str, value: str) -> Callable[[ProbeContext], dict[str, Any]]:
    return lambda _ctx: {"Resources": [{"ResourceType": RESOURCE_TOPIC, "ResourceName": topic,
                                        "Configs": [{"Name": name, "ConfigOperation": 0, "Value": value}]}],
                         "ValidateOnly": True}


def _config_probes() -> list[Probe]:
    return [
        Probe("DescribeConfigs v4 topic with synonyms", "PLAINTEXT", DESCRIBE_CONFIGS, 4, _describe_configs(TOPIC)),
        Probe("DescribeConfigs v4 unknown topic", "PLAINTEXT", DESCRIBE_CONFIGS, 4, _describe_configs(MISSING_TOPIC)),
        Probe("IncrementalAlterConfigs v1 retention.ms (validate only)", "PLAINTEXT", INCREMENTAL_ALTER_CONFIGS, 1,
              _alter_topic(TOPIC, "retention.ms", "3600000")),
        Probe("IncrementalAlterConfigs v1 bad retention.ms", "PLAINTEXT", INCREMENTAL_ALTER_CONFIGS, 1,
              _alter_topic(TOPIC, "retention.ms", "abc")),
        Probe("IncrementalAlterConfigs v1 segment.bytes below minimum", "PLAINTEXT", INCREMENTAL_ALTER_CONFIGS, 1,
              _alter_topic(TOPIC, "segment.bytes", "3")),
        Probe("IncrementalAlterConfigs v1 unknown topic config", "PLAINTEXT", INCREMENTAL_ALTER_CONFIGS, 1,
              _alter_topic(TOPIC, "no.such.config", "1")),
        Probe("IncrementalAlterConfigs v1 unknown topic", "PLAINTEXT", INCREMENTAL_ALTER_CONFIGS, 1,
              _alter_topic(MISSING_TOPIC, "retention.ms", "1")),
    ]


def _admin_probes() -> list[Probe]:
    """The admin APIs clients call: questions whose answers do not depend on which broker leads."""
    acl_filter = {"ResourceTypeFilter": 1, "ResourceNameFilter": None, "PatternTypeFilter": 1, "PrincipalFilter": None,
                  "HostFilter": None, "Operation": 1, "PermissionType": 1}
    acl = {"ResourceType": 2, "ResourceName": TOPIC, "ResourcePatternType": 3, "Principal": "User:alice", "Host": "*",
           "Operation": 3, "PermissionType": 3}
    missing = [{"Name": MISSING_TOPIC, "Partitions": [{"PartitionIndex": 0, "Offset": 0}]}]
    return [
        Probe("DescribeAcls v1 without authorizer", "PLAINTEXT", 29, 1, lambda _c: dict(acl_filter)),
        Probe("DescribeAcls v3 without authorizer", "PLAINTEXT", 29, 3, lambda _c: dict(acl_filter)),
        Probe("CreateAcls v2 without authorizer", "PLAINTEXT", 30, 2, lambda _c: {"Creations": [acl]}),
        Probe("DeleteAcls v2 without authorizer", "PLAINTEXT", 31, 2, lambda _c: {"Filters": [acl_filter]}),
        Probe("DeleteRecords v1 unknown topic", "PLAINTEXT", 21, 1, lambda _c: {"Topics": missing, "TimeoutMs": 5000}),
        Probe("DeleteRecords v2 above the high watermark", "PLAINTEXT", 21, 2, lambda _c: {
            "Topics": [{"Name": TOPIC, "Partitions": [{"PartitionIndex": 0, "Offset": 1 << 40}]}], "TimeoutMs": 5000}),
        Probe("CreatePartitions v1 unknown topic", "PLAINTEXT", 37, 1, lambda _c: {
            "Topics": [{"Name": MISSING_TOPIC, "Count": 3, "Assignments": None}], "TimeoutMs": 5000,
            "ValidateOnly": True}),
        Probe("CreatePartitions v3 not an increase", "PLAINTEXT", 37, 3, lambda _c: {
            "Topics": [{"Name": TOPIC, "Count": 1, "Assignments": None}], "TimeoutMs": 5000, "ValidateOnly": True}),
        Probe("ElectLeaders v1 unknown partition", "PLAINTEXT", 43, 1, lambda _c: {
            "ElectionType": 0, "TopicPartitions": [{"Topic": MISSING_TOPIC, "Partitions": [0]}], "TimeoutMs": 5000}),
        Probe("ElectLeaders v2 unclean, leader alive", "PLAINTEXT", 43, 2, lambda _c: {
            "ElectionType": 1, "TopicPartitions": [{"Topic": TOPIC, "Partitions": [0]}], "TimeoutMs": 5000}),
        Probe("ListPartitionReassignments v0 none in progress", "PLAINTEXT", 46, 0, lambda _c: {
            "TimeoutMs": 5000, "Topics": None}),
        Probe("AlterPartitionReassignments v0 cancel without one", "PLAINTEXT", 45, 0, lambda _c: {
            "TimeoutMs": 5000, "Topics": [{"Name": TOPIC, "Partitions": [{"PartitionIndex": 0, "Replicas": None}]}]}),
        Probe("DescribeLogDirs v1 missing topic", "PLAINTEXT", 35, 1, lambda _c: {
            "Topics": [{"Topic": MISSING_TOPIC, "Partitions": [0]}]}),
        Probe("AlterReplicaLogDirs v1 unknown dir", "PLAINTEXT", 34, 1, lambda _c: {
            "Dirs": [{"Path": "/nonexistent-log-dir", "Topics": [{"Name": TOPIC, "Partitions": [0]}]}]}),
        Probe("FindCoordinator v3 transaction coordinator", "PLAINTEXT", 10, 3, lambda _c: {
            "Key": "fidelity-tx", "KeyType": 1}),
    ]


def _configs_facts(body: dict[str, Any]) -> dict[str, Any]:
    """Per compared topic config: value, source, read_only and the synonyms' names and sources."""
    return {str(c.get("Name")): (c.get("Value"), c.get("ConfigSource"), c.get("ReadOnly"),
                                 tuple((s.get("Name"), s.get("Source")) for s in c.get("Synonyms") or ()))
            for r in body.get("Results", []) for c in r.get("Configs") or []}


_ANSWER_FACTS = ("BaseOffset", "LogAppendTimeMs", "LogStartOffset", "HighWatermark", "LastStableOffset",
                 "PreferredReadReplica", "ThrottleTimeMs")
PRODUCE, FETCH, METADATA, LAI, SR, UM, API_VERSIONS = 0, 1, 3, 4, 5, 6, 18


def probes() -> list[Probe]:
    """Every probe, in the order sent.

    The control probes build on each other: the probe partition reaches leader epoch 3 through versions every
    compared Kafka speaks (v7 may be refused by an older one), so the StopReplica probes meet the same state.
    """
    out = [Probe("ApiVersions v3 answer", "PLAINTEXT", API_VERSIONS, 3,
                 lambda _c: {"ClientSoftwareName": "fidelity", "ClientSoftwareVersion": "1.0"})]
    out += [Probe(f"Metadata v{v} existing + missing topic", "PLAINTEXT", METADATA, v, _metadata_body)
            for v in range(0, 13)]
    out += [
        Probe("Produce v3 unknown topic", "PLAINTEXT", PRODUCE, 3, _produce_body(MISSING_TOPIC, 0),
              facts=_ANSWER_FACTS),
        Probe("Produce v9 unknown topic", "PLAINTEXT", PRODUCE, 9, _produce_body(MISSING_TOPIC, 0),
              facts=_ANSWER_FACTS),
        Probe("Produce v3 unknown partition", "PLAINTEXT", PRODUCE, 3, _produce_body(TOPIC, 99), facts=_ANSWER_FACTS),
        Probe("Produce v7 acks=2 (invalid required acks)", "PLAINTEXT", PRODUCE, 7, _produce_body(TOPIC, 0, acks=2),
              facts=_ANSWER_FACTS),
        Probe("Fetch v4 unknown topic", "PLAINTEXT", FETCH, 4, _fetch_body(MISSING_TOPIC), facts=_ANSWER_FACTS),
        Probe("Fetch v11 unknown topic", "PLAINTEXT", FETCH, 11, _fetch_body(MISSING_TOPIC), facts=_ANSWER_FACTS),
        Probe("Fetch v12 unknown topic", "PLAINTEXT", FETCH, 12, _fetch_body(MISSING_TOPIC), facts=_ANSWER_FACTS),
        Probe("Metadata v13 (above both maxima)", "PLAINTEXT", METADATA, 13, _metadata_body),
        Probe("ApiVersions v5 (above both maxima)", "PLAINTEXT", API_VERSIONS, 5, lambda _c: {}),
        Probe("unknown API key", "PLAINTEXT", UNKNOWN_API_KEY, 0, raw=_unknown_api),
        Probe("truncated Metadata v1 body", "PLAINTEXT", METADATA, 1, raw=_truncated_metadata),
        Probe("frame above socket.request.max.bytes", "PLAINTEXT", METADATA, 1, raw=_oversized),
        Probe("negative frame size", "PLAINTEXT", METADATA, 1, raw=_negative_size),
        # the control plane, as a controller sends
        Probe("LeaderAndIsr v2 become-leader", "CONTROLLER", LAI, 2, _lai(1)),
        Probe("LeaderAndIsr v7 become-leader", "CONTROLLER", LAI, 7, _lai(2)),
        Probe("LeaderAndIsr v5 become-leader", "CONTROLLER", LAI, 5, _lai(3)),
        Probe("LeaderAndIsr v5 same leader epoch", "CONTROLLER", LAI, 5, _lai(3)),
        Probe("UpdateMetadata v5", "CONTROLLER", UM, 5, _um()),
        Probe("UpdateMetadata v7", "CONTROLLER", UM, 7, _um()),
        Probe("UpdateMetadata v8", "CONTROLLER", UM, 8, _um()),
        Probe("LeaderAndIsr v2 stale controller epoch", "CONTROLLER", LAI, 2,
              _lai(4, controller_epoch=STALE_CONTROLLER_EPOCH)),
        Probe("LeaderAndIsr v7 stale controller epoch", "CONTROLLER", LAI, 7,
              _lai(4, controller_epoch=STALE_CONTROLLER_EPOCH)),
        Probe("UpdateMetadata v7 stale controller epoch", "CONTROLLER", UM, 7,
              _um(controller_epoch=STALE_CONTROLLER_EPOCH)),
        Probe("StopReplica v3 stale controller epoch", "CONTROLLER", SR, 3,
              _sr(0, 3, controller_epoch=STALE_CONTROLLER_EPOCH)),
        Probe("LeaderAndIsr v2 stale broker epoch", "CONTROLLER", LAI, 2, _lai(4, broker_epoch=STALE_BROKER_EPOCH)),
        Probe("LeaderAndIsr v7 stale broker epoch", "CONTROLLER", LAI, 7, _lai(4, broker_epoch=STALE_BROKER_EPOCH)),
        Probe("UpdateMetadata v5 stale broker epoch", "CONTROLLER", UM, 5, _um(broker_epoch=STALE_BROKER_EPOCH)),
        Probe("UpdateMetadata v8 stale broker epoch", "CONTROLLER", UM, 8, _um(broker_epoch=STALE_BROKER_EPOCH)),
        Probe("StopReplica v1 stale broker epoch", "CONTROLLER", SR, 1, _sr(0, 3, broker_epoch=STALE_BROKER_EPOCH)),
        Probe("StopReplica v4 stale broker epoch", "CONTROLLER", SR, 4, _sr(0, 3, broker_epoch=STALE_BROKER_EPOCH)),
        Probe("StopReplica v3 older leader epoch", "CONTROLLER", SR, 3, _sr(0, 1)),
        Probe("StopReplica v4 partition not hosted", "CONTROLLER", SR, 4, _sr(7, 3)),
        Probe("StopReplica v3 stop", "CONTROLLER", SR, 3, _sr(0, 3)),
        Probe("StopReplica v1 stop", "CONTROLLER", SR, 1, _sr(0, 3)),
    ]
    out += _config_probes()
    out += _admin_probes()
    return out


def _facts(body: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k in keys and not isinstance(v, (dict, list)):
                    found.setdefault(k, v)
                walk(v)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(body)
    return found


def _metadata_facts(body: dict[str, Any]) -> dict[str, Any]:
    topics = {t.get("Name"): t for t in body.get("Topics", [])}
    existing = topics.get(TOPIC, {})
    parts = existing.get("Partitions", [])
    return {"partitions": len(parts), "replicas": sorted({len(p.get("ReplicaNodes", [])) for p in parts}),
            "leaders_known": all(p.get("LeaderId", -1) >= 0 for p in parts), "brokers": len(body.get("Brokers", []))}


def run_probe(ctx: ProbeContext, probe: Probe) -> tuple[fc.Outcome, dict[str, Any] | None]:
    """Send one probe on a fresh connection; its :class:`~benchmarks.fidelity_compare.Outcome` and decoded body."""
    port = ctx.target.port(ctx.broker_id, probe.listener)
    client_id = "fidelity-controller" if probe.listener == "CONTROLLER" else "fidelity"  # apart from a controller's
    scratch = Scratch(ctx, port)
    try:
        try:
            request = probe.script(ctx, scratch) if probe.script is not None else None
        except (OSError, RuntimeError, ValueError) as exc:  # TimeoutError is an OSError
            return fc.Outcome(False, (f"scene not set: {exc}",)), None
        with Connection(ctx.schemas, "127.0.0.1", port, client_id=client_id, timeout_s=PROBE_TIMEOUT_S) as conn:
            try:
                if probe.raw is not None:
                    conn.send_raw(probe.raw(conn))
                    frame = conn.read_frame()
                    return fc.Outcome(False, ("unexpected answer",), (f"{len(frame)} bytes",)), None
                if request is None:
                    assert probe.body is not None
                    request = probe.body(ctx)
                conn.send_raw(conn.frame(probe.api_key, probe.version, request))
                frame = conn.read_frame()
            except ClosedByBroker:
                return fc.outcome(None), None
            except TimeoutError:
                return fc.Outcome(False, ("no answer and not closed",)), None
            body_version = 0 if probe.api_key == API_VERSIONS and probe.version > 4 else None
            body, trailing = conn.decode(probe.api_key, probe.version, frame, body_version)
    finally:
        scratch.close()
    facts = (probe.facts_of(body) if probe.facts_of is not None else _metadata_facts(body)
             if probe.api_key == METADATA else _configs_facts(body) if probe.api_key == DESCRIBE_CONFIGS
             else _facts(body, probe.facts))
    return fc.outcome(body, trailing, facts), body
