"""Kafka's variable-length integers (``ByteUtils``): the one varint codec of the broker.

Two encodings share the 7-bits-per-byte, high-bit-continues layout (LEB128):

* **unsigned varints** (``writeUnsignedVarint``): lengths and tags of the flexible request/response versions;
* **signed varints** (``writeVarint``/``writeVarlong``): zig-zag mapped first, so small negative numbers stay
  short; every field of a v2 record (lengths, timestamp and offset deltas, header counts) uses them.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``.
"""

from __future__ import annotations

__all__ = [
    "MAX_UVARINT_BYTES",
    "MAX_VARLONG_BYTES",
    "ONE_BYTE_UVARINTS",
    "VarintError",
    "read_uvarint",
    "read_varint",
    "write_uvarint",
    "write_varint",
]

#: Longest unsigned varint accepted: 5 bytes hold 35 bits, enough for a uint32; more means garbage.
MAX_UVARINT_BYTES = 5
#: Longest signed varint accepted: 10 bytes hold 70 bits, enough for a zig-zag int64 (Kafka's varlong).
MAX_VARLONG_BYTES = 10
_VARLONG_BITS = 7 * MAX_VARLONG_BYTES
#: Largest value an unsigned varint carries (uint32).
_MAX_UVARINT = 0xFFFFFFFF

#: The one-byte encodings of 0..127, for encoders that inline the common case.
ONE_BYTE_UVARINTS = [bytes([i]) for i in range(128)]


class VarintError(ValueError):
    """Bytes that do not hold a varint: truncated, or longer than the type allows."""


def write_uvarint(value: int) -> bytes:
    """The unsigned varint of ``value`` (0 .. 2**32 - 1).

    Raises:
        ValueError: ``value`` is out of range.
    """
    if 0 <= value < 128:
        return ONE_BYTE_UVARINTS[value]
    if value < 0 or value > _MAX_UVARINT:
        raise ValueError(f"unsigned varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it.

    Raises:
        IndexError: the varint runs past the end of ``buf``.
        VarintError: longer than :data:`MAX_UVARINT_BYTES`.
    """
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    for i in range(1, MAX_UVARINT_BYTES):
        b = buf[pos + i]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos + i + 1
        shift += 7
    raise VarintError(f"unsigned varint longer than {MAX_UVARINT_BYTES} bytes")


def write_varint(value: int, out: bytearray) -> None:
    """Append the zig-zag signed varint of ``value`` (an int64) to ``out``."""
    v = (value << 1) ^ (value >> 63)
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """The zig-zag signed varint (up to an int64) at ``pos`` and the position after it.

    Raises:
        VarintError: the varint runs past the end of ``buf`` or is longer than :data:`MAX_VARLONG_BYTES`.
    """
    end = len(buf)
    result = shift = 0
    while pos < end:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift >= _VARLONG_BITS:
            raise VarintError(f"varint longer than {MAX_VARLONG_BYTES} bytes")
    raise VarintError("varint runs past the end")
