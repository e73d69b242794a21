"""The building blocks of the broker's configuration table: one key's definition, its parsing and its validators.

Mirrors Kafka's ``ConfigDef``: a key has a name, a type (``int``, ``long``, ``string``, ``list``, ``boolean``), a
default, an optional validator, a doc string and whether it is updatable at runtime; a bad value raises
:class:`ConfigException` with Kafka's message ``Invalid value <v> for configuration <key>: <reason>``. The table itself
is :data:`broker.config_table.CONFIG_DEFS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "INT_MAX",
    "LONG_MAX",
    "SECTIONS",
    "ConfigDef",
    "ConfigException",
    "Validator",
    "at_least",
    "one_of",
    "parse_typed",
]

INT_MAX = 2**31 - 1  # Java Int.MaxValue: Kafka's "unlimited" for connection limits
LONG_MAX = 2**63 - 1  # Java Long.MaxValue: Kafka's "never" for flush intervals
TYPES = ("int", "long", "string", "list", "boolean")
# The table's sections, in the order the documentation lists them.
SECTIONS = ("broker", "network", "log", "group", "replication", "planewatch")


class ConfigException(ValueError):
    """Kafka's ``org.apache.kafka.common.config.ConfigException``: the message names the offending key."""

    @classmethod
    def invalid(cls, name: str, value: object, reason: str) -> ConfigException:
        return cls(f"Invalid value {value} for configuration {name}: {reason}")


Validator = Callable[[str, Any], None]


def at_least(minimum: int) -> Validator:
    """Kafka's ``ConfigDef.Range.atLeast``."""

    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise ConfigException.invalid(name, value, f"Value must be at least {minimum}")

    return check


def one_of(*options: str) -> Validator:
    """Kafka's ``ConfigDef.ValidString.in``."""

    def check(name: str, value: Any) -> None:
        if value not in options:
            raise ConfigException.invalid(name, value, f"String must be one of: {', '.join(options)}")

    return check


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One configuration key: Kafka's ``ConfigDef.define(name, type, default, validator, importance, doc)``.

    ``section`` is one of :data:`SECTIONS`; ``dynamic`` keys can be changed at runtime (IncrementalAlterConfigs).
    """

    name: str
    type: str
    default: Any
    doc: str
    validator: Validator | None = None
    dynamic: bool = False
    section: str = "broker"

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"configuration {self.name}: unknown type {self.type}")
        if self.section not in SECTIONS:
            raise ValueError(f"configuration {self.name}: unknown section {self.section}")

    def parse(self, raw: Any, name: str | None = None) -> Any:
        """``raw`` parsed and validated (None stays None); errors name ``name`` (default: this key).

        Raises:
            ConfigException: not of the key's type, or refused by its validator.
        """
        key = name or self.name
        value = parse_typed(key, self.type, raw)
        if value is not None and self.validator is not None:
            self.validator(key, value)
        return value


def parse_typed(name: str, type_: str, raw: Any) -> Any:
    """``raw`` (a properties string, or an already typed value) as a value of ``type_``; None stays None.

    Raises:
        ConfigException: naming ``name``, as Kafka's ``ConfigDef.parseType``.
    """
    if raw is None:
        return None
    if type_ in ("int", "long"):
        if isinstance(raw, bool):
            raise ConfigException.invalid(name, raw, f"Not a number of type {type_.upper()}")
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise ConfigException.invalid(name, raw, f"Not a number of type {type_.upper()}") from None
        limit = INT_MAX if type_ == "int" else LONG_MAX
        if not -limit - 1 <= value <= limit:
            raise ConfigException.invalid(name, raw, f"Not a number of type {type_.upper()}")
        return value
    if type_ == "boolean":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text not in ("true", "false"):
            raise ConfigException.invalid(name, raw, "Expected value to be either true or false")
        return text == "true"
    if type_ == "list":
        if isinstance(raw, list):
            return [str(item).strip() for item in raw if str(item).strip()]
        return [] if not str(raw).strip() else [item.strip() for item in str(raw).split(",") if item.strip()]
    return str(raw).strip()
