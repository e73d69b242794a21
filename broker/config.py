"""Broker configuration: loading, the parsed table, and Kafka's listener derivation.

Every key is declared once in :data:`broker.config_table.CONFIG_DEFS` (name, type, default, validator, doc,
dynamic?); :func:`load_config` reads a ``.properties`` file plus ``--override key=value`` pairs and
:class:`KafkaConfig` parses and validates the whole table, keeps the keys it does not know for Kafka's warning, and
derives the listeners, mirroring ``KafkaConfig.validateValues`` (Kafka 2.8):

* ``listeners`` (default ``PLAINTEXT://:9092``) and ``advertised.listeners`` (default: ``listeners``) are
  ``NAME://host:port`` lists; every name needs an entry in ``listener.security.protocol.map``; names and ports are
  distinct; advertised names are a subset of ``listeners`` and never advertise ``0.0.0.0``;
* ``inter.broker.listener.name`` and ``security.inter.broker.protocol`` are mutually exclusive; without either the
  inter-broker listener is ``PLAINTEXT``; it must be an advertised listener;
* ``control.plane.listener.name`` (KIP-291) must be in the protocol map, be an advertised listener and differ from
  the inter-broker listener; the data-plane listeners are all listeners except that one;
* ``listener.name.<listener lower-case>.max.connections`` overrides ``max.connections`` per listener (KIP-402).

Only PLAINTEXT works in the reference broker; a listener mapped to another protocol is refused with a clear message.
The subsystems read typed views of a loaded config (:mod:`broker.settings`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.config_table import (
    CONFIG_DEFS,
    LISTENER_PREFIXED,
    LOG_LEVELS,
    SECURITY_PROTOCOLS,
    SUPPORTED_SECURITY_PROTOCOLS,
)
from broker.configdef import INT_MAX, LONG_MAX, ConfigDef, ConfigException
from broker.properties import PropertiesSyntaxError, load_properties_file
from broker.settings import LogSettings

__all__ = [
    "CONFIG_DEFS",
    "INT_MAX",
    "LISTENER_PREFIXED",
    "LOG_LEVELS",
    "LONG_MAX",
    "ConfigDef",
    "ConfigException",
    "EndPoint",
    "KafkaConfig",
    "load_config",
    "parse_ip_overrides",
    "parse_overrides",
    "parse_value",
]

_LISTENER_RE = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$")
_LISTENER_PREFIX_RE = re.compile(r"^listener\.name\.([^.]+)\.(.+)$")


def parse_value(key: str, raw: Any, definition: str | None = None) -> Any:
    """Parse and validate one value of key ``key`` (or of table entry ``definition`` for prefixed keys).

    Raises:
        ConfigException: naming ``key``.
    """
    return CONFIG_DEFS[definition or key].parse(raw, key)


@dataclass(frozen=True, slots=True)
class EndPoint:
    """One listener: Kafka's ``EndPoint(host, port, listenerName, securityProtocol)``; host "" = all interfaces."""

    name: str
    host: str
    port: int
    security_protocol: str

    def connection_string(self) -> str:
        """``NAME://host:port`` as Kafka prints it."""
        return f"{self.name}://{self.host}:{self.port}"


def parse_protocol_map(value: str) -> dict[str, str]:
    """``listener.security.protocol.map``: ``NAME:PROTOCOL,...`` (names upper-cased as ``ListenerName.normalised``)."""
    result: dict[str, str] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        name, sep, proto = entry.partition(":")
        if not sep or not name.strip() or not proto.strip():
            raise ConfigException.invalid(
                "listener.security.protocol.map", value, "Map entry should be of form <key>:<value>"
            )
        proto = proto.strip().upper()
        if proto not in SECURITY_PROTOCOLS:
            raise ConfigException.invalid(
                "listener.security.protocol.map", value, f"No enum constant SecurityProtocol.{proto}"
            )
        result[name.strip().upper()] = proto
    return result


def parse_endpoints(key: str, items: Iterable[str], protocol_map: Mapping[str, str]) -> list[EndPoint]:
    """Kafka's ``CoreUtils.listenerListToEndPoints`` with its distinct-name/port checks."""
    endpoints: list[EndPoint] = []
    for item in items:
        m = _LISTENER_RE.match(item)
        if m is None:
            raise ConfigException.invalid(key, item, "Unable to parse " + item + " to a broker endpoint")
        name = m.group(1).upper()
        if name not in protocol_map:
            raise ConfigException.invalid(key, item, f"No security protocol defined for listener {name}")
        port = int(m.group(3))
        if not 0 <= port <= 65535:
            raise ConfigException.invalid(key, item, f"Invalid port {port}")
        endpoints.append(EndPoint(name, m.group(2), port, protocol_map[name]))
    names = [e.name for e in endpoints]
    if len(set(names)) != len(names):
        raise ConfigException.invalid(key, ",".join(items), "Each listener must have a different name")
    ports = [e.port for e in endpoints if e.port != 0]
    if len(set(ports)) != len(ports):
        raise ConfigException.invalid(key, ",".join(items), "Each listener must have a different port")
    return endpoints


_OVERRIDES = "max.connections.per.ip.overrides"


def parse_ip_overrides(value: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:limit,...`` (Kafka's ``getMap`` then ``toInt``)."""
    result: dict[str, int] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        host, sep, limit = entry.rpartition(":")
        if not sep or not host:
            raise ConfigException.invalid(_OVERRIDES, value, "Map entry should be of form <key>:<value>")
        try:
            n = int(limit)
        except ValueError:
            raise ConfigException.invalid(_OVERRIDES, value, f"{limit} is not an integer") from None
        if n < 0:
            raise ConfigException.invalid(_OVERRIDES, value, "limits must be at least 0")
        result[host.strip()] = n
    return result


class KafkaConfig:
    """Parsed, validated broker configuration with Kafka's derived listener values.

    Args:
        props: raw key -> value strings (file plus overrides). Unknown keys are kept in :attr:`unknown`
            (Kafka logs "The configuration 'x' was supplied but isn't a known config.").

    Raises:
        ConfigException: the first invalid value, with a message naming the key.
    """

    def __init__(self, props: Mapping[str, str]) -> None:
        self.originals: dict[str, str] = dict(props)
        self.values: dict[str, Any] = {}
        self.listener_overrides: dict[str, dict[str, Any]] = {}  # listener name -> {key: value}
        self.unknown: list[str] = []
        for key, raw in props.items():
            m = _LISTENER_PREFIX_RE.match(key)
            if key not in CONFIG_DEFS and m is not None and m.group(2) in LISTENER_PREFIXED:
                value = CONFIG_DEFS[m.group(2)].parse(raw, key)
                self.listener_overrides.setdefault(m.group(1).upper(), {})[m.group(2)] = value
            elif key not in CONFIG_DEFS:
                self.unknown.append(key)
        for name, d in CONFIG_DEFS.items():
            self.values[name] = d.parse(props.get(name, d.default))
        self._derive()

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    # -- derivation and validation (KafkaConfig.validateValues) ---------------------------------------------------
    def _derive(self) -> None:
        v = self.values
        if v["broker.id"] < 0:
            raise ConfigException.invalid("broker.id", v["broker.id"], "broker.id must be set to a value >= 0")
        self.protocol_map = parse_protocol_map(v["listener.security.protocol.map"])
        self.listeners = parse_endpoints("listeners", v["listeners"], self.protocol_map)
        if not self.listeners:
            raise ConfigException.invalid("listeners", "", "At least one listener must be configured")
        advertised = v["advertised.listeners"]
        self.advertised_listeners = (
            parse_endpoints("advertised.listeners", advertised, self.protocol_map)
            if advertised
            else list(self.listeners)
        )
        for ep in self.advertised_listeners:
            if ep.host == "0.0.0.0":
                raise ConfigException.invalid(
                    "advertised.listeners", ",".join(advertised or []),
                    "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.",
                )
        listener_names = [e.name for e in self.listeners]
        adv_names = [e.name for e in self.advertised_listeners]
        if not set(adv_names) <= set(listener_names):
            raise ConfigException(
                "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. "
                f"Found {','.join(adv_names)}. The valid options based on the current configuration are "
                f"{','.join(listener_names)}"
            )
        self.inter_broker_listener_name = self._derive_inter_broker(adv_names)
        self.control_plane_listener_name = self._derive_control_plane(adv_names)
        self.data_plane_listeners = [e for e in self.listeners if e.name != self.control_plane_listener_name]
        for name in self.listener_overrides:
            if name not in listener_names:
                raise ConfigException(
                    f"listener.name.{name.lower()}.max.connections is set for listener {name}, which is not in "
                    f"listeners ({','.join(listener_names)})"
                )
        for ep in self.listeners:
            if ep.security_protocol not in SUPPORTED_SECURITY_PROTOCOLS:
                raise ConfigException.invalid(
                    "listener.security.protocol.map", v["listener.security.protocol.map"],
                    f"listener {ep.name} uses security protocol {ep.security_protocol}, which is not supported by the "
                    "reference broker (only PLAINTEXT)",
                )
        self.max_connections_per_ip_overrides = parse_ip_overrides(v["max.connections.per.ip.overrides"])
        if v["max.connections.per.ip"] == 0 and not self.max_connections_per_ip_overrides:
            raise ConfigException.invalid(
                "max.connections.per.ip", 0,
                "max.connections.per.ip.overrides must be set if max.connections.per.ip is set to zero",
            )
        self.log_dirs: list[str] = list(LogSettings.from_values(v).log_dirs)
        base = Path(self.log_dirs[0]).parent
        self.kafka_logs_dir = Path(v["kafka.logs.dir"] or base / "logs")
        self.metrics_dir = Path(v["metrics.dir"] or base / "metrics")
        v["kafka.logs.dir"], v["metrics.dir"] = str(self.kafka_logs_dir), str(self.metrics_dir)

    def _derive_inter_broker(self, adv_names: list[str]) -> str:
        name = self.values["inter.broker.listener.name"]
        proto = self.values["security.inter.broker.protocol"]
        if name is not None and proto is not None:
            raise ConfigException(
                "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."
            )
        if name is not None:
            name = name.upper()
            if name not in self.protocol_map:
                raise ConfigException(
                    f"Listener with name {name} defined in inter.broker.listener.name not found in "
                    "listener.security.protocol.map."
                )
        else:
            name = proto or "PLAINTEXT"  # ListenerName.forSecurityProtocol
        if name not in adv_names:
            raise ConfigException(
                "inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options "
                f"based on currently configured listeners are {','.join(adv_names)}"
            )
        return str(name)

    def _derive_control_plane(self, adv_names: list[str]) -> str | None:
        name = self.values["control.plane.listener.name"]
        if name is None:
            return None
        name = name.upper()
        if name not in self.protocol_map:
            raise ConfigException(
                f"Listener with {name} defined in control.plane.listener.name not found in "
                "listener.security.protocol.map."
            )
        if name not in adv_names:
            raise ConfigException(
                "control.plane.listener.name must be a listener name defined in advertised.listeners. The valid "
                f"options based on currently configured listeners are {','.join(adv_names)}"
            )
        if name == self.inter_broker_listener_name:
            raise ConfigException(
                "control.plane.listener.name, when defined, should have a different value from the inter broker "
                f"listener name. Currently they both have the value {name}"
            )
        return str(name)

    # -- typed accessors ------------------------------------------------------------------------------------------
    @property
    def broker_id(self) -> int:
        return int(self.values["broker.id"])

    def listener(self, name: str) -> EndPoint:
        """The bound-side endpoint of listener ``name``."""
        for ep in self.listeners:
            if ep.name == name:
                return ep
        raise KeyError(name)

    def max_connections_for(self, listener: str) -> int:
        """``listener.name.<l>.max.connections`` or the broker-wide ``max.connections``."""
        return int(self.listener_overrides.get(listener, {}).get("max.connections", self.values["max.connections"]))

    def describe(self) -> list[tuple[str, Any]]:
        """(key, value) pairs in table order, as Kafka logs ``KafkaConfig values:`` at start-up."""
        return sorted(self.values.items())


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """``--override key=value`` arguments, as ``kafka-server-start.sh --override``."""
    result: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigException(f"Invalid override {item!r}: expected key=value")
        result[key.strip()] = value
    return result


def load_config(path: str | Path | None, overrides: Iterable[str] = ()) -> KafkaConfig:
    """Load a properties file (optional) plus ``key=value`` overrides and validate them.

    Raises:
        ConfigException: unreadable file, syntax error or invalid value.
    """
    props: dict[str, str] = {}
    if path is not None:
        try:
            props = load_properties_file(path)
        except OSError as e:
            raise ConfigException(f"Cannot read configuration file {path}: {e.strerror or e}") from None
        except PropertiesSyntaxError as e:
            raise ConfigException(f"Malformed configuration file {path}: {e}") from None
    props.update(parse_overrides(overrides))
    return KafkaConfig(props)
