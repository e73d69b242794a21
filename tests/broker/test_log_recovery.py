"""Recovery after crashes (truncated, garbled, zero-filled tails; bad indexes), truncation, the epoch checkpoint."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest

from broker.log import CheckpointDelay, LogConfig
from broker.log.checkpoint import read_checkpoint
from tests.broker.test_log_support import TP, base_offsets, batch, new_log4j, open_log, server_log

SMALL = LogConfig(segment_bytes=3_000, index_interval_bytes=200)
_MS = re.compile(r" in \d+ ms")


def _fill(root: Path, batches: int = 30, epoch: int = 0) -> tuple[list[int], int]:
    """Append ``batches`` 3-record batches, close WITHOUT a flush marker; returns the segment bases and LEO."""
    log = open_log(root, SMALL)
    for i in range(batches):
        log.append_as_leader(batch(3, tag=i), epoch)
    bases, end = [s.base_offset for s in log.segments], log.log_end_offset
    log.close(flush=False)
    return bases, end


def _last_segment_file(root: Path) -> Path:
    return sorted((root / str(TP)).glob("*.log"))[-1]


def _assert_consistent(log, end: int) -> None:  # type: ignore[no-untyped-def]
    assert log.log_end_offset == end
    offset, seen = 0, []
    while offset < end:
        got = base_offsets(log.read(offset, 100_000).records)
        seen += got
        offset = got[-1] + 3
    assert seen == list(range(0, end, 3))


@pytest.mark.parametrize(("damage", "lost_batches"), [
    (lambda f: os.truncate(f, os.path.getsize(f) - 7), 1),                      # torn last batch
    (lambda f: f.open("ab").write(random.Random(7).randbytes(500)), 0),         # garbage after the end
    (lambda f: f.open("ab").write(b"\x00" * 4096), 0),                          # zero-filled tail
    (lambda f: f.open("ab").write(batch(3, tag=99)[:45]), 0),                   # partial header of a new batch
], ids=["torn-last-batch", "garbage-tail", "zero-filled-tail", "partial-header"])
def test_unclean_shutdown_cuts_the_tail_back_to_the_last_whole_batch(tmp_path: Path, damage, lost_batches) -> None:
    bases, end = _fill(tmp_path)
    segment_file = _last_segment_file(tmp_path)
    damage(segment_file)
    logs = new_log4j(tmp_path)
    log = open_log(tmp_path, SMALL, logs, recovery_point=bases[-1])
    expected_end = end - 3 * lost_batches
    _assert_consistent(log, expected_end)
    assert os.path.getsize(segment_file) == log.segments[-1].size
    lines = [_MS.sub(" in N ms", line) for line in server_log(logs)]
    ident = f"[Log partition={TP}, dir={tmp_path}] "
    assert lines[0] == f"INFO {ident}Recovering unflushed segment {bases[-1]} (kafka.log.Log)"
    assert lines[1].startswith(f"WARN Found invalid messages in log segment {segment_file} at byte offset ")
    assert lines[2] == (f"WARN {ident}Corruption found in segment {bases[-1]}, truncating to offset {expected_end} "
                        f"(kafka.log.Log)")
    assert lines[3] == (f"INFO {ident}Completed load of log with {len(bases)} segments, log start offset 0 and log "
                        f"end offset {expected_end} in N ms (kafka.log.Log)")
    assert log.append_as_leader(batch(3), 0).first_offset == expected_end  # appends go on from there
    log.close()


def test_corruption_in_an_older_segment_deletes_every_later_one(tmp_path: Path) -> None:
    bases, _end = _fill(tmp_path, batches=70)
    assert len(bases) >= 3
    second = tmp_path / str(TP) / f"{bases[1]:020d}.log"
    with second.open("r+b") as fh:  # flip a byte inside the 2nd batch of the 2nd segment
        fh.seek(len(batch(3)) + 70)
        byte = fh.read(1)
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([byte[0] ^ 0x55]))
    log = open_log(tmp_path, SMALL, recovery_point=0)
    _assert_consistent(log, bases[1] + 3)
    assert [s.base_offset for s in log.segments] == bases[:2]
    assert sorted(p.name for p in (tmp_path / str(TP)).glob("*.log")) == [f"{b:020d}.log" for b in bases[:2]]
    log.close()


def test_segments_below_the_recovery_point_are_trusted(tmp_path: Path) -> None:
    bases, end = _fill(tmp_path)
    logs = new_log4j(tmp_path)
    log = open_log(tmp_path, SMALL, logs, recovery_point=bases[-2] + 1)
    _assert_consistent(log, end)
    recovered = [line for line in server_log(logs) if "Recovering unflushed segment" in line]
    assert [int(line.split()[-2]) for line in recovered] == bases[-2:]
    log.close()


def test_a_clean_shutdown_skips_recovery_but_a_bad_index_is_rebuilt(tmp_path: Path) -> None:
    bases, end = _fill(tmp_path)
    index = tmp_path / str(TP) / f"{bases[0]:020d}.index"
    assert index.stat().st_size > 8
    index.write_bytes(b"\x7f\xff\xff\xff" * 4)  # offsets going nowhere: fails the sanity check
    (tmp_path / str(TP) / f"{bases[-1]:020d}.index.deleted").write_bytes(b"x")
    (tmp_path / str(TP) / "00000000000099999999.timeindex").write_bytes(b"")  # orphan
    logs = new_log4j(tmp_path)
    log = open_log(tmp_path, SMALL, logs, clean_shutdown=True)
    _assert_consistent(log, end)
    lines = server_log(logs)
    assert not any("Recovering unflushed" in line for line in lines)
    assert any(line.startswith(f"WARN [Log partition={TP}, dir={tmp_path}] Found a corrupted index file corresponding "
                               f"to log file {tmp_path / str(TP) / f'{bases[0]:020d}.log'} due to") for line in lines)
    assert log.segments[0].offset_index.entries > 0
    names = {p.name for p in (tmp_path / str(TP)).iterdir()}
    assert "00000000000099999999.timeindex" not in names
    assert not any(n.endswith(".deleted") for n in names)
    log.close()


def test_truncate_to_cuts_batches_segments_and_epochs(tmp_path: Path) -> None:
    logs = new_log4j(tmp_path)
    log = open_log(tmp_path, SMALL, logs)
    for i in range(30):
        log.append_as_leader(batch(3, tag=i), 1 + i // 10)  # epochs 1, 2, 3 start at 0, 30, 60
    log.update_high_watermark(90)
    bases = [s.base_offset for s in log.segments]
    assert log.truncate_to(95) is False
    assert log.truncate_to(40) is True  # mid-batch: the whole batch 39-41 goes
    assert log.log_end_offset == 39
    assert log.high_watermark == 39
    assert [s.base_offset for s in log.segments] == [b for b in bases if b <= 40]
    assert [(e.epoch, e.start_offset) for e in log.epoch_cache.entries()] == [(1, 0), (2, 30)]
    assert read_checkpoint(log.epoch_cache.path) == [["1", "0"], ["2", "30"]]
    _assert_consistent(log, 39)
    assert log.append_as_leader(batch(3), 4).first_offset == 39
    lines = server_log(logs)
    ident = f"[Log partition={TP}, dir={tmp_path}] "
    assert f"INFO {ident}Truncating to 95 has no effect as the largest offset in the log is 89 (kafka.log.Log)" in lines
    assert f"INFO {ident}Truncating to offset 40 (kafka.log.Log)" in lines
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.epoch_cache.entries()) == (500, 500, [])
    assert log.read(500, 100).records == b""
    assert log.append_as_leader(batch(2), 5).first_offset == 500
    log.close()
    reopened = open_log(tmp_path, SMALL, clean_shutdown=True)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (500, 502)
    reopened.close()


def test_epoch_cache_survives_restart_and_its_flush_goes_through_the_delay_hook(tmp_path: Path) -> None:
    sleeps: list[float] = []
    delay = CheckpointDelay(0, sleep=sleeps.append)
    log = open_log(tmp_path, epoch_checkpoint_delay=delay)
    log.append_as_leader(batch(2), 3)
    assert sleeps == []
    delay.delay_ms = 250
    log.append_as_leader(batch(2), 3)  # same epoch: no write
    assert sleeps == []
    log.append_as_leader(batch(2), 4)
    assert sleeps == [0.25]
    text = (tmp_path / str(TP) / "leader-epoch-checkpoint").read_text()
    assert text == "0\n2\n3 0\n4 4\n"
    assert not (tmp_path / str(TP) / "leader-epoch-checkpoint.tmp").exists()
    log.close()
    reopened = open_log(tmp_path, clean_shutdown=True)
    assert reopened.end_offset_for_epoch(3) == (3, 4)
    assert reopened.end_offset_for_epoch(4) == (4, 6)
    assert reopened.end_offset_for_epoch(9) == (-1, -1)
    assert reopened.end_offset_for_epoch(1) == (1, 0)
    reopened.close()


def test_recovery_at_every_kind_of_cut_point(tmp_path: Path) -> None:
    """Cut the active segment at 40 seeded positions (inside headers, records, exactly on boundaries):
    recovery always ends on the last batch that is whole before the cut."""
    source = tmp_path / "source"
    bases, end = _fill(source, batches=12)
    segment = _last_segment_file(source)
    data = segment.read_bytes()
    boundaries, pos = [0], 0
    while pos < len(data):
        pos += int.from_bytes(data[pos + 8:pos + 12], "big") + 12
        boundaries.append(pos)
    rng = random.Random(1234)
    cuts = sorted({*rng.sample(range(len(data)), 36), *boundaries[1:5]})
    for n, cut in enumerate(cuts):
        root = tmp_path / f"cut{n}"
        (root / str(TP)).mkdir(parents=True)
        for f in (source / str(TP)).iterdir():
            (root / str(TP) / f.name).write_bytes(f.read_bytes())
        os.truncate(root / str(TP) / segment.name, cut)
        log = open_log(root, SMALL, recovery_point=bases[-1])
        whole = max(b for b in boundaries if b <= cut)
        batches_kept = boundaries.index(whole)
        assert log.log_end_offset == bases[-1] + 3 * batches_kept, cut
        assert log.segments[-1].size == whole
        if batches_kept:
            assert base_offsets(log.read(bases[-1], 10**6).records) == [bases[-1] + 3 * i for i in range(batches_kept)]
        log.close()
    assert end == bases[-1] + 3 * (len(boundaries) - 1)
