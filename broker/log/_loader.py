"""Loading a partition directory at startup, with recovery after an unclean shutdown (Kafka's ``LogLoader``).

1. Leftovers of interrupted operations are removed: ``*.tmp`` / ``*.deleted`` files, and index files whose
   ``.log`` is gone (a crash between the unlinks of a segment deletion).
2. Segments are opened in base-offset order. After a clean shutdown every segment is trusted (only its index
   is sanity-checked). Otherwise every segment that may hold offsets at or after the recovery point -- the
   offset up to which everything was fsynced -- is scanned batch by batch (lengths, magic, CRC-32C, offsets
   increasing); the file is cut after the last valid batch, its indexes are rebuilt, and every later segment
   is deleted ("Corruption found in segment ..."). A segment whose index fails the sanity check is recovered
   the same way.
3. The leader epoch cache is replayed from the recovered batches and trimmed to the loaded offsets.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from broker.log4j import KafkaLogger
from broker.protocol.batch import RecordBatchInfo

from .config import LogConfig
from .segment import LOG_SUFFIX, LogSegment

__all__ = ["LoadResult", "load_segments"]

_INDEX_SUFFIXES = (".index", ".timeindex")
_DELETED_SUFFIX = ".deleted"
_TMP_SUFFIX = ".tmp"


@dataclass
class LoadResult:
    """What :func:`load_segments` found."""

    segments: list[LogSegment]
    recovered_segments: int
    truncated_bytes: int


def _clean_leftovers(directory: Path) -> set[int]:
    bases: set[int] = set()
    names = sorted(os.listdir(directory))
    for name in names:
        path = directory / name
        if name.endswith((_DELETED_SUFFIX, _TMP_SUFFIX)):
            path.unlink(missing_ok=True)
        elif name.endswith(LOG_SUFFIX) and name[: -len(LOG_SUFFIX)].isdigit():
            bases.add(int(name[: -len(LOG_SUFFIX)]))
    for name in names:
        for suffix in _INDEX_SUFFIXES:
            stem = name[: -len(suffix)]
            if name.endswith(suffix) and stem.isdigit() and int(stem) not in bases:
                (directory / name).unlink(missing_ok=True)
    return bases


def load_segments(
    directory: Path,
    config: LogConfig,
    *,
    recovery_point: int,
    clean_shutdown: bool,
    now_ms: int,
    log: KafkaLogger,
    segment_log: KafkaLogger,
    on_batch: Callable[[RecordBatchInfo], None],
) -> LoadResult:
    """Open (and, after a crash, recover) the segments of one partition directory; see the module docstring."""
    bases = sorted(_clean_leftovers(directory))
    segments = [
        LogSegment(directory, base, config.index_interval_bytes, config.segment_index_bytes, now_ms) for base in bases
    ]
    recovered = truncated_total = 0
    kept: list[LogSegment] = []
    for i, segment in enumerate(segments):
        next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
        unflushed = not clean_shutdown and (next_base is None or next_base > recovery_point)
        if not unflushed and segment.load():
            kept.append(segment)
            continue
        if unflushed:
            log.info(f"Recovering unflushed segment {segment.base_offset}")
        else:
            log.warn(
                f"Found a corrupted index file corresponding to log file {segment.log_path} due to "
                f"failed sanity check}}, recovering segment and rebuilding index files..."
            )
        recovered += 1
        truncated = segment.recover(None, on_batch)  # followers may hold batches above max.message.bytes
        kept.append(segment)
        if truncated > 0:
            truncated_total += truncated
            segment_log.warn(
                f"Found invalid messages in log segment {segment.log_path} at byte offset "
                f"{segment.size}: {segment.recovery_error}."
            )
            log.warn(f"Corruption found in segment {segment.base_offset}, truncating to offset {segment.next_offset}")
            for later in segments[i + 1 :]:
                later.delete_files()
                later.close()
            break
    # An empty trailing segment whose base is below its predecessor's end cannot be appended to; drop it.
    while len(kept) > 1 and kept[-1].size == 0 and kept[-1].base_offset < kept[-2].next_offset:
        dropped = kept.pop()
        dropped.delete_files()
        dropped.close()
    return LoadResult(kept, recovered, truncated_total)
