"""Every key the broker reads, declared once: :data:`CONFIG_DEFS` (name, type, default, validator, doc, dynamic?).

Sections (:data:`broker.configdef.SECTIONS`):

* ``broker``: identity and topic auto-creation (Kafka's "General");
* ``network``: listeners, socket server threads and queues, connection limits (KIP-291, KIP-402);
* ``log``: log directories, the broker-level defaults of the topic configs (``log.segment.bytes`` ... the topic
  key ``segment.bytes`` overrides per topic, see :mod:`broker.log.config`) and the log manager's intervals;
* ``group``: the group coordinator's limits;
* ``replication``: the default replication factor and the replica fetchers;
* ``planewatch``: keys Kafka does not have (cluster id and broker epoch without ZooKeeper, log and metrics
  destinations, the cluster controller, fault injection, the era of the log lines).

Nothing outside the table parses a property string: :class:`broker.config.KafkaConfig` parses and validates the
whole table at load, reports every other key as unknown, and the subsystems read typed views
(:mod:`broker.settings`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from broker.configdef import INT_MAX, LONG_MAX, ConfigDef, ConfigException, Validator, at_least, one_of
from broker.protocol.releases import DEFAULT_RELEASE, check_release

__all__ = ["CLEANUP_POLICIES", "CONFIG_DEFS", "FETCHER_MODELS", "LINE_VERSIONS", "LISTENER_PREFIXED", "LOG_LEVELS",
           "SECURITY_PROTOCOLS", "SUPPORTED_CLEANUP_POLICIES", "SUPPORTED_SECURITY_PROTOCOLS", "TIMESTAMP_TYPES",
           "cleanup_policy"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SUPPORTED_SECURITY_PROTOCOLS = ("PLAINTEXT",)
LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
# Kafka's cleanup policies; the reference log deletes (retention) but never compacts.
CLEANUP_POLICIES = ("compact", "delete")
SUPPORTED_CLEANUP_POLICIES = ("delete",)
# replica.fetcher.model: the replica fetcher's locking (broker.fetcher.thread).
FETCHER_MODELS = ("locked", "async")
# planewatch.log.line.version: the Kafka eras whose log lines broker.log writes (broker.log._lines).
LINE_VERSIONS = ("1.0", "1.1", "2.6", "3.5")
# Keys that may be prefixed with listener.name.<l>. (KIP-402 per-listener limits).
LISTENER_PREFIXED = frozenset({"max.connections"})
HOUR_MS = 3_600_000
WEEK_HOURS = 168  # Kafka's log.roll.hours and log.retention.hours: 7 days
# LegacyRecord.RECORD_OVERHEAD_V0: the smallest segment that can hold one record.
MIN_SEGMENT_BYTES = 14
# Two index entries (offset index: 8 bytes each).
MIN_SEGMENT_INDEX_BYTES = 8
# Kafka's group.initial.rebalance.delay.ms and offsets.topic.num.partitions defaults (GroupSettings' too).
GROUP_INITIAL_REBALANCE_DELAY_MS = 3_000
OFFSETS_TOPIC_NUM_PARTITIONS = 50


def cleanup_policy(name: str, value: Any) -> None:
    """Kafka's ``ValidList.in("compact", "delete")``, then the reference log's limit: ``delete`` only.

    Raises:
        ConfigException: an item Kafka does not know (Kafka's message), or a policy the log cannot carry out.
    """
    for item in value:
        one_of(*CLEANUP_POLICIES)(name, item)
    if list(value) != list(SUPPORTED_CLEANUP_POLICIES):
        raise ConfigException.invalid(name, ",".join(value), "the reference broker's log deletes old segments but "
                                      "never compacts: the only supported policy is delete")


def _kafka_release(name: str, value: Any) -> None:
    try:
        check_release(str(value))
    except ValueError as exc:
        raise ConfigException.invalid(name, value, str(exc)) from None


def _section(name: str, *defs: ConfigDef) -> tuple[ConfigDef, ...]:
    return tuple(dataclasses.replace(d, section=name) for d in defs)


def _check_unique(defs: tuple[ConfigDef, ...]) -> dict[str, ConfigDef]:
    table: dict[str, ConfigDef] = {}
    for d in defs:
        if d.name in table:
            raise ConfigException(f"Configuration {d.name} is defined twice")
        table[d.name] = d
    return table


def _d(name: str, type_: str, default: Any, doc: str, validator: Validator | None = None,
       dynamic: bool = False) -> ConfigDef:
    return ConfigDef(name, type_, default, doc, validator, dynamic)


_BROKER = _section(
    "broker",
    _d("broker.id", "int", -1, "The broker id; must be set (no ZooKeeper to generate one).", at_least(0)),
    _d("broker.rack", "string", None, "Rack of the broker (Metadata v1+)."),
    _d("auto.create.topics.enable", "boolean", True,
       "Metadata for an unknown topic creates it (while this broker is its own controller)."),
    _d("inter.broker.protocol.version", "string", DEFAULT_RELEASE,
       "The Kafka release this broker is (2.8, 2.8-IV1, 2.8.2 ...): ApiVersions advertises that release's version "
       "ranges (broker.protocol.releases); default: the release the logs imitate.", _kafka_release),
)

_NETWORK = _section(
    "network",
    _d("listeners", "list", "PLAINTEXT://:9092", "Comma-separated NAME://host:port listeners to bind."),
    _d("advertised.listeners", "list", None, "Listeners published to clients; default: listeners."),
    _d("listener.security.protocol.map", "string",
       "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
       "Listener name to security protocol."),
    _d("inter.broker.listener.name", "string", None, "Listener used between brokers."),
    _d("security.inter.broker.protocol", "string", None,
       "Security protocol between brokers (default PLAINTEXT); exclusive with inter.broker.listener.name.",
       one_of(*SECURITY_PROTOCOLS)),
    _d("control.plane.listener.name", "string", None, "KIP-291: listener dedicated to the controller."),
    _d("num.network.threads", "int", 3, "Processors per data-plane listener.", at_least(1)),
    _d("num.io.threads", "int", 8, "Data-plane request handler threads.", at_least(1)),
    _d("queued.max.requests", "int", 500, "Data-plane request queue size before blocking network threads.",
       at_least(1)),
    _d("max.connections", "int", INT_MAX, "Broker-wide connection limit (KIP-402).", at_least(0), True),
    _d("max.connections.per.ip", "int", INT_MAX, "Connections allowed from one IP.", at_least(0), True),
    _d("max.connections.per.ip.overrides", "string", "", "Per-IP/host limits: 'host:100,127.0.0.1:200'.", None,
       True),
    _d("socket.request.max.bytes", "int", 104857600, "Largest request frame accepted.", at_least(1)),
    _d("connections.max.idle.ms", "long", 600000, "Idle connections are closed after this long."),
    _d("request.timeout.ms", "int", 30000, "Client-side request timeout (controller sends).", at_least(0)),
)

# Broker-level log keys are LONG here (their parse error says "type LONG"), the topic keys they default are checked
# again by broker.log.config.LogConfig with the topic key's name.
_LOG = _section(
    "log",
    _d("log.dir", "string", "/tmp/kafka-logs", "Data directory when log.dirs is not set."),
    _d("log.dirs", "list", None, "Data directories; default: log.dir."),
    _d("num.partitions", "int", 1, "Partitions of an auto-created topic (and CreateTopics with -1).", at_least(1)),
    _d("log.segment.bytes", "long", 1024 * 1024 * 1024, "Default segment.bytes: roll a segment at this size.",
       at_least(MIN_SEGMENT_BYTES)),
    _d("log.roll.ms", "long", None, "Default segment.ms; default: log.roll.hours.", at_least(1)),
    _d("log.roll.hours", "long", WEEK_HOURS, "Default segment.ms in hours (when log.roll.ms is not set).",
       at_least(1)),
    _d("log.index.size.max.bytes", "long", 10 * 1024 * 1024, "Default segment.index.bytes.",
       at_least(MIN_SEGMENT_INDEX_BYTES)),
    _d("log.index.interval.bytes", "long", 4096, "Default index.interval.bytes.", at_least(0)),
    _d("message.max.bytes", "long", 1024 * 1024 + 12, "Default max.message.bytes: 1 MiB plus the log overhead.",
       at_least(0)),
    _d("log.retention.bytes", "long", -1, "Default retention.bytes; -1 = no size limit."),
    _d("log.retention.ms", "long", None, "Default retention.ms; -1 = forever; default: minutes, then hours.",
       at_least(-1)),
    _d("log.retention.minutes", "long", None, "Default retention.ms in minutes (when log.retention.ms is not set)."),
    _d("log.retention.hours", "long", WEEK_HOURS, "Default retention.ms in hours (the last fallback)."),
    _d("log.flush.interval.messages", "long", LONG_MAX, "Default flush.messages (Long.MAX = never).", at_least(1)),
    _d("log.flush.interval.ms", "long", None, "Default flush.ms; default: log.flush.scheduler.interval.ms.",
       at_least(0)),
    _d("log.segment.delete.delay.ms", "long", 60_000, "Default file.delete.delay.ms.", at_least(0)),
    _d("log.message.timestamp.type", "string", "CreateTime", "Default message.timestamp.type.",
       one_of(*TIMESTAMP_TYPES)),
    _d("log.cleanup.policy", "list", "delete", "Default cleanup.policy (delete only: the log never compacts).",
       cleanup_policy),
    _d("min.insync.replicas", "int", 1,
       "Default min.insync.replicas: an acks=all produce needs this many in-sync replicas (at most the "
       "replication factor).", at_least(1)),
    _d("log.retention.check.interval.ms", "long", 300_000, "How often retention runs.", at_least(0)),
    _d("log.flush.scheduler.interval.ms", "long", LONG_MAX, "How often flush.ms is checked.", at_least(0)),
    _d("log.flush.offset.checkpoint.interval.ms", "long", 60_000,
       "How often recovery points and high watermarks are checkpointed.", at_least(0)),
    _d("log.flush.start.offset.checkpoint.interval.ms", "long", 60_000,
       "How often log start offsets are checkpointed.", at_least(0)),
)

_GROUP = _section(
    "group",
    _d("group.min.session.timeout.ms", "int", 6_000, "Smallest session.timeout.ms a JoinGroup may ask for."),
    _d("group.max.session.timeout.ms", "int", 1_800_000, "Largest session.timeout.ms a JoinGroup may ask for."),
    _d("offset.metadata.max.bytes", "int", 4096, "Largest metadata string of a committed offset."),
    _d("group.initial.rebalance.delay.ms", "int", GROUP_INITIAL_REBALANCE_DELAY_MS,
       "How long the first rebalance of an empty group waits for more members to join (extended by this much per "
       "join, up to the rebalance timeout).", at_least(0)),
    _d("offsets.topic.num.partitions", "int", OFFSETS_TOPIC_NUM_PARTITIONS,
       "Partitions of the internal __consumer_offsets topic, created at the first FindCoordinator of a group.",
       at_least(1)),
)

_REPLICATION = _section(
    "replication",
    _d("default.replication.factor", "int", 1, "Replication factor of auto-created topics (and CreateTopics -1)."),
    _d("replica.lag.time.max.ms", "long", 10_000,
       "A follower that has not caught up for this long leaves the ISR (Kafka: 30 s; a laptop cluster reacts "
       "faster)."),
    _d("replica.fetch.wait.max.ms", "int", 500, "Longest wait of a follower's fetch."),
    _d("replica.fetch.min.bytes", "int", 1, "Bytes a follower's fetch waits for."),
    _d("replica.fetch.response.max.bytes", "int", 10 * 1024 * 1024, "Largest response of a follower's fetch.",
       at_least(0)),
    _d("replica.fetch.max.bytes", "int", 1024 * 1024, "Bytes fetched per partition by a follower.", at_least(0)),
    _d("replica.fetch.backoff.ms", "int", 1000, "Pause after a failed follower fetch.", at_least(0)),
    _d("replica.socket.timeout.ms", "int", 30_000, "Socket timeout of a follower's fetch."),
)

_PLANEWATCH = _section(
    "planewatch",
    _d("cluster.id", "string", None, "The cluster id Metadata v2+ returns (Kafka: ZooKeeper)."),
    # a string at load: the apis check it when they are built (a controller-supplied value)
    _d("broker.epoch", "string", "-1",
       "Broker epoch as registered by a controller (Kafka: czxid of /brokers/ids/N); -1 = unknown."),
    _d("kafka.logs.dir", "string", None,
       "Directory of server.log, state-change.log, kafka-request.log; default <first log dir>/../logs."),
    _d("kafka.request.logger.level", "string", "DEBUG",
       "Level of kafka.request.logger (DEBUG writes kafka-request.log; Kafka ships WARN).", one_of(*LOG_LEVELS)),
    _d("state.change.logger.level", "string", "INFO",
       "Level of state.change.logger (Kafka's log4j.logger.state.change.logger: INFO as 2.6+; TRACE adds the "
       "per-partition lines).", one_of(*LOG_LEVELS)),
    _d("metrics.dir", "string", None, "JSON-lines metrics dir; default <first log dir>/../metrics."),
    _d("metrics.interval.ms", "long", 5000, "Metrics reporting interval.", at_least(100)),
    _d("metrics.file.roll.bytes", "long", 64 * 1024 * 1024, "Roll the metrics file at this size.", at_least(1024)),
    _d("metrics.file.roll.ms", "long", 3600000, "Roll the metrics file at this age.", at_least(1000)),
    _d("prometheus.port", "int", 0, "Prometheus endpoint port on 127.0.0.1; 0 = off.", at_least(0)),
    _d("metric.reporter.topic", "string", None, "Also append the JSON metric samples to this topic."),
    _d("planewatch.controller.url", "string", None, "The cluster controller a cluster member registers with."),
    _d("replica.fetcher.model", "string", "locked",
       "Replica fetcher locking: locked (Kafka 2.x, KAFKA-6974) or async.", one_of(*FETCHER_MODELS)),
    _d("planewatch.leader.epoch.checkpoint.delay.ms", "long", 0,
       "Fault injection: extra sleep before each leader-epoch-checkpoint fsync (a slow disk, KAFKA-6974).",
       at_least(0)),
    _d("planewatch.log.line.version", "string", "2.6",
       "Which Kafka era's server.log identity and log-start-offset text the logs write (1.0, 1.1, 2.6, 3.5).",
       one_of(*LINE_VERSIONS)),
)

CONFIG_DEFS: dict[str, ConfigDef] = _check_unique((*_BROKER, *_NETWORK, *_LOG, *_GROUP, *_REPLICATION, *_PLANEWATCH))
