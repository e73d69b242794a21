"""What a file micro-batch left out, from the offset Spark logged for it: skipped entries and unread bytes.

The file source's offset of a batch (`jobs.sources.streams`, `planewatch_files`) carries each file's size and mtime at
planning, the offset read up to, and the entries skipped as not regular files. Spark writes it to the query's
offset log before the batch runs, so the batch's driver reads it back (`file_batch_rows`) and adds to dq_results:

* the byte reconciliation, after the batch, over the family's files: bytes seen (the files' sizes) = bytes read
  into records (the offsets) + bytes waiting (a later batch reads them: beyond this batch's byte budget, after an
  availableNow run's snapshot, or in a file changed within tail_quiet_s, whose last line may be incomplete).
  Anything else is a tail no batch will read, `unexpected_count` bytes: the row fails;
* each entry skipped since the previous batch (path and reason), once, and a count of all skipped entries whenever
  it changes.

Both come from the logged offsets alone: a replayed batch yields the same rows (the exactly-once sink keeps one).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jobs.sources.checkpoints import logged_offset
from schemas.dq import BYTES_EXPECTATION, RECONCILIATION_SUITE, SKIPPED_EXPECTATION, SKIPPED_SUITE, DqResult

__all__ = [
    "ByteAccount",
    "byte_account",
    "file_batch_rows",
    "file_source_rows",
    "newly_skipped",
]

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class ByteAccount:
    """Bytes of a family's files after a batch: `seen` = `read` + `waiting` + the bytes of `stuck` files."""

    seen: int = 0
    read: int = 0
    waiting: int = 0
    stuck: dict[str, int] = field(default_factory=dict)  # path -> bytes no batch will read

    @property
    def stuck_bytes(self) -> int:
        return sum(self.stuck.values())


def byte_account(end: Mapping[str, Any]) -> ByteAccount | None:
    """The bytes of a file source offset; None for an offset without sizes and planning time (an older source)."""
    files = end.get("files")
    planned_at = end.get("planned_at")
    quiet = end.get("tail_quiet_s")
    if not isinstance(files, Mapping) or not isinstance(planned_at, int | float) or not isinstance(quiet, int | float):
        return None
    seen = read = waiting = 0
    stuck: dict[str, int] = {}
    for entry in files.values():
        if not isinstance(entry, Mapping) or "size" not in entry or "mtime" not in entry:
            return None
        size, offset = int(entry["size"]), int(entry["offset"])
        seen += size
        read += min(offset, size)
        unread = size - offset
        if unread <= 0:
            continue
        if entry.get("deferred") or planned_at - float(entry["mtime"]) < quiet:
            waiting += unread
        else:
            stuck[str(entry.get("path", "?"))] = unread
    return ByteAccount(seen, read, waiting, stuck)


def newly_skipped(end: Mapping[str, Any], prev: Mapping[str, Any] | None) -> dict[str, str]:
    """The skipped entries of `end` that `prev` (the previous batch's offset) did not list with the same reason."""
    now = end.get("skipped") or {}
    before = (prev or {}).get("skipped") or {}
    return {p: r for p, r in sorted(now.items()) if before.get(p) != r}


def file_source_rows(end: Mapping[str, Any], prev: Mapping[str, Any] | None, table_name: str, batch_id: int,
                     run_ts: dt.datetime) -> list[DqResult]:
    """The dq_results rows of a file batch: the byte reconciliation (suite `reconciliation`), and the entries skipped
    since `prev` (suite `source_files`: one row per entry, `skipped <path>: <reason>`, and the count of all skipped
    entries when it changed)."""

    def result(suite: str, expectation: str, success: bool, unexpected: int, elements: int | None) -> DqResult:
        return DqResult(table_name, batch_id, suite, expectation, success, unexpected, elements, run_ts)

    rows: list[DqResult] = []
    account = byte_account(end)
    if account is not None:
        rows.append(result(RECONCILIATION_SUITE, BYTES_EXPECTATION, not account.stuck, account.stuck_bytes,
                           account.seen))
    new = newly_skipped(end, prev)
    total = int(end.get("skipped_total") or len(end.get("skipped") or {}))
    before = int((prev or {}).get("skipped_total") or len((prev or {}).get("skipped") or {}))
    if new or total != before:
        examined = total + len(end.get("files") or {})
        rows.append(result(SKIPPED_SUITE, SKIPPED_EXPECTATION, total == 0, total, examined))
    rows += [result(SKIPPED_SUITE, f"skipped {path}: {reason}", False, 1, 1) for path, reason in new.items()]
    return rows


def file_batch_rows(checkpoint: str, batch_id: int, table_name: str) -> list[DqResult]:
    """`file_source_rows` of batch `batch_id` of the file query checkpointed at `checkpoint`, from its offset log;
    each newly skipped entry and any unread tail is logged (once per batch that finds it)."""
    end = logged_offset(checkpoint, batch_id)
    if end is None:
        return []
    prev = logged_offset(checkpoint, batch_id - 1) if batch_id > 0 else None
    for path, reason in newly_skipped(end, prev).items():
        log.warning("input entry skipped: %s: %s", path, reason)
    listed = len(end.get("skipped") or {})
    total = int(end.get("skipped_total") or listed)
    if total > listed and newly_skipped(end, prev):
        log.warning("%d more input entries skipped (only %d are listed)", total - listed, listed)
    account = byte_account(end)
    if account is not None and account.stuck:
        log.warning("%s batch %d: %d bytes in files unchanged for tail_quiet_s not read: %s", table_name, batch_id,
                    account.stuck_bytes, account.stuck)
    return file_source_rows(end, prev, table_name, batch_id, dt.datetime.now(dt.UTC))
