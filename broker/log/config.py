"""Log configuration: Kafka's topic-level keys with their broker-level defaults, as one declarative table.

A :class:`LogConfig` is immutable. The broker builds its default from ``server.properties``
(:meth:`LogConfig.from_broker_properties`, broker key names such as ``log.segment.bytes``) and a topic's
effective config by applying topic overrides (:meth:`LogConfig.with_overrides`, topic key names such as
``segment.bytes``), exactly as Kafka's ``LogConfig.fromProps(defaults, overrides)`` does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ._lines import LINE_VERSIONS

__all__ = [
    "LONG_MAX",
    "LogConfig",
    "LogManagerConfig",
    "TimestampType",
]

# Java's Long.MAX_VALUE: Kafka's "never" for flush.messages / flush.ms.
LONG_MAX = 2**63 - 1

TimestampType = Literal["CreateTime", "LogAppendTime"]


@dataclass(frozen=True)
class _Key:
    attr: str
    topic_key: str
    broker_keys: tuple[str, ...]  # first match wins (log.roll.ms before log.roll.hours, as Kafka)
    broker_scale: tuple[int, ...]  # multiplier per broker key (hours -> ms)
    minimum: int | None


# Kafka's LogConfig / KafkaConfig keys (3.x names; defaults are the dataclass defaults below).
_KEYS: tuple[_Key, ...] = (
    _Key("segment_bytes", "segment.bytes", ("log.segment.bytes",), (1,), 14),  # LegacyRecord.RECORD_OVERHEAD_V0
    _Key("segment_ms", "segment.ms", ("log.roll.ms", "log.roll.hours"), (1, 3_600_000), 1),
    _Key("segment_index_bytes", "segment.index.bytes", ("log.index.size.max.bytes",), (1,), 8),
    _Key("index_interval_bytes", "index.interval.bytes", ("log.index.interval.bytes",), (1,), 0),
    _Key("max_message_bytes", "max.message.bytes", ("message.max.bytes",), (1,), 0),
    _Key("retention_bytes", "retention.bytes", ("log.retention.bytes",), (1,), None),
    _Key("retention_ms", "retention.ms",
         ("log.retention.ms", "log.retention.minutes", "log.retention.hours"), (1, 60_000, 3_600_000), -1),
    _Key("flush_messages", "flush.messages", ("log.flush.interval.messages",), (1,), 1),
    _Key("flush_ms", "flush.ms", ("log.flush.interval.ms",), (1,), 0),
    _Key("file_delete_delay_ms", "file.delete.delay.ms", ("log.segment.delete.delay.ms",), (1,), 0),
)
_TIMESTAMP_TYPE_TOPIC_KEY = "message.timestamp.type"
_TIMESTAMP_TYPE_BROKER_KEY = "log.message.timestamp.type"


@dataclass(frozen=True)
class LogConfig:
    """Per-log settings (Kafka defaults).

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

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 3_600_000
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1024 * 1024 + 12  # 1048588: 1 MiB plus the 12-byte log overhead
    retention_bytes: int = -1
    retention_ms: int = 7 * 24 * 3_600_000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60_000
    message_timestamp_type: TimestampType = "CreateTime"

    def __post_init__(self) -> None:
        for key in _KEYS:
            value = getattr(self, key.attr)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"Invalid value {value!r} for configuration {key.topic_key}: not an integer")
            if key.minimum is not None and value < key.minimum:
                raise ValueError(
                    f"Invalid value {value} for configuration {key.topic_key}: Value must be at least {key.minimum}")
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise ValueError(f"Invalid value {self.message_timestamp_type} for configuration "
                             f"{_TIMESTAMP_TYPE_TOPIC_KEY}: String must be one of: CreateTime, LogAppendTime")

    @classmethod
    def from_broker_properties(cls, props: Mapping[str, str]) -> LogConfig:
        """The broker-wide default from ``server.properties`` keys (``log.segment.bytes``, ``log.roll.hours``...)."""
        values: dict[str, object] = {}
        for key in _KEYS:
            for name, scale in zip(key.broker_keys, key.broker_scale, strict=True):
                if name in props:
                    values[key.attr] = _parse_int(name, props[name]) * scale
                    break
        if _TIMESTAMP_TYPE_BROKER_KEY in props:
            values["message_timestamp_type"] = props[_TIMESTAMP_TYPE_BROKER_KEY].strip()
        return dataclasses.replace(cls(), **values)  # type: ignore[arg-type]

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
                values[by_topic_key[name].attr] = _parse_int(name, raw)
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
    """Broker-wide settings of the log manager's background work (Kafka defaults).

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

    retention_check_interval_ms: int = 300_000
    flush_scheduler_interval_ms: int = LONG_MAX
    recovery_point_checkpoint_interval_ms: int = 60_000
    log_start_offset_checkpoint_interval_ms: int = 60_000
    epoch_checkpoint_delay_ms: int = 0
    log_line_version: str = "2.6"

    def __post_init__(self) -> None:
        if self.log_line_version not in LINE_VERSIONS:
            raise ValueError(f"Invalid value {self.log_line_version} for configuration planewatch.log.line.version: "
                             f"String must be one of: {', '.join(LINE_VERSIONS)}")

    @classmethod
    def from_broker_properties(cls, props: Mapping[str, str]) -> LogManagerConfig:
        """Read the ``log.*`` scheduler keys from ``server.properties``."""
        names = {
            "retention_check_interval_ms": "log.retention.check.interval.ms",
            "flush_scheduler_interval_ms": "log.flush.scheduler.interval.ms",
            "recovery_point_checkpoint_interval_ms": "log.flush.offset.checkpoint.interval.ms",
            "log_start_offset_checkpoint_interval_ms": "log.flush.start.offset.checkpoint.interval.ms",
            "epoch_checkpoint_delay_ms": "planewatch.leader.epoch.checkpoint.delay.ms",
        }
        values = {attr: _parse_int(name, props[name]) for attr, name in names.items() if name in props}
        for attr, value in values.items():
            if value < 0:
                raise ValueError(f"Invalid value {value} for configuration {names[attr]}: Value must be at least 0")
        version = props.get("planewatch.log.line.version", "2.6").strip()
        return cls(**values, log_line_version=version)


def _parse_int(name: str, raw: str) -> int:
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValueError(f"Invalid value {raw} for configuration {name}: Not a number of type LONG") from None
