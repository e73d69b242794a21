"""Topic configs over the admin APIs: DescribeConfigs, AlterConfigs and IncrementalAlterConfigs on TOPIC resources.

Theory of operation
-------------------
A topic's overrides (``retention.ms``, ``segment.bytes``, ``cleanup.policy``, ``min.insync.replicas``,
``max.message.bytes``... :data:`broker.log.config.TOPIC_CONFIG_DEFS`) replace the broker-wide defaults for that topic
only, as Kafka's ``/config/topics/<topic>``. An alter

1. computes the new override set: IncrementalAlterConfigs applies SET / DELETE (and APPEND / SUBTRACT on the list key
   ``cleanup.policy``) to the current set; the legacy AlterConfigs replaces the whole set;
2. validates it as Kafka does (the log config built from the defaults and the new set): a name Kafka does not know
   answers INVALID_CONFIG ``Unknown topic config name: <name>``, a bad value INVALID_CONFIG ``Invalid config value
   for resource ConfigResource(type=TOPIC, name='<topic>'): Invalid value ...``, a name Kafka knows but the reference
   log does not apply (``compression.type``...) or ``cleanup.policy=compact`` INVALID_CONFIG saying so; nothing
   changes on an error, and ``validate_only`` stops here;
3. applies it to the topic's running logs at once (the next append rolls at the new ``segment.bytes``, the next
   retention check deletes by the new ``retention.ms``; Produce reads ``min.insync.replicas``) and persists it with
   the topic (:meth:`broker.apis.data_plane.DataPlane.set_topic_overrides`; re-applied at start-up);
4. logs Kafka's ``DynamicConfigManager`` line ``Processing override for entityPath: topics/<topic> with config:
   HashMap(retention.ms -> 1000)`` (:func:`override_line`).

On a member of the reference cluster the data plane has a
:class:`~broker.apis.data_plane.TopicConfigAuthority` (the controller, as ZooKeeper for Kafka): step 1 starts from
the overrides refreshed from it, and step 3 stores the new set there; every broker, this one first, then applies it
to its logs and logs the line of step 4 (:mod:`broker.cluster.topic_config_sync`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from broker.apis.config_entries import BrokerLayers, topic_entry
from broker.apis.data_plane import DataPlane
from broker.configdef import ConfigException
from broker.log import validate_topic_name
from broker.log.config import TOPIC_CONFIG_DEFS, UnknownTopicConfigError
from broker.log4j import Log4j
from broker.protocol.error_codes import ErrorCode

__all__ = ["OP_APPEND", "OP_DELETE", "OP_SET", "OP_SUBTRACT", "AlterError", "TopicConfigs", "apply_operations",
           "override_line"]

# IncrementalAlterConfigs operations
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {OP_APPEND: "append", OP_SUBTRACT: "subtract"}


class AlterError(Exception):
    """An alter refused: the error code and message the resource's answer carries."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def override_line(topic: str, overrides: Mapping[str, str]) -> str:
    """Kafka's ``DynamicConfigManager`` line for a topic's new overrides."""
    pairs = ", ".join(f"{k} -> {v}" for k, v in sorted(overrides.items()))
    return f"Processing override for entityPath: topics/{topic} with config: HashMap({pairs})"


def apply_operations(current: Mapping[str, str], configs: list[dict[str, Any]], incremental: bool) -> dict[str, str]:
    """The override set after an alter (see the module docstring, step 1).

    Raises:
        AlterError: a duplicate key, a null SET value, APPEND/SUBTRACT on a key that is not a list (Kafka's answers).
    """
    names = [str(c["name"]) for c in configs]
    if len(set(names)) != len(names):
        raise AlterError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    out = dict(current) if incremental else {}
    for c in configs:
        op = int(c.get("config_operation", OP_SET)) if incremental else OP_SET
        key, value = str(c["name"]), c.get("value")
        if op == OP_DELETE:
            out.pop(key, None)
        elif value is None:
            raise AlterError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {key}")
        elif op == OP_SET:
            out[key] = str(value)
        elif op in _OP_NAMES:
            definition = TOPIC_CONFIG_DEFS.get(key)
            if definition is None or definition.type != "list":
                raise AlterError(ErrorCode.INVALID_CONFIG,
                                 f"Config value {_OP_NAMES[op]} is not allowed for config key: {key}")
            items = [i for i in out.get(key, "").split(",") if i]
            given = [i.strip() for i in str(value).split(",") if i.strip()]
            if op == OP_APPEND:
                items += [i for i in given if i not in items]
            else:
                items = [i for i in items if i not in given]
            out[key] = ",".join(items)
        else:
            raise AlterError(ErrorCode.INVALID_REQUEST, f"Unknown alter config operation {op} for config key: {key}")
    return out


class TopicConfigs:
    """The TOPIC resource of the config APIs.

    Args:
        dp: the data plane (topics, their logs and stored overrides).
        layers: the broker's config layers now (the topic configs' broker synonyms).
        log4j: for the ``DynamicConfigManager`` lines.
    """

    def __init__(self, dp: DataPlane, layers: Callable[[], BrokerLayers], log4j: Log4j) -> None:
        self.dp = dp
        self._layers = layers
        self._log = log4j.get_logger("kafka.server.DynamicConfigManager")

    def _check_topic(self, name: str) -> None:
        try:
            validate_topic_name(name)
        except ValueError as exc:
            raise AlterError(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)) from None
        if not self.dp.topic_exists(name):
            raise AlterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")

    def describe(self, name: str, keys: list[str] | None, include_synonyms: bool,
                 include_documentation: bool) -> list[dict[str, Any]]:
        """Every topic config of ``name`` (or the ``keys`` asked for) with its source and synonyms.

        Raises:
            AlterError: an invalid topic name (INVALID_TOPIC_EXCEPTION), an unknown topic (UNKNOWN_TOPIC_OR_PARTITION).
        """
        try:
            self._check_topic(name)
        except AlterError as exc:
            if exc.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise AlterError(exc.code, "") from None  # Kafka answers this one without a message
            raise
        values = self.dp.logs.topic_config(name).to_topic_configs()
        overrides = self.dp.topic_overrides(name)
        layers = self._layers()
        return [topic_entry(k, v, overrides, layers, include_synonyms=include_synonyms,
                            include_documentation=include_documentation)
                for k, v in values.items() if not keys or k in keys]

    def alter(self, name: str, configs: list[dict[str, Any]], incremental: bool, validate_only: bool) -> None:
        """Validate, apply live and persist one topic's new overrides (see the module docstring).

        Raises:
            AlterError: the answer's error code and message; nothing changed.
        """
        self._check_topic(name)
        authority = self.dp.topic_config_authority
        if authority is not None:
            authority.refresh()  # an incremental alter starts from the newest overrides
        overrides = apply_operations(self.dp.topic_overrides(name), configs, incremental)
        try:
            self.dp.logs.default_config.with_overrides(overrides)
        except UnknownTopicConfigError as exc:
            raise AlterError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        except ConfigException as exc:
            raise AlterError(ErrorCode.INVALID_CONFIG, f"Invalid config value for resource ConfigResource("
                                                       f"type=TOPIC, name='{name}'): {exc}") from None
        if validate_only:
            return
        if authority is not None:
            authority.store(name, overrides)  # applied and logged here as on every broker
            return
        try:
            self.dp.set_topic_overrides(name, overrides)
        except OSError as exc:
            raise AlterError(ErrorCode.KAFKA_STORAGE_ERROR, f"Could not persist the configs of topic {name}: "
                                                            f"{exc}") from None
        self._log.info(override_line(name, overrides))
