"""Hypothesis strategies of the fuzz tests: wire bodies built from the codec's own schema tables, byte mutations.

A body strategy follows a :class:`~broker.protocol.schema.Message` field by field for one version, exactly as the
decoder shapes its result (snake_case keys, only the fields of that version, tagged fields of flexible versions as
named keys, unknown tags under ``_tagged_fields``), so ``decode(encode(body)) == body`` is checkable as is.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from hypothesis import strategies as st

from broker.protocol.codec import TAGGED_KEY
from broker.protocol.schema import Field, Message

__all__ = ["body_of", "mutated", "wire_lengths"]

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
# Arrays and strings stay small: the codec's size handling is fuzzed by the mutations, not by big valid bodies.
_MAX_ELEMENTS = 3
_MAX_CHARS = 12
_MAX_BYTES = 24


def _scalar(type_: str) -> st.SearchStrategy[Any]:
    if type_ in _INT_RANGES:
        lo, hi = _INT_RANGES[type_]
        return st.integers(lo, hi)
    if type_ == "float64":
        return st.floats(allow_nan=False)
    if type_ == "bool":
        return st.booleans()
    if type_ == "string":
        return st.text(max_size=_MAX_CHARS)
    if type_ in ("bytes", "records"):
        return st.binary(max_size=_MAX_BYTES)
    if type_ == "uuid":
        return st.one_of(st.just(uuid.UUID(int=0)), st.uuids())
    raise AssertionError(f"no strategy for {type_}")


def _known_tags(fields: tuple[Field, ...], version: int) -> set[int]:
    return {f.tag for f in fields if version in f.versions and f.tag is not None and version in f.tagged}


def _struct(fields: tuple[Field, ...], version: int, flex: bool) -> st.SearchStrategy[dict[str, Any]]:
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for fld in fields:
        if version not in fld.versions:
            continue
        if fld.tag is not None and version in fld.tagged and not flex:
            continue  # a tagged field exists only in flexible versions
        parts[fld.key] = _field(fld, version, flex)
    body = st.fixed_dictionaries(parts)
    if not flex:
        return body
    taken = _known_tags(fields, version)
    unknown = st.dictionaries(st.integers(0, 300).filter(lambda t: t not in taken), st.binary(max_size=8),
                              max_size=2)
    return st.tuples(body, unknown).map(lambda bu: {**bu[0], TAGGED_KEY: bu[1]} if bu[1] else bu[0])


def _field(fld: Field, version: int, flex: bool) -> st.SearchStrategy[Any]:
    nullable = version in fld.nullable
    et = fld.element_type
    if fld.is_array:
        elem = _struct(fld.fields, version, flex) if fld.is_struct else _scalar(et)
        value: st.SearchStrategy[Any] = st.lists(elem, max_size=_MAX_ELEMENTS)
    elif fld.is_struct:
        value = _struct(fld.fields, version, flex)
    else:
        value = _scalar(et)
    # A string element of an array is never null; the array itself, a struct, a string or bytes may be.
    return st.one_of(st.none(), value) if nullable else value


def body_of(message: Message, version: int) -> st.SearchStrategy[dict[str, Any]]:
    """A valid body of ``message`` at ``version``, in the decoder's own shape."""
    return _struct(message.fields, version, version in message.flexible)


# ------------------------------------------------------------------------------------------------ mutations

#: Length fields as they appear on the wire, with the values that stress a decoder: the largest int32/int16, a
#: negative count other than the null marker, 2^31 as an unsigned varint (5 bytes), and uint32's top.
wire_lengths = st.sampled_from([
    struct.pack(">i", 2**31 - 1),
    struct.pack(">i", -2),
    struct.pack(">i", 2**24),
    struct.pack(">h", 2**15 - 1),
    struct.pack(">h", -2),
    b"\x80\x80\x80\x80\x08",  # uvarint 2^31
    b"\xff\xff\xff\xff\x0f",  # uvarint 2^32 - 1
    b"\xff\xff\xff\xff\xff",  # uvarint longer than 5 bytes
    b"\xff\x7f",  # uvarint 16383
])


@st.composite
def _mutation(draw: st.DrawFn, data: bytes) -> bytes:
    kind = draw(st.sampled_from(["flip", "truncate", "extend", "length", "insert", "delete", "duplicate"]))
    n = len(data)
    at = draw(st.integers(0, n))
    if kind == "flip" and n:
        i = min(at, n - 1)
        return data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1:]
    if kind == "truncate":
        return data[:at]
    if kind == "extend":
        return data + draw(st.binary(min_size=1, max_size=32))
    if kind == "length":
        return data[:at] + draw(wire_lengths) + data[at + 5:]
    if kind == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    if kind == "delete":
        return data[:at] + data[at + draw(st.integers(1, 8)):]
    if kind == "duplicate":  # a repeated region: a count that now matches more elements, a section twice
        end = draw(st.integers(at, min(n, at + 16)))
        return data[:end] + data[at:end] * draw(st.integers(1, 4)) + data[end:]
    return data


@st.composite
def mutated(draw: st.DrawFn, data: bytes, keep: int = 0) -> bytes:
    """``data`` after one to three mutations (flips, truncation, extension, overwritten lengths, insertions,
    deletions, repeats); the first ``keep`` bytes stay as they are."""
    head, rest = data[:keep], data[keep:]
    for _ in range(draw(st.integers(1, 3))):
        rest = draw(_mutation(rest))
    return head + rest
