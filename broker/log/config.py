"""Log configuration: Kafka's topic-level keys, whose broker-level defaults come from the broker's table.

A :class:`LogConfig` is immutable. The broker builds its default from the typed view
:class:`broker.settings.LogSettings` (broker key names such as ``log.segment.bytes``, declared, parsed and validated
in :data:`broker.config_table.CONFIG_DEFS`; :meth:`LogConfig.from_settings`) and a topic's effective config by
applying topic overrides (:meth:`LogConfig.with_overrides`, topic key names such as ``segment.bytes``), exactly as
Kafka's ``LogConfig.fromProps(defaults, overrides)`` does. The topic keys are parsed here: they are not broker
properties.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from broker.config_table import (
    CLEANUP_POLICIES,
    MIN_SEGMENT_BYTES,
    MIN_SEGMENT_INDEX_BYTES,
    TIMESTAMP_TYPES,
    cleanup_policy,
)
from broker.configdef import LONG_MAX, ConfigException, at_least, one_of, parse_typed
from broker.settings import LogSettings

from ._lines import LINE_VERSIONS

__all__ = [
    "KAFKA_ONLY_TOPIC_KEYS",
    "LONG_MAX",
    "TOPIC_CONFIG_DEFS",
    "LogConfig",
    "LogManagerConfig",
    "TimestampType",
    "TopicConfigDef",
    "UnknownTopicConfigError",
    "parse_topic_config",
]

TimestampType = Literal["CreateTime", "LogAppendTime"]


@dataclass(frozen=True)
class TopicConfigDef:
    """One topic-level key as Kafka 3.9's ``LogConfig`` defines it, and where its broker-wide default comes from.

    Attributes:
        name: the topic key (``segment.bytes``).
        attr: the :class:`LogConfig` (and :class:`broker.settings.LogSettings`) attribute.
        type: Kafka's type (``int``, ``long``, ``string``, ``list``): a bad number says ``Not a number of type INT``.
        broker_key: Kafka's ``TopicConfigSynonyms``: the broker key whose value is the default.
        minimum: Kafka's ``atLeast`` (None: any value).
        options: Kafka's ``ValidString.in`` / ``ValidList.in`` (None: any value).
    """

    name: str
    attr: str
    type: str
    broker_key: str
    minimum: int | None = None
    options: tuple[str, ...] | None = None

    def parse(self, raw: str) -> object:
        """``raw`` parsed and validated as Kafka does (its messages), then held to what the reference log applies.

        Raises:
            ConfigException: not of the key's type, out of range, or not supported by the reference log.
        """
        value = parse_typed(self.name, self.type, raw)
        if self.minimum is not None:
            at_least(self.minimum)(self.name, value)
        if self.type == "list":
            cleanup_policy(self.name, value)
            return ",".join(value)
        if self.options is not None:
            one_of(*self.options)(self.name, value)
        return value


# Kafka's topic-level keys the reference log applies, with Kafka 3.9's types, validators and broker synonyms. One
# difference: segment.index.bytes is at least 8 (one offset index entry; Kafka: 4).
TOPIC_CONFIG_DEFS: dict[str, TopicConfigDef] = {d.name: d for d in (
    TopicConfigDef("cleanup.policy", "cleanup_policy", "list", "log.cleanup.policy", options=CLEANUP_POLICIES),
    TopicConfigDef("file.delete.delay.ms", "file_delete_delay_ms", "long", "log.segment.delete.delay.ms", 0),
    TopicConfigDef("flush.messages", "flush_messages", "long", "log.flush.interval.messages", 1),
    TopicConfigDef("flush.ms", "flush_ms", "long", "log.flush.interval.ms", 0),
    TopicConfigDef("index.interval.bytes", "index_interval_bytes", "int", "log.index.interval.bytes", 0),
    TopicConfigDef("max.message.bytes", "max_message_bytes", "int", "message.max.bytes", 0),
    TopicConfigDef("message.timestamp.type", "message_timestamp_type", "string", "log.message.timestamp.type",
                   options=TIMESTAMP_TYPES),
    TopicConfigDef("min.insync.replicas", "min_insync_replicas", "int", "min.insync.replicas", 1),
    TopicConfigDef("retention.bytes", "retention_bytes", "long", "log.retention.bytes"),
    TopicConfigDef("retention.ms", "retention_ms", "long", "log.retention.ms", -1),
    TopicConfigDef("segment.bytes", "segment_bytes", "int", "log.segment.bytes", MIN_SEGMENT_BYTES),
    TopicConfigDef("segment.index.bytes", "segment_index_bytes", "int", "log.index.size.max.bytes",
                   MIN_SEGMENT_INDEX_BYTES),
    TopicConfigDef("segment.ms", "segment_ms", "long", "log.roll.ms", 1),
)}
# Kafka 3.9's other topic keys: known to Kafka, not applied by the reference log (refused, never silently ignored).
KAFKA_ONLY_TOPIC_KEYS = frozenset({
    "compression.gzip.level", "compression.lz4.level", "compression.type", "compression.zstd.level",
    "delete.retention.ms", "follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
    "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms", "message.downconversion.enable",
    "message.format.version", "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
    "message.timestamp.difference.max.ms", "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "preallocate",
    "remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable", "segment.jitter.ms",
    "unclean.leader.election.enable",
})
_INT_ATTRS = tuple(d for d in TOPIC_CONFIG_DEFS.values() if d.type in ("int", "long"))
# The broker-wide defaults (server.properties' log.* keys at their table defaults).
_BROKER_DEFAULTS = LogSettings.defaults()


class UnknownTopicConfigError(ValueError):
    """A topic config name the reference log does not apply (Kafka: ``InvalidConfigurationException``)."""


def parse_topic_config(name: str, raw: str) -> object:
    """One topic-level value, parsed and validated.

    Raises:
        UnknownTopicConfigError: a name Kafka does not know (Kafka's message), or one the reference log does not
            apply.
        ConfigException: a bad value (Kafka's message).
    """
    definition = TOPIC_CONFIG_DEFS.get(name)
    if definition is None:
        if name in KAFKA_ONLY_TOPIC_KEYS:
            raise UnknownTopicConfigError(f"Topic config {name} is not supported by the reference broker (it applies "
                                          f"{', '.join(TOPIC_CONFIG_DEFS)})")
        raise UnknownTopicConfigError(f"Unknown topic config name: {name}")
    return definition.parse(raw)


@dataclass(frozen=True)
class LogConfig:
    """Per-log settings (defaults: the broker table's, see :class:`broker.settings.LogSettings`).

    Attributes:
        segment_bytes: roll the active segment before it would exceed this size (``segment.bytes``, 1 GiB).
        segment_ms: roll a non-empty segment older than this (``segment.ms``, 7 days).
        segment_index_bytes: roll when the offset or time index reaches this size (``segment.index.bytes``, 10 MiB).
        index_interval_bytes: bytes between two offset index entries (``index.interval.bytes``, 4096).
        max_message_bytes: largest record batch accepted (``max.message.bytes``, 1048588).
        retention_bytes: delete old segments while the log is larger than this; -1 = no limit.
        retention_ms: delete segments whose newest record is older than this; -1 = forever (7 days default).
        flush_messages: fsync after this many unflushed messages (``flush.messages``, Long.MAX = never).
        flush_ms: fsync when the last flush is older than this (``flush.ms``, Long.MAX = never).
        file_delete_delay_ms: deleted segments' file handles stay open this long for readers in flight.
        message_timestamp_type: ``CreateTime`` (keep the producer's) or ``LogAppendTime`` (broker stamps).
        cleanup_policy: ``delete`` (retention deletes old segments; the log never compacts).
        min_insync_replicas: an acks=all produce needs this many in-sync replicas (capped at the replication
            factor, as Kafka 3.9's ``effectiveMinIsr``); read by Produce, not by the log.
    """

    segment_bytes: int = _BROKER_DEFAULTS.segment_bytes
    segment_ms: int = _BROKER_DEFAULTS.segment_ms
    segment_index_bytes: int = _BROKER_DEFAULTS.segment_index_bytes
    index_interval_bytes: int = _BROKER_DEFAULTS.index_interval_bytes
    max_message_bytes: int = _BROKER_DEFAULTS.max_message_bytes
    retention_bytes: int = _BROKER_DEFAULTS.retention_bytes
    retention_ms: int = _BROKER_DEFAULTS.retention_ms
    flush_messages: int = _BROKER_DEFAULTS.flush_messages
    flush_ms: int = _BROKER_DEFAULTS.flush_ms
    file_delete_delay_ms: int = _BROKER_DEFAULTS.file_delete_delay_ms
    message_timestamp_type: TimestampType = _BROKER_DEFAULTS.message_timestamp_type  # type: ignore[assignment]
    cleanup_policy: str = _BROKER_DEFAULTS.cleanup_policy
    min_insync_replicas: int = _BROKER_DEFAULTS.min_insync_replicas

    def __post_init__(self) -> None:
        for key in _INT_ATTRS:
            value = getattr(self, key.attr)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"Invalid value {value!r} for configuration {key.name}: not an integer")
            if key.minimum is not None and value < key.minimum:
                raise ConfigException.invalid(key.name, value, f"Value must be at least {key.minimum}")
        TOPIC_CONFIG_DEFS["message.timestamp.type"].parse(self.message_timestamp_type)
        TOPIC_CONFIG_DEFS["cleanup.policy"].parse(self.cleanup_policy)

    @classmethod
    def from_settings(cls, settings: LogSettings) -> LogConfig:
        """The broker-wide default: the topic keys' broker-level values."""
        values = {key.attr: getattr(settings, key.attr) for key in TOPIC_CONFIG_DEFS.values()}
        return cls(**values)

    @classmethod
    def from_broker_properties(cls, props: Mapping[str, str]) -> LogConfig:
        """The broker-wide default from raw ``server.properties`` keys (``log.segment.bytes``, ``log.roll.hours``...).

        Raises:
            ConfigException: a bad value (Kafka's message, naming the broker key).
        """
        return cls.from_settings(LogSettings.from_properties(props))

    def with_overrides(self, overrides: Mapping[str, str]) -> LogConfig:
        """This config with topic-level overrides (``segment.bytes``, ``retention.ms``...) applied.

        Raises:
            UnknownTopicConfigError: a topic config name the reference log does not apply.
            ConfigException: a bad value (Kafka's message).
        """
        values = {TOPIC_CONFIG_DEFS[name].attr if name in TOPIC_CONFIG_DEFS else name: parse_topic_config(name, raw)
                  for name, raw in overrides.items()}
        return dataclasses.replace(self, **values)  # type: ignore[arg-type]

    def to_topic_configs(self) -> dict[str, str]:
        """Topic-level names and values (what DescribeConfigs shows for a topic)."""
        return {name: str(getattr(self, d.attr)) for name, d in TOPIC_CONFIG_DEFS.items()}


@dataclass(frozen=True)
class LogManagerConfig:
    """Broker-wide settings of the log manager's background work (defaults: the broker table's).

    Attributes:
        retention_check_interval_ms: how often retention runs (``log.retention.check.interval.ms``, 5 min).
        flush_scheduler_interval_ms: how often ``flush.ms`` is checked (``log.flush.scheduler.interval.ms``).
        recovery_point_checkpoint_interval_ms: ``log.flush.offset.checkpoint.interval.ms`` (1 min).
        log_start_offset_checkpoint_interval_ms: ``log.flush.start.offset.checkpoint.interval.ms`` (1 min).
        epoch_checkpoint_delay_ms: planewatch fault injection: extra sleep before each leader-epoch-checkpoint
            fsync (``planewatch.leader.epoch.checkpoint.delay.ms``), to reproduce a slow disk (KAFKA-6974).
        log_line_version: which Kafka era's server.log identity and log-start-offset text the logs write
            (``planewatch.log.line.version``: ``1.0``, ``1.1``, ``2.6`` (default) or ``3.5``).
    """

    retention_check_interval_ms: int = _BROKER_DEFAULTS.retention_check_interval_ms
    flush_scheduler_interval_ms: int = _BROKER_DEFAULTS.flush_scheduler_interval_ms
    recovery_point_checkpoint_interval_ms: int = _BROKER_DEFAULTS.recovery_point_checkpoint_interval_ms
    log_start_offset_checkpoint_interval_ms: int = _BROKER_DEFAULTS.log_start_offset_checkpoint_interval_ms
    epoch_checkpoint_delay_ms: int = _BROKER_DEFAULTS.epoch_checkpoint_delay_ms
    log_line_version: str = _BROKER_DEFAULTS.log_line_version

    def __post_init__(self) -> None:
        if self.log_line_version not in LINE_VERSIONS:
            raise ConfigException.invalid("planewatch.log.line.version", self.log_line_version,
                                          f"String must be one of: {', '.join(LINE_VERSIONS)}")

    @classmethod
    def from_settings(cls, settings: LogSettings) -> LogManagerConfig:
        """The log manager's intervals from the broker's log settings."""
        return cls(settings.retention_check_interval_ms, settings.flush_scheduler_interval_ms,
                   settings.recovery_point_checkpoint_interval_ms, settings.log_start_offset_checkpoint_interval_ms,
                   settings.epoch_checkpoint_delay_ms, settings.log_line_version)

    @classmethod
    def from_broker_properties(cls, props: Mapping[str, str]) -> LogManagerConfig:
        """Read the ``log.*`` scheduler keys from raw ``server.properties`` strings.

        Raises:
            ConfigException: a bad value (Kafka's message).
        """
        return cls.from_settings(LogSettings.from_properties(props))
