"""Creating and evolving the lake's Delta tables, and what every writer of them shares: the app transaction each
commit carries (so a replayed batch is skipped), a directory-safe name per app, where delta-rs opens a table, and
the string literal of the predicates writers give delta-rs (`sql_string`).

Tables are created empty by `ensure_table` (delta-rs, reader 1 / writer 2) whatever the sink mode, so every writer
writes the same schema and partitioning and every reader finds a table before its first row.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from typing import TYPE_CHECKING

from deltalake import CommitProperties, DeltaTable, Field, Schema, Transaction
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import create_table_with_add_actions

from lake import LakeError
from lake.storage import is_remote

if TYPE_CHECKING:
    from schemas.tables import Table

__all__ = [
    "COMMIT_RETRIES",
    "COMMIT_RETRY_SLEEP_S",
    "HISTORY_SCAN",
    "CommitFailedError",
    "add_missing_columns",
    "app_slug",
    "batch_commit",
    "ensure_table",
    "sql_string",
    "table_location",
]

log = logging.getLogger(__name__)

# Concurrent appends from two queries (e.g. both ingest jobs writing quarantine) can race on the next log version;
# delta-rs reports the conflict and a blind append is safe to retry.
COMMIT_RETRIES = 5
COMMIT_RETRY_SLEEP_S = 0.2
# A writer looks for its own commit of a batch among this many newest commits (other queries and the maintenance
# commit in between; a handful per batch at most).
HISTORY_SCAN = 50


def sql_string(value: str) -> str:
    """`value` as a SQL string literal in a delta-rs predicate (a delete's, a merge's)."""
    return "'" + value.replace("'", "''") + "'"


def batch_commit(app_id: str, batch_id: int) -> CommitProperties:
    """The properties of batch `batch_id`'s commit by `app_id`: its app transaction (a replay finds it and writes
    nothing) and the same pair as custom metadata (a reader of the history finds the commit)."""
    return CommitProperties(
        app_transactions=[Transaction(app_id=app_id, version=batch_id)],
        custom_metadata={"planewatch.app_id": app_id, "planewatch.batch_id": str(batch_id)},
    )


def app_slug(app_id: str) -> str:
    """A directory-safe, collision-free name for an app id (readable prefix + hash)."""
    readable = re.sub(r"[^A-Za-z0-9_.-]", "_", app_id)[:40]
    return f"{readable}.{hashlib.sha1(app_id.encode()).hexdigest()[:10]}"


def table_location(uri: str) -> str:
    """Where delta-rs opens a table given as a path, a `file://` URI or an object store URI: the absolute local
    directory, or the object store URI as given (lake.storage)."""
    if is_remote(uri):
        return uri.rstrip("/")
    return os.path.abspath(uri.removeprefix("file://"))


def ensure_table(path: str, table: Table) -> None:
    """Create the Delta table (empty, with its schema and partitioning) unless it exists; an existing table that
    lacks columns a later planewatch declares (nullable, at the table's end) gains them, empty in its old files."""
    if DeltaTable.is_deltatable(path):
        add_missing_columns(path, table)
        return
    if not is_remote(path):
        os.makedirs(path, exist_ok=True)
    try:
        create_table_with_add_actions(
            path,
            Schema.from_arrow(table.to_arrow()),
            [],
            mode="ignore",
            partition_by=list(table.partition_by) or None,
            name=table.name,
        )
    except Exception as exc:  # a concurrent creator wins; anything else is real
        if not DeltaTable.is_deltatable(path):
            raise LakeError(f"cannot create Delta table {table.name} at {path}: {exc}") from exc


def add_missing_columns(path: str, table: Table) -> list[str]:
    """Add the columns of `table` that the Delta table at `path` lacks (a metadata commit: no file is rewritten,
    readers see them null in the files written before); returns their names."""
    for attempt in range(COMMIT_RETRIES):
        try:
            dt = DeltaTable(path)
            have = {f.name for f in dt.schema().fields}
            missing = [f for f in table.to_arrow() if f.name not in have]
            if missing:
                dt.alter.add_columns([Field.from_arrow(f.with_nullable(True)) for f in missing])
                log.info("%s: added columns %s", table.name, [f.name for f in missing])
            return [f.name for f in missing]
        except CommitFailedError:  # another writer committed first: look again
            time.sleep(COMMIT_RETRY_SLEEP_S * (attempt + 1))
        except Exception as exc:
            raise LakeError(f"cannot add {table.name}'s new columns at {path}: {exc}") from exc
    raise LakeError(f"cannot add {table.name}'s new columns at {path}: {COMMIT_RETRIES} commit races lost")


