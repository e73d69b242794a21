"""Declarative message schemas: the Python form of Kafka's ``common/message/*.json``.

Theory of operation
-------------------
Every API is described by two :class:`Message` tables (request and response) that mirror the JSON
schema files of Apache Kafka (``clients/src/main/resources/common/message``): the same field names
(PascalCase), the same types (``int8`` … ``float64``, ``string``, ``bytes``, ``uuid``, ``records``,
``[]T`` arrays, nested structs), the same version ranges (``"3+"``, ``"0-4"``, ``"none"``),
nullable versions, defaults and tagged fields.  Nothing here encodes or decodes: :mod:`.codec`
compiles a table into encoder/decoder closures per version, once, and caches them.

Dict keys in decoded bodies are the snake_case of the JSON names (``PartitionIndex`` →
``partition_index``); the KIP-673 JSON view uses lowerCamelCase (``partitionIndex``), as Kafka's
generated ``*JsonConverter`` classes do.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_VERSION", "Field", "Message", "Versions", "f", "msg", "snake_case"]

#: Upper bound for open version ranges (``"3+"``); API versions are int16 on the wire.
MAX_VERSION = 0x7FFF

PRIMITIVES = frozenset(
    {"int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "bool", "string", "bytes", "uuid", "records"}
)

_SNAKE_OVERRIDES = {"isKRaftController": "is_kraft_controller"}
_SNAKE_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """``PartitionIndex`` → ``partition_index``; ``V0Host`` → ``v0_host``."""
    if name in _SNAKE_OVERRIDES:
        return _SNAKE_OVERRIDES[name]
    return _SNAKE_RE.sub("_", name).lower()


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; ``lo > hi`` means "none"."""

    lo: int
    hi: int

    @classmethod
    def parse(cls, spec: str | None) -> Versions:
        """Parse a JSON-schema version spec: ``"3+"``, ``"0-4"``, ``"5"``, ``"none"`` (None = none)."""
        if spec is None or spec == "none":
            return cls(1, 0)
        if spec.endswith("+"):
            return cls(int(spec[:-1]), MAX_VERSION)
        if "-" in spec:
            lo, hi = spec.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(spec), int(spec))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    @property
    def empty(self) -> bool:
        """True when no version is in the range."""
        return self.lo > self.hi


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message or nested struct (see the module docstring)."""

    name: str
    type: str
    versions: Versions
    nullable: Versions
    default: Any
    tag: int | None
    tagged: Versions
    fields: tuple[Field, ...]
    key: str
    json_key: str

    @property
    def is_array(self) -> bool:
        """True for ``[]T`` types."""
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        """``T`` for ``[]T``, else the type itself."""
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        """True when the (element) type is a nested struct."""
        return self.element_type not in PRIMITIVES


@dataclass(frozen=True, slots=True)
class Message:
    """A request or response schema of one API."""

    name: str
    api_key: int
    valid: Versions
    flexible: Versions
    fields: tuple[Field, ...]
    # compiled (encoder, decoder) per version, filled on first use by :func:`broker.protocol.codec.message_codec`
    codecs: dict[int, Any] = field(default_factory=dict, compare=False, repr=False, hash=False)


_INT_TYPES = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})


def _default_for(type_: str, spec: Any, nullable: Versions) -> Any:
    """The schema default of a field, as a Python value (Kafka's ``FieldSpec.defaultString`` rules)."""
    if type_.startswith("[]"):
        return None if spec == "null" else []
    if spec == "null":
        return None
    if type_ in _INT_TYPES:
        return 0 if spec is None else int(str(spec), 0)
    if type_ == "float64":
        return 0.0 if spec is None else float(spec)
    if type_ == "bool":
        return spec is True or str(spec).lower() == "true"
    if type_ == "string":
        return "" if spec is None else str(spec)
    if type_ == "bytes":
        return b""
    if type_ == "uuid":
        return uuid.UUID(int=0)
    if type_ == "records":
        # Kafka's generated default is null, but an omitted Fetch/Produce ``records`` must go out as an EMPTY
        # record set: librdkafka rejects a negative MessageSetSize ("invalid MessageSetSize").
        return b""
    # struct
    return None if spec == "null" else {}


def f(
    name: str,
    type_: str,
    versions: str,
    *,
    nullable: str | None = None,
    default: Any = None,
    tag: int | None = None,
    tagged: str | None = None,
    fields: tuple[Field, ...] | list[Field] = (),
    ignorable: bool = False,  # kept for parity with the JSON files; encoding ignores out-of-range fields anyway
) -> Field:
    """Build a :class:`Field` from JSON-schema style arguments."""
    del ignorable
    nv = Versions.parse(nullable)
    return Field(
        name=name,
        type=type_,
        versions=Versions.parse(versions),
        nullable=nv,
        default=_default_for(type_, default, nv),
        tag=tag,
        tagged=Versions.parse(tagged),
        fields=tuple(fields),
        key=snake_case(name),
        json_key=name[0].lower() + name[1:],
    )


def msg(name: str, api_key: int, valid: str, flexible: str, fields: list[Field] | tuple[Field, ...]) -> Message:
    """Build a :class:`Message` table."""
    return Message(
        name=name,
        api_key=api_key,
        valid=Versions.parse(valid),
        flexible=Versions.parse(flexible),
        fields=tuple(fields),
    )
