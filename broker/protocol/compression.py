"""The record batch compression codecs (attribute bits 0-2): gzip, snappy, lz4 frame and zstd, from cramjam.

Snappy comes in two framings: raw blocks, and the xerial framing the Java producer writes (an 8-byte magic, two
version ints, then ``length i32 | block`` pairs); :func:`decompress` reads both, :func:`compress` writes xerial.
"""

from __future__ import annotations

import struct

import cramjam

from .error_codes import ErrorCode
from .errors import CorruptRecord

__all__ = ["MAX_DECOMPRESSED_BATCH", "Compression", "compress", "decompress"]

#: Largest decompressed size accepted from one batch: a guard against compression bombs.  Kafka bounds
#: it implicitly by the batch's record count; 64 MiB is above any batch a 1 MiB (default) produce can hold
#: at realistic ratios, and far below what would hurt the broker.
MAX_DECOMPRESSED_BATCH = 64 * 1024 * 1024

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
#: The xerial header: magic, version i32, compatible version i32.
_XERIAL_HEADER_SIZE = len(_XERIAL_MAGIC) + 8
_XERIAL_VERSION = 1
_I32 = struct.Struct(">i")


class Compression:
    """Compression codec ids (attribute bits 0-2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4
    NAMES = ("none", "gzip", "snappy", "lz4", "zstd")


def compress(codec: int, data: bytes) -> bytes:
    """``data`` compressed with ``codec`` (as a Java producer would write it).

    Raises:
        ValueError: unknown codec.
    """
    if codec == Compression.NONE:
        return data
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == Compression.SNAPPY:
        block = bytes(cramjam.snappy.compress_raw(data))
        return b"".join(
            (_XERIAL_MAGIC, _I32.pack(_XERIAL_VERSION), _I32.pack(_XERIAL_VERSION), _I32.pack(len(block)), block)
        )
    if codec == Compression.LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


def decompress(codec: int, data: bytes) -> bytes:
    """The uncompressed form of a batch's records (``data`` itself for codec 0).

    Raises:
        CorruptRecord: unknown codec (UNSUPPORTED_COMPRESSION_TYPE), undecodable data, or more than
            :data:`MAX_DECOMPRESSED_BATCH` bytes out.
    """
    try:
        if codec == Compression.NONE:
            return data
        if codec == Compression.GZIP:
            out = bytes(cramjam.gzip.decompress(data))
        elif codec == Compression.SNAPPY:
            out = _snappy_decompress(data)
        elif codec == Compression.LZ4:
            out = bytes(cramjam.lz4.decompress(data))
        elif codec == Compression.ZSTD:
            out = bytes(cramjam.zstd.decompress(data))
        else:
            raise CorruptRecord(f"unknown compression codec {codec}", ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
    except cramjam.DecompressionError as exc:
        raise CorruptRecord(f"cannot decompress {Compression.NAMES[codec]} records: {exc}") from None
    if len(out) > MAX_DECOMPRESSED_BATCH:
        raise CorruptRecord(f"decompressed batch of {len(out)} bytes exceeds {MAX_DECOMPRESSED_BATCH}")
    return out


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    pos = _XERIAL_HEADER_SIZE
    parts: list[bytes] = []
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecord("truncated xerial snappy block header")
        n = _I32.unpack_from(data, pos)[0]
        pos += 4
        if n < 0 or pos + n > len(data):
            raise CorruptRecord("truncated xerial snappy block")
        parts.append(bytes(cramjam.snappy.decompress_raw(data[pos : pos + n])))
        pos += n
    return b"".join(parts)
