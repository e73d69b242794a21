"""Record batch v2 (magic 2) headers: read, validate, and patch in place.

Layout (``DefaultRecordBatch``), big-endian, 61-byte header::

    0 BaseOffset i64 | 8 Length i32 (= batch size - 12) | 12 PartitionLeaderEpoch i32 | 16 Magic i8
    17 CRC u32 | 21 Attributes i16 | 23 LastOffsetDelta i32 | 27 BaseTimestamp i64 | 35 MaxTimestamp i64
    43 ProducerId i64 | 51 ProducerEpoch i16 | 53 BaseSequence i32 | 57 RecordsCount i32 | 61 Records

The CRC-32C covers bytes 21..end, i.e. NOT BaseOffset, Length and PartitionLeaderEpoch: that is what
lets a broker assign offsets and stamp the leader epoch in place without recomputing it.

A records blob (a Produce partition's ``records``, a Fetch answer, a log segment) holds batches back to back;
:func:`check_batch` validates one, :func:`parse_batches` all of them, and both raise
:class:`~broker.protocol.errors.CorruptRecord` (CORRUPT_MESSAGE) with Kafka's wording.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import crc32c

from .errors import CorruptRecord

__all__ = [
    "BATCH_HEADER_SIZE",
    "COMPRESSION_MASK",
    "CONTROL_BIT",
    "CRC_START",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "TIMESTAMP_TYPE_BIT",
    "TRANSACTIONAL_BIT",
    "RecordBatchInfo",
    "batch_size",
    "check_batch",
    "encode_batch",
    "parse_batches",
    "read_batch_header",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
]

#: Bytes before the first record of a v2 batch (Kafka's RECORD_BATCH_OVERHEAD).
BATCH_HEADER_SIZE = 61
#: BaseOffset + Length: the part of a batch not counted in its Length field (Kafka's LOG_OVERHEAD).
LOG_OVERHEAD = 12
#: The only batch format this broker reads and writes.
MAGIC_V2 = 2
#: Where the CRC-32C coverage starts (the Attributes field).
CRC_START = 21

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08  # LogAppendTime
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20

# Field positions inside the header, for in-place patching.
_LENGTH_AT = 8
_LEADER_EPOCH_AT = 12
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP_AT = 35

_HEADER = struct.Struct(">qiibIhiqqqhii")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")


class RecordBatchInfo(NamedTuple):
    """Header fields of one batch, plus where it sits (``position``) and its total ``size`` in bytes.

    A named tuple rather than a frozen dataclass: it is built for every batch on the log's append and read
    paths, and a tuple is built in about a third of the time.
    """

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
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def compression(self) -> int:
        """Compression codec id (see :class:`~broker.protocol.compression.Compression`)."""
        return self.attributes & COMPRESSION_MASK

    @property
    def log_append_time(self) -> bool:
        """True when the timestamp type is LogAppendTime."""
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def is_transactional(self) -> bool:
        """Attribute bit 4."""
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        """Attribute bit 5."""
        return bool(self.attributes & CONTROL_BIT)

    @property
    def last_offset(self) -> int:
        """BaseOffset + LastOffsetDelta."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """The offset after the batch."""
        return self.base_offset + self.last_offset_delta + 1


def batch_size(buf: bytes | bytearray | memoryview, position: int) -> int:
    """The total size of the batch at ``position`` by its Length field (the caller has checked 12 bytes are there)."""
    size: int = _I32.unpack_from(buf, position + _LENGTH_AT)[0] + LOG_OVERHEAD
    return size


def read_batch_header(buf: bytes | bytearray | memoryview, position: int, shift: int = 0) -> RecordBatchInfo:
    """The header at ``position``, unchecked (the caller has checked that 61 bytes are there).

    The returned ``position`` is ``position + shift`` (``shift``: where ``buf`` starts in a larger file or blob).
    """
    fields = _HEADER.unpack_from(buf, position)
    return RecordBatchInfo(position + shift, fields[1] + LOG_OVERHEAD, fields[0], *fields[2:])


def check_batch(
    buf: bytes | bytearray | memoryview, position: int, end: int, *, verify_crc: bool = True, shift: int = 0
) -> RecordBatchInfo:
    """Validate the batch at ``position`` (never reading past ``end``) and return its header.

    Checks, cheapest first: a whole batch within ``end`` and at least a header long, magic 2, sane counts,
    then (with ``verify_crc``) the CRC-32C.  Positions in messages and in the result include ``shift``.

    Raises:
        CorruptRecord: the first check that fails.
    """
    remaining = end - position
    at = position + shift
    if remaining < LOG_OVERHEAD:
        raise CorruptRecord(
            f"Found {remaining} trailing bytes at position {at}, less than the log overhead ({LOG_OVERHEAD})"
        )
    size = _I32.unpack_from(buf, position + _LENGTH_AT)[0] + LOG_OVERHEAD
    if size < BATCH_HEADER_SIZE:
        raise CorruptRecord(
            f"Record batch size {size} at position {at} is smaller than the minimum record batch overhead "
            f"({BATCH_HEADER_SIZE})"
        )
    if size > remaining:
        raise CorruptRecord(f"Record batch size {size} at position {at} exceeds the {remaining} remaining bytes")
    fields = _HEADER.unpack_from(buf, position)
    magic, last_offset_delta, count = fields[3], fields[6], fields[12]
    if magic != MAGIC_V2:
        raise CorruptRecord(
            f"Invalid magic byte {magic} in the record batch at position {at} (magic {magic}; only {MAGIC_V2} is "
            f"supported)"
        )
    if last_offset_delta < 0 or count < 0:
        raise CorruptRecord(
            f"Invalid record batch at position {at}: last offset delta {last_offset_delta}, record count {count}"
        )
    if count > last_offset_delta + 1:  # fewer is legal: compaction removes records
        raise CorruptRecord(f"Record batch with {count} records has last offset delta {last_offset_delta}")
    if verify_crc:
        computed = crc32c.crc32c(memoryview(buf)[position + CRC_START : position + size])
        if computed != fields[4]:
            raise CorruptRecord(f"Record is corrupt (stored crc = {fields[4]}, computed crc = {computed})")
    return RecordBatchInfo(at, size, fields[0], *fields[2:])


def parse_batches(data: bytes | bytearray | memoryview) -> list[RecordBatchInfo]:
    """Validate every batch of a records blob (CRC included) and return their headers; ``[]`` for no bytes.

    Raises:
        CorruptRecord: truncated batch, bad Length, magic other than 2, bad counts, CRC mismatch.
    """
    view = memoryview(data).cast("B")  # slices of a memoryview are zero-copy (CRC over 1 MiB batches)
    end = len(view)
    position = 0
    batches: list[RecordBatchInfo] = []
    while position < end:
        info = check_batch(view, position, end)
        batches.append(info)
        position += info.size
    return batches


def set_base_offset(buf: bytearray | memoryview, position: int, base_offset: int) -> None:
    """Overwrite a batch's BaseOffset in place (not covered by the CRC)."""
    _I64.pack_into(buf, position, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, position: int, epoch: int) -> None:
    """Overwrite a batch's PartitionLeaderEpoch in place (not covered by the CRC)."""
    _I32.pack_into(buf, position + _LEADER_EPOCH_AT, epoch)


def set_log_append_time(buf: bytearray | memoryview, position: int, size: int, timestamp: int) -> None:
    """Switch a batch to LogAppendTime with ``timestamp`` as MaxTimestamp, and recompute its CRC."""
    attributes = _I16.unpack_from(buf, position + _ATTRIBUTES_AT)[0]
    _I16.pack_into(buf, position + _ATTRIBUTES_AT, attributes | TIMESTAMP_TYPE_BIT)
    _I64.pack_into(buf, position + _MAX_TIMESTAMP_AT, timestamp)
    crc = crc32c.crc32c(memoryview(buf)[position + CRC_START : position + size])
    _U32.pack_into(buf, position + _CRC_AT, crc)


def encode_batch(
    records: bytes,
    *,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    record_count: int,
) -> bytes:
    """A whole batch: the header with these fields, Length and CRC-32C filled in, then ``records`` (the encoded,
    possibly compressed, records)."""
    out = bytearray(BATCH_HEADER_SIZE)
    out += records
    _HEADER.pack_into(
        out,
        0,
        base_offset,
        len(out) - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC_V2,
        0,  # the CRC, computed over what follows it
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    )
    _U32.pack_into(out, _CRC_AT, crc32c.crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)
