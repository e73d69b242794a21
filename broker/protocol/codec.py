"""Schema compiler: a :class:`~broker.protocol.schema.Message` table → encoder/decoder closures.

Strategy
--------
For one (message, version) pair the field list is known, so everything that depends only on the
schema is decided once, here, and captured in closures:

* runs of consecutive fixed-size fields (``int8`` … ``float64``, ``bool``) are merged into ONE
  precompiled big-endian :class:`struct.Struct`, so a partition state costs one ``unpack_from``
  instead of six;
* ``[]int32``/``[]int64`` arrays are packed/unpacked with a single ``struct`` call;
* flexible versions switch to compact strings/arrays/bytes (unsigned varint ``length + 1``) and
  append a tagged-field section to every struct.  Known tagged fields become named keys; unknown
  ones are kept as raw bytes in ``_tagged_fields`` (``{tag: bytes}``) and re-emitted on encode.

Encoders append ``bytes`` chunks to a list (one ``b"".join`` at the end); decoders take
``(buf, pos)`` and return ``(value, new_pos)``.  Decoders raise :class:`Malformed` (or let
``struct.error``/``IndexError``/``UnicodeDecodeError`` escape); the public API in
:mod:`broker.protocol.api` translates all of those into ``CorruptRequest`` at one place.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from .schema import Field, Message

__all__ = [
    "DECODE_ERRORS",
    "Decoder",
    "Encoder",
    "Malformed",
    "compile_struct",
    "message_codec",
    "read_uvarint",
    "write_uvarint",
]

Encoder = Callable[[Any, list[bytes]], None]
Decoder = Callable[[bytes, int], tuple[Any, int]]
_Step = Callable[[bytes, int, dict[str, Any]], int]
_EncStep = Callable[[dict[str, Any], list[bytes]], None]

#: Field key holding unknown tagged fields (``{tag: raw bytes}``) of a flexible struct.
TAGGED_KEY = "_tagged_fields"

#: Longest unsigned varint accepted (5 bytes = 35 bits covers uint32; more means garbage).
MAX_UVARINT_BYTES = 5


class Malformed(ValueError):
    """Input bytes that do not follow the schema (translated to CorruptRequest by the caller)."""


#: Everything a decoder may raise on garbage input.
DECODE_ERRORS = (Malformed, struct.error, IndexError, UnicodeDecodeError, OverflowError, MemoryError, ValueError)

_FIXED_CHARS = {
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "bool": "?",
}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_UUID_ZERO = uuid.UUID(int=0)
_SMALL_UVARINTS = [bytes([i]) for i in range(128)]


# --------------------------------------------------------------------------------------------- varints


def write_uvarint(value: int) -> bytes:
    """Unsigned LEB128 varint (Kafka ``ByteUtils.writeUnsignedVarint``)."""
    if 0 <= value < 128:
        return _SMALL_UVARINTS[value]
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read an unsigned varint at ``pos``; returns ``(value, new_pos)``."""
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
    raise Malformed("unsigned varint longer than 5 bytes")


# --------------------------------------------------------------------------------------------- values


def _enc_count(flex: bool, n: int) -> bytes:
    return write_uvarint(n + 1) if flex else _I32.pack(n)


def _dec_count(flex: bool, buf: bytes, pos: int) -> tuple[int, int]:
    if flex:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    return _I32.unpack_from(buf, pos)[0], pos + 4


def _string_codec(flex: bool, nullable: bool, what: str) -> tuple[Encoder, Decoder]:
    def enc(v: Any, out: list[bytes]) -> None:
        if v is None:
            if not nullable:
                raise Malformed(f"{what}: null in a non-nullable string")
            out.append(b"\x00" if flex else b"\xff\xff")
            return
        b = v.encode("utf-8")
        out.append(write_uvarint(len(b) + 1) if flex else _I16.pack(len(b)))
        out.append(b)

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        if flex:
            n, pos = read_uvarint(buf, pos)
            n -= 1
        else:
            n = _I16.unpack_from(buf, pos)[0]
            pos += 2
        if n < 0:
            if not nullable:
                raise Malformed(f"{what}: null in a non-nullable string")
            return None, pos
        end = pos + n
        if end > len(buf):
            raise Malformed(f"{what}: string of {n} bytes runs past the end")
        return str(buf[pos:end], "utf-8"), end

    return enc, dec


def _bytes_codec(flex: bool, nullable: bool, what: str) -> tuple[Encoder, Decoder]:
    def enc(v: Any, out: list[bytes]) -> None:
        if v is None:
            if not nullable:
                raise Malformed(f"{what}: null in non-nullable bytes")
            out.append(b"\x00" if flex else b"\xff\xff\xff\xff")
            return
        n = len(v) if not isinstance(v, memoryview) else v.nbytes
        out.append(write_uvarint(n + 1) if flex else _I32.pack(n))
        out.append(v)

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        n, pos = _dec_count(flex, buf, pos)
        if n < 0:
            if not nullable:
                raise Malformed(f"{what}: null in non-nullable bytes")
            return None, pos
        end = pos + n
        if end > len(buf):
            raise Malformed(f"{what}: {n} bytes run past the end")
        return bytes(buf[pos:end]), end

    return enc, dec


def _uuid_enc(v: Any, out: list[bytes]) -> None:
    if isinstance(v, uuid.UUID):
        out.append(v.bytes)
    elif isinstance(v, bytes | bytearray) and len(v) == 16:
        out.append(bytes(v))
    else:
        raise Malformed(f"not a UUID: {v!r}")


def _uuid_dec(buf: bytes, pos: int) -> tuple[Any, int]:
    end = pos + 16
    if end > len(buf):
        raise Malformed("uuid runs past the end")
    raw = buf[pos:end]
    return (_UUID_ZERO if raw == b"\x00" * 16 else uuid.UUID(bytes=bytes(raw))), end


def _fixed_codec(ch: str) -> tuple[Encoder, Decoder]:
    s = struct.Struct(">" + ch)
    pack, unpack_from, size = s.pack, s.unpack_from, s.size

    def enc(v: Any, out: list[bytes]) -> None:
        out.append(pack(v))

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        return unpack_from(buf, pos)[0], pos + size

    return enc, dec


def _fixed_array_codec(ch: str, flex: bool, nullable: bool, what: str) -> tuple[Encoder, Decoder]:
    width = struct.calcsize(">" + ch)

    def enc(v: Any, out: list[bytes]) -> None:
        if v is None:
            if not nullable:
                raise Malformed(f"{what}: null in a non-nullable array")
            out.append(b"\x00" if flex else b"\xff\xff\xff\xff")
            return
        n = len(v)
        if flex:
            out.append(write_uvarint(n + 1))
            out.append(struct.pack(f">{n}{ch}", *v))
        else:
            out.append(struct.pack(f">i{n}{ch}", n, *v))

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        n, pos = _dec_count(flex, buf, pos)
        if n < 0:
            if not nullable:
                raise Malformed(f"{what}: null in a non-nullable array")
            return None, pos
        if n * width > len(buf) - pos:
            raise Malformed(f"{what}: array of {n} runs past the end")
        return list(struct.unpack_from(f">{n}{ch}", buf, pos)), pos + n * width

    return enc, dec


def _array_codec(elem: tuple[Encoder, Decoder], flex: bool, nullable: bool, what: str) -> tuple[Encoder, Decoder]:
    eenc, edec = elem

    def enc(v: Any, out: list[bytes]) -> None:
        if v is None:
            if not nullable:
                raise Malformed(f"{what}: null in a non-nullable array")
            out.append(b"\x00" if flex else b"\xff\xff\xff\xff")
            return
        out.append(write_uvarint(len(v) + 1) if flex else _I32.pack(len(v)))
        for e in v:
            eenc(e, out)

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        n, pos = _dec_count(flex, buf, pos)
        if n < 0:
            if not nullable:
                raise Malformed(f"{what}: null in a non-nullable array")
            return None, pos
        if n > len(buf) - pos:  # every element takes at least one byte
            raise Malformed(f"{what}: array of {n} runs past the end")
        items: list[Any] = []
        append = items.append
        for _ in range(n):
            e, pos = edec(buf, pos)
            append(e)
        return items, pos

    return enc, dec


def _nullable_struct_codec(inner: tuple[Encoder, Decoder]) -> tuple[Encoder, Decoder]:
    ienc, idec = inner

    def enc(v: Any, out: list[bytes]) -> None:
        if v is None:
            out.append(b"\xff")
        else:
            out.append(b"\x01")
            ienc(v, out)

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        if buf[pos] == 0xFF:
            return None, pos + 1
        return idec(buf, pos + 1)

    return enc, dec


def value_codec(fld: Field, version: int, flex: bool) -> tuple[Encoder, Decoder]:
    """Encoder/decoder of one field's value (not its key) for ``version``."""
    nullable = version in fld.nullable
    what = fld.name
    et = fld.element_type
    if fld.is_array:
        if et in _FIXED_CHARS:
            return _fixed_array_codec(_FIXED_CHARS[et], flex, nullable, what)
        return _array_codec(_element_codec(fld, et, version, flex), flex, nullable, what)
    if fld.is_struct:
        inner = compile_struct(fld.fields, version, flex)
        return _nullable_struct_codec(inner) if nullable else inner
    return _element_codec(fld, et, version, flex)


def _element_codec(fld: Field, et: str, version: int, flex: bool) -> tuple[Encoder, Decoder]:
    nullable = version in fld.nullable
    if et in _FIXED_CHARS:
        return _fixed_codec(_FIXED_CHARS[et])
    if et == "string":
        return _string_codec(flex, nullable and not fld.is_array, fld.name)
    if et in ("bytes", "records"):
        return _bytes_codec(flex, nullable, fld.name)
    if et == "uuid":
        return _uuid_enc, _uuid_dec
    return compile_struct(fld.fields, version, flex)


# --------------------------------------------------------------------------------------------- structs


def _fresh(default: Any) -> Any:
    """A per-decode copy of a mutable default."""
    if isinstance(default, list):
        return []
    if isinstance(default, dict):
        return {}
    return default


def compile_struct(fields: tuple[Field, ...], version: int, flex: bool) -> tuple[Encoder, Decoder]:
    """Compile the fields present in ``version`` into one struct encoder and decoder."""
    dec_steps: list[_Step] = []
    enc_steps: list[_EncStep] = []
    tagged: list[tuple[int, Field, Encoder, Decoder]] = []
    run: list[Field] = []

    def flush_run() -> None:
        if not run:
            return
        s = struct.Struct(">" + "".join(_FIXED_CHARS[x.type] for x in run))
        names = tuple(x.key for x in run)
        kd = tuple((x.key, x.default) for x in run)
        size = s.size
        unpack_from, pack = s.unpack_from, s.pack

        def dstep(buf: bytes, pos: int, d: dict[str, Any]) -> int:
            d.update(zip(names, unpack_from(buf, pos), strict=True))
            return pos + size

        def estep(d: dict[str, Any], out: list[bytes]) -> None:
            g = d.get
            out.append(pack(*[g(k, dv) for k, dv in kd]))

        dec_steps.append(dstep)
        enc_steps.append(estep)
        run.clear()

    for fld in fields:
        if version not in fld.versions:
            continue
        if fld.tag is not None and version in fld.tagged:
            if flex:
                venc, vdec = value_codec(fld, version, flex)
                tagged.append((fld.tag, fld, venc, vdec))
            continue
        if fld.type in _FIXED_CHARS:
            run.append(fld)
            continue
        flush_run()
        venc, vdec = value_codec(fld, version, flex)
        dec_steps.append(_make_dstep(fld.key, vdec))
        enc_steps.append(_make_estep(fld.key, fld.default, venc))
    flush_run()
    tagged.sort(key=lambda t: t[0])

    dsteps = tuple(dec_steps)
    esteps = tuple(enc_steps)
    if not flex:

        def dec(buf: bytes, pos: int) -> tuple[Any, int]:
            d: dict[str, Any] = {}
            for step in dsteps:
                pos = step(buf, pos, d)
            return d, pos

        def enc(v: Any, out: list[bytes]) -> None:
            for step in esteps:
                step(v, out)

        return enc, dec

    known: dict[int, tuple[str, Decoder]] = {t: (fl.key, vd) for t, fl, _, vd in tagged}
    tag_defaults = tuple((fl.key, fl.default) for _, fl, _, _ in tagged)
    tag_encs = tuple((t, fl.key, fl.default, ve) for t, fl, ve, _ in tagged)

    def fdec(buf: bytes, pos: int) -> tuple[Any, int]:
        d: dict[str, Any] = {}
        for step in dsteps:
            pos = step(buf, pos, d)
        for key, dv in tag_defaults:
            d[key] = _fresh(dv)
        n = buf[pos]
        if n < 0x80:
            pos += 1
        else:
            n, pos = read_uvarint(buf, pos)
        if n:
            pos = _read_tags(buf, pos, n, d, known)
        return d, pos

    def fenc(v: Any, out: list[bytes]) -> None:
        for step in esteps:
            step(v, out)
        unknown = v.get(TAGGED_KEY)
        if not tag_encs and not unknown:
            out.append(b"\x00")
            return
        _write_tags(v, out, tag_encs, unknown)

    return fenc, fdec


def _make_dstep(key: str, vdec: Decoder) -> _Step:
    def dstep(buf: bytes, pos: int, d: dict[str, Any]) -> int:
        d[key], pos = vdec(buf, pos)
        return pos

    return dstep


def _make_estep(key: str, default: Any, venc: Encoder) -> _EncStep:
    def estep(d: dict[str, Any], out: list[bytes]) -> None:
        venc(d.get(key, default), out)

    return estep


def _read_tags(buf: bytes, pos: int, n: int, d: dict[str, Any], known: dict[int, tuple[str, Decoder]]) -> int:
    unknown: dict[int, bytes] = {}
    if n > len(buf) - pos:
        raise Malformed(f"{n} tagged fields run past the end")
    for _ in range(n):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise Malformed(f"tagged field {tag} of {size} bytes runs past the end")
        entry = known.get(tag)
        if entry is None:
            unknown[tag] = bytes(buf[pos:end])
        else:
            key, vdec = entry
            value, p2 = vdec(buf[:end], pos)
            if p2 != end:
                raise Malformed(f"tagged field {tag}: {size} bytes announced, {p2 - pos} used")
            d[key] = value
        pos = end
    if unknown:
        d[TAGGED_KEY] = unknown
    return pos


def _write_tags(
    v: dict[str, Any],
    out: list[bytes],
    tag_encs: tuple[tuple[int, str, Any, Encoder], ...],
    unknown: dict[int, bytes] | None,
) -> None:
    items: list[tuple[int, bytes]] = []
    for tag, key, dv, venc in tag_encs:
        value = v.get(key, dv)
        if value is dv or value == dv:
            continue
        sub: list[bytes] = []
        venc(value, sub)
        items.append((tag, b"".join(sub)))
    if unknown:
        items.extend(unknown.items())
        items.sort(key=lambda t: t[0])
    out.append(write_uvarint(len(items)))
    for tag, data in items:
        out.append(write_uvarint(tag))
        out.append(write_uvarint(len(data)))
        out.append(data)


def message_codec(message: Message, version: int) -> tuple[Encoder, Decoder]:
    """The (cached) body encoder and decoder of ``message`` at ``version``."""
    codec: tuple[Encoder, Decoder] | None = message._cache.get(version)
    if codec is None:
        codec = compile_struct(message.fields, version, version in message.flexible)
        message._cache[version] = codec
    return codec
