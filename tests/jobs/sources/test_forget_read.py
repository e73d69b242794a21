"""The file source's offsets hold the files still being written, not every file ever read: a finished file (a rotated
log, a scrape answer) read to its end leaves them once it is FORGET_AFTER_S old, and `read_before` keeps it read."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from jobs.sources.file_tail import FORGET_AFTER_S, forget_read, plan
from jobs.sources.streams import _FileStreamReader

HOUR_S = 3600.0
# Days of hourly rotation the long test plays: Kafka's shipped log4j config keeps every rotated file.
DAYS = 3
LINE = ("[2026-11-28 08:00:00,000] INFO [Broker id=1] Handling LeaderAndIsr request correlationId {i} "
        "(state.change.logger)\n")


def _write(path: Path, text: str, mtime: float, mode: str = "a") -> None:
    with open(path, mode) as fh:
        fh.write(text)
    os.utime(path, (mtime, mtime))


def _read_bytes(files: dict[str, dict[str, Any]]) -> int:
    return sum(int(e["offset"]) - int(e["from"]) for e in files.values())


def test_days_of_hourly_rotation_keep_the_offsets_to_the_last_hour_and_read_every_byte_once(tmp_path: Path) -> None:
    broker = tmp_path / "c1" / "broker-1"
    broker.mkdir(parents=True)
    active = broker / "state-change.log"
    t0 = 1_764_316_800.0  # 2025-11-28 08:00 UTC
    offsets: dict[str, dict[str, Any]] = {}
    read_before: dict[str, float] = {}
    written = read = forgotten = 0
    largest = 0
    for hour in range(DAYS * 24):
        for minute in range(0, 60, 10):  # a batch every ten minutes, a line before each
            t = t0 + hour * HOUR_S + minute * 60
            text = LINE.format(i=hour * 100 + minute)
            _write(active, text, t)
            written += len(text)
            planned = plan(str(tmp_path), "logs", offsets, 1 << 30, now=t + 60, read_before=read_before)
            read += _read_bytes(planned.files)
            offsets, read_before, gone = forget_read(planned.files, "logs", read_before, t + 60)
            forgotten += gone
            largest = max(largest, len(offsets))
        stamp = time.strftime("%Y-%m-%d-%H", time.gmtime(t0 + hour * HOUR_S))
        os.rename(active, broker / f"state-change.log.{stamp}")  # log4j's hourly roll: same inode, new name
        _write(active, "", t0 + (hour + 1) * HOUR_S, mode="w")
    assert read == written  # every byte once: nothing forgotten before it was read, nothing read again
    assert forgotten == DAYS * 24 - 1  # every file rotated before the last batch (the last roll came after it)
    assert largest <= 4  # the growing file and the rotated ones of the last hour, never the days behind them
    assert len(list(broker.iterdir())) == DAYS * 24 + 1  # the files themselves are Kafka's to keep


def test_a_finished_file_not_read_to_its_end_stays_however_old(tmp_path: Path) -> None:
    broker = tmp_path / "c1" / "broker-1"
    broker.mkdir(parents=True)
    old = time.time() - 10 * FORGET_AFTER_S
    rotated = broker / "state-change.log.2026-11-27-08"
    _write(rotated, "".join(LINE.format(i=i) for i in range(100)), old)
    first = plan(str(tmp_path), "logs", {}, 1000, now=time.time())  # a budget smaller than the file
    kept, read_before, gone = forget_read(first.files, "logs", {}, time.time())
    assert (gone, read_before) == (0, {})
    second = plan(str(tmp_path), "logs", kept, 1 << 30, now=time.time())  # the rest, this batch
    kept, read_before, gone = forget_read(second.files, "logs", {}, time.time())
    assert gone == 0  # read by this batch: it leaves with the next one
    assert _read_bytes(first.files) + _read_bytes(second.files) == rotated.stat().st_size
    third = plan(str(tmp_path), "logs", kept, 1 << 30, now=time.time())
    assert forget_read(third.files, "logs", {}, time.time())[2] == 1


def test_a_growing_log_never_leaves_and_a_new_old_file_under_read_before_is_taken_as_read(tmp_path: Path) -> None:
    broker = tmp_path / "c1" / "broker-1"
    broker.mkdir(parents=True)
    now = time.time()
    active = broker / "server.log"
    _write(active, LINE.format(i=1), now - 10 * FORGET_AFTER_S)  # quiet for ten hours, still Kafka's live log
    rotated = broker / "server.log.2026-11-27-08"
    _write(rotated, LINE.format(i=2), now - 2 * FORGET_AFTER_S)
    planned = plan(str(tmp_path), "logs", {}, 1 << 30, now=now)
    once = forget_read(planned.files, "logs", {}, now)
    later = plan(str(tmp_path), "logs", once[0], 1 << 30, now=now, read_before=once[1])  # the next batch
    kept, read_before, _ = forget_read(later.files, "logs", once[1], now)
    assert [e["path"] for e in kept.values()] == [str(active)]
    assert read_before == {str(broker): rotated.stat().st_mtime}
    # a rotated file copied in with its old time (cp -p) is as old as what was forgotten: documented as read
    copied = broker / "server.log.2026-11-27-07"
    _write(copied, LINE.format(i=3), now - 3 * FORGET_AFTER_S)
    fresh = broker / "server.log.2026-11-28-08"
    _write(fresh, LINE.format(i=4), now)
    again = plan(str(tmp_path), "logs", kept, 1 << 30, now=now + 10, read_before=read_before)
    assert sorted(e["path"] for e in again.files.values()) == sorted([str(active), str(fresh)])


def test_the_stream_reader_carries_read_before_and_only_a_batch_with_news_forgets(tmp_path: Path) -> None:
    broker = tmp_path / "c1" / "broker-1"
    broker.mkdir(parents=True)
    old = time.time() - 2 * FORGET_AFTER_S
    for h in range(5):
        _write(broker / f"state-change.log.2026-11-27-0{h}", LINE.format(i=h), old + h)
    active = broker / "state-change.log"
    _write(active, LINE.format(i=9), time.time())
    reader = _FileStreamReader({"path": str(tmp_path), "family": "logs"})
    first = reader.latestOffset(reader.initialOffset(), None)
    assert len(first["files"]) == 6  # read by this batch: kept
    assert first["forgotten_total"] == 0
    assert reader.latestOffset(first, None) is first  # nothing new: no batch, nothing forgotten
    _write(active, LINE.format(i=10), time.time())
    second = reader.latestOffset(first, None)
    assert [e["path"] for e in second["files"].values()] == [str(active)]
    assert (second["forgotten_total"], second["read_before"]) == (5, {str(broker): old + 4})
    assert reader.latestOffset(second, None) is second


def test_a_brokers_directory_away_for_hours_keeps_its_own_horizon_and_loses_nothing(tmp_path: Path) -> None:
    """Broker 2's directory (a mount, a lagging mirror) is away while broker 1's rotated logs are read and
    forgotten; when it comes back, its rotated file, older than broker 1's horizon, is read."""
    root = tmp_path / "root"
    b1, b2 = root / "c1" / "broker-1", root / "c1" / "broker-2"
    b1.mkdir(parents=True)
    now = time.time()
    away = tmp_path / "away" / "broker-2"  # outside the tree
    away.mkdir(parents=True)
    _write(away / "state-change.log.2026-11-28-01", LINE.format(i=2), now - 5 * FORGET_AFTER_S)
    _write(b1 / "state-change.log.2026-11-28-03", LINE.format(i=1), now - 2 * FORGET_AFTER_S)
    first = plan(str(root), "logs", {}, 1 << 30, now=now)
    kept, horizons, _ = forget_read(first.files, "logs", {}, now)
    again = plan(str(root), "logs", kept, 1 << 30, now=now, read_before=horizons)
    kept, horizons, gone = forget_read(again.files, "logs", horizons, now)
    assert (gone, list(horizons)) == (1, [str(b1)])
    os.rename(away, b2)  # back, with a rotated file older than broker 1's horizon
    back = plan(str(root), "logs", kept, 1 << 30, now=now, read_before=horizons)
    assert [e["path"] for e in back.files.values()] == [str(b2 / "state-change.log.2026-11-28-01")]
    assert _read_bytes(back.files) == (b2 / "state-change.log.2026-11-28-01").stat().st_size


def test_no_horizon_moves_past_an_unread_finished_file_or_a_skipped_entry(tmp_path: Path) -> None:
    broker = tmp_path / "c1" / "broker-1"
    broker.mkdir(parents=True)
    now = time.time()
    unread = broker / "state-change.log.2026-11-28-01"
    _write(unread, "".join(LINE.format(i=i) for i in range(50)), now - 4 * FORGET_AFTER_S)
    _write(broker / "state-change.log.2026-11-28-02", LINE.format(i=99), now - 3 * FORGET_AFTER_S)
    sizes = {k: int(e["size"]) for k, e in plan(str(tmp_path), "logs", {}, 1 << 30, now=now).files.items()}
    # the older file only partly read: the newer one, read whole, may not move the horizon past it
    offsets = plan(str(tmp_path), "logs", {}, 1 << 30, now=now).files
    for e in offsets.values():
        e["from"] = e["offset"] = e["size"]
    partial = next(k for k, e in offsets.items() if e["path"] == str(unread))
    offsets[partial]["from"] = offsets[partial]["offset"] = sizes[partial] // 2
    _, horizons, gone = forget_read(offsets, "logs", {}, now)
    assert (gone, horizons) == (0, {})
    for e in offsets.values():
        e["from"] = e["offset"] = e["size"]
    assert forget_read(offsets, "logs", {}, now, skipped=[str(broker / "a-fifo")])[2] == 0  # a skipped entry there
    assert forget_read(offsets, "logs", {}, now)[2] == 2
