"""The log package's exception hierarchy: one base, each subclass carrying the Kafka error code to answer with.

The request handlers translate a :class:`LogError` once, at their boundary, into the partition's ``error_code``;
nothing here knows about the wire. The codes are the numbers of ``org.apache.kafka.common.protocol.Errors``
(kept as plain ints so this storage layer imports nothing from the protocol package).
"""

from __future__ import annotations

from broker.protocol.error_codes import ErrorCode

__all__ = [
    "CorruptRecordError",
    "LogDirInUseError",
    "LogError",
    "OffsetOutOfRangeError",
    "RecordBatchTooLargeError",
    "RecordTooLargeError",
    "StorageError",
    "UnexpectedAppendOffsetError",
]

class LogError(Exception):
    """Base of every error raised by :mod:`broker.log`."""

    error_code: int = ErrorCode.UNKNOWN_SERVER_ERROR


class CorruptRecordError(LogError):
    """A record batch with a bad CRC, a bad magic byte, or lengths that lie (Kafka's CorruptRecordException)."""

    error_code = ErrorCode.CORRUPT_MESSAGE


class RecordTooLargeError(LogError):
    """A record batch above ``max.message.bytes`` (Kafka's RecordTooLargeException)."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class RecordBatchTooLargeError(LogError):
    """An append larger than ``segment.bytes``: it could never fit a segment (Kafka's RecordBatchTooLargeException)."""

    error_code = ErrorCode.RECORD_LIST_TOO_LARGE


class OffsetOutOfRangeError(LogError):
    """A read below the log start offset or above the log end offset."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE

    def __init__(self, message: str, *, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(message)
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class UnexpectedAppendOffsetError(LogError):
    """A follower append whose first offset is below the log end offset (the caller must truncate first)."""

    error_code = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str, *, first_offset: int, log_end_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.log_end_offset = log_end_offset


class StorageError(LogError):
    """An I/O failure on a log directory (Kafka's KafkaStorageException)."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class LogDirInUseError(StorageError):
    """Another process holds the ``.lock`` of a log directory."""
