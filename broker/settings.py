"""Typed, frozen views of the configuration table, one per subsystem.

Each view declares the table keys it reads (``KEYS``, all in :data:`broker.config_table.CONFIG_DEFS`) and is built

* from a loaded :class:`broker.config.KafkaConfig` (:meth:`SettingsView.from_config`): the broker's path, every
  value already parsed and validated at load;
* from raw ``server.properties`` strings (:meth:`SettingsView.from_properties`): only the view's keys are parsed,
  through the same table (tools and tests that run one subsystem alone);
* from the table's defaults (:meth:`SettingsView.defaults`).

A view reading a key it did not declare fails at once (:class:`_Declared`), so a key a subsystem applies is always
one the table knows, and so never reported as unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Self

from broker.config_table import CONFIG_DEFS, GROUP_INITIAL_REBALANCE_DELAY_MS, HOUR_MS, OFFSETS_TOPIC_NUM_PARTITIONS
from broker.configdef import parse_typed
from broker.protocol.releases import DEFAULT_RELEASE, release_of

__all__ = [
    "VIEWS",
    "BrokerSettings",
    "DataPlaneSettings",
    "GroupSettings",
    "LogSettings",
    "NetworkSettings",
    "ParsedConfig",
    "PlanewatchSettings",
    "ReplicationSettings",
    "SettingsView",
    "parse_keys",
]

MINUTE_MS = 60_000
NO_BROKER_EPOCH = -1  # broker.epoch's "unknown": no request is stale


class ParsedConfig(Protocol):
    """A loaded configuration: every table key parsed and validated (:class:`broker.config.KafkaConfig` is one)."""

    @property
    def values(self) -> Mapping[str, Any]: ...


def parse_keys(props: Mapping[str, str], keys: tuple[str, ...]) -> dict[str, Any]:
    """``keys`` parsed and validated from raw ``props`` (the table's default where absent).

    Raises:
        ConfigException: the first invalid value, naming its key.
    """
    return {key: CONFIG_DEFS[key].parse(props.get(key, CONFIG_DEFS[key].default)) for key in keys}


class _Declared:
    """The parsed values a view may read: exactly its declared keys."""

    def __init__(self, view: str, keys: tuple[str, ...], values: Mapping[str, Any]) -> None:
        self._view, self._keys, self._values = view, frozenset(keys), values

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(f"{self._view} reads {key} without declaring it in KEYS")
        return self._values[key]


class SettingsView:
    """Base of the views: builds a view from a config, raw properties or the defaults."""

    KEYS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def _build(cls, values: _Declared) -> Self:
        """The view's fields in :attr:`KEYS` order (views whose fields derive from several keys override this)."""
        return cls(*(values[key] for key in cls.KEYS))

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> Self:
        """From parsed values keyed by table name (at least :attr:`KEYS`)."""
        return cls._build(_Declared(cls.__name__, cls.KEYS, values))

    @classmethod
    def from_config(cls, config: ParsedConfig) -> Self:
        """From a loaded broker configuration."""
        return cls.from_values(config.values)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> Self:
        """From raw ``server.properties`` strings. Raises ConfigException (Kafka's message) on a bad value."""
        return cls.from_values(parse_keys(props, cls.KEYS))

    @classmethod
    def defaults(cls) -> Self:
        """Every key at its table default."""
        return cls.from_properties({})


def _blank_to_none(value: str | None) -> str | None:
    return value or None


@dataclass(frozen=True, slots=True)
class BrokerSettings(SettingsView):
    """Who this broker is, as KafkaApis announces it (``broker.id``, ``broker.rack``, ``cluster.id``,
    ``broker.epoch``)."""

    KEYS: ClassVar[tuple[str, ...]] = ("broker.id", "broker.rack", "cluster.id", "broker.epoch",
                                       "inter.broker.protocol.version")

    broker_id: int
    rack: str | None
    cluster_id: str | None
    broker_epoch: int
    kafka_release: str = DEFAULT_RELEASE  # "major.minor" of inter.broker.protocol.version: ApiVersions' ranges

    @classmethod
    def _build(cls, values: _Declared) -> BrokerSettings:
        raw_epoch = values["broker.epoch"]
        epoch = NO_BROKER_EPOCH if not raw_epoch else parse_typed("broker.epoch", "long", raw_epoch)
        return cls(values["broker.id"], _blank_to_none(values["broker.rack"]),
                   _blank_to_none(values["cluster.id"]), epoch, release_of(values["inter.broker.protocol.version"]))


@dataclass(frozen=True, slots=True)
class NetworkSettings(SettingsView):
    """The socket server and request handlers' sizes and timeouts."""

    KEYS: ClassVar[tuple[str, ...]] = ("num.network.threads", "num.io.threads", "queued.max.requests",
                                       "socket.request.max.bytes", "connections.max.idle.ms", "request.timeout.ms")

    num_network_threads: int
    num_io_threads: int
    queued_max_requests: int
    socket_request_max_bytes: int
    connections_max_idle_ms: int
    request_timeout_ms: int


@dataclass(frozen=True, slots=True)
class LogSettings(SettingsView):
    """The log directories, the broker-wide defaults of the topic configs, and the log manager's intervals.

    ``segment_ms`` is ``log.roll.ms``, else ``log.roll.hours``; ``retention_ms`` is ``log.retention.ms``, else
    ``log.retention.minutes``, else ``log.retention.hours``; ``flush_ms`` is ``log.flush.interval.ms``, else
    ``log.flush.scheduler.interval.ms`` (Kafka's precedence).
    """

    KEYS: ClassVar[tuple[str, ...]] = (
        "log.dirs", "log.dir", "log.segment.bytes", "log.roll.ms", "log.roll.hours", "log.index.size.max.bytes",
        "log.index.interval.bytes", "message.max.bytes", "log.retention.bytes", "log.retention.ms",
        "log.retention.minutes", "log.retention.hours", "log.flush.interval.messages", "log.flush.interval.ms",
        "log.segment.delete.delay.ms", "log.message.timestamp.type", "log.cleanup.policy", "min.insync.replicas",
        "log.retention.check.interval.ms",
        "log.flush.scheduler.interval.ms", "log.flush.offset.checkpoint.interval.ms",
        "log.flush.start.offset.checkpoint.interval.ms", "planewatch.leader.epoch.checkpoint.delay.ms",
        "planewatch.log.line.version",
    )

    log_dirs: tuple[str, ...]
    segment_bytes: int
    segment_ms: int
    segment_index_bytes: int
    index_interval_bytes: int
    max_message_bytes: int
    retention_bytes: int
    retention_ms: int
    flush_messages: int
    flush_ms: int
    file_delete_delay_ms: int
    message_timestamp_type: str
    cleanup_policy: str
    min_insync_replicas: int
    retention_check_interval_ms: int
    flush_scheduler_interval_ms: int
    recovery_point_checkpoint_interval_ms: int
    log_start_offset_checkpoint_interval_ms: int
    epoch_checkpoint_delay_ms: int
    log_line_version: str

    @classmethod
    def _build(cls, values: _Declared) -> LogSettings:
        roll_ms = values["log.roll.ms"]
        retention_ms = values["log.retention.ms"]
        if retention_ms is None:
            minutes = values["log.retention.minutes"]
            retention_ms = minutes * MINUTE_MS if minutes is not None else values["log.retention.hours"] * HOUR_MS
        return cls(
            log_dirs=tuple(values["log.dirs"] or [values["log.dir"]]),
            segment_bytes=values["log.segment.bytes"],
            segment_ms=roll_ms if roll_ms is not None else values["log.roll.hours"] * HOUR_MS,
            segment_index_bytes=values["log.index.size.max.bytes"],
            index_interval_bytes=values["log.index.interval.bytes"],
            max_message_bytes=values["message.max.bytes"],
            retention_bytes=values["log.retention.bytes"],
            retention_ms=retention_ms,
            flush_messages=values["log.flush.interval.messages"],
            flush_ms=(values["log.flush.interval.ms"] if values["log.flush.interval.ms"] is not None
                      else values["log.flush.scheduler.interval.ms"]),
            file_delete_delay_ms=values["log.segment.delete.delay.ms"],
            message_timestamp_type=values["log.message.timestamp.type"],
            cleanup_policy=",".join(values["log.cleanup.policy"]),
            min_insync_replicas=values["min.insync.replicas"],
            retention_check_interval_ms=values["log.retention.check.interval.ms"],
            flush_scheduler_interval_ms=values["log.flush.scheduler.interval.ms"],
            recovery_point_checkpoint_interval_ms=values["log.flush.offset.checkpoint.interval.ms"],
            log_start_offset_checkpoint_interval_ms=values["log.flush.start.offset.checkpoint.interval.ms"],
            epoch_checkpoint_delay_ms=values["planewatch.leader.epoch.checkpoint.delay.ms"],
            log_line_version=values["planewatch.log.line.version"],
        )


@dataclass(frozen=True, slots=True)
class DataPlaneSettings(SettingsView):
    """Topic management and request parking of the data plane (:class:`broker.apis.data_plane.DataPlane`)."""

    KEYS: ClassVar[tuple[str, ...]] = ("auto.create.topics.enable", "num.partitions", "default.replication.factor",
                                       "num.io.threads")

    auto_create_topics: bool
    num_partitions: int
    default_replication_factor: int
    num_io_threads: int


@dataclass(frozen=True, slots=True)
class GroupSettings(SettingsView):
    """The group coordinator's limits."""

    KEYS: ClassVar[tuple[str, ...]] = ("group.min.session.timeout.ms", "group.max.session.timeout.ms",
                                       "offset.metadata.max.bytes", "group.initial.rebalance.delay.ms",
                                       "offsets.topic.num.partitions")

    min_session_timeout_ms: int
    max_session_timeout_ms: int
    offset_metadata_max_bytes: int
    initial_rebalance_delay_ms: int = GROUP_INITIAL_REBALANCE_DELAY_MS
    offsets_topic_num_partitions: int = OFFSETS_TOPIC_NUM_PARTITIONS


@dataclass(frozen=True, slots=True)
class ReplicationSettings(SettingsView):
    """A cluster member's controller, ISR lag and replica fetchers (``replica.fetch.*``)."""

    KEYS: ClassVar[tuple[str, ...]] = (
        "planewatch.controller.url", "replica.fetcher.model", "replica.lag.time.max.ms", "replica.fetch.wait.max.ms",
        "replica.fetch.min.bytes", "replica.fetch.response.max.bytes", "replica.fetch.max.bytes",
        "replica.fetch.backoff.ms", "replica.socket.timeout.ms",
    )

    controller_url: str | None
    fetcher_model: str
    lag_time_max_ms: int
    fetch_wait_max_ms: int
    fetch_min_bytes: int
    fetch_response_max_bytes: int
    fetch_max_bytes: int
    fetch_backoff_ms: int
    socket_timeout_ms: int

    @classmethod
    def _build(cls, values: _Declared) -> ReplicationSettings:
        return cls(
            controller_url=_blank_to_none(values["planewatch.controller.url"]),
            fetcher_model=values["replica.fetcher.model"],
            lag_time_max_ms=values["replica.lag.time.max.ms"],
            fetch_wait_max_ms=values["replica.fetch.wait.max.ms"],
            fetch_min_bytes=values["replica.fetch.min.bytes"],
            fetch_response_max_bytes=values["replica.fetch.response.max.bytes"],
            fetch_max_bytes=values["replica.fetch.max.bytes"],
            fetch_backoff_ms=values["replica.fetch.backoff.ms"],
            socket_timeout_ms=values["replica.socket.timeout.ms"],
        )


@dataclass(frozen=True, slots=True)
class PlanewatchSettings(SettingsView):
    """Where the broker's own logs and metrics go (keys Kafka does not have).

    ``kafka_logs_dir`` and ``metrics_dir`` are None in a view built from raw properties; a loaded
    :class:`broker.config.KafkaConfig` derives them from the first log dir.
    """

    KEYS: ClassVar[tuple[str, ...]] = (
        "kafka.logs.dir", "kafka.request.logger.level", "state.change.logger.level", "metrics.dir",
        "metrics.interval.ms", "metrics.file.roll.bytes", "metrics.file.roll.ms", "prometheus.port",
        "metric.reporter.topic",
    )

    kafka_logs_dir: str | None
    request_logger_level: str
    state_change_logger_level: str
    metrics_dir: str | None
    metrics_interval_ms: int
    metrics_file_roll_bytes: int
    metrics_file_roll_ms: int
    prometheus_port: int
    metric_reporter_topic: str | None

    @classmethod
    def _build(cls, values: _Declared) -> PlanewatchSettings:
        return cls(
            kafka_logs_dir=values["kafka.logs.dir"],
            request_logger_level=values["kafka.request.logger.level"],
            state_change_logger_level=values["state.change.logger.level"],
            metrics_dir=values["metrics.dir"],
            metrics_interval_ms=values["metrics.interval.ms"],
            metrics_file_roll_bytes=values["metrics.file.roll.bytes"],
            metrics_file_roll_ms=values["metrics.file.roll.ms"],
            prometheus_port=values["prometheus.port"],
            metric_reporter_topic=_blank_to_none(values["metric.reporter.topic"]),
        )


# Every view: the tests check that each reads only table keys, and that together they read every key but those
# the socket server and listener derivation read from KafkaConfig directly.
VIEWS: tuple[type[SettingsView], ...] = (BrokerSettings, NetworkSettings, LogSettings, DataPlaneSettings,
                                         GroupSettings, ReplicationSettings, PlanewatchSettings)
