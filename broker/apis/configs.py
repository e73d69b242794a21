"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44): broker settings and topic configs.

TOPIC resources are :mod:`broker.apis.topic_configs`' (describe with sources and synonyms, alter applied live and
persisted). BROKER resources: the broker's dynamic connection limits, as below.

Theory of operation
-------------------
Kafka's ``DynamicBrokerConfig`` for the settings of KIP-402 / KIP-308: ``max.connections``,
``listener.name.<l>.max.connections``, ``max.connections.per.ip``, ``max.connections.per.ip.overrides``. An
operator changes them live (``AdminClient.incremental_alter_configs`` on resource BROKER, name ``"<broker.id>"`` for
this broker or ``""`` for the cluster-wide default); the values are

1. validated and applied at once to the socket server's connection quotas (``SocketServer.reconfigure``, which
   validates everything before applying anything: a bad value changes nothing and answers INVALID_CONFIG),
2. persisted in ``<first log dir>/dynamic-broker-configs.json`` (temp file, fsync, rename; Kafka keeps them in
   ZooKeeper ``/config/brokers/<id>`` and ``/config/brokers/<default>``) and re-applied at the next start,
3. logged in server.log as Kafka's ``DynamicConfigManager`` does::

       Processing override for entityPath: brokers/1 with config: HashMap(max.connections -> 100)

   (logger ``kafka.server.DynamicConfigManager``)

Precedence, as Kafka: per-broker dynamic > cluster-default dynamic > static ``server.properties`` > default.
DescribeConfigs of broker ``<broker.id>`` lists every key of the configuration table with the value in force, its
source (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG), ``read_only``
unless the key is one of the dynamic ones above, and Kafka's synonyms when asked (:mod:`broker.apis.config_entries`);
broker ``""`` (the cluster default) lists the dynamic default configs only, as Kafka.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from broker.apis.config_entries import BrokerLayers, broker_entry, java_string
from broker.apis.data_plane import DataPlane
from broker.apis.distinct import last_by_key
from broker.apis.kafka_apis import HandlerResult
from broker.apis.topic_configs import OP_DELETE, OP_SET, AlterError, TopicConfigs
from broker.config import CONFIG_DEFS, LISTENER_PREFIXED, ConfigException
from broker.log4j import Log4j
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode

__all__ = ["DYNAMIC_FILE", "ConfigApis", "DynamicBrokerConfig", "is_dynamic_key"]

DYNAMIC_FILE = "dynamic-broker-configs.json"
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
# The table's dynamic keys (KIP-402 / KIP-308 connection limits).
_BROKER_KEYS = tuple(name for name, d in CONFIG_DEFS.items() if d.dynamic)
# Their table defaults, as DescribeConfigs shows them (strings).
_DEFAULTS = {name: str(java_string(CONFIG_DEFS[name].default)) for name in _BROKER_KEYS}


def _resource_key(r: Mapping[str, Any]) -> tuple[int, str, tuple[str, ...] | None]:
    keys = r.get("configuration_keys")
    return int(r["resource_type"]), str(r["resource_name"]), None if keys is None else tuple(keys)


def is_dynamic_key(key: str) -> bool:
    """True for the dynamically updatable broker settings this broker implements."""
    if key in _BROKER_KEYS:
        return True
    prefix, _, name = key.partition(".name.")
    listener, _, base = name.partition(".")
    return prefix == "listener" and bool(listener) and base in LISTENER_PREFIXED and CONFIG_DEFS[base].dynamic


class DynamicBrokerConfig:
    """Dynamic broker settings: apply, persist, reload, describe.

    Args:
        broker_id: ``broker.id`` (the resource name of this broker).
        directory: where the dynamic config file lives (the first log dir).
        static: the static ``server.properties`` values (raw strings).
        apply: applies a full set of effective dynamic values (``SocketServer.reconfigure``); raises
            ConfigException (a ValueError) on a bad one.
        log4j: for the DynamicConfigManager lines.
    """

    def __init__(self, broker_id: int, directory: Path, static: Mapping[str, str],
                 apply: Callable[[Mapping[str, str]], None] | None, log4j: Log4j) -> None:
        self.broker_id = broker_id
        self._path = directory / DYNAMIC_FILE
        self._static = dict(static)
        self._apply = apply
        self.log4j = log4j
        self._log = log4j.get_logger("kafka.server.DynamicConfigManager")
        self._lock = threading.Lock()
        self.per_broker: dict[str, str] = {}
        self.cluster_default: dict[str, str] = {}

    # ---------------------------------------------------------------------------------------------- state
    def load(self) -> None:
        """Read the persisted values and apply them (start-up). A damaged file is logged and ignored."""
        if not self._path.exists():
            return
        try:
            raw = json.loads(self._path.read_text())
            per_broker = {str(k): str(v) for k, v in raw.get("broker", {}).items() if is_dynamic_key(str(k))}
            default = {str(k): str(v) for k, v in raw.get("default", {}).items() if is_dynamic_key(str(k))}
            self._reconfigure(per_broker, default)
        except (ValueError, AttributeError, TypeError) as exc:
            self._log.error(f"Ignoring dynamic broker configs in {self._path}: {exc}")
            return
        self.per_broker, self.cluster_default = per_broker, default
        self._log_override("<default>", default)
        self._log_override(str(self.broker_id), per_broker)

    def effective(self, per_broker: Mapping[str, str], default: Mapping[str, str]) -> dict[str, str]:
        """The dynamic values in force: per-broker over cluster default (keys absent from both are left out)."""
        return {**default, **per_broker}

    def _reconfigure(self, per_broker: Mapping[str, str], default: Mapping[str, str]) -> None:
        if self._apply is None:
            return
        eff = self.effective(per_broker, default)
        # keys deleted from the dynamic layer fall back to the static value or the default
        for key in (*_BROKER_KEYS, *self.effective(self.per_broker, self.cluster_default)):
            if key not in eff:
                fallback = self._static.get(key, _DEFAULTS.get(key))
                if fallback is None and key.startswith("listener.name."):
                    fallback = eff.get("max.connections", self._static.get("max.connections",
                                                                            _DEFAULTS["max.connections"]))
                if fallback is not None:
                    eff[key] = fallback
        self._apply(eff)

    def _persist(self) -> None:
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "w") as fh:
            json.dump({"broker": self.per_broker, "default": self.cluster_default}, fh, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self._path)

    def _log_override(self, entity: str, values: Mapping[str, str]) -> None:
        if values:
            pairs = ", ".join(f"{k} -> {v}" for k, v in sorted(values.items()))
            self._log.info(f"Processing override for entityPath: brokers/{entity} with config: HashMap({pairs})")

    def alter(self, resource_name: str, change: Callable[[dict[str, str]], None], validate_only: bool) -> None:
        """Apply ``change`` to the per-broker (name = broker id) or default (name "") layer; validate, apply, persist.

        Raises:
            ConfigException: an unknown/static key or an invalid value (nothing changed).
        """
        with self._lock:
            is_default = resource_name == ""
            layer = dict(self.cluster_default if is_default else self.per_broker)
            change(layer)
            for key in layer:
                if not is_dynamic_key(key):
                    raise ConfigException(f"Cannot update these configs dynamically: Set({key})")
            per_broker = self.per_broker if is_default else layer
            default = layer if is_default else self.cluster_default
            if validate_only:
                return
            self._reconfigure(per_broker, default)
            self.per_broker, self.cluster_default = dict(per_broker), dict(default)
            self._persist()
            self._log_override("<default>" if is_default else str(self.broker_id), layer)

    def layers(self) -> BrokerLayers:
        """The broker's values by source now (static: the table's keys and listener overrides as given)."""
        static = {k: v.strip() for k, v in self._static.items() if k in CONFIG_DEFS or is_dynamic_key(k)}
        return BrokerLayers(dict(self.per_broker), dict(self.cluster_default), static)

    def describe(self, keys: list[str] | None, per_broker: bool = True, include_synonyms: bool = False,
                 include_documentation: bool = False) -> list[dict[str, Any]]:
        """DescribeConfigs entries of this broker (``per_broker``) or of the cluster default; ``keys`` None = all."""
        layers = self.layers()
        if per_broker:
            listener_keys = sorted({k for layer in (self.per_broker, self.cluster_default, layers.static)
                                    for k in layer if k.startswith("listener.name.") and is_dynamic_key(k)})
            shown = [*CONFIG_DEFS, *listener_keys]
        else:
            shown = sorted(self.cluster_default)
        names = [k for k in shown if k in keys] if keys else shown
        return [broker_entry(name, layers, read_only=not is_dynamic_key(name), per_broker=per_broker,
                             include_synonyms=include_synonyms, include_documentation=include_documentation)
                for name in names]


class ConfigApis:
    """The config request handlers: BROKER resources here, TOPIC resources in :class:`TopicConfigs`."""

    def __init__(self, dynamic: DynamicBrokerConfig, dp: DataPlane) -> None:
        self.dynamic = dynamic
        self.dp = dp
        self.topics = TopicConfigs(dp, dynamic.layers, dynamic.log4j)

    def _broker_error(self, rtype: int, name: str) -> AlterError | None:
        """Kafka's answer to a resource this broker does not serve (None: it does)."""
        if rtype not in (RESOURCE_BROKER, RESOURCE_TOPIC):
            return AlterError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {rtype}")
        if rtype == RESOURCE_BROKER and name not in ("", str(self.dynamic.broker_id)):
            return AlterError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {self.dynamic.broker_id} "
                                                         f"or empty string, but received {name}")
        return None

    def describe_configs(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """Broker settings (this broker or the cluster default) and topic configs, with sources and synonyms.

        A resource asked for more than once (same type, name and keys) is described once: Kafka repeats the whole
        description per occurrence, which lets a small request ask for gigabytes of config entries."""
        del request, header
        synonyms = bool(body.get("include_synonyms", False))
        documentation = bool(body.get("include_documentation", False))
        results: list[dict[str, Any]] = []
        for r in last_by_key(body["resources"], _resource_key).values():
            rtype, name = int(r["resource_type"]), str(r["resource_name"])
            keys = r.get("configuration_keys")
            # Kafka leaves ErrorMessage at its schema default "" unless the error carries a message
            res: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": "", "resource_type": rtype,
                                   "resource_name": name, "configs": []}
            try:
                error = self._broker_error(rtype, name)
                if error is not None:
                    raise error
                if rtype == RESOURCE_TOPIC:
                    res["configs"] = self.topics.describe(name, keys, synonyms, documentation)
                else:
                    res["configs"] = self.dynamic.describe(keys, name != "", synonyms, documentation)
            except AlterError as exc:
                res["error_code"], res["error_message"] = exc.code, exc.message or ""
            results.append(res)
        return HandlerResult({"throttle_time_ms": 0, "results": results},
                             tuple(int(r["error_code"]) for r in results) or (ErrorCode.NONE,))

    def _alter_broker(self, name: str, configs: list[dict[str, Any]], incremental: bool, validate_only: bool) -> None:
        def change(layer: dict[str, str]) -> None:
            if not incremental:
                layer.clear()
            for c in configs:
                op = int(c.get("config_operation", OP_SET))
                key, value = str(c["name"]), c.get("value")
                if op == OP_DELETE:
                    layer.pop(key, None)
                elif op == OP_SET:
                    if value is None:
                        raise ConfigException(f"Null value not supported for : {key}")
                    layer[key] = str(value)
                else:
                    raise ConfigException(f"Config value append/subtract is not allowed for config {key} "
                                          "as it is not a list type")

        try:
            self.dynamic.alter(name, change, validate_only)
        except ValueError as exc:  # ConfigException
            raise AlterError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        except OSError as exc:
            raise AlterError(ErrorCode.INVALID_REQUEST, f"Could not persist the dynamic config: {exc}") from None

    def _alter(self, body: dict[str, Any], incremental: bool) -> HandlerResult:
        validate_only = bool(body.get("validate_only", False))
        responses: list[dict[str, Any]] = []
        # a resource named more than once: its last entry, once (Kafka: resources.toMap)
        for r in last_by_key(body["resources"], lambda r: (int(r["resource_type"]), str(r["resource_name"]))).values():
            rtype, name = int(r["resource_type"]), str(r["resource_name"])
            configs = list(r.get("configs") or [])
            code, message = ErrorCode.NONE, None
            try:
                error = self._broker_error(rtype, name)
                if error is not None:
                    raise error
                if rtype == RESOURCE_TOPIC:
                    self.topics.alter(name, configs, incremental, validate_only)
                else:
                    self._alter_broker(name, configs, incremental, validate_only)
            except AlterError as exc:
                code, message = ErrorCode(exc.code), exc.message
            responses.append({"error_code": code, "error_message": message, "resource_type": rtype,
                              "resource_name": name})
        return HandlerResult({"throttle_time_ms": 0, "responses": responses},
                             tuple(int(r["error_code"]) for r in responses) or (ErrorCode.NONE,))

    def incremental_alter_configs(self, request: Request, header: RequestHeader,
                                  body: dict[str, Any]) -> HandlerResult:
        """SET / DELETE per key; APPEND / SUBTRACT on list-type topic configs only."""
        del request, header
        return self._alter(body, incremental=True)

    def alter_configs(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """Legacy AlterConfigs: the given set replaces the resource's dynamic configs (or the topic's overrides)."""
        del request, header
        return self._alter(body, incremental=False)
