"""The Delta log read by hand, where delta-rs has no cheaper call: the files some commits added (a delta-spark
commit's own files), and the newest time a table's files' statistics reach.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from lake import LakeError

__all__ = [
    "added_files",
    "commit_adds",
    "newest_time",
    "strip_file_scheme",
]


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
        raise LakeError(f"Delta commit {name} is gone (log cleaned up?)") from exc
    return [a["add"] for a in actions if "add" in a and a["add"].get("dataChange", True)]


def added_files(table_path: str, start: int, end: int) -> list[tuple[str, dict[str, str | None]]]:
    """(absolute file path, partition values) of the files added by commits in (start, end]."""
    out = []
    for v in range(start + 1, end + 1):
        for add in commit_adds(table_path, v):
            out.append((os.path.join(table_path, unquote(add["path"])), add.get("partitionValues") or {}))
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
