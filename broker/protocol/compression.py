"""The record batch compression codecs (attribute bits 0-2): gzip, snappy, lz4 frame and zstd, from cramjam.

Snappy comes in two framings: raw blocks, and the xerial framing the Java producer writes (an 8-byte magic, two
version ints, then ``length i32 | block`` pairs); :func:`decompress` reads both, :func:`compress` writes xerial.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import cramjam

from .error_codes import ErrorCode
from .errors import CorruptRecord

__all__ = ["MAX_DECOMPRESSED_BATCH", "Compression", "compress", "decompress"]

#: Largest decompressed size accepted from one batch: a guard against compression bombs.  Kafka bounds
#: it implicitly by the batch's record count; 64 MiB is above any batch a 1 MiB (default) produce can hold
#: at realistic ratios, and far below what would hurt the broker.
MAX_DECOMPRESSED_BATCH = 64 * 1024 * 1024
#: gzip, lz4 and zstd decompress into a buffer of this many times the compressed size (at least _MIN_OUTPUT),
#: grown _GROWTH-fold while the output does not fit, up to one byte over MAX_DECOMPRESSED_BATCH: the limit holds
#: while decompressing (a 32 KiB zstd frame of zeros holds 1 GiB), and a batch of ordinary ratio is one pass.
_FIRST_RATIO = 8
_MIN_OUTPUT = 64 * 1024
_GROWTH = 8
# cramjam's DecompressionError text when the output buffer is full (Rust's io::Write::write_all).
_BUFFER_FULL = "failed to write whole buffer"

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
            out = _bounded(cramjam.gzip.decompress_into, data)
        elif codec == Compression.SNAPPY:
            out = _snappy_decompress(data)
        elif codec == Compression.LZ4:
            out = _bounded(cramjam.lz4.decompress_into, data)
        elif codec == Compression.ZSTD:
            out = _bounded(cramjam.zstd.decompress_into, data)
        else:
            raise CorruptRecord(f"unknown compression codec {codec}", ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
    except cramjam.DecompressionError as exc:
        raise CorruptRecord(f"cannot decompress {Compression.NAMES[codec]} records: {exc}") from None
    if len(out) > MAX_DECOMPRESSED_BATCH:
        raise CorruptRecord(f"decompressed batch of {len(out)} bytes exceeds {MAX_DECOMPRESSED_BATCH}")
    return out


def _bounded(decompress_into: Callable[[bytes, bytearray], int], data: bytes) -> bytes:
    """``data`` decompressed into bounded buffers (see _FIRST_RATIO); at most MAX_DECOMPRESSED_BATCH + 1 bytes."""
    size = min(MAX_DECOMPRESSED_BATCH + 1, max(_MIN_OUTPUT, _FIRST_RATIO * len(data)))
    while True:
        out = bytearray(size)
        try:
            n = decompress_into(data, out)
        except cramjam.DecompressionError as exc:
            if _BUFFER_FULL not in str(exc):
                raise
            if size > MAX_DECOMPRESSED_BATCH:
                raise CorruptRecord(f"decompressed batch exceeds {MAX_DECOMPRESSED_BATCH} bytes") from None
            size = min(MAX_DECOMPRESSED_BATCH + 1, size * _GROWTH)
            continue
        del out[n:]
        return bytes(out)


def _snappy_block(block: bytes, budget: int) -> bytes:
    """One raw snappy block, refused by the length its header announces when that is above ``budget``."""
    if cramjam.snappy.decompress_raw_len(block) > budget:
        raise CorruptRecord(f"decompressed batch exceeds {MAX_DECOMPRESSED_BATCH} bytes")
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_block(data, MAX_DECOMPRESSED_BATCH)
    pos = _XERIAL_HEADER_SIZE
    parts: list[bytes] = []
    budget = MAX_DECOMPRESSED_BATCH
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecord("truncated xerial snappy block header")
        n = _I32.unpack_from(data, pos)[0]
        pos += 4
        if n < 0 or pos + n > len(data):
            raise CorruptRecord("truncated xerial snappy block")
        parts.append(_snappy_block(data[pos : pos + n], budget))
        budget -= len(parts[-1])
        pos += n
    return b"".join(parts)
