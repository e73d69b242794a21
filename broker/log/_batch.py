"""The log's use of the protocol's record batch v2 codec (:mod:`broker.protocol.batch`, :mod:`.records`).

What is the log's own: ``max.message.bytes`` (a :class:`RecordTooLargeError`), the log's error types (a
:class:`~broker.protocol.errors.CorruptRecord` becomes a :class:`CorruptRecordError`), the refusal of an empty
append, and the timestamp search of ListOffsets inside one batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker.protocol.batch import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    RecordBatchInfo,
    batch_size,
)
from broker.protocol.batch import check_batch as check_wire_batch
from broker.protocol.errors import CorruptRecord
from broker.protocol.records import build_batch as build_wire_batch
from broker.protocol.records import check_record_framing as check_wire_framing
from broker.protocol.records import record_offsets_and_timestamps

from .errors import CorruptRecordError, RecordTooLargeError

__all__ = [
    "build_batch",
    "check_batch",
    "check_record_framing",
    "first_record_at_or_after",
    "validate_batches",
]


def check_batch(
    buf: bytes | bytearray | memoryview, position: int, end: int, max_size: int | None, verify_crc: bool, shift: int = 0
) -> RecordBatchInfo:
    """Validate the batch at ``position`` (never reading past ``end``) and return its header.

    Raises:
        CorruptRecordError: see :func:`broker.protocol.batch.check_batch`.
        RecordTooLargeError: a batch above ``max_size`` (checked once its size is known to be plausible).
    """
    if max_size is not None and end - position >= LOG_OVERHEAD:
        size = batch_size(buf, position)
        if size > max_size and size >= BATCH_HEADER_SIZE:
            raise RecordTooLargeError(
                f"The record batch size is {size} bytes which exceeds the maximum configured value of {max_size}."
            )
    try:
        return check_wire_batch(buf, position, end, verify_crc=verify_crc, shift=shift)
    except CorruptRecord as exc:
        raise CorruptRecordError(str(exc)) from None


def validate_batches(buf: bytes | bytearray | memoryview, max_batch_size: int | None) -> list[RecordBatchInfo]:
    """Every batch of a produce/replication payload, validated (size, magic, counts, CRC-32C).

    Raises:
        CorruptRecordError: empty input, a bad CRC or magic, or a length that does not fit the buffer.
        RecordTooLargeError: a batch above ``max_batch_size``.
    """
    end = len(buf)
    if end == 0:
        raise CorruptRecordError("Records contain no record batch")
    view = memoryview(buf).cast("B")  # zero-copy slices for the CRC
    out: list[RecordBatchInfo] = []
    position = 0
    while position < end:
        info = check_batch(view, position, end, max_batch_size, True)
        out.append(info)
        position += info.size
    return out


def check_record_framing(buf: bytes | bytearray | memoryview, batches: list[RecordBatchInfo]) -> None:
    """The leader's record-level check (Kafka's LogValidator), batch by batch; see
    :func:`broker.protocol.records.check_record_framing`.

    Raises:
        CorruptRecordError: undecompressible payload, unknown codec, or a record count/length mismatch.
    """
    for info in batches:
        try:
            check_wire_framing(buf, info)
        except CorruptRecord as exc:
            raise CorruptRecordError(
                f"Invalid records in the batch at offset {info.base_offset} ({info.record_count} records): {exc}"
            ) from None


def first_record_at_or_after(
    batch: bytes, info: RecordBatchInfo, timestamp: int, start_offset: int
) -> tuple[int, int] | None:
    """``(timestamp, offset)`` of the first record with offset >= ``start_offset`` and timestamp >= ``timestamp``
    of ``info``, the batch that ``batch`` starts with; None if there is none.

    An undecodable batch answers with its last offset and max timestamp (the batch is known to reach
    ``timestamp``).
    """
    try:
        for offset, record_ts in record_offsets_and_timestamps(batch, info, info.position):
            if offset >= start_offset and record_ts >= timestamp:
                return record_ts, offset
    except CorruptRecord:
        if info.max_timestamp >= timestamp and info.last_offset >= start_offset:
            return info.max_timestamp, info.last_offset
    return None


def build_batch(
    values: Sequence[tuple[bytes | None, bytes | None]],
    *,
    base_offset: int = 0,
    base_timestamp: int = 0,
    timestamp_step: int = 0,
) -> bytes:
    """An uncompressed batch of ``(key, value)`` records all stamped ``base_timestamp`` unless ``timestamp_step``
    says otherwise: the broker's own appends of one instant (metric samples).

    Raises:
        ValueError: no records (a batch of none could not be appended).
    """
    if not values:
        raise ValueError("a record batch needs at least one record")
    return build_wire_batch(
        values, base_offset=base_offset, base_timestamp=base_timestamp, timestamp_step=timestamp_step
    )
