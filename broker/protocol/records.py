"""Record batch v2 (magic 2): validation, per-batch info, in-place patching, and a small builder.

Layout (``DefaultRecordBatch``), big-endian, 61-byte header::

    0 BaseOffset i64 | 8 Length i32 (= batch size - 12) | 12 PartitionLeaderEpoch i32 | 16 Magic i8
    17 CRC u32 | 21 Attributes i16 | 23 LastOffsetDelta i32 | 27 BaseTimestamp i64 | 35 MaxTimestamp i64
    43 ProducerId i64 | 51 ProducerEpoch i16 | 53 BaseSequence i32 | 57 RecordsCount i32 | 61 Records

The CRC-32C covers bytes 21..end, i.e. NOT BaseOffset, Length and PartitionLeaderEpoch: that is what
lets a broker assign offsets and stamp the leader epoch in place without recomputing it.  Records
(possibly compressed as a whole, per the attribute bits 0-2) are zig-zag varint encoded.

A Produce ``records`` blob may hold several batches back to back; :func:`parse_batches` validates
every one (length, magic, CRC) and raises :class:`~broker.protocol.errors.CorruptRecord` with
CORRUPT_MESSAGE on the first bad one.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import cramjam
import crc32c

from .error_codes import ErrorCode
from .errors import CorruptRecord

__all__ = [
    "BATCH_HEADER_SIZE",
    "Compression",
    "Record",
    "RecordBatchInfo",
    "build_batch",
    "decode_records",
    "parse_batches",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
    "validate_produce_records",
]

#: Bytes before the first record of a v2 batch.
BATCH_HEADER_SIZE = 61
#: BaseOffset + Length: the part of a batch not counted in its Length field (Kafka's LOG_OVERHEAD).
LOG_OVERHEAD = 12
#: Largest decompressed size accepted from one batch: a guard against compression bombs.  Kafka bounds
#: it implicitly by the batch's record count; 64 MiB is above any batch a 1 MiB (default) produce can hold
#: at realistic ratios, and far below what would hurt the broker.
MAX_DECOMPRESSED_BATCH = 64 * 1024 * 1024

_HEADER = struct.Struct(">qiibIhiqqqhii")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
_XERIAL_MAGIC = b"\x82SNAPPY\x00"

#: ``(key, value)`` or ``(key, value, [(header_key, header_value), ...])`` for :func:`build_batch`.
RecordSpec = tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]]]


class Compression:
    """Compression codec ids (attribute bits 0-2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4
    NAMES = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True, slots=True)
class RecordBatchInfo:
    """Header fields of one validated batch, plus where it sits in the blob."""

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
        """Compression codec id (see :class:`Compression`)."""
        return self.attributes & _COMPRESSION_MASK

    @property
    def log_append_time(self) -> bool:
        """True when the timestamp type is LogAppendTime."""
        return bool(self.attributes & _TIMESTAMP_TYPE_BIT)

    @property
    def is_transactional(self) -> bool:
        """Attribute bit 4."""
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        """Attribute bit 5."""
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def last_offset(self) -> int:
        """BaseOffset + LastOffsetDelta."""
        return self.base_offset + self.last_offset_delta


@dataclass(frozen=True, slots=True)
class Record:
    """One decoded record (absolute offset and timestamp)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


# ----------------------------------------------------------------------------------------------- parsing


def parse_batches(data: bytes | bytearray | memoryview) -> list[RecordBatchInfo]:
    """Validate every batch of a records blob and return their headers.

    Raises:
        CorruptRecord: truncated batch, bad Length, magic other than 2, CRC mismatch, negative counts.
    """
    view = memoryview(data).cast("B")  # slices of a memoryview are zero-copy (CRC over 1 MiB batches)
    total = len(view)
    pos = 0
    batches: list[RecordBatchInfo] = []
    while pos < total:
        if total - pos < LOG_OVERHEAD:
            raise CorruptRecord(
                f"Record batch at {pos}: {total - pos} trailing bytes, less than the 12-byte log overhead"
            )
        length = _I32.unpack_from(view, pos + 8)[0]
        size = length + LOG_OVERHEAD
        if size < BATCH_HEADER_SIZE:
            raise CorruptRecord(f"Record batch at {pos}: size {size} is smaller than the minimum {BATCH_HEADER_SIZE}")
        if pos + size > total:
            raise CorruptRecord(f"Record batch at {pos}: size {size} runs past the end of the records ({total} bytes)")
        fields = _HEADER.unpack_from(view, pos)
        magic = fields[3]
        if magic != 2:
            raise CorruptRecord(f"Record batch at {pos}: unsupported magic {magic} (only 2 is accepted)")
        computed = crc32c.crc32c(view[pos + 21 : pos + size])
        if computed != fields[4]:
            raise CorruptRecord(
                f"Record batch at {pos} is corrupt (stored crc = {fields[4]}, computed crc = {computed})"
            )
        if fields[12] < 0 or fields[6] < 0:
            raise CorruptRecord(f"Record batch at {pos}: negative record count or last offset delta")
        batches.append(RecordBatchInfo(pos, size, fields[0], *fields[2:]))
        pos += size
    return batches


def validate_produce_records(data: bytes | bytearray | memoryview | None, api_version: int) -> RecordBatchInfo:
    """The checks of ``ProduceRequest.validateRecords`` (v3+), then :func:`parse_batches`'s CRC/length checks.

    In Kafka's order: at least one batch, magic 2, no ZStandard before Produce v7, exactly one batch
    (each an ``InvalidRecordException``/``UnsupportedCompressionTypeException``, answered per partition
    since 2.8); then the log validator's length/CRC checks (CORRUPT_MESSAGE).

    Returns:
        The single batch's header.

    Raises:
        CorruptRecord: with error_code INVALID_RECORD, UNSUPPORTED_COMPRESSION_TYPE or CORRUPT_MESSAGE.
    """
    view = memoryview(data if data is not None else b"").cast("B")
    prefix = f"Produce requests with version {api_version}"
    if len(view) < LOG_OVERHEAD:
        raise CorruptRecord(f"{prefix} must have at least one record batch", ErrorCode.INVALID_RECORD)
    if len(view) > 16 and view[16] != 2:
        raise CorruptRecord(
            f"{prefix} are only allowed to contain record batches with magic version 2", ErrorCode.INVALID_RECORD
        )
    if len(view) > 22 and view[22] & _COMPRESSION_MASK == Compression.ZSTD and api_version < 7:
        raise CorruptRecord(
            f"{prefix} are not allowed to use ZStandard compression", ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        )
    batches = parse_batches(view)
    if len(batches) != 1:
        raise CorruptRecord(f"{prefix} are only allowed to contain exactly one record batch", ErrorCode.INVALID_RECORD)
    if batches[0].compression > Compression.ZSTD:
        raise CorruptRecord(
            f"Unknown compression type id {batches[0].compression}", ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        )
    return batches[0]


def set_base_offset(buf: bytearray | memoryview, position: int, base_offset: int) -> None:
    """Overwrite a batch's BaseOffset in place (not covered by the CRC)."""
    _I64.pack_into(buf, position, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, position: int, epoch: int) -> None:
    """Overwrite a batch's PartitionLeaderEpoch in place (not covered by the CRC)."""
    _I32.pack_into(buf, position + 12, epoch)


def set_log_append_time(buf: bytearray | memoryview, position: int, size: int, timestamp: int) -> None:
    """Switch a batch to LogAppendTime with ``timestamp`` as MaxTimestamp, and recompute its CRC."""
    attributes = _I16.unpack_from(buf, position + 21)[0]
    _I16.pack_into(buf, position + 21, attributes | _TIMESTAMP_TYPE_BIT)
    _I64.pack_into(buf, position + 35, timestamp)
    _U32.pack_into(buf, position + 17, crc32c.crc32c(bytes(buf[position + 21 : position + size])))


# ----------------------------------------------------------------------------------------------- varints


def _write_varint(value: int, out: bytearray) -> None:
    v = (value << 1) ^ (value >> 63)  # zig-zag (64-bit)
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise CorruptRecord("record varint runs past the end")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptRecord("record varint longer than 10 bytes")


def _read_blob(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = _read_varint(buf, pos)
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise CorruptRecord("record field runs past the end")
    return bytes(buf[pos : pos + n]), pos + n


# ----------------------------------------------------------------------------------------------- compression


def _compress(codec: int, data: bytes) -> bytes:
    if codec == Compression.NONE:
        return data
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == Compression.SNAPPY:
        # xerial framing, as the Java producer writes it: magic, version 1, compatible version 1, blocks.
        block = bytes(cramjam.snappy.compress_raw(data))
        return _XERIAL_MAGIC + _I32.pack(1) + _I32.pack(1) + _I32.pack(len(block)) + block
    if codec == Compression.LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


def _decompress(codec: int, data: bytes) -> bytes:
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
    pos = len(_XERIAL_MAGIC) + 8
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


# ----------------------------------------------------------------------------------------------- records


def decode_records(data: bytes | bytearray | memoryview, batch: RecordBatchInfo) -> list[Record]:
    """Decode (decompressing if needed) the records of one validated batch of ``data``.

    Raises:
        CorruptRecord: malformed records, a count that does not match, or undecompressible payload.
    """
    raw = bytes(memoryview(data)[batch.position + BATCH_HEADER_SIZE : batch.position + batch.size])
    buf = _decompress(batch.compression, raw)
    records: list[Record] = []
    pos = 0
    for _ in range(batch.record_count):
        length, pos = _read_varint(buf, pos)
        end = pos + length
        if length < 0 or end > len(buf):
            raise CorruptRecord("record length runs past the end of the batch")
        pos += 1  # attributes (unused in v2)
        ts_delta, pos = _read_varint(buf, pos)
        offset_delta, pos = _read_varint(buf, pos)
        key, pos = _read_blob(buf, pos)
        value, pos = _read_blob(buf, pos)
        n_headers, pos = _read_varint(buf, pos)
        if n_headers < 0 or n_headers > end - pos:
            raise CorruptRecord(f"invalid header count {n_headers}")
        headers = []
        for _ in range(n_headers):
            hkey, pos = _read_blob(buf, pos)
            hval, pos = _read_blob(buf, pos)
            if hkey is None:
                raise CorruptRecord("null record header key")
            headers.append((hkey.decode("utf-8", "replace"), hval))
        if pos != end:
            raise CorruptRecord(f"record length {length} does not match its content")
        records.append(
            Record(batch.base_offset + offset_delta, batch.base_timestamp + ts_delta, key, value, tuple(headers))
        )
    if pos != len(buf):
        raise CorruptRecord(f"{len(buf) - pos} bytes after the last of {batch.record_count} records")
    return records


def build_batch(
    records: Sequence[RecordSpec],
    *,
    base_offset: int = 0,
    base_timestamp: int = 0,
    timestamp_step: int = 1,
    compression: int = Compression.NONE,
    partition_leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    """Build one v2 batch from ``(key, value[, headers])`` tuples (for tests and tools).

    Record i gets offset delta i and timestamp ``base_timestamp + i * timestamp_step``.
    """
    body = bytearray()
    for i, rec in enumerate(records):
        key, value = rec[0], rec[1]
        headers: Sequence[tuple[str, bytes | None]] = rec[2] if len(rec) > 2 else ()
        r = bytearray(b"\x00")
        _write_varint(i * timestamp_step, r)
        _write_varint(i, r)
        for blob in (key, value):
            if blob is None:
                _write_varint(-1, r)
            else:
                _write_varint(len(blob), r)
                r += blob
        _write_varint(len(headers), r)
        for hk, hv in headers:
            hkb = hk.encode("utf-8")
            _write_varint(len(hkb), r)
            r += hkb
            if hv is None:
                _write_varint(-1, r)
            else:
                _write_varint(len(hv), r)
                r += hv
        _write_varint(len(r), body)
        body += r
    payload = _compress(compression, bytes(body))
    count = len(records)
    attributes = (compression & _COMPRESSION_MASK) | (_TRANSACTIONAL_BIT if transactional else 0)
    max_ts = base_timestamp + max(count - 1, 0) * timestamp_step
    tail = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            max(count - 1, 0),
            base_timestamp,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
        + payload
    )
    crc = crc32c.crc32c(tail)
    head = struct.pack(">qiibI", base_offset, len(tail) + 9, partition_leader_epoch, 2, crc)
    return head + tail
