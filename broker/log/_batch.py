"""Record batch v2 headers: just the fields the log needs, read, validated and patched in place.

Layout (``DefaultRecordBatch``; FACTS.md section 5), offsets in bytes::

    0 BaseOffset i64 | 8 Length i32 (= size - 12) | 12 PartitionLeaderEpoch i32 | 16 Magic i8 | 17 CRC u32 |
    21 Attributes i16 | 23 LastOffsetDelta i32 | 27 BaseTimestamp i64 | 35 MaxTimestamp i64 | 43 ProducerId i64 |
    51 ProducerEpoch i16 | 53 BaseSequence i32 | 57 RecordsCount i32 | 61 records...

The CRC-32C covers bytes 21..end, so the broker may patch BaseOffset and PartitionLeaderEpoch without
recomputing it; stamping LogAppendTime (attributes + MaxTimestamp) does need a new CRC.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import crc32c

from .errors import CorruptRecordError, RecordTooLargeError

__all__ = [
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "BatchInfo",
    "build_batch",
    "check_batch",
    "iter_batches",
    "read_header",
    "validate_batches",
]

LOG_OVERHEAD = 12  # BaseOffset + Length: the bytes not counted by Length
HEADER_SIZE = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
MAGIC_V2 = 2
CRC_START = 21
TIMESTAMP_TYPE_BIT = 0x08  # attributes bit 3: LogAppendTime
COMPRESSION_MASK = 0x07
NO_TIMESTAMP = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_PREFIX = struct.Struct(">qi")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """One batch's header fields and where it sits in its buffer (``position``)."""

    position: int
    size: int
    base_offset: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    records_count: int

    @property
    def last_offset(self) -> int:
        """The batch's last offset."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """The offset after the batch."""
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        """Codec id: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        return self.attributes & COMPRESSION_MASK


def read_header(buf: bytes | bytearray | memoryview, position: int, shift: int = 0) -> BatchInfo:
    """Unpack the 61-byte header at ``position`` (the caller has checked that 61 bytes are there).

    The returned ``position`` is ``position + shift`` (``shift`` = where ``buf`` starts in its file).
    """
    (base, length, ple, magic, crc, attrs, lod, base_ts, max_ts, _pid, _pepoch, _seq,
     count) = _HEADER.unpack_from(buf, position)
    return BatchInfo(position + shift, length + LOG_OVERHEAD, base, ple, magic, crc, attrs, lod, base_ts, max_ts,
                     count)


def check_batch(buf: bytes | bytearray | memoryview, position: int, end: int, max_size: int | None,
                verify_crc: bool, shift: int = 0) -> BatchInfo:
    """Validate the batch at ``position`` (never reading past ``end``) and return its header; raise if bad."""
    remaining = end - position
    if remaining < LOG_OVERHEAD:
        raise CorruptRecordError(f"Found {remaining} trailing bytes, less than the log overhead ({LOG_OVERHEAD})")
    _base, length = _PREFIX.unpack_from(buf, position)
    size = length + LOG_OVERHEAD
    if size < HEADER_SIZE:
        raise CorruptRecordError(
            f"Record batch size {size} is less than the minimum record batch overhead ({HEADER_SIZE})")
    if max_size is not None and size > max_size:
        raise RecordTooLargeError(
            f"The record batch size is {size} bytes which exceeds the maximum configured value of {max_size}.")
    if size > remaining:
        raise CorruptRecordError(f"Record batch size {size} exceeds the {remaining} remaining bytes")
    info = read_header(buf, position, shift)
    if info.magic != MAGIC_V2:
        raise CorruptRecordError(f"Invalid magic byte {info.magic} in record batch at offset {info.base_offset}")
    if info.last_offset_delta < 0 or info.records_count < 0:
        raise CorruptRecordError(
            f"Invalid record batch: last offset delta {info.last_offset_delta}, count {info.records_count}")
    if info.records_count > info.last_offset_delta + 1:  # fewer is legal: compaction removes records
        raise CorruptRecordError(f"Record batch with {info.records_count} records has last offset delta "
                                 f"{info.last_offset_delta}")
    if verify_crc:
        computed = crc32c.crc32c(memoryview(buf)[position + CRC_START:position + size])
        if computed != info.crc:
            raise CorruptRecordError(f"Record is corrupt (stored crc = {info.crc}, computed crc = {computed})")
    return info


def validate_batches(buf: bytes | bytearray | memoryview, max_batch_size: int | None) -> list[BatchInfo]:
    """Every batch of a produce/replication payload, validated (size, magic, counts, CRC-32C).

    Raises:
        CorruptRecordError: empty input, a bad CRC or magic, or a length that does not fit the buffer.
        RecordTooLargeError: a batch above ``max_batch_size``.
    """
    end = len(buf)
    if end == 0:
        raise CorruptRecordError("Records contain no record batch")
    out: list[BatchInfo] = []
    position = 0
    while position < end:
        info = check_batch(buf, position, end, max_batch_size, True)
        out.append(info)
        position += info.size
    return out


def iter_batches(buf: bytes | bytearray | memoryview, *, verify_crc: bool = False) -> Iterator[BatchInfo]:
    """The whole valid batches at the start of ``buf``; stops (without raising) at the first bad or partial one."""
    end = len(buf)
    position = 0
    while position < end:
        try:
            info = check_batch(buf, position, end, None, verify_crc)
        except CorruptRecordError:
            return
        yield info
        position += info.size


def patch_offset_and_epoch(buf: bytearray, position: int, base_offset: int, leader_epoch: int) -> None:
    """Write BaseOffset and PartitionLeaderEpoch (both outside the CRC) of the batch at ``position``."""
    _I64.pack_into(buf, position, base_offset)
    _I32.pack_into(buf, position + 12, leader_epoch)


def stamp_log_append_time(buf: bytearray, info: BatchInfo, now_ms: int) -> None:
    """Set the LogAppendTime attribute bit and MaxTimestamp = ``now_ms``, then recompute the CRC."""
    p = info.position
    _I16.pack_into(buf, p + 21, info.attributes | TIMESTAMP_TYPE_BIT)
    _I64.pack_into(buf, p + 35, now_ms)
    _U32.pack_into(buf, p + 17, crc32c.crc32c(memoryview(buf)[p + CRC_START:p + info.size]))


# ---------------------------------------------------------------------------------------------------------------
# A small builder of uncompressed v2 batches (tests and benchmarks; clients build their own).
# ---------------------------------------------------------------------------------------------------------------

def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if zigzag:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = bytearray(b"\x00")  # attributes
    body += _varint(timestamp_delta)
    body += _varint(offset_delta)
    for field in (key, value):
        if field is None:
            body += _varint(-1)
        else:
            body += _varint(len(field))
            body += field
    body += _varint(0)  # no headers
    return _varint(len(body)) + bytes(body)


def build_batch(values: Sequence[tuple[bytes | None, bytes | None]], *, base_offset: int = 0,
                base_timestamp: int = 0, timestamp_step: int = 0, leader_epoch: int = -1) -> bytes:
    """An uncompressed record batch v2 of ``(key, value)`` records with a valid CRC-32C.

    Record ``i`` gets timestamp ``base_timestamp + i * timestamp_step``.
    """
    if not values:
        raise ValueError("a record batch needs at least one record")
    records = b"".join(_record(i, i * timestamp_step, k, v) for i, (k, v) in enumerate(values))
    last_delta = len(values) - 1
    max_ts = base_timestamp + last_delta * timestamp_step
    after_crc = struct.pack(">hiqqqhii", 0, last_delta, base_timestamp, max_ts, -1, -1, -1, len(values)) + records
    crc = crc32c.crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)  # PartitionLeaderEpoch + Magic + CRC + rest
    return struct.pack(">qiibI", base_offset, length, leader_epoch, MAGIC_V2, crc) + after_crc
