"""Value types of the log's public API: append and fetch results, ListOffsets sentinels, log start reasons."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "AppendInfo", "FetchData", "LogStartOffsetIncrementReason"]

LATEST_TIMESTAMP = -1  # ListOffsets: the log end offset
EARLIEST_TIMESTAMP = -2  # ListOffsets: the log start offset


class LogStartOffsetIncrementReason(Enum):
    """Why the log start offset moved (Kafka's ``LogStartOffsetIncrementReason``, text as in its log line)."""

    CLIENT_RECORD_DELETION = "client delete records request"
    LEADER_OFFSET_INCREMENTED = "leader offset increment"
    SEGMENT_DELETION = "segment deletion"


@dataclass(frozen=True)
class AppendInfo:
    """The outcome of an append (what Produce answers with)."""

    first_offset: int
    last_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    batch_count: int
    message_count: int
    valid_bytes: int


@dataclass(frozen=True)
class FetchData:
    """The outcome of a read: whole batches (``b""`` when there is nothing, never None) and the offsets around."""

    records: bytes
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
