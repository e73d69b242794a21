"""DescribeConfigs entries as Kafka 3.9's ``ConfigHelper`` builds them (pure: values in, response entries out).

Sources
-------
A broker setting's value comes from the first layer that holds it: the dynamic per-broker configs
(DYNAMIC_BROKER_CONFIG), the dynamic cluster-wide default (DYNAMIC_DEFAULT_BROKER_CONFIG), ``server.properties``
(STATIC_BROKER_CONFIG), the table's default (DEFAULT_CONFIG). A topic config's value is its override
(TOPIC_CONFIG, wire value 1) or else its broker synonym's (``retention.ms`` defaults to ``log.retention.ms``).

Synonyms
--------
Kafka's ``configSynonyms``: every layer in the order above, and within a layer every synonym name
(``log.retention.ms``, ``log.retention.minutes``, ``log.retention.hours``; ``log.roll.ms``, ``log.roll.hours``;
``log.flush.interval.ms``, ``log.flush.scheduler.interval.ms``; ``listener.name.<l>.max.connections``,
``max.connections``) that holds a value; then every entry before the first one named as the described key is
dropped. So ``retention.ms`` of a topic without override, on a broker that sets only ``log.retention.hours``, has
no synonym and the source DEFAULT_CONFIG, exactly as Kafka answers. A topic override heads the topic's list. The
source of an entry is its first synonym's (DEFAULT_CONFIG when there is none); synonyms are sent only when asked
for (``include_synonyms``).

``read_only``: a broker key is read-only unless the broker can change it live (:func:`broker.apis.configs`'s dynamic
keys); a topic config the log applies never is. No key here is a password: ``is_sensitive`` is always false.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from broker.config_table import CONFIG_DEFS
from broker.log.config import TOPIC_CONFIG_DEFS

__all__ = ["BrokerLayers", "ConfigSource", "broker_entry", "java_string", "topic_entry"]


class ConfigSource(IntEnum):
    """Kafka's ``DescribeConfigsResponse.ConfigSource`` wire ids."""

    TOPIC_CONFIG = 1  # DYNAMIC_TOPIC_CONFIG
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


# Kafka's DescribeConfigsResponse.ConfigType ids of the table's types (DescribeConfigs v3+).
CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "long": 5, "list": 7}
# Kafka's DynamicBrokerConfig.brokerConfigSynonyms groups: keys whose values stand in for one another.
SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
)
_LISTENER_PREFIX = "listener.name."


def java_string(value: Any) -> str | None:
    """A table value as Kafka's ``ConfigDef.convertToString`` writes it (booleans lower-case, lists comma-joined)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def synonym_names(name: str) -> tuple[str, ...]:
    """Kafka's ``brokerConfigSynonyms(name, matchListenerOverride = true)``."""
    for group in SYNONYM_GROUPS:
        if name in group:
            return group
    if name.startswith(_LISTENER_PREFIX):
        _listener, _, base = name[len(_LISTENER_PREFIX):].partition(".")
        if base:
            return (name, base)
    return (name,)


@dataclass(frozen=True)
class BrokerLayers:
    """The broker's values by source, as raw strings (see the module docstring)."""

    per_broker: Mapping[str, str]
    cluster_default: Mapping[str, str]
    static: Mapping[str, str]

    @property
    def defaults(self) -> dict[str, str]:
        """The table's non-null defaults."""
        return {name: str(java_string(d.default)) for name, d in CONFIG_DEFS.items() if d.default is not None}

    def ordered(self) -> tuple[tuple[Mapping[str, str], ConfigSource], ...]:
        """The layers, most specific first."""
        return ((self.per_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
                (self.cluster_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                (self.static, ConfigSource.STATIC_BROKER_CONFIG), (self.defaults, ConfigSource.DEFAULT_CONFIG))

    def value(self, name: str) -> str | None:
        """The value in force of broker key ``name`` (None: unset, no default)."""
        for layer, _source in self.ordered():
            if name in layer:
                return layer[name]
        return None

    def synonyms(self, name: str) -> list[dict[str, Any]]:
        """Kafka's ``configSynonyms`` of broker key ``name``."""
        names = synonym_names(name)
        found = [{"name": n, "value": layer[n], "source": int(source)}
                 for layer, source in self.ordered() for n in names if n in layer]
        while found and found[0]["name"] != name:
            found.pop(0)
        return found


def _entry(name: str, value: str | None, read_only: bool, synonyms: list[dict[str, Any]], type_: str | None,
           include_synonyms: bool, doc: str | None) -> dict[str, Any]:
    source = synonyms[0]["source"] if synonyms else int(ConfigSource.DEFAULT_CONFIG)
    return {"name": name, "value": value, "read_only": read_only, "config_source": source,
            "is_default": source == ConfigSource.DEFAULT_CONFIG, "is_sensitive": False,
            "synonyms": synonyms if include_synonyms else [], "config_type": CONFIG_TYPES.get(type_ or "", 0),
            "documentation": doc}


def broker_entry(name: str, layers: BrokerLayers, *, read_only: bool, per_broker: bool = True,
                 include_synonyms: bool = False, include_documentation: bool = False) -> dict[str, Any]:
    """One broker key's entry (``per_broker`` False: the cluster-default resource, whose synonyms are only the
    dynamic default's)."""
    definition = CONFIG_DEFS.get(synonym_names(name)[-1])
    synonyms = [s for s in layers.synonyms(name)
                if per_broker or s["source"] == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
    doc = definition.doc if include_documentation and definition is not None else None
    return _entry(name, layers.value(name), read_only, synonyms, definition.type if definition else None,
                  include_synonyms, doc)


def topic_entry(name: str, value: str, overrides: Mapping[str, str], layers: BrokerLayers, *,
                include_synonyms: bool = False, include_documentation: bool = False) -> dict[str, Any]:
    """One topic config's entry: ``value`` in force, the topic's ``overrides``, the broker's layers."""
    definition = TOPIC_CONFIG_DEFS[name]
    synonyms = layers.synonyms(definition.broker_key)
    if name in overrides:
        synonyms.insert(0, {"name": name, "value": value, "source": int(ConfigSource.TOPIC_CONFIG)})
    broker_def = CONFIG_DEFS.get(definition.broker_key)
    doc = broker_def.doc if include_documentation and broker_def is not None else None
    return _entry(name, value, False, synonyms, definition.type, include_synonyms, doc)
