"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44): the broker's dynamic connection limits.

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
DescribeConfigs reports the effective value and its source (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
STATIC_BROKER_CONFIG, DEFAULT_CONFIG) for the broker, and the log config of a topic (read-only here).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from broker.apis.data_plane import DataPlane
from broker.apis.kafka_apis import HandlerResult
from broker.config import CONFIG_DEFS, LISTENER_PREFIXED, ConfigException
from broker.log4j import Log4j
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode

__all__ = ["DYNAMIC_FILE", "ConfigApis", "DynamicBrokerConfig", "is_dynamic_key"]

DYNAMIC_FILE = "dynamic-broker-configs.json"
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
# IncrementalAlterConfigs operations
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
# The table's dynamic keys (KIP-402 / KIP-308 connection limits).
_BROKER_KEYS = tuple(name for name, d in CONFIG_DEFS.items() if d.dynamic)
# Static broker settings DescribeConfigs also shows (read-only), besides the dynamic ones.
_STATIC_SHOWN = ("broker.id", "log.dirs", "listeners", "advertised.listeners", "num.network.threads",
                 "num.io.threads", "queued.max.requests", "socket.request.max.bytes", "control.plane.listener.name",
                 "auto.create.topics.enable", "num.partitions", "message.max.bytes")
# Their table defaults, as DescribeConfigs shows them (strings).
_DEFAULTS = {name: str(CONFIG_DEFS[name].default) for name in _BROKER_KEYS}


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

    def describe(self, keys: list[str] | None) -> list[dict[str, Any]]:
        """DescribeConfigs entries of this broker (``keys`` None = all shown)."""
        listener_keys = sorted({*(k for k in self.per_broker if k.startswith("listener.name.")),
                                *(k for k in self.cluster_default if k.startswith("listener.name.")),
                                *(k for k in self._static if is_dynamic_key(k) and k.startswith("listener."))})
        names = list(keys) if keys else [*_BROKER_KEYS, *listener_keys, *_STATIC_SHOWN]
        out = []
        for name in names:
            dynamic = is_dynamic_key(name)
            if name in self.per_broker:
                value, source = self.per_broker[name], DYNAMIC_BROKER_CONFIG
            elif name in self.cluster_default:
                value, source = self.cluster_default[name], DYNAMIC_DEFAULT_BROKER_CONFIG
            elif name in self._static:
                value, source = self._static[name], STATIC_BROKER_CONFIG
            elif name in _DEFAULTS:
                value, source = _DEFAULTS[name], DEFAULT_CONFIG
            else:
                continue
            out.append({"name": name, "value": value, "read_only": not dynamic, "config_source": source,
                        "is_default": source == DEFAULT_CONFIG, "is_sensitive": False, "synonyms": [],
                        "config_type": 0, "documentation": None})
        return out


class ConfigApis:
    """The config request handlers."""

    def __init__(self, dynamic: DynamicBrokerConfig, dp: DataPlane) -> None:
        self.dynamic = dynamic
        self.dp = dp

    def _own(self, name: str) -> bool:
        return name in ("", str(self.dynamic.broker_id))

    def describe_configs(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """Broker settings (this broker or the default) and topic log configs."""
        del request, header
        results: list[dict[str, Any]] = []
        for r in body["resources"]:
            rtype, name = int(r["resource_type"]), str(r["resource_name"])
            keys = r.get("configuration_keys")
            res: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": rtype,
                                   "resource_name": name, "configs": []}
            if rtype == RESOURCE_BROKER and self._own(name):
                res["configs"] = self.dynamic.describe(keys)
            elif rtype == RESOURCE_TOPIC:
                if not self.dp.topic_exists(name):
                    res["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    res["error_message"] = f"Topic {name} not found"
                else:
                    cfg = self.dp.logs.topic_config(name).to_topic_configs()
                    overrides = self.dp.topic_overrides(name)
                    res["configs"] = [{"name": k, "value": v, "read_only": True,
                                       "config_source": DYNAMIC_TOPIC_CONFIG if k in overrides else DEFAULT_CONFIG,
                                       "is_default": k not in overrides, "is_sensitive": False, "synonyms": [],
                                       "config_type": 0, "documentation": None}
                                      for k, v in sorted(cfg.items()) if not keys or k in keys]
            else:
                res["error_code"] = ErrorCode.INVALID_REQUEST
                res["error_message"] = f"Unsupported resource type {rtype} / name {name!r} on broker " \
                                       f"{self.dynamic.broker_id}"
            results.append(res)
        return HandlerResult({"throttle_time_ms": 0, "results": results},
                             tuple(int(r["error_code"]) for r in results) or (ErrorCode.NONE,))

    def _alter(self, body: dict[str, Any], incremental: bool) -> HandlerResult:
        validate_only = bool(body.get("validate_only", False))
        responses: list[dict[str, Any]] = []
        for r in body["resources"]:
            rtype, name = int(r["resource_type"]), str(r["resource_name"])
            code, message = 0, None
            if rtype != RESOURCE_BROKER or not self._own(name):
                code, message = ErrorCode.INVALID_REQUEST, (f"Only the dynamic connection limits of broker "
                                                  f"{self.dynamic.broker_id} (or the default) can be altered here")
            else:
                configs = list(r.get("configs") or [])

                def change(layer: dict[str, str], configs: list[dict[str, Any]] = configs) -> None:
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
                    code, message = ErrorCode.INVALID_CONFIG, str(exc)
                except OSError as exc:
                    code, message = ErrorCode.INVALID_REQUEST, f"Could not persist the dynamic config: {exc}"
            responses.append({"error_code": code, "error_message": message, "resource_type": rtype,
                              "resource_name": name})
        return HandlerResult({"throttle_time_ms": 0, "responses": responses},
                             tuple(int(r["error_code"]) for r in responses) or (ErrorCode.NONE,))

    def incremental_alter_configs(self, request: Request, header: RequestHeader,
                                  body: dict[str, Any]) -> HandlerResult:
        """SET / DELETE per key (APPEND/SUBTRACT: INVALID_CONFIG, none of these keys is a list)."""
        del request, header
        return self._alter(body, incremental=True)

    def alter_configs(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """Legacy AlterConfigs: the given set replaces the resource's dynamic configs."""
        del request, header
        return self._alter(body, incremental=False)
