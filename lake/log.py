"""The Delta log read by hand, where delta-rs has no cheaper call: the newest version (a listing), the files some
commits added, the newest time a table's files' statistics reach, and the positions the `planewatch_delta` streaming
readers hold (from their queries' offset logs), which the log cleanup must keep (lake.maintenance).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import time
from collections.abc import Sequence
from typing import Any, NamedTuple
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from lake import LakeError

__all__ = [
    "STALE_OFFSET_S",
    "ReaderPosition",
    "added_files",
    "commit_adds",
    "latest_version",
    "newest_time",
    "reader_positions",
    "snapshot_files",
    "strip_file_scheme",
]

# An offset without its table, older than this, is a removed query's (a running query writes one every trigger).
STALE_OFFSET_S = 600.0
# A commit of the Delta log: `<version>.json`, the version in 20 digits (written whole: put-if-absent or rename).
_COMMIT_FILE = re.compile(r"^(\d{20})\.json$")


def latest_version(path: str) -> int:
    """The newest version of the Delta table at `path` (-1: none yet). A local table's is the highest commit file
    in its log, listed (opening the table reads its checkpoint and every commit after it: 30 ms at 2,500 commits,
    against 3 ms, and a streaming query asks at every trigger)."""
    if "://" in path and not path.startswith("file://"):
        return int(DeltaTable(path).version()) if DeltaTable.is_deltatable(path) else -1
    try:
        names = os.listdir(os.path.join(strip_file_scheme(path), "_delta_log"))
    except FileNotFoundError:
        return -1
    return max((int(m[1]) for n in names if (m := _COMMIT_FILE.match(n))), default=-1)


def strip_file_scheme(uri: str) -> str:
    """A local path from a path or a `file://` URI."""
    return uri[len("file://") :] if uri.startswith("file://") else uri


def commit_adds(table_path: str, version: int) -> list[dict[str, Any]]:
    """The add actions (dataChange) of commit `version` of the local table at `table_path`."""
    log_dir = os.path.join(strip_file_scheme(table_path), "_delta_log")
    name = os.path.join(log_dir, f"{version:020d}.json")
    try:
        with open(name, encoding="utf-8") as fh:
            actions = [json.loads(line) for line in fh if line.strip()]
    except FileNotFoundError as exc:
        raise LakeError(f"Delta commit {name} is gone (log cleaned up?); restart from a new checkpoint") from exc
    return [a["add"] for a in actions if "add" in a and a["add"].get("dataChange", True)]


def snapshot_files(table_path: str, version: int) -> list[tuple[str, dict[str, str | None]]]:
    """(absolute file path, partition values as strings) of the live files of version `version`."""
    adds = pa.table(DeltaTable(table_path, version=version).get_add_actions(flatten=True))
    parts = [c for c in adds.column_names if c.startswith("partition.")]
    return [
        (os.path.join(table_path, unquote(row["path"])),
         {c.removeprefix("partition."): None if row[c] is None else str(row[c]) for c in parts})
        for row in adds.select(["path", *parts]).to_pylist()
    ]


def added_files(table_path: str, start: int, end: int) -> list[tuple[str, dict[str, str | None]]]:
    """(absolute file path, partition values) of the files added by commits in (start, end]."""
    out = []
    for v in range(start + 1, end + 1):
        for add in commit_adds(table_path, v):
            out.append((os.path.join(table_path, unquote(add["path"])), add.get("partitionValues") or {}))
    return out


def _newest_offsets(query_checkpoint: str) -> list[str]:
    """The two newest offset-log files of one streaming query's checkpoint (batch N's start is batch N-1's end:
    a batch not committed yet is run again from there)."""
    offsets = os.path.join(query_checkpoint, "offsets")
    try:
        batches = sorted(int(n) for n in os.listdir(offsets) if n.isdigit())
    except (FileNotFoundError, NotADirectoryError):  # not a query's checkpoint (a stray file)
        return []
    return [os.path.join(offsets, str(b)) for b in batches[-2:]]


class ReaderPosition(NamedTuple):
    """The lowest version the streaming readers of one table have read up to, and whether one of them may load the
    snapshot of its version again (its first batch, from version -1, not committed yet)."""

    version: int
    snapshot: bool


def reader_positions(checkpoints: str, now: float | None = None) -> dict[str, ReaderPosition] | None:
    """Per table (real path), the lowest version a `planewatch_delta` query under `checkpoints` (one directory per
    query) may still read from: the commits after it must stay. None when a live query's offset does not name its
    table (a checkpoint written before offsets did; a running query rewrites it at its next batch) or the
    checkpoints are on a remote store: then no reader's position is known. An offset of that old form written more
    than STALE_OFFSET_S before `now` belongs to no running query (one a later version removed) and is ignored."""
    now = time.time() if now is None else now
    if "://" in checkpoints and not checkpoints.startswith("file://"):
        return None
    out: dict[str, ReaderPosition] = {}
    root = strip_file_scheme(checkpoints)
    try:
        queries = sorted(os.listdir(root))
    except FileNotFoundError:
        return out
    for query in queries:
        newest = _newest_offsets(os.path.join(root, query))
        first = len(newest) == 1 and os.path.basename(newest[0]) == "0" and not os.path.exists(
            os.path.join(root, query, "commits", "0"))
        for name in newest:
            try:
                with open(name, encoding="utf-8") as fh:
                    lines = fh.read().splitlines()[2:]  # the log's version, the batch's metadata, then its sources
                written = os.path.getmtime(name)
            except FileNotFoundError:  # purged by Spark since it was listed
                continue
            for line in lines:
                try:
                    offset = json.loads(line) if line.startswith("{") else None
                except ValueError:  # torn or foreign: whose position it holds is unknown
                    return None
                if not isinstance(offset, dict) or set(offset) - {"version", "table"} or \
                        not isinstance(offset.get("version"), int):
                    continue  # another source's offset (a Kafka source's names topics: {"version": {"0": 12}})
                if "table" not in offset:
                    if now - written > STALE_OFFSET_S:
                        continue
                    return None
                table = os.path.realpath(strip_file_scheme(str(offset["table"])))
                held = out.get(table)
                version = int(offset["version"])
                out[table] = ReaderPosition(version if held is None else min(held.version, version),
                                            first or (held is not None and held.snapshot))
    return out


def newest_time(path: str, columns: Sequence[str]) -> dt.datetime | None:
    """The latest time any row of the table at `path` carries in `columns` (timestamps), from its files'
    statistics; None for an empty table or none; `datetime.max` when a file has no statistics (nothing is known to
    be new)."""
    if not DeltaTable.is_deltatable(path):
        return None
    adds = pa.table(DeltaTable(path).get_add_actions(flatten=True))
    if adds.num_rows == 0:
        return None
    tops: list[dt.datetime] = []
    for column in (f"max.{c}" for c in columns):
        if column not in adds.column_names:
            return dt.datetime.max.replace(tzinfo=dt.UTC)
        top = pc.max(adds[column]).as_py()
        if top is not None:
            tops.append(top if top.tzinfo else top.replace(tzinfo=dt.UTC))
    no_stats = "num_records" not in adds.column_names or pc.any(pc.is_null(adds["num_records"])).as_py()
    return dt.datetime.max.replace(tzinfo=dt.UTC) if no_stats else max(tops, default=None)
