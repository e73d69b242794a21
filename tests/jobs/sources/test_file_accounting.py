"""The file source's dq rows from its offsets (no Spark): byte reconciliation and skipped entries reported once."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from jobs.sources.file_accounting import byte_account, file_batch_rows, file_source_rows, newly_skipped
from jobs.sources.file_tail import plan
from schemas.dq import BYTES_EXPECTATION

TS = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
T0 = 1_700_000_000.0


def _offset(files: dict, skipped: dict | None = None, planned_at: float = T0 + 100, quiet: float = 30.0) -> dict:
    skipped = skipped or {}
    return {"files": files, "skipped": skipped, "skipped_total": len(skipped), "planned_at": planned_at,
            "tail_quiet_s": quiet}


def _entry(path: str, size: int, offset: int, mtime: float, deferred: bool = False) -> dict:
    return {"path": path, "size": size, "offset": offset, "from": 0, "mtime": mtime, "deferred": deferred}


def test_byte_account_tells_waiting_from_stuck() -> None:
    end = _offset({
        "1:1": _entry("/in/done.log", 100, 100, T0),
        "1:2": _entry("/in/growing.log", 50, 40, T0 + 90),  # changed 10 s ago: its tail may be incomplete
        "1:3": _entry("/in/backlog.log", 80, 10, T0, deferred=True),  # beyond the batch budget
        "1:4": _entry("/in/scrape.prom", 30, 25, T0),  # quiet for 100 s and its last 5 bytes unread
    })
    account = byte_account(end)
    assert account is not None
    assert (account.seen, account.read, account.waiting) == (260, 175, 80)
    assert account.stuck == {"/in/scrape.prom": 5}
    [row] = file_source_rows(end, None, "raw_metrics", 3, TS)
    assert (row.suite, row.expectation, row.success) == ("reconciliation", BYTES_EXPECTATION, False)
    assert (row.element_count, row.unexpected_count, row.batch_id) == (260, 5, 3)
    # an offset of the source before byte accounting: no row rather than a wrong one
    assert byte_account({"files": {"1:1": {"path": "/x", "offset": 3, "from": 0}}}) is None


def test_skipped_entries_reported_once_and_their_count_when_it_changes() -> None:
    files = {"1:1": _entry("/in/a.log", 10, 10, T0)}
    first = _offset(files, {"/in/pipe": "FIFO (named pipe)", "/in/loop": "symlink loop"})
    rows = file_source_rows(first, None, "raw_logs", 0, TS)
    by = {(r.suite, r.expectation): r for r in rows}
    assert by[("reconciliation", BYTES_EXPECTATION)].success
    count = by[("source_files", "regular files only")]
    assert (count.success, count.unexpected_count, count.element_count) == (False, 2, 3)
    assert by[("source_files", "skipped /in/pipe: FIFO (named pipe)")].unexpected_count == 1
    assert ("source_files", "skipped /in/loop: symlink loop") in by
    # the same entries next batch: nothing new to report, only the byte row
    assert [r.suite for r in file_source_rows(first, first, "raw_logs", 1, TS)] == ["reconciliation"]
    # one entry's reason changes, one goes away
    later = _offset(files, {"/in/loop": "dangling symlink (target x does not exist)"})
    assert newly_skipped(later, first) == {"/in/loop": "dangling symlink (target x does not exist)"}
    rows = file_source_rows(later, first, "raw_logs", 2, TS)
    assert [(r.expectation, r.unexpected_count) for r in rows if r.suite == "source_files"] == [
        ("regular files only", 1), ("skipped /in/loop: dangling symlink (target x does not exist)", 1)]
    # all gone: a green count row says so
    clear = file_source_rows(_offset(files), later, "raw_logs", 3, TS)
    assert [(r.expectation, r.success) for r in clear if r.suite == "source_files"] == [
        ("regular files only", True)]


def test_rows_from_the_offset_log(tmp_path: Path) -> None:
    """Spark's offset log format: version line, batch metadata, then the source's offset."""
    inp = tmp_path / "in"
    inp.mkdir()
    (inp / "server.log").write_text("[2021-03-02 08:00:01,010] INFO a (x)\nlast, no newline")
    os.mkfifo(inp / "pipe")
    ck = tmp_path / "ck"
    (ck / "offsets").mkdir(parents=True)
    planned = plan(str(inp), "logs", {}, 1 << 20, now=T0)
    end = _offset(planned.files, planned.skipped, planned_at=T0)
    meta = '{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{}}'
    (ck / "offsets" / "0").write_text(f"v1\n{meta}\n{json.dumps(end)}")
    rows = file_batch_rows(str(ck), 0, "raw_logs")
    by = {(r.suite, r.expectation): r for r in rows}
    size = (inp / "server.log").stat().st_size
    assert by[("reconciliation", BYTES_EXPECTATION)].element_count == size
    assert by[("source_files", f"skipped {inp / 'pipe'}: FIFO (named pipe): not opened, a read would block until a "
                                "writer appears")].success is False
    assert file_batch_rows(str(ck), 1, "raw_logs") == []  # no such batch logged
