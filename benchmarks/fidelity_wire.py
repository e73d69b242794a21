"""An independent Kafka wire client for the fidelity report, driven by Apache Kafka's own message schemas.

It shares no code with ``broker/`` (a bug in the reference broker's codec cannot hide behind it): the message
layouts are read at run time from the JSON schema files Apache Kafka ships inside ``kafka-clients-<version>.jar``
(``common/message/*.json``, the files Kafka generates its own serializers from), and one small generic codec
encodes requests and decodes responses from them. The framing and the blocking connection follow
``../shared/checks/kwire.py`` (the outside check's client: int32 size prefix, request header v1/v2, correlation
check), extended here to flexible versions (compact strings and arrays, tagged fields) so every version of every
API can be sent.

Body conventions: a body is a dict keyed by the schema's field names (``"TopicStates"``, ``"PartitionIndex"``);
fields missing from a request take the schema default; a decoded body holds exactly the fields present in that
version (tagged fields only when sent), unknown tagged fields under ``"_tagged"`` as ``{tag: bytes}``.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ClosedByBroker", "Connection", "KafkaSchemas", "Message", "record_batch"]

API_VERSIONS_KEY = 18
# Kafka's request header v0 is used by ControlledShutdown v0 only; every other request uses v1 (v2 when flexible).
CONTROLLED_SHUTDOWN_KEY = 7
# A response larger than this is not a fidelity probe's answer: refuse it rather than allocate it.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)
_I8, _I16, _U16, _I32, _U32, _I64, _F64 = (struct.Struct(f) for f in (">b", ">h", ">H", ">i", ">I", ">q", ">d"))


class ClosedByBroker(ConnectionError):
    """The broker closed the connection instead of answering."""


# ------------------------------------------------------------------------------------------------------ versions
@dataclass(frozen=True, slots=True)
class Versions:
    """A version range of Kafka's schema language: ``"0+"``, ``"1-4"``, ``"3"``, ``"none"``."""

    lo: int
    hi: int

    @classmethod
    def parse(cls, text: str | None, default: Versions | None = None) -> Versions:
        if text is None:
            return default if default is not None else cls(0, -1)
        text = text.strip()
        if text == "none":
            return cls(0, -1)
        if text.endswith("+"):
            return cls(int(text[:-1]), 1 << 15)
        if "-" in text:
            lo, hi = text.split("-")
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a schema: its name, type (``int32``, ``[]int32``, ``[]SomeStruct``, ``SomeStruct``) and versions."""

    name: str
    type: str
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    flexible: Versions | None  # a field-level override (RequestHeader's ClientId is never compact)
    default: Any
    fields: tuple[Field, ...]  # the struct's fields (inline or from commonStructs)

    @property
    def element(self) -> str:
        return self.type[2:] if self.type.startswith("[]") else self.type


@dataclass(frozen=True, slots=True)
class Message:
    """One message schema (a request, response or header)."""

    name: str
    api_key: int | None
    valid: Versions
    flexible: Versions
    fields: tuple[Field, ...]


_PRIMITIVES = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "bool", "string", "bytes",
                         "records", "uuid"})


def _default(ftype: str, text: Any, nullable: bool) -> Any:
    if ftype.startswith("[]"):
        return []
    if text is None:
        return {"bool": False, "string": "", "uuid": uuid.UUID(int=0), "bytes": b"", "records": None}.get(ftype, 0)
    if text == "null":
        return None
    if ftype == "bool":
        return str(text).lower() == "true"
    if ftype in ("string",):
        return str(text)
    if ftype in ("float64",):
        return float(text)
    if ftype in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return int(str(text), 0)
    return None if nullable else text


def _field(spec: dict[str, Any], structs: dict[str, list[dict[str, Any]]]) -> Field:
    ftype = spec["type"]
    versions = Versions.parse(spec.get("versions"))
    nested = spec.get("fields")
    if nested is None and ftype.removeprefix("[]") not in _PRIMITIVES:
        nested = structs.get(ftype.removeprefix("[]"), [])
    nullable = Versions.parse(spec.get("nullableVersions"))
    return Field(
        name=spec["name"], type=ftype, versions=versions, nullable=nullable,
        tagged=Versions.parse(spec.get("taggedVersions")), tag=spec.get("tag"),
        flexible=Versions.parse(spec["flexibleVersions"]) if "flexibleVersions" in spec else None,
        default=_default(ftype, spec.get("default"), nullable.lo <= nullable.hi),
        fields=tuple(_field(f, structs) for f in nested or ()))


def parse_schema(text: str) -> Message:
    """One of Kafka's ``common/message/*.json`` files (with its ``//`` comment lines) as a :class:`Message`."""
    spec = json.loads(_COMMENT.sub("", text))
    structs = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
    return Message(spec["name"], spec.get("apiKey"), Versions.parse(spec.get("validVersions")),
                   Versions.parse(spec.get("flexibleVersions")), tuple(_field(f, structs) for f in spec["fields"]))


class KafkaSchemas:
    """The request/response schemas of one Kafka release, read from its ``kafka-clients`` jar."""

    def __init__(self, messages: dict[str, Message]) -> None:
        self.messages = messages
        self._by_key = {(m.api_key, m.name.endswith("Request")): m for m in messages.values() if m.api_key is not None}

    @classmethod
    def from_jar(cls, jar: Path) -> KafkaSchemas:
        messages: dict[str, Message] = {}
        with zipfile.ZipFile(jar) as zf:
            for name in zf.namelist():
                if name.startswith("common/message/") and name.endswith(".json"):
                    message = parse_schema(zf.read(name).decode("utf-8"))
                    messages[message.name] = message
        return cls(messages)

    def request(self, api_key: int) -> Message:
        return self._by_key[(api_key, True)]

    def response(self, api_key: int) -> Message:
        return self._by_key[(api_key, False)]

    def api_name(self, api_key: int) -> str:
        return self.request(api_key).name.removesuffix("Request")


# ------------------------------------------------------------------------------------------------------ codec
def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _varint(value: int) -> bytes:
    return _uvarint((value << 1) ^ (value >> 63))


class _Writer:
    def __init__(self, flexible: bool) -> None:
        self.out = bytearray()
        self.flexible = flexible

    def length(self, n: int | None, *, compact: bool) -> None:
        if compact:
            self.out += _uvarint(0 if n is None else n + 1)
        elif n is None:
            self.out += _I32.pack(-1)
        else:
            self.out += _I32.pack(n)


def _encode_value(w: _Writer, field: Field, value: Any, version: int, flexible: bool) -> None:
    compact = flexible if field.flexible is None else version in field.flexible
    ftype = field.type
    if ftype.startswith("[]"):
        if value is None:
            w.length(None, compact=compact)
            return
        w.length(len(value), compact=compact)
        element = field.element
        for item in value:
            if element in _PRIMITIVES:
                _encode_primitive(w, element, item, compact)
            else:
                _encode_struct(w, field.fields, item, version, flexible)
        return
    if ftype in _PRIMITIVES:
        _encode_primitive(w, ftype, value, compact)
    else:
        _encode_struct(w, field.fields, value, version, flexible)


def _encode_primitive(w: _Writer, ftype: str, value: Any, compact: bool) -> None:
    out = w.out
    if ftype == "int8":
        out += _I8.pack(value)
    elif ftype == "int16":
        out += _I16.pack(value)
    elif ftype == "uint16":
        out += _U16.pack(value)
    elif ftype == "int32":
        out += _I32.pack(value)
    elif ftype == "uint32":
        out += _U32.pack(value)
    elif ftype == "int64":
        out += _I64.pack(value)
    elif ftype == "float64":
        out += _F64.pack(value)
    elif ftype == "bool":
        out.append(1 if value else 0)
    elif ftype == "uuid":
        out += (value or uuid.UUID(int=0)).bytes
    elif ftype == "string":
        if value is None:
            out += _uvarint(0) if compact else _I16.pack(-1)
        else:
            raw = value.encode("utf-8")
            out += (_uvarint(len(raw) + 1) if compact else _I16.pack(len(raw))) + raw
    else:  # bytes, records
        if value is None:
            w.length(None, compact=compact)
        else:
            w.length(len(value), compact=compact)
            out += bytes(value)


def _encode_struct(w: _Writer, fields: tuple[Field, ...], values: dict[str, Any], version: int,
                   flexible: bool) -> None:
    tagged: list[tuple[int, bytes]] = []
    for field in fields:
        if version not in field.versions:
            continue
        if flexible and version in field.tagged:
            if field.name in values and field.tag is not None:
                sub = _Writer(flexible)
                _encode_value(sub, field, values[field.name], version, flexible)
                tagged.append((field.tag, bytes(sub.out)))
            continue
        _encode_value(w, field, values.get(field.name, field.default), version, flexible)
    if flexible:
        tagged += sorted((int(t), bytes(b)) for t, b in values.get("_tagged", {}).items())
        w.out += _uvarint(len(tagged))
        for tag, raw in sorted(tagged):
            w.out += _uvarint(tag) + _uvarint(len(raw)) + raw


class _Reader:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"short read: need {n} bytes at {self.pos}, have {len(self.data) - self.pos}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, st: struct.Struct) -> Any:
        return st.unpack(self.take(st.size))[0]

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def length(self, compact: bool) -> int | None:
        n = self.uvarint() - 1 if compact else self.unpack(_I32)
        return None if n < 0 else n


def _decode_value(r: _Reader, field: Field, version: int, flexible: bool) -> Any:
    compact = flexible if field.flexible is None else version in field.flexible
    if field.type.startswith("[]"):
        n = r.length(compact)
        if n is None:
            return None
        element = field.element
        if element in _PRIMITIVES:
            return [_decode_primitive(r, element, compact) for _ in range(n)]
        return [_decode_struct(r, field.fields, version, flexible) for _ in range(n)]
    if field.type in _PRIMITIVES:
        return _decode_primitive(r, field.type, compact)
    return _decode_struct(r, field.fields, version, flexible)


def _decode_primitive(r: _Reader, ftype: str, compact: bool) -> Any:
    if ftype == "int8":
        return r.unpack(_I8)
    if ftype == "int16":
        return r.unpack(_I16)
    if ftype == "uint16":
        return r.unpack(_U16)
    if ftype == "int32":
        return r.unpack(_I32)
    if ftype == "uint32":
        return r.unpack(_U32)
    if ftype == "int64":
        return r.unpack(_I64)
    if ftype == "float64":
        return r.unpack(_F64)
    if ftype == "bool":
        return r.take(1) != b"\x00"
    if ftype == "uuid":
        return uuid.UUID(bytes=r.take(16))
    if ftype == "string":
        n = r.uvarint() - 1 if compact else r.unpack(_I16)
        return None if n < 0 else r.take(n).decode("utf-8")
    n = r.length(compact)
    return None if n is None else r.take(n)


def _decode_struct(r: _Reader, fields: tuple[Field, ...], version: int, flexible: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    by_tag: dict[int, Field] = {}
    for field in fields:
        if version not in field.versions:
            continue
        if flexible and version in field.tagged:
            if field.tag is not None:
                by_tag[field.tag] = field
            continue
        out[field.name] = _decode_value(r, field, version, flexible)
    if flexible:
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            raw = r.take(size)
            known = by_tag.get(tag)
            if known is None:
                out.setdefault("_tagged", {})[tag] = raw
            else:
                out[known.name] = _decode_value(_Reader(raw), known, version, flexible)
    return out


def encode_body(message: Message, version: int, body: dict[str, Any]) -> bytes:
    """A request or response body in ``version`` (fields missing from ``body`` take the schema default)."""
    w = _Writer(version in message.flexible)
    _encode_struct(w, message.fields, body, version, version in message.flexible)
    return bytes(w.out)


def decode_body(message: Message, version: int, data: bytes, pos: int = 0) -> tuple[dict[str, Any], int]:
    """(body, position after it) of ``data[pos:]`` read as ``message`` in ``version``."""
    r = _Reader(data, pos)
    body = _decode_struct(r, message.fields, version, version in message.flexible)
    return body, r.pos


# ------------------------------------------------------------------------------------------------------ records
def record_batch(values: list[bytes], timestamp_ms: int) -> bytes:
    """A magic-2 record batch of ``values`` (no keys, no headers, no compression, no producer id).

    The layout of ``DefaultRecordBatch``: base offset, length, partition leader epoch, magic, CRC-32C of everything
    from the attributes on, attributes, last offset delta, first/max timestamp, producer id/epoch, base sequence,
    record count, records (zig-zag varints).
    """
    import crc32c

    records = bytearray()
    for i, value in enumerate(values):
        body = b"\x00" + _varint(0) + _varint(i) + _varint(-1) + _varint(len(value)) + value + _varint(0)
        records += _varint(len(body)) + body
    after_crc = (_I16.pack(0) + _I32.pack(len(values) - 1) + _I64.pack(timestamp_ms) + _I64.pack(timestamp_ms)
                 + _I64.pack(-1) + _I16.pack(-1) + _I32.pack(-1) + _I32.pack(len(values)) + bytes(records))
    crc = crc32c.crc32c(after_crc)
    tail = _I32.pack(-1) + b"\x02" + _U32.pack(crc) + after_crc
    return _I64.pack(0) + _I32.pack(len(tail)) + tail


# ------------------------------------------------------------------------------------------------------ connection
def request_header_version(api_key: int, version: int, request: Message) -> int:
    """0 for ControlledShutdown v0, 2 for flexible versions, else 1 (Kafka's ``requestHeaderVersion``)."""
    if api_key == CONTROLLED_SHUTDOWN_KEY and version == 0:
        return 0
    return 2 if version in request.flexible else 1


def response_header_version(api_key: int, version: int, response: Message) -> int:
    """1 for flexible versions except ApiVersions (always 0, KIP-511), else 0."""
    return 1 if version in response.flexible and api_key != API_VERSIONS_KEY else 0


class Connection:
    """One blocking connection to a broker listener; one request in flight."""

    def __init__(self, schemas: KafkaSchemas, host: str, port: int, client_id: str = "fidelity",
                 timeout_s: float = 15.0) -> None:
        self.schemas = schemas
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.client_id = client_id
        self.correlation_id = 0

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def frame(self, api_key: int, version: int, body: dict[str, Any]) -> bytes:
        """The size-prefixed request; the request body is encoded with the request schema of ``api_key``."""
        self.correlation_id += 1
        request = self.schemas.request(api_key)
        header = _I16.pack(api_key) + _I16.pack(version) + _I32.pack(self.correlation_id)
        hv = request_header_version(api_key, version, request)
        if hv >= 1:
            raw = self.client_id.encode()
            header += _I16.pack(len(raw)) + raw
        if hv >= 2:
            header += _uvarint(0)
        payload = header + encode_body(request, version, body)
        return _I32.pack(len(payload)) + payload

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        """The next response frame (without its size); :class:`ClosedByBroker` when the broker closed instead."""
        size = _I32.unpack(self._exactly(4))[0]
        if not 0 <= size <= MAX_RESPONSE_BYTES:
            raise ValueError(f"response size {size} out of range")
        return self._exactly(size)

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """Send one request, return (decoded response body, trailing bytes left after it)."""
        self.sock.sendall(self.frame(api_key, version, body))
        return self.decode(api_key, version, self.read_frame())

    def decode(self, api_key: int, version: int, frame: bytes,
               body_version: int | None = None) -> tuple[dict[str, Any], int]:
        """(body, trailing bytes) of a response frame to this connection's last request."""
        response = self.schemas.response(api_key)
        r = _Reader(frame)
        correlation_id = r.unpack(_I32)
        if correlation_id != self.correlation_id:
            raise ValueError(f"correlation id {correlation_id} != {self.correlation_id}")
        if response_header_version(api_key, version, response) >= 1:
            for _ in range(r.uvarint()):
                r.uvarint()
                r.take(r.uvarint())
        body, end = decode_body(response, version if body_version is None else body_version, frame, r.pos)
        return body, len(frame) - end

    def _exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except ConnectionResetError as exc:
                raise ClosedByBroker("connection reset by the broker") from exc
            if not chunk:
                raise ClosedByBroker("connection closed by the broker")
            buf += chunk
        return bytes(buf)
