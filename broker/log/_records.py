"""Records inside a v2 batch, for the one place the log looks inside batches: ListOffsets by timestamp.

Kafka answers a timestamp query with the exact record (not the batch), so the batch is decompressed when needed
(gzip, snappy -- raw or Java's xerial framing --, lz4 frame, zstd; codecs from cramjam) and the records are
walked: ``Length varint | Attributes i8 | TimestampDelta varlong | OffsetDelta varint | ...`` (zig-zag).
"""

from __future__ import annotations

import struct

import cramjam

from ._batch import HEADER_SIZE, TIMESTAMP_TYPE_BIT, BatchInfo, read_header
from .errors import CorruptRecordError

__all__ = ["check_record_framing", "decompress_records", "first_record_at_or_after"]

# Largest decompressed payload accepted from one batch (a compression-bomb guard): far above what a 1 MiB batch
# holds at realistic ratios, far below what would hurt the broker.
MAX_DECOMPRESSED_BATCH = 64 * 1024 * 1024

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = 16  # magic (8) + version i32 + compatible version i32
_I32 = struct.Struct(">i")


def _snappy(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()
    pos = _XERIAL_HEADER
    while pos + 4 <= len(data):
        (length,) = _I32.unpack_from(data, pos)
        pos += 4
        out += bytes(cramjam.snappy.decompress_raw(data[pos:pos + length]))
        pos += length
    return bytes(out)


def decompress_records(compression: int, payload: bytes) -> bytes:
    """The uncompressed record bytes of a batch payload (everything after the 61-byte header).

    Raises:
        ValueError: unknown codec or undecodable payload.
    """
    out: bytes
    try:
        if compression == 0:
            return payload
        if compression == 1:
            out = bytes(cramjam.gzip.decompress(payload))
        elif compression == 2:
            out = _snappy(payload)
        elif compression == 3:
            out = bytes(cramjam.lz4.decompress(payload))
        elif compression == 4:
            out = bytes(cramjam.zstd.decompress(payload))
        else:
            raise ValueError(f"unknown compression codec {compression}")
    except ValueError:
        raise
    except Exception as exc:  # cramjam raises its own DecompressionError types
        raise ValueError(f"cannot decompress a batch with codec {compression}: {exc}") from exc
    if len(out) > MAX_DECOMPRESSED_BATCH:
        raise ValueError(f"decompressed batch of {len(out)} bytes exceeds {MAX_DECOMPRESSED_BATCH}")
    return out


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def first_record_at_or_after(batch: bytes, timestamp: int, start_offset: int) -> tuple[int, int] | None:
    """``(timestamp, offset)`` of the batch's first record with offset >= ``start_offset`` and timestamp >=
    ``timestamp``; None if there is none. An undecodable batch answers with its last offset and max timestamp
    (the batch is known to reach ``timestamp``)."""
    info = read_header(batch, 0)
    log_append_time = bool(info.attributes & TIMESTAMP_TYPE_BIT)
    try:
        records = decompress_records(info.compression, batch[HEADER_SIZE:info.size])
        pos = 0
        for _ in range(info.records_count):
            length, pos = _varint(records, pos)
            end = pos + length
            ts_delta, p = _varint(records, pos + 1)  # skip the record's attributes byte
            off_delta, _ = _varint(records, p)
            record_ts = info.max_timestamp if log_append_time else info.base_timestamp + ts_delta
            offset = info.base_offset + off_delta
            if offset >= start_offset and record_ts >= timestamp:
                return record_ts, offset
            pos = end
    except ValueError:
        if info.max_timestamp >= timestamp and info.last_offset >= start_offset:
            return info.max_timestamp, info.last_offset
    return None


def check_record_framing(buf: bytes | bytearray | memoryview, batches: list[BatchInfo]) -> None:
    """The leader's record-level check (Kafka's LogValidator): each batch's payload decompresses and holds exactly
    ``RecordsCount`` length-prefixed records.

    Raises:
        CorruptRecordError: undecompressible payload, unknown codec, or a record count/length mismatch.
    """
    for info in batches:
        payload = bytes(memoryview(buf)[info.position + HEADER_SIZE:info.position + info.size])
        try:
            records = decompress_records(info.compression, payload)
            pos, end = 0, len(records)
            for _ in range(info.records_count):
                length, pos = _varint(records, pos)
                if length < 0:
                    raise ValueError(f"negative record length {length}")
                pos += length
                if pos > end:
                    raise ValueError("a record runs past the end of the batch")
            if pos != end:
                raise ValueError(f"{end - pos} bytes after the last of {info.records_count} records")
        except ValueError as exc:
            raise CorruptRecordError(
                f"Invalid records in the batch at offset {info.base_offset} ({info.records_count} records): "
                f"{exc}") from None
