"""Retention rules as pure functions over a segment list (Kafka's ``deletableSegments`` and deletion reasons).

A segment is deletable only as part of a prefix of the log, only when every offset it holds is below the high
watermark (its upper bound -- the next segment's base offset, or the log end offset -- is <= HW), never when it
is the empty active segment, and only while the rule's predicate holds. The messages are Kafka 2.8-3.x's
``SegmentDeletionReason.logReason`` texts.
"""

from __future__ import annotations

from collections.abc import Callable

from .segment import LogSegment

__all__ = [
    "deletable_prefix",
    "log_start_breach",
    "retention_ms_breach",
    "retention_size_breach",
    "size_messages",
    "start_breach_message",
    "time_messages",
]

Predicate = Callable[[LogSegment, LogSegment | None], bool]


def deletable_prefix(segments: list[LogSegment], log_end_offset: int, high_watermark: int,
                     predicate: Predicate) -> list[LogSegment]:
    """The oldest segments that may be deleted under ``predicate`` (see the module docstring)."""
    doomed: list[LogSegment] = []
    for i, segment in enumerate(segments):
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        upper = nxt.base_offset if nxt is not None else log_end_offset
        if high_watermark < upper or (nxt is None and segment.size == 0) or not predicate(segment, nxt):
            break
        doomed.append(segment)
    return doomed


def retention_ms_breach(now_ms: int, retention_ms: int) -> Predicate:
    """``retention.ms``: the segment's newest record (or its mtime) is older than the limit."""
    return lambda segment, _next: now_ms - segment.largest_timestamp > retention_ms


def retention_size_breach(total_bytes: int, retention_bytes: int) -> Predicate:
    """``retention.bytes``: delete oldest segments while the log stays at least ``retention_bytes`` big."""
    excess = [total_bytes - retention_bytes]

    def over(segment: LogSegment, _next: LogSegment | None) -> bool:
        if excess[0] - segment.size >= 0:
            excess[0] -= segment.size
            return True
        return False

    return over


def log_start_breach(log_start_offset: int) -> Predicate:
    """Segments wholly below the log start offset (after DeleteRecords or a follower's increment)."""
    return lambda _segment, nxt: nxt is not None and nxt.base_offset <= log_start_offset


def time_messages(doomed: list[LogSegment], retention_ms: int) -> list[str]:
    """RetentionMsBreach's lines, one per segment."""
    return [f"Deleting segment {segment} due to retention time {retention_ms}ms breach based on the "
            f"{'largest record timestamp' if segment.max_timestamp >= 0 else 'last modified time'} in the segment"
            for segment in doomed]


def size_messages(doomed: list[LogSegment], total_bytes: int, retention_bytes: int) -> list[str]:
    """RetentionSizeBreach's lines, one per segment, with the size left after each."""
    out = []
    for segment in doomed:
        total_bytes -= segment.size
        out.append(f"Deleting segment {segment} due to retention size {retention_bytes} breach. Log size after "
                   f"deletion will be {total_bytes}.")
    return out


def start_breach_message(doomed: list[LogSegment], log_start_offset: int) -> list[str]:
    """LogStartOffsetBreach's single line."""
    return [f"Deleting segments due to log start offset {log_start_offset} breach: {','.join(map(str, doomed))}"]
