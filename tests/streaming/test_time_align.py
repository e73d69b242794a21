"""A backlog of log files read by log time (jobs.sources.time_align through file_tail.plan): every batch takes each file
up to one time, within the byte budget, and every byte once; without a backlog nothing changes."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from jobs.sources import time_align
from jobs.sources.file_tail import plan, read_piece, split
from jobs.sources.time_align import line_time

T0 = dt.datetime(2026, 11, 28, 10, 0, tzinfo=dt.UTC)
# Batches a backlog may take at most (a bounded loop).
MAX_BATCHES = 500
# The longest line the files below hold (a batch may take one line past its budget).
LONGEST_LINE = 80


def _stamp(ms: int) -> str:
    return (T0 + dt.timedelta(milliseconds=ms)).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


def _write(path: Path, times_ms: list[int], trace_every: int = 0, tag: str = "x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, ms in enumerate(times_ms):
        lines.append(f"[{_stamp(ms)}] INFO {tag} line {i} (state.change.logger)")
        if trace_every and i % trace_every == 0:
            lines += ["java.lang.IllegalStateException: x", "\tat a.B.c(B.java:1)", "\tat d.E.f(E.java:2)"]
    path.write_text("\n".join(lines) + "\n")


def _time(record: str) -> float:
    t = line_time(record.encode())
    assert t is not None, record
    return t


def test_line_times_of_the_layouts_kafka_writes() -> None:
    base = T0.timestamp()
    assert line_time(b"[2026-11-28 10:00:00,123] INFO x (y)") == pytest.approx(base + 0.123)
    assert line_time(b"2026-11-28 10:00:00,123 INFO x (y) [main]") == pytest.approx(base + 0.123)  # Strimzi
    assert line_time(b"2026-11-28 10:00:01 INFO  [main] Foo:12 - x") == pytest.approx(base + 1)  # log4j2
    assert line_time(b"[2026-11-28T10:00:00.5+0000][0.005s][info][gc] GC(0)") == pytest.approx(base + 0.5)  # JVM
    for continuation in (b"\tat a.B.c(B.java:1)", b"java.io.IOException: x", b"", b"[2026-13-01 00:00:00,000] x"):
        assert line_time(continuation) is None


def test_a_backlog_is_read_up_to_one_time_per_batch_every_byte_once(tmp_path: Path) -> None:
    """The controller's file holds every send; three brokers' files lag behind it in listing order. Each batch
    ends every timed file at the same log time (no record at or before it is left in any file), stays within the
    budget, and the batches together read each file's records once, in order; a file without times shares what is
    left."""
    root = tmp_path / "c1"
    _write(root / "broker-1" / "controller.log", list(range(0, 60_000, 20)), tag="ctl")
    for b in (2, 3, 4):
        _write(root / f"broker-{b}" / "state-change.log", list(range(b, 60_000, 35)), trace_every=9, tag=f"b{b}")
    untimed = root / "broker-5" / "server.log"
    untimed.parent.mkdir(parents=True)
    untimed.write_text("".join(f"no time {i}\n" for i in range(400)))
    budget = 16 * 1024
    start: dict = {}
    got: dict[str, list[str]] = {}
    for _ in range(MAX_BATCHES):
        end = plan(str(tmp_path), "logs", start, budget).files
        advanced = sum(int(v["offset"]) - int(v["from"]) for v in end.values())
        if advanced == 0:
            break
        assert advanced <= budget + LONGEST_LINE  # a file's next line is taken whole (no file starves)
        batch: dict[str, list[str]] = {}
        for piece in split("logs", start, end):
            for rows in read_piece(piece):
                for r in rows.to_pylist():
                    batch.setdefault(r["source"], []).append(r["line"])
        timed = {src: [_time(x) for x in lines] for src, lines in batch.items() if src != str(untimed)}
        if timed:
            until = max(max(ts) for ts in timed.values())
            for key, v in end.items():  # no timed file keeps a record at or before the batch's time unread
                if v["path"] == str(untimed) or int(v["offset"]) >= int(v["size"]):
                    continue
                with open(v["path"], "rb") as fh:
                    fh.seek(int(v["offset"]))
                    nxt = fh.readline()
                assert _time(nxt.decode()) >= until - 0.001, (key, nxt)
        for src, lines in batch.items():
            got.setdefault(src, []).extend(lines)
        start = json.loads(json.dumps(end))
    else:
        pytest.fail("the backlog was not read within MAX_BATCHES batches")
    for path in root.rglob("*.log"):
        text = path.read_text()
        assert "\n".join(got[str(path)]) + "\n" == text, path  # every byte once, in order (records keep their traces)


def test_without_a_backlog_the_plan_does_not_align(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "broker-1" / "server.log", list(range(0, 1000, 10)))
    calls: list[int] = []
    real = time_align.align

    def counting(files, budget):  # type: ignore[no-untyped-def]
        calls.append(budget)
        return real(files, budget)

    monkeypatch.setattr("jobs.sources.file_tail.align", counting)
    end = plan(str(tmp_path), "logs", {}, 1 << 20).files
    assert calls == []
    (v,) = end.values()
    assert int(v["offset"]) == int(v["size"])
    plan(str(tmp_path), "logs", {}, 100)
    assert calls == [100]


def test_a_container_runtimes_stack_frame_is_no_record_start() -> None:
    assert line_time(b"2026-11-28T10:00:00.123456789Z stdout F \tat a.B.c(B.java:1)") is None
    assert line_time(b"2026-11-28T10:00:00.1Z stdout F [2026-11-28 10:00:00,123] INFO x") is not None


def test_a_file_ending_in_a_long_trace_is_not_read_a_record_a_batch(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The file's last probe holds no timed line (a trace longer than a probe): its backlog still goes by the
    budget, not one time stamp per batch."""
    monkeypatch.setattr(time_align, "PROBE_BYTES", 4096)
    log = tmp_path / "broker-1" / "server.log"
    _write(log, list(range(0, 20_000, 10)))
    with log.open("a") as fh:
        fh.write(f"[{_stamp(20_000)}] ERROR boom (x)\n" + "".join(f"\tat frame {i}\n" for i in range(2000)))
    start: dict = {}
    batches = 0
    while batches < MAX_BATCHES:
        batches += 1
        end = plan(str(tmp_path), "logs", start, 16 * 1024).files
        (v,) = end.values()
        if int(v["offset"]) == int(v["size"]):
            break
        start = json.loads(json.dumps(end))
    assert batches <= 20  # ~190 KB in 16 KiB batches
