"""From a file's bytes to bronze-shaped records (pure; used by ``planewatch parse``): decoding with replacement,
continuation lines joined to their line (stack traces), byte offsets, the broker id a path names."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Record", "broker_id_of_path", "split_records"]

# A record starts like a log4j line (optionally behind a container/shipper prefix); anything else continues the
# previous record (a stack trace, a wrapped line). Metric files have one record per line.
_STARTS = re.compile(
    rb"^(\S+ (stdout|stderr) [FP] |[\w.-]+\s+\| )?(\[\d{4}-\d\d-\d\d|\d{4}[-/]\d\d[-/]\d\d[ T])", re.ASCII
)
_BROKER = re.compile(r"(?:^|[^A-Za-z0-9])[Bb]roker[-_]?([0-9]+)(?:[^0-9]|$)", re.ASCII)
# A record longer than this is cut (the rest of the line is dropped, its length is still reported): a
# multi-megabyte garbage line must not take the CLI's memory.
MAX_RECORD_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Record:
    """One record: decoded text, its byte offset in the file and its length in bytes."""

    line: str
    offset: int
    nbytes: int


def split_records(data: bytes, join_continuations: bool) -> Iterator[Record]:
    """Split a file's bytes into records at newlines; with `join_continuations`, lines that do not start like a
    log4j line are appended (with "\\n") to the record before them."""
    pos = 0
    cur: list[bytes] = []
    cur_start = 0
    n = len(data)
    while pos < n:
        end = data.find(b"\n", pos)
        end = n if end < 0 else end
        raw = data[pos:end]
        if join_continuations and cur and not _STARTS.match(raw):
            cur.append(raw)
        else:
            if cur:
                yield _record(cur, cur_start)
            cur, cur_start = [raw], pos
        pos = end + 1
    if cur:
        yield _record(cur, cur_start)


def _record(parts: list[bytes], start: int) -> Record:
    joined = b"\n".join(parts)
    return Record(joined[:MAX_RECORD_BYTES].decode("utf-8", "replace"), start, len(joined))


def broker_id_of_path(path: str) -> int | None:
    """The innermost `broker-<id>` path element's id (the Python twin of spark_paths.broker_id_from_path)."""
    for part in reversed(path.replace("\\", "/").split("/")):
        m = _BROKER.search(part)
        if m:
            return int(m.group(1))
    return None
