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

from broker.configdef import LONG_MAX, ConfigException, parse_typed
from broker.settings import LogSettings

from ._lines import LINE_VERSIONS

__all__ = [
    "LONG_MAX",
    "LogConfig",
    "LogManagerConfig",
    "TimestampType",
]

TimestampType = Literal["CreateTime", "LogAppendTime"]


@dataclass(frozen=True)
class _Key:
    attr: str  # the LogConfig (and LogSettings) attribute
    topic_key: str
    minimum: int | None


# Kafka's topic-level LogConfig keys (3.x names), each defaulting to a broker key of broker.settings.LogSettings.
_KEYS: tuple[_Key, ...] = (
    _Key("segment_bytes", "segment.bytes", 14),  # LegacyRecord.RECORD_OVERHEAD_V0
    _Key("segment_ms", "segment.ms", 1),
    _Key("segment_index_bytes", "segment.index.bytes", 8),
    _Key("index_interval_bytes", "index.interval.bytes", 0),
    _Key("max_message_bytes", "max.message.bytes", 0),
    _Key("retention_bytes", "retention.bytes", None),
    _Key("retention_ms", "retention.ms", -1),
    _Key("flush_messages", "flush.messages", 1),
    _Key("flush_ms", "flush.ms", 0),
    _Key("file_delete_delay_ms", "file.delete.delay.ms", 0),
)
_TIMESTAMP_TYPE_TOPIC_KEY = "message.timestamp.type"
# The broker-wide defaults (server.properties' log.* keys at their table defaults).
_BROKER_DEFAULTS = LogSettings.defaults()


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

    def __post_init__(self) -> None:
        for key in _KEYS:
            value = getattr(self, key.attr)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"Invalid value {value!r} for configuration {key.topic_key}: not an integer")
            if key.minimum is not None and value < key.minimum:
                raise ConfigException.invalid(key.topic_key, value, f"Value must be at least {key.minimum}")
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise ConfigException.invalid(_TIMESTAMP_TYPE_TOPIC_KEY, self.message_timestamp_type,
                                          "String must be one of: CreateTime, LogAppendTime")

    @classmethod
    def from_settings(cls, settings: LogSettings) -> LogConfig:
        """The broker-wide default: the topic keys' broker-level values."""
        values = {key.attr: getattr(settings, key.attr) for key in _KEYS}
        return cls(**values, message_timestamp_type=settings.message_timestamp_type)  # type: ignore[arg-type]

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
            ValueError: for an unknown topic config name or a bad value.
        """
        by_topic_key = {key.topic_key: key for key in _KEYS}
        values: dict[str, object] = {}
        for name, raw in overrides.items():
            if name == _TIMESTAMP_TYPE_TOPIC_KEY:
                values["message_timestamp_type"] = raw.strip()
            elif name in by_topic_key:
                values[by_topic_key[name].attr] = parse_typed(name, "long", raw)
            else:
                raise ValueError(f"Unknown topic config name: {name}")
        return dataclasses.replace(self, **values)  # type: ignore[arg-type]

    def to_topic_configs(self) -> dict[str, str]:
        """Topic-level names and values (what DescribeConfigs shows for a topic)."""
        out = {key.topic_key: str(getattr(self, key.attr)) for key in _KEYS}
        out[_TIMESTAMP_TYPE_TOPIC_KEY] = self.message_timestamp_type
        return out


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
