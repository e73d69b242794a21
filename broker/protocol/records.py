"""Record batch v2: the records inside a batch (decode, check, build), and the one import point for batches.

Headers, validation and in-place patching live in :mod:`.batch`, codecs in :mod:`.compression`; both are
re-exported here.  Records (the whole sequence compressed as one, per attribute bits 0-2) are::

    Length varint | Attributes i8 | TimestampDelta varlong | OffsetDelta varint | KeyLength varint | Key |
    ValueLength varint | Value | HeaderCount varint | (HeaderKeyLength varint | HeaderKey | HeaderValueLength
    varint | HeaderValue)*

every varint zig-zag signed (:mod:`.varint`), a length of -1 meaning null.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .batch import (
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    LOG_OVERHEAD,
    MAGIC_V2,
    TRANSACTIONAL_BIT,
    RecordBatchInfo,
    encode_batch,
    parse_batches,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)
from .compression import Compression, compress, decompress
from .error_codes import ErrorCode
from .errors import CorruptRecord
from .varint import VarintError, read_varint, write_varint

__all__ = [
    "BATCH_HEADER_SIZE",
    "LOG_OVERHEAD",
    "Compression",
    "Record",
    "RecordBatchInfo",
    "RecordSpec",
    "build_batch",
    "check_record_framing",
    "decode_records",
    "parse_batches",
    "record_offsets_and_timestamps",
    "records_of",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
    "validate_produce_records",
]

#: ``(key, value)`` or ``(key, value, [(header_key, header_value), ...])`` for :func:`build_batch`.
RecordSpec = tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]]]

# Byte positions of Magic and the Attributes' low byte, read before the batch is validated.
_MAGIC_AT = 16
_ATTRIBUTES_LOW_AT = 22


@dataclass(frozen=True, slots=True)
class Record:
    """One decoded record (absolute offset and timestamp)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


# ----------------------------------------------------------------------------------------------- validation


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
    if len(view) > _MAGIC_AT and view[_MAGIC_AT] != MAGIC_V2:
        raise CorruptRecord(
            f"{prefix} are only allowed to contain record batches with magic version 2", ErrorCode.INVALID_RECORD
        )
    if (
        len(view) > _ATTRIBUTES_LOW_AT
        and view[_ATTRIBUTES_LOW_AT] & COMPRESSION_MASK == Compression.ZSTD
        and api_version < 7
    ):
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


# ----------------------------------------------------------------------------------------------- records


def records_of(data: bytes | bytearray | memoryview, batch: RecordBatchInfo, shift: int = 0) -> bytes:
    """The uncompressed record bytes of ``batch`` (whose ``position`` is ``shift`` + its place in ``data``).

    Raises:
        CorruptRecord: unknown codec or undecompressible payload.
    """
    start = batch.position - shift
    return decompress(batch.compression, bytes(memoryview(data)[start + BATCH_HEADER_SIZE : start + batch.size]))


def check_record_framing(data: bytes | bytearray | memoryview, batch: RecordBatchInfo) -> None:
    """Kafka's record-level check on a leader (``LogValidator``): the payload decompresses and holds exactly
    ``RecordsCount`` length-prefixed records, with nothing after them.

    Raises:
        CorruptRecord: undecompressible payload, unknown codec, or a record count/length mismatch.
    """
    records = records_of(data, batch)
    pos, end = 0, len(records)
    try:
        for _ in range(batch.record_count):
            length, pos = read_varint(records, pos)
            if length < 0:
                raise CorruptRecord(f"negative record length {length}")
            pos += length
            if pos > end:
                raise CorruptRecord("a record runs past the end of the batch")
    except VarintError as exc:
        raise CorruptRecord(f"record {exc}") from None
    if pos != end:
        raise CorruptRecord(f"{end - pos} bytes after the last of {batch.record_count} records")


def record_offsets_and_timestamps(
    data: bytes | bytearray | memoryview, batch: RecordBatchInfo, shift: int = 0
) -> Iterator[tuple[int, int]]:
    """``(offset, timestamp)`` of each record of ``batch`` (placed as in :func:`records_of`), reading nothing else.

    Under LogAppendTime every record's timestamp is the batch's MaxTimestamp, as Kafka reads it.

    Raises:
        CorruptRecord: undecompressible payload, a negative record length, or a record runs past the end.
    """
    records = records_of(data, batch, shift)
    append_time = batch.max_timestamp if batch.log_append_time else None
    pos = 0
    try:
        for _ in range(batch.record_count):
            length, pos = read_varint(records, pos)
            if length < 0:  # would step back: the same bytes read again for each of up to 2^31 records
                raise CorruptRecord(f"negative record length {length}")
            end = pos + length
            ts_delta, p = read_varint(records, pos + 1)  # skip the record's attributes byte
            offset_delta, _ = read_varint(records, p)
            timestamp = batch.base_timestamp + ts_delta if append_time is None else append_time
            yield batch.base_offset + offset_delta, timestamp
            pos = end
    except VarintError as exc:
        raise CorruptRecord(f"record {exc}") from None


def _read_blob(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_varint(buf, pos)
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise CorruptRecord("record field runs past the end")
    return bytes(buf[pos : pos + n]), pos + n


def decode_records(data: bytes | bytearray | memoryview, batch: RecordBatchInfo) -> list[Record]:
    """Decode (decompressing if needed) the records of one validated batch of ``data``.

    Raises:
        CorruptRecord: malformed records, a count that does not match, or undecompressible payload.
    """
    buf = records_of(data, batch)
    try:
        return _decode(buf, batch)
    except VarintError as exc:
        raise CorruptRecord(f"record {exc}") from None


def _decode(buf: bytes, batch: RecordBatchInfo) -> list[Record]:
    records: list[Record] = []
    pos = 0
    for _ in range(batch.record_count):
        length, pos = read_varint(buf, pos)
        end = pos + length
        if length < 0 or end > len(buf):
            raise CorruptRecord("record length runs past the end of the batch")
        pos += 1  # attributes (unused in v2)
        ts_delta, pos = read_varint(buf, pos)
        offset_delta, pos = read_varint(buf, pos)
        key, pos = _read_blob(buf, pos)
        value, pos = _read_blob(buf, pos)
        n_headers, pos = read_varint(buf, pos)
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


# ----------------------------------------------------------------------------------------------- building


def _write_blob(blob: bytes | None, out: bytearray) -> None:
    if blob is None:
        write_varint(-1, out)
    else:
        write_varint(len(blob), out)
        out += blob


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
    """One v2 batch of ``(key, value[, headers])`` tuples with a valid CRC-32C (for tests, tools and the broker's
    own appends; clients build their own).

    Record i gets offset delta i and timestamp ``base_timestamp + i * timestamp_step``.
    """
    body = bytearray()
    for i, rec in enumerate(records):
        headers: Sequence[tuple[str, bytes | None]] = rec[2] if len(rec) > 2 else ()
        r = bytearray(b"\x00")  # attributes
        write_varint(i * timestamp_step, r)
        write_varint(i, r)
        _write_blob(rec[0], r)
        _write_blob(rec[1], r)
        write_varint(len(headers), r)
        for hk, hv in headers:
            _write_blob(hk.encode("utf-8"), r)
            _write_blob(hv, r)
        write_varint(len(r), body)
        body += r
    count = len(records)
    last_offset_delta = max(count - 1, 0)
    return encode_batch(
        compress(compression, bytes(body)),
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=(compression & COMPRESSION_MASK) | (TRANSACTIONAL_BIT if transactional else 0),
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=base_timestamp + last_offset_delta * timestamp_step,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        record_count=count,
    )
