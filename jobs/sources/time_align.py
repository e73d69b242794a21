"""Reading a backlog of log files up to one log time (pure file I/O, no Spark).

When a batch's byte budget cannot take every log file's unread bytes (a pipeline catching up after a stop), reading
the files in listing order reads one file far ahead of the others: after an hour's stop, the controller's
state-change.log (every broker's `Sending` lines) was read an hour ahead of most brokers' logs, and the pairing,
which holds a bounded number of unanswered sends per broker, evicted 47,880 of them (their queue time lost). So a
backlog is read by log time instead: the batch takes every file up to the same time T, the latest T whose lines, in
all files together, fit the budget.

A log line begins with its time: Kafka's ``[%d]``, Strimzi's ISO8601, log4j2's ``yyyy-MM-dd HH:mm:ss``, the JVM's
unified logging ``[2026-11-28T10:00:00.123+0000]``; a line without one continues the record before it (a stack
trace). A file's records are in time order, so the position of T in a file is found by bisection over its bytes,
then a short forward scan. A file whose unread part shows no time near its start (not a log4j file) is not aligned:
it shares what the aligned files leave of the budget. Times are compared as written (no time zone): the brokers of
one cluster log in one zone.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from jobs.sources.entries import NotRegularFile, open_regular
from jobs.sources.record_split import CONTINUATION

__all__ = ["Aligned", "FileRange", "align", "line_time"]

# A record's time at the start of its line, to the millisecond.
_TIME = re.compile(rb"^\[?(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[,.](\d{1,3}))?")
# A line the record splitter joins to the record before it (a stack frame, also under a container runtime's prefix,
# which carries a time of its own): never a record's start.
_CONTINUES = re.compile(CONTINUATION)
# A file whose last probe holds no timed line (a long stack trace, one huge line) may run this far past the others.
FAR_S = 366 * 86400.0
# How far a probe reads to find the next timed line: past a stack trace of a few thousand frames.
PROBE_BYTES = 256 * 1024
# A probe reads this much at a time: most lines are a few hundred bytes.
_CHUNK_BYTES = 8 * 1024
# Bisection stops when the interval is this small; a forward scan does the rest.
BISECT_STOP_BYTES = 64 * 1024
# T is searched to this precision (seconds).
TIME_PRECISION_S = 0.001


def line_time(line: bytes) -> float | None:
    """The time a log line starts with, as seconds since the epoch read as UTC; None for a continuation line."""
    if _CONTINUES.match(line):
        return None
    m = _TIME.match(line)
    if m is None:
        return None
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 61):
        return None
    ms = int((m.group(7) or b"0").ljust(3, b"0"))
    return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) + ms / 1000.0


@dataclass(frozen=True)
class FileRange:
    """The unread part [start, end) of one log file, `start` at a record's start (the last batch's end)."""

    key: str
    path: str
    start: int
    end: int


@dataclass
class _Timed:
    """One file's records between `start` and `end`, probed on demand (probes cached). The file is opened for each
    read, so a backlog of thousands of files holds no descriptor between probes."""

    path: str
    start: int
    end: int
    probes: dict[int, tuple[int, float] | None] = field(default_factory=dict)

    def read(self, at: int, n: int) -> bytes:
        """`n` bytes at `at` (fewer at the end; none when the file is gone or swapped meanwhile)."""
        try:
            with open_regular(self.path) as fh:
                fh.seek(at)
                return fh.read(n)
        except (OSError, NotRegularFile):
            return b""

    def next_record(self, pos: int) -> tuple[int, float] | None:
        """(start, time) of the first timed line starting at or after `pos` (moved to a line start), before `end`;
        None when none starts within PROBE_BYTES of it."""
        if pos in self.probes:
            return self.probes[pos]
        at = max(self.start, pos - 1)
        buf = b""
        i = -1 if pos > self.start else 0  # -1: the line start after pos - 1 is not found yet
        found = None
        while found is None and len(buf) < PROBE_BYTES and at + len(buf) < self.end:
            chunk = self.read(at + len(buf), min(_CHUNK_BYTES, self.end - at - len(buf)))
            if not chunk:
                break
            buf += chunk
            if i < 0:
                nl = buf.find(b"\n")
                if nl < 0:
                    continue
                i = nl + 1
            while i < len(buf):
                nl = buf.find(b"\n", i)
                if nl < 0:
                    break  # a line not complete yet: read on
                t = line_time(buf[i:nl])
                if t is not None:
                    found = (at + i, t)
                    break
                i = nl + 1
        self.probes[pos] = found
        return found

    def cut(self, t: float) -> int:
        """The start of the first record after time `t` (or `end`): the file read up to `t`."""
        first = self.next_record(self.start)
        if first is None or first[1] > t:
            return self.start
        lo, hi = first[0], self.end
        while hi - lo > BISECT_STOP_BYTES:
            mid = (lo + hi) // 2
            r = self.next_record(mid)
            if r is not None and r[0] < hi and r[1] <= t:
                lo = r[0]
            else:
                hi = mid
        pos = lo
        while True:  # forward from a record at or before t
            probe = pos + 1
            r = self.next_record(probe)
            while r is None and probe + PROBE_BYTES < self.end:  # a continuation longer than a probe
                probe += PROBE_BYTES
                r = self.next_record(probe)
            if r is None:
                return self.end  # nothing timed follows: the last record runs to the end
            if r[1] > t:
                return r[0]
            pos = r[0]

    def last_time(self) -> float | None:
        """The time of the last timed line in the file's last PROBE_BYTES."""
        at = max(self.start, self.end - PROBE_BYTES)
        lines = self.read(at, self.end - at).split(b"\n")[:-1]  # the last piece is not a whole line
        if at > self.start:
            lines = lines[1:]  # the first piece may be a line's tail
        for line in reversed(lines):
            t = line_time(line)
            if t is not None:
                return t
        return None


@dataclass(frozen=True)
class Aligned:
    """Where each aligned file's batch ends (`caps`, by file key: read up to one log time), and the bytes the files
    without times share."""

    caps: Mapping[str, int]
    untimed_budget: int


def align(files: Sequence[FileRange], budget: int) -> Aligned:
    """Each file's end for a batch of at most `budget` bytes read up to one log time (see the module doc)."""
    timed: dict[str, _Timed] = {}
    for f in files:
        if f.end > f.start:
            tf = _Timed(f.path, f.start, f.end)
            if tf.next_record(f.start) is not None:
                timed[f.key] = tf
    if not timed:
        return Aligned({}, budget)
    firsts = [r[1] for tf in timed.values() if (r := tf.next_record(tf.start)) is not None]
    lasts = [t for tf in timed.values() if (t := tf.last_time()) is not None]
    lo, hi = min(firsts), max([*lasts, *firsts])
    if len(lasts) < len(timed):  # a file's end shows no time: its backlog may reach far past the others'
        hi += FAR_S

    def taken(t: float) -> int:
        return sum(tf.cut(t) - tf.start for tf in timed.values())

    if taken(hi) <= budget:
        until = hi
    else:
        until = lo  # the earliest records always go (the tail planner takes a line longer than the budget)
        while hi - lo > TIME_PRECISION_S:
            mid = (lo + hi) / 2
            if taken(mid) <= budget:
                lo = until = mid
            else:
                hi = mid
    caps = {key: tf.cut(until) for key, tf in timed.items()}
    return Aligned(caps, max(0, budget - sum(c - timed[k].start for k, c in caps.items())))

