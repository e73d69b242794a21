"""Tailing a tree of growing, rotating log files by byte offset (pure file I/O, no Spark).

Theory of operation:

* A file is identified by (device, inode), not by name: log4j's rolling appender renames `state-change.log` to
  `state-change.log.2024-05-10-09` (same inode, so reading continues where it stopped and nothing is read twice)
  and creates a new `state-change.log` (new inode, read from 0). A short fingerprint of the file's first bytes
  guards against a deleted file's inode being reused by a new one.
* `list_files()` walks the tree (directory symlinks followed, each directory once) and takes regular files only:
  every other entry (symlink loop, dangling link, FIFO, socket, device, unreadable file) is skipped with a reason
  (jobs.sources.entries) and never opened, so no entry can block or crash the walk.
* `plan()` (driver) turns the offsets of the previous batch into the offsets of the next: for each file, up to the
  last complete line within the batch's byte budget. A partial last line waits for its newline, except that the
  last line of a file that will not grow (a scrape answer, a rotated log: `paths.is_finished`) is read once the
  file has settled, and a growing file's once it has not changed for `tail_quiet_s`. A line with no newline for
  `MAX_PARTIAL_LINE_BYTES` is taken anyway (capped) so a file can never stall the stream. Each file's entry keeps
  its size and mtime, so the bytes not read yet are accounted for (jobs.sources.file_accounting).
* `split()` cuts each file's byte range into pieces of `SPLIT_BYTES` so several executors share a big file;
  `logged_file_pieces()` gives a batch's pieces from the offset Spark logged for it (jobs.sources.checkpoints), and
  `file_batch_bytes()` its size, before the batch is read.
  `read_piece()` (executor) reads the lines that START in its piece (the Hadoop line-split rule), joins
  continuation lines (stack traces) into their record, caps huge lines and yields pyarrow RecordBatches.
* A file that disappears is dropped from the offsets; a piece whose file is gone (and not found under a rotated
  name in the same directory) yields nothing: the job keeps running.
* `forget_read()` keeps the offsets as small as the files still being written: a finished file read to its end
  whose last change is `FORGET_AFTER_S` old leaves the offsets, and its directory's `read_before` (the newest such
  change there) stands for all of them: a finished file of that directory changed no later than it and not in the
  offsets is taken as read and never opened again (as Spark's file source's `maxFileAge`, per directory). A
  directory's horizon only moves past files read to their end: not while a finished file there with an older
  change is still unread, nor while an entry there is skipped (unreadable), so a broker's directory that was away
  (a mount, a lagging mirror) keeps its own horizon and loses nothing. Without it, Kafka's rotated logs (kept
  forever by the distribution's log4j config) made every offset, written at every trigger, grow for good.
"""

# Over 500 lines: the file source's planner and reader share the offset's shape and the rotation rules.
from __future__ import annotations

import datetime as dt
import logging
import math
import os
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from jobs.run.settings import DEFAULT_TAIL_QUIET_S
from jobs.sources.checkpoints import logged_offset
from jobs.sources.entries import NotRegularFile, entry_problem, open_regular
from jobs.sources.paths import FileInfo, classify_name, describe, ignored_name, is_finished
from jobs.sources.record_split import Records, split_records
from jobs.sources.time_align import Aligned, FileRange, align
from schemas.inputs import InputFamily
from schemas.tables import RAW_RECORDS

__all__ = [
    "MAX_LINE_BYTES",
    "OUTPUT_SCHEMA_DDL",
    "Piece",
    "Planned",
    "ReadBefore",
    "buffer_records",
    "delete_read_finished",
    "file_batch_bytes",
    "forget_read",
    "list_files",
    "logged_file_pieces",
    "pack",
    "piece_bytes",
    "plan",
    "read_piece",
    "records_batch",
    "split",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

# A record longer than this keeps only its first MAX_LINE_BYTES characters (`truncated` is set, `line_bytes` keeps
# the original size): one multi-megabyte line must not blow up a batch or the quarantine table.
MAX_LINE_BYTES = 256 * 1024
# A line without a newline for this long is taken as a record anyway (a writer that never ends its line).
MAX_PARTIAL_LINE_BYTES = 16 * 1024 * 1024
# A finished file's (a scrape answer, a rotated log) last line without a newline is read once the file has not
# changed for this many seconds: writing one scrape answer in place (curl -o, a copy) takes milliseconds, and a
# file caught mid-write must not lose the rest of its last line.
FINISHED_SETTLE_S = 2.0
# At most this many skipped entries (path and reason) are listed in an offset, which Spark writes to the checkpoint
# every batch; the count covers them all.
MAX_SKIPPED_LISTED = 1000
# A finished file read to its end leaves the offsets once its last change is this old: long past the settling of its
# last line (FINISHED_SETTLE_S) and past an hour of rotation, so an offset holds about the last hour's rotated logs.
# A file copied into a directory later with an older time kept (cp -p into a directory already read) is taken as
# read: the horizon is per directory so a mirror that lags per broker directory is not.
FORGET_AFTER_S = 3600.0
# Pieces of this size are read by separate tasks.
SPLIT_BYTES = 8 * 1024 * 1024
# A piece reads at most this far past its end to finish the record that started in it: its last line, and a log
# record's continuation lines.
CONTINUATION_TAIL_BYTES = 1024 * 1024
FINGERPRINT_BYTES = 64
_SCAN_BLOCK = 64 * 1024
# the readers' record schema (schemas.tables.RAW_RECORDS) in Spark's DDL
OUTPUT_SCHEMA_DDL = RAW_RECORDS.ddl()


@dataclass(frozen=True)
class Piece:
    """A byte range [start, end) of one file, part of a file range [range_start, range_end)."""

    path: str
    dev: int
    ino: int
    range_start: int
    range_end: int
    start: int
    end: int
    family: str
    kind: str
    cluster: str
    broker_id: int | None


def _fingerprint(fh: Any, n: int = FINGERPRINT_BYTES) -> str:
    """ "<n>:<crc32 of the first n bytes>": tells a file from a new one that reuses its inode."""
    fh.seek(0)
    head = fh.read(n)
    return f"{len(head)}:{zlib.crc32(head):08x}"


def _same_file(fh: Any, prev_fp: str) -> bool:
    n = int(prev_fp.split(":", 1)[0]) if prev_fp else 0
    return n == 0 or _fingerprint(fh, n) == prev_fp


def _another_answer(path: str, info: FileInfo, mtime: float, prev: dict[str, Any]) -> bool:
    """Whether a scrape answer at an inode the offsets know is another answer that reuses the inode of one read and
    deleted before: its name or its time differs from the one read to its end. Scrape answers begin with the same
    `# HELP` lines, so the fingerprint alone takes a new answer for the old one, and its tail would be read as
    records (seen in the soak: a landing zone pruning old answers while new ones arrive). An answer is written once,
    so one read to its end that changed is another."""
    if info.family != InputFamily.METRICS or not is_finished(os.path.basename(path), info):
        return False
    read_whole = int(prev["offset"]) == int(prev.get("size", -1))
    return path != prev.get("path") or (read_whole and mtime != prev.get("mtime"))


def _last_newline(fh: Any, lo: int, hi: int) -> int:
    """Position after the last b'\\n' in [lo, hi), or -1."""
    pos = hi
    while pos > lo:
        start = max(lo, pos - _SCAN_BLOCK)
        fh.seek(start)
        i = fh.read(pos - start).rfind(b"\n")
        if i >= 0:
            return int(start + i + 1)
        pos = start
    return -1


def _next_newline(fh: Any, lo: int, hi: int) -> int:
    """Position after the first b'\\n' in [lo, hi), or -1."""
    pos = lo
    while pos < hi:
        fh.seek(pos)
        block = fh.read(min(_SCAN_BLOCK, hi - pos))
        if not block:
            return -1
        i = block.find(b"\n")
        if i >= 0:
            return int(pos + i + 1)
        pos += len(block)
    return -1


@dataclass(frozen=True)
class Planned:
    """The offsets of the next batch (`files`, JSON-able) and the entries skipped as not regular files: up to
    MAX_SKIPPED_LISTED of them as {path: reason}, and how many there were in all."""

    files: dict[str, dict[str, Any]]
    skipped: dict[str, str]
    skipped_total: int


def _unlisted(skipped: dict[str, str]) -> Any:
    def onerror(exc: OSError) -> None:
        skipped[str(exc.filename)] = f"unreadable directory: {exc.strerror or exc}"

    return onerror


def _walk_dirs(dirpath: str, dirs: list[str], walked: dict[tuple[int, int], str], skipped: dict[str, str]) -> None:
    """Keep in `dirs` the subdirectories to walk: not hidden, and each directory (by device and inode) once; a
    symlink to a directory walked already is skipped with its reason (a loop, or a second link)."""
    keep: list[str] = []
    for d in sorted(dirs):
        if d.startswith((".", "_")):
            continue
        path = os.path.join(dirpath, d)
        try:
            st = os.stat(path)
        except OSError:
            continue  # gone since it was listed
        ident = (st.st_dev, st.st_ino)
        seen_as = walked.get(ident)
        if seen_as is None:
            walked[ident] = path
            keep.append(d)
        elif os.path.islink(path):
            target = os.path.realpath(path)
            here = os.path.realpath(dirpath)
            if os.path.commonpath([target, here]) == target:
                skipped[path] = "symlink loop (links to a directory above it)"
            else:
                skipped[path] = f"symlink to a directory already read as {seen_as}"
    dirs[:] = keep


@dataclass(frozen=True)
class ReadBefore:
    """What forget_read left out of the offsets: per directory, the newest change of the finished files it forgot
    (`horizons`), and the offsets' keys (a file among them is being read, whatever its time)."""

    horizons: dict[str, float]
    keys: frozenset[str]


def list_files(root: str, family: str, cluster: str | None, default_cluster: str,
               read: ReadBefore | None = None) -> tuple[list[tuple[str, FileInfo]], dict[str, str]]:
    """Input files of `family` under `root` (a file or a directory), oldest first (rotated files before current),
    and the entries skipped as not regular files, {path: reason}: those whose name says `family`, or nothing.

    Nothing but a regular file is ever opened; a directory reached twice (through a symlink) is walked once, the
    first path in walk order (sorted names, top-down) naming its files. A finished file that `read` says was read
    and forgotten (forget_read) is not listed.
    """
    found: list[tuple[float, str, FileInfo]] = []
    skipped: dict[str, str] = {}

    def consider(base: str, path: str) -> None:
        name = os.path.basename(path)
        if ignored_name(name):
            return
        by_name = classify_name(name)
        if by_name is not None and by_name[0] != family:
            return  # the other family's query reports it
        try:
            problem = entry_problem(path)
            info = None if problem else describe(base, path, cluster, default_cluster)
            if info is not None and info.family == family:
                st = os.stat(path)
                if read is None or not _read_already(path, info, st, read):
                    found.append((st.st_mtime, path, info))
        except FileNotFoundError:
            return  # gone since it was listed (a rotated log deleted)
        except NotRegularFile as exc:
            problem = exc.reason
        except OSError as exc:
            problem = f"unreadable: {exc.strerror or exc}"
        if problem is not None:
            skipped[path] = problem

    if os.path.isdir(root):
        top = os.stat(root)
        walked = {(top.st_dev, top.st_ino): root}
        for dirpath, dirs, files in os.walk(root, onerror=_unlisted(skipped), followlinks=True):
            _walk_dirs(dirpath, dirs, walked, skipped)
            for name in files:
                consider(root, os.path.join(dirpath, name))
    elif os.path.lexists(root):
        consider(os.path.dirname(root), root)
    found.sort(key=lambda t: (t[0], t[1]))
    return [(p, i) for _, p, i in found], skipped


def _read_already(path: str, info: FileInfo, st: os.stat_result, read: ReadBefore) -> bool:
    """A finished file its directory's horizon covers and the offsets do not hold: read and forgotten."""
    horizon = read.horizons.get(os.path.dirname(path))
    return (horizon is not None and st.st_mtime <= horizon and f"{st.st_dev}:{st.st_ino}" not in read.keys
            and is_finished(os.path.basename(path), info))


def forget_read(files: dict[str, dict[str, Any]], family: str, horizons: dict[str, float], now: float,
                skipped: Iterable[str] = (), forget_after_s: float = FORGET_AFTER_S
                ) -> tuple[dict[str, dict[str, Any]], dict[str, float], int]:
    """The offsets without the finished files read to their end (not in this batch: `from` = `offset` = size)
    whose last change is forget_after_s old, per directory only those older than its oldest finished file still
    unread, and none in a directory with a `skipped` entry; the directories' new horizons (the newest change among
    the files each forgot); and how many left the offsets now."""
    by_dir: dict[str, list[tuple[str, dict[str, Any], bool]]] = {}
    for key, e in files.items():
        path = str(e["path"])
        finished = is_finished(os.path.basename(path), FileInfo(family, str(e["kind"]), str(e["cluster"]),
                                                                e["broker_id"]))
        by_dir.setdefault(os.path.dirname(path), []).append((key, e, finished))
    blocked = {os.path.dirname(p) for p in skipped}
    kept: dict[str, dict[str, Any]] = {}
    out = dict(horizons)
    for d, entries in by_dir.items():
        unread = [float(e["mtime"]) for _, e, fin in entries
                  if fin and (e.get("deferred") or int(e["offset"]) < int(e["size"]))]
        oldest_unread = min(unread, default=math.inf)
        for key, e, fin in entries:
            mtime = float(e["mtime"])
            done = (d not in blocked and fin and not e.get("deferred")
                    and int(e["from"]) == int(e["offset"]) == int(e["size"])
                    and now - mtime >= forget_after_s and mtime < oldest_unread)
            if done:
                out[d] = max(out.get(d, mtime), mtime)
            else:
                kept[key] = e
    return kept, out, len(files) - len(kept)


def _tail_settled(path: str, info: FileInfo, mtime: float, now: float, tail_quiet_s: float) -> bool:
    """Whether a file's last line without a newline is complete: the file will not grow and has settled, or it
    has not changed for tail_quiet_s."""
    age = now - mtime
    return age >= (FINISHED_SETTLE_S if is_finished(os.path.basename(path), info) else tail_quiet_s)


def plan(
    root: str,
    family: str,
    start: dict[str, dict[str, Any]],
    max_bytes: int,
    cluster: str | None = None,
    default_cluster: str = "default",
    *,
    now: float | None = None,
    tail_quiet_s: float = DEFAULT_TAIL_QUIET_S,
    read_before: dict[str, float] | None = None,
) -> Planned:
    """The next offsets: {"<dev>:<ino>": {path, from, offset, size, mtime, deferred, fp, cluster, broker_id, kind}}.

    [from, offset) is the byte range of the batch for that file: `from` is the previous offset, or 0 for a new
    file (or one whose inode now belongs to a different file). `deferred`: bytes after `offset` wait for a later
    batch's budget (not for a newline). `now` (wall-clock seconds, compared with mtimes) defaults to the clock.

    `offset` is always just after a newline, a capped partial line, or a settled file's last line (see
    _tail_settled); the total advance is <= max_bytes, except that one line longer than the budget is always taken
    whole so the stream progresses. A finished file not in `start` that changed no later than its directory's
    `read_before` was read and forgotten (forget_read): it is not planned.
    """
    now = time.time() if now is None else now
    out: dict[str, dict[str, Any]] = {}
    read = ReadBefore(read_before, frozenset(start)) if read_before else None
    files, skipped = list_files(root, family, cluster, default_cluster, read)
    aligned = _aligned(files, start, max_bytes) if family == InputFamily.LOGS else None
    # a backlog of logs: each timed file up to its cap (one log time for all), the others share what is left
    budget = max_bytes
    untimed = max_bytes if aligned is None else aligned.untimed_budget
    for path, info in files:
        try:
            fh = open_regular(path)
        except FileNotFoundError:
            continue  # gone since it was listed
        except (NotRegularFile, OSError) as exc:
            skipped[path] = exc.reason if isinstance(exc, NotRegularFile) else f"unreadable: {exc.strerror or exc}"
            continue
        with fh:
            st = os.fstat(fh.fileno())
            key = f"{st.st_dev}:{st.st_ino}"
            prev = start.get(key)
            offset = 0
            # Same inode, same first bytes, not shrunk: the file we were reading (maybe renamed by rotation).
            # The fingerprint is kept while it grows to FINGERPRINT_BYTES, so a reset shows in `fp` too.
            fp = _fingerprint(fh)
            if (prev is not None and _same_file(fh, prev.get("fp", "")) and st.st_size >= int(prev["offset"])
                    and not _another_answer(path, info, st.st_mtime, prev)):
                offset = int(prev["offset"])
            end = offset
            cap = None if aligned is None else aligned.caps.get(key)
            allowed = min(budget, untimed if cap is None else max(0, cap - offset))
            deferred = st.st_size > offset and allowed <= 0
            if st.st_size > offset and allowed > 0:
                size = st.st_size
                hi = min(size, offset + allowed)
                end = _last_newline(fh, offset, hi)
                if end < 0 and hi < size:  # one line longer than the budget: take it whole
                    end = _next_newline(fh, hi, min(size, offset + MAX_PARTIAL_LINE_BYTES))
                # After `end` (or from `offset`, when no line ends) up to the file's end: one unterminated line
                unterminated = (end < 0 or hi == size) and end < size
                if (unterminated and size - max(end, offset) < MAX_PARTIAL_LINE_BYTES
                        and _tail_settled(path, info, st.st_mtime, now, tail_quiet_s)):
                    end = size  # the last line, without its newline
                elif end < 0 and size - offset >= MAX_PARTIAL_LINE_BYTES:
                    end = offset + MAX_PARTIAL_LINE_BYTES  # a writer that never ends its line
                end = max(end, offset)
                budget -= end - offset
                if cap is None:
                    untimed -= end - offset
                deferred = end < size and (hi < size or end - offset >= MAX_PARTIAL_LINE_BYTES)
            out[key] = {
                "path": path,
                "offset": end,
                "size": st.st_size,
                "mtime": st.st_mtime,
                "deferred": deferred,
                "fp": fp,
                "from": offset,
                "cluster": info.cluster,
                "broker_id": info.broker_id,
                "kind": info.kind,
            }
    listed = dict(sorted(skipped.items())[:MAX_SKIPPED_LISTED])
    return Planned(out, listed, len(skipped))


def _aligned(files: list[tuple[str, FileInfo]], start: dict[str, dict[str, Any]], max_bytes: int) -> Aligned | None:
    """Where each log file's batch ends when their unread bytes exceed the budget (jobs.sources.time_align); None when
    the budget takes them all. The unread range starts at the offset the previous batch ended at (a file it did not
    know, or that changed under its inode, from 0)."""
    ranges = []
    for path, _ in files:
        try:
            st = os.stat(path)
        except OSError:
            continue
        key = f"{st.st_dev}:{st.st_ino}"
        prev = start.get(key)
        offset = int(prev["offset"]) if prev is not None and st.st_size >= int(prev["offset"]) else 0
        ranges.append(FileRange(key, path, offset, st.st_size))
    if sum(r.end - r.start for r in ranges) <= max_bytes:
        return None
    return align(ranges, max_bytes)


def split(family: str, start: dict[str, dict[str, Any]], end: dict[str, dict[str, Any]]) -> list[Piece]:
    """The pieces to read for the batch (start, end]; deterministic for a given pair of offsets."""
    pieces: list[Piece] = []
    del start  # `end` carries each file's range start ("from"), decided by plan() against the start offsets
    for key, e in sorted(end.items()):
        lo = int(e["from"])
        hi = int(e["offset"])
        if hi <= lo:
            continue
        dev, ino = (int(x) for x in key.split(":"))
        for a in range(lo, hi, SPLIT_BYTES):
            b = min(hi, a + SPLIT_BYTES)
            pieces.append(Piece(e["path"], dev, ino, lo, hi, a, b, family, e["kind"], e["cluster"], e["broker_id"]))
    return pieces


def piece_bytes(piece: Piece) -> int:
    """The bytes a piece reads."""
    return piece.end - piece.start


def pack(items: Sequence[T], size: Callable[[T], int], max_bytes: int = SPLIT_BYTES) -> list[list[T]]:
    """Consecutive items (file pieces, scrapes) grouped into Spark partitions of at most `max_bytes` by
    `size` (an item larger than that is a group of its own): a batch over many small files (scrapes, rotated logs, a
    few lines per broker) runs a few tasks, not one per file, and each task pays the Python worker's fixed cost once.
    Deterministic for a given item list."""
    groups: list[list[T]] = []
    total = 0
    for item in items:
        n = size(item)
        if groups and total + n <= max_bytes:
            groups[-1].append(item)
            total += n
        else:
            groups.append([item])
            total = n
    return groups


def _open_by_inode(piece: Piece) -> Any:
    """Open the piece's file, following a rotation (same inode, new name in the same directory); None if gone."""
    candidates = [piece.path]
    folder = os.path.dirname(piece.path)
    base = os.path.basename(piece.path)
    try:
        candidates += sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.startswith(base) and n != base)
    except OSError:
        return None
    for path in candidates:
        try:
            fh = open_regular(path)  # a FIFO that took a rotated name is never opened blocking
        except (OSError, NotRegularFile):
            continue
        st = os.fstat(fh.fileno())
        if st.st_dev == piece.dev and st.st_ino == piece.ino:
            return fh
        fh.close()
    return None


def _records(buf: bytes, base: int, piece: Piece) -> Records:
    """Split `buf` (starting at file offset `base`, a line start) into the piece's records (jobs.sources.record_split):
    records start on a line inside the piece; continuation lines (logs only) join the record before them, also past
    the piece's end (the buffer holds a tail for that); a piece that is not the first of its range skips its leading
    continuation lines (the previous piece's last record took them)."""
    return split_records(buf, base, join=piece.family == "logs", end=piece.end,
                         skip_leading=piece.start > piece.range_start)


def buffer_records(buf: bytes, base: int = 0, family: str = "metrics") -> tuple[list[str], list[int], list[int]]:
    """The records of a buffer of whole lines that sits at offset `base` of its source (e.g. a scraped Prometheus
    answer), split exactly as `read_piece` splits a file: (texts, offsets, byte lengths)."""
    records = split_records(buf, base, join=family == "logs")
    return records.texts.to_pylist(), records.offsets.tolist(), records.sizes.tolist()


def read_piece(piece: Piece, now: dt.datetime | None = None) -> Iterator[Any]:
    """Yield the piece's records as pyarrow RecordBatches of OUTPUT_SCHEMA_DDL's columns."""
    fh = _open_by_inode(piece)
    if fh is None:
        log.warning("file %s (inode %d) disappeared before it was read; skipped", piece.path, piece.ino)
        return
    with fh:
        read_from = piece.start
        if piece.start > piece.range_start:
            # Hadoop rule: a piece owns the lines that start in it; skip the tail of the previous piece's line.
            fh.seek(piece.start - 1)
            if fh.read(1) != b"\n":
                nxt = _next_newline(fh, piece.start, piece.range_end)
                read_from = piece.range_end if nxt < 0 else nxt
        if read_from >= piece.end:
            return
        stop = min(piece.range_end, piece.end + CONTINUATION_TAIL_BYTES)  # a metric line crossing `end` too
        fh.seek(read_from)
        buf = fh.read(stop - read_from)
    records = _records(buf, read_from, piece)
    if not len(records):
        return
    yield records_batch(records.texts, records.offsets, records.sizes, cluster=piece.cluster,
                        broker_id=piece.broker_id, kind=piece.kind, source=piece.path,
                        ingest_ts=now or dt.datetime.now(dt.UTC))


def records_batch(texts: Any, offsets: Any, sizes: Any, *, cluster: str, broker_id: int | None, kind: str,
                  source: str, ingest_ts: dt.datetime) -> Any:
    """Records of one source (texts: a string array or list; offsets and sizes: int sequences or numpy arrays) as a
    pyarrow RecordBatch of OUTPUT_SCHEMA_DDL's columns; a record longer than MAX_LINE_BYTES keeps its first
    MAX_LINE_BYTES characters (`truncated` set, `line_bytes` the original size)."""
    lines = texts if isinstance(texts, pa.Array) else pa.array(texts, pa.string())
    truncated = pc.greater(pc.utf8_length(lines), MAX_LINE_BYTES)
    if pc.any(truncated).as_py():
        lines = pc.if_else(truncated, pc.utf8_slice_codeunits(lines, 0, MAX_LINE_BYTES), lines)
    n = len(lines)

    def constant(value: Any, type_: pa.DataType) -> pa.Array:
        return pa.nulls(n, type_) if value is None else pa.nulls(n, type_).fill_null(pa.scalar(value, type_))

    timestamp = pa.timestamp("us", tz="UTC")
    return pa.RecordBatch.from_arrays(
        [
            constant(cluster, pa.string()),
            constant(broker_id, pa.int32()),
            constant(kind, pa.string()),
            lines.cast(pa.string()),
            pa.array(sizes, pa.int64()),
            constant(source, pa.string()),
            pa.array(offsets, pa.int64()),
            constant(ingest_ts, timestamp),
            truncated,
        ],
        schema=pa.schema([("cluster", pa.string()), ("broker_id", pa.int32()), ("kind", pa.string()),
                          ("line", pa.string()), ("line_bytes", pa.int64()), ("source", pa.string()),
                          ("source_offset", pa.int64()), ("ingest_ts", timestamp), ("truncated", pa.bool_())]),
    )


def file_batch_bytes(end: dict[str, Any]) -> int | None:
    """Bytes of file data a `planewatch_files` micro-batch reads, from its end offset alone (each file's entry
    carries the range start `from`); None if `end` is not such an offset."""
    files = end.get("files")
    if not isinstance(files, dict):
        return None
    total = 0
    for entry in files.values():
        if not isinstance(entry, dict) or "offset" not in entry or "from" not in entry:
            return None
        total += max(0, int(entry["offset"]) - int(entry["from"]))
    return total


def logged_file_pieces(checkpoint: str, batch_id: int, family: str) -> list[Piece] | None:
    """The pieces of batch `batch_id` of the `planewatch_files` query checkpointed at `checkpoint`, as its stream
    reader plans them (`partitions`), from Spark's offset log; None if the log holds no such offset."""
    end = logged_offset(checkpoint, batch_id)
    if end is None or file_batch_bytes(end) is None:
        return None
    return split(family, {}, end["files"])


def delete_read_finished(family: str, end: dict[str, dict[str, Any]]) -> list[str]:
    """Delete the input files a committed batch (offsets `end`) read to their end that will never grow again (a
    scrape answer, a rotated log: paths.is_finished), when they are still that file (same inode and size); returns
    the paths deleted. A file that cannot be deleted is left (logged): it is read no further either way."""
    deleted: list[str] = []
    for key, e in end.items():
        path = str(e["path"])
        info = FileInfo(family, str(e["kind"]), str(e["cluster"]), e["broker_id"])
        if e.get("deferred") or int(e["offset"]) != int(e["size"]) or not is_finished(os.path.basename(path), info):
            continue
        try:
            st = os.stat(path, follow_symlinks=False)
            if f"{st.st_dev}:{st.st_ino}" != key or st.st_size != int(e["size"]):
                continue  # another file took the name, or it changed: not what the batch read
            os.remove(path)
            deleted.append(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            log.warning("could not delete the read input file %s: %s", path, exc)
    return deleted
