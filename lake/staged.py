"""A batch's files on an object store, which cannot move a file: written once where they stay, committed there.

The sink (lake.sink, mode delta-rs) opens a batch with :func:`open_staged`: an empty marker object
`<table>/_pending/<app>-b<batch>-<attempt>` and the directory `<table>/staged/<app>-b<batch>-<attempt>/` the
executors write the batch's Parquet files into (Hive-style partition directories below it; no leading underscore,
so that a full vacuum sees an orphan). :func:`staged_adds` makes the commit's add actions of the files there (one
listing for their sizes, their footers read a few at a time), and :func:`close_staged` removes the marker after the
commit. Before the next write of the same app, :func:`cleanup_staged` lists only the markers (the batches in flight,
never the table's history): a batch above the committed one has its staged files deleted, then its marker goes.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow.parquet as pq
from deltalake.transaction import AddAction

from lake.read import parse_partition_dir
from lake.stats import footer_stats
from lake.storage import delete_tree, filesystem, join, list_files
from lake.tables import app_slug

__all__ = ["BATCH_DIR", "PENDING_DIR", "STAGED_DIR", "cleanup_staged", "close_staged", "open_staged", "staged_adds"]

log = logging.getLogger(__name__)

PENDING_DIR = "_pending"  # leading underscore: Delta and Spark readers ignore it
# An object-store table's batches are written under this directory of the table and committed where they are.
STAGED_DIR = "staged"
# Footers of a batch's files on an object store read at once (a range request each).
FOOTER_READS = 8
# A pending batch's name: <app slug>-b<batch id, 20 digits>-<attempt>.
BATCH_DIR = re.compile(r"^(?P<slug>.+)-b(?P<batch>\d{20})-(?P<attempt>[0-9a-f]{8})$")


def open_staged(table_uri: str, name: str) -> str:
    """Open batch `name` of the table: its marker written; the directory its files go to."""
    fs, marker = filesystem(join(table_uri, PENDING_DIR, name))
    with fs.open_output_stream(marker):
        pass  # the batch is open until its commit (an orphan's staged files are found by it)
    return join(table_uri, STAGED_DIR, name)


def staged_adds(table_uri: str, staged: str, files: Sequence[str] | None, partition_by: tuple[str, ...]
                ) -> tuple[list[Any], int]:
    """The add actions (paths relative to the table) and rows of the Parquet files under `staged` (only those of
    `files`, the successful task attempts' outputs, when given); files without rows are left out."""
    sizes = dict(list_files(staged))
    chosen = sorted(sizes if files is None else (f for f in files if f in sizes))
    chosen = [f for f in chosen if f.endswith(".parquet") and not f.rsplit("/", 1)[-1].startswith((".", "_"))]
    with ThreadPoolExecutor(FOOTER_READS) as pool:
        footers = list(pool.map(lambda f: footer_stats(pq.read_metadata(f), partition_by), chosen))
    adds: list[Any] = []
    rows = 0
    now_ms = int(time.time() * 1000)
    for uri, (n, stats) in zip(chosen, footers, strict=True):
        if n == 0:
            continue
        in_batch = uri[len(staged) + 1:]  # <partition directories>/part-....parquet
        rel_dir = in_batch.rsplit("/", 1)[0] if "/" in in_batch else ""
        adds.append(AddAction(path=uri[len(table_uri) + 1:], size=sizes[uri],  # delta-rs encodes it itself
                              partition_values=parse_partition_dir(rel_dir, partition_by),
                              modification_time=now_ms, data_change=True, stats=stats))
        rows += n
    return adds, rows


def close_staged(table_uri: str, staged: str, committed: bool) -> None:
    """Close the batch whose files are under `staged`: its marker goes (and its files, when nothing was
    committed)."""
    if not committed:
        delete_tree(staged)
    fs, marker = filesystem(join(table_uri, PENDING_DIR, staged.rsplit("/", 1)[-1]))
    fs.delete_file(marker)


def cleanup_staged(table_uri: str, app_id: str, committed: int | None, keep: str | None) -> int:
    """lake.sink.cleanup_pending on an object store: each marker of `app_id` under `_pending/` goes, and with it the
    staged files of a batch above `committed` (never committed: no commit names them)."""
    slug = app_slug(app_id)
    removed = 0
    fs, _ = filesystem(table_uri)
    for marker, _size in list(list_files(join(table_uri, PENDING_DIR))):
        name = marker.rsplit("/", 1)[-1]
        m = BATCH_DIR.match(name)
        if not m or m.group("slug") != slug or name == keep:
            continue
        batch = int(m.group("batch"))
        if committed is None or batch > committed:
            delete_tree(join(table_uri, STAGED_DIR, name))
        fs.delete_file(filesystem(marker)[1])
        removed += 1
        log.info("removed staged batch %s of %s (batch %d, committed %s)", name, app_id, batch, committed)
    return removed
