"""How the in-memory snapshot tables are prepared, and refreshed incrementally when a commit only appended.

Pure Arrow logic plus one reader of Parquet files named by the Delta log (the store decides when it applies).
A full reload of 100,000 alerts (Parquet decode, dedupe, sort) costs a few hundred ms of CPU; the pipeline appends
every few seconds, so re-reading everything each time would compete with the requests for the machine's cores.
When every file of the previous snapshot is still live (no remove actions: plain appends), only the new files are
read and merged in. Anything else (MERGE/overwrite removing files, deletion vectors, column mapping, a remote
store, a schema change) falls back to the full reload.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from lake.read import read_file, to_contract
from schemas.tables import ALERTS, CONTROL_REQUEST_LATENCY, TABLES

__all__ = [
    "CONTROL_REQUESTS_MAX_ROWS",
    "CONTROL_REQUESTS_WINDOW",
    "SNAPSHOTS",
    "SnapshotSpec",
    "held_since",
    "read_added_files",
    "window_start",
]

# control_request_latency grows with the cluster's chatter (the soak's 30 brokers: ~430,000 requests an hour, 10
# million a day), so the API holds only its newest hour in memory, and never more than this many rows (~180 bytes
# each in Arrow: ~90 MB); GET /control-requests reaching further back is answered by a DataFusion query over the lake.
CONTROL_REQUESTS_WINDOW = timedelta(hours=1)
CONTROL_REQUESTS_MAX_ROWS = 500_000
# The time a control request is placed at: the controller's send, else the broker's Handling (no controller log).
REQUEST_TIME_COLUMNS = ("sent_ts", "handling_ts")


def _dedupe_alerts(t: pa.Table) -> pa.Table:
    """One row per alert_id: the newest `updated_at` wins."""
    if t.num_rows < 2:
        return t
    by_id = t.sort_by([("alert_id", "ascending"), ("updated_at", "descending")])
    ids = by_id["alert_id"]
    changed = pc.not_equal(ids.slice(1), ids.slice(0, by_id.num_rows - 1))
    keep = pa.concat_arrays([pa.array([True]), changed.combine_chunks()])
    return by_id.filter(pc.fill_null(keep, True))


def _order_alerts(t: pa.Table) -> pa.Table:
    return t.sort_by([("started_at", "descending"), ("alert_id", "descending")]).combine_chunks()


def prepare_alerts(t: pa.Table) -> pa.Table:
    """One row per alert_id, newest `started_at` first, ties by alert_id desc."""
    return _order_alerts(_dedupe_alerts(t)) if t.num_rows else t


def merge_alerts(old: pa.Table, new: pa.Table) -> pa.Table:
    """A prepared snapshot plus appended rows (which may update alerts already there)."""
    fresh = _dedupe_alerts(new)
    stays = old.filter(pc.invert(pc.is_in(old["alert_id"], value_set=fresh["alert_id"].combine_chunks())))
    return _order_alerts(pa.concat_tables([stays, fresh.select(old.column_names).cast(old.schema)]))


def _in_window(t: pa.Table) -> pa.Table:
    """The requests of the last CONTROL_REQUESTS_WINDOW before the newest one (in any order)."""
    if t.num_rows == 0:
        return t
    when = _request_time(t)
    start = window_start(pc.max(when).as_py())
    if start is None:
        return t
    return t.filter(pc.fill_null(pc.greater_equal(when, pa.scalar(start, when.type)), False))


def prepare_control_requests(t: pa.Table) -> pa.Table:
    """The snapshot held: the requests of the last CONTROL_REQUESTS_WINDOW before the newest one, newest controller
    send first, at most CONTROL_REQUESTS_MAX_ROWS of them (the newest). The window is cut before the sort, so a
    load sorts (and copies) only what is kept."""
    t = _in_window(t).sort_by([("sent_ts", "descending"), ("broker_id", "ascending")])
    return t.slice(0, CONTROL_REQUESTS_MAX_ROWS).combine_chunks()


def merge_control_requests(old: pa.Table, new: pa.Table) -> pa.Table:
    return prepare_control_requests(pa.concat_tables([old, new.select(old.column_names).cast(old.schema)]))


def _request_time(t: pa.Table) -> pa.ChunkedArray:
    return pc.coalesce(*(t[c] for c in REQUEST_TIME_COLUMNS))


def window_start(newest: datetime | None) -> datetime | None:
    """The oldest request time the control-request snapshot keeps, given the newest one (None: empty)."""
    if newest is None:
        return None
    return (newest if newest.tzinfo else newest.replace(tzinfo=UTC)) - CONTROL_REQUESTS_WINDOW


def held_since(t: pa.Table) -> datetime | None:
    """The oldest request time a trimmed control-request snapshot answers for exactly (None: it is empty)."""
    if t.num_rows == 0:
        return None
    when = _request_time(t)
    if t.num_rows >= CONTROL_REQUESTS_MAX_ROWS:  # cut by rows: it holds from its oldest row on
        oldest: datetime | None = pc.min(when).as_py()
        return oldest if oldest is None or oldest.tzinfo else oldest.replace(tzinfo=UTC)
    return window_start(pc.max(when).as_py())


def in_window_files(actions: pa.Table) -> pa.Table:
    """The add actions (flattened) whose files may hold a request inside the window, by their statistics: a
    file without statistics is kept."""
    cols = [f"max.{c}" for c in REQUEST_TIME_COLUMNS if f"max.{c}" in actions.column_names]
    if not cols or actions.num_rows == 0:
        return actions
    newest = [pc.max(actions[c]).as_py() for c in cols]
    start = window_start(max((n for n in newest if n is not None), default=None))
    if start is None:
        return actions
    keep = pc.and_(*(pc.is_null(actions[c]) for c in cols)) if len(cols) > 1 else pc.is_null(actions[cols[0]])
    for c in cols:
        keep = pc.or_(keep, pc.fill_null(pc.greater_equal(actions[c], pa.scalar(start, actions[c].type)), False))
    return actions.filter(keep)


@dataclass(frozen=True)
class SnapshotSpec:
    """How one snapshot table is prepared from a full read (and cut to what stays in memory), and merged with
    appended rows."""

    prepare: Callable[[pa.Table], pa.Table]
    merge: Callable[[pa.Table, pa.Table], pa.Table]
    # the files a full load reads (None: the whole table)
    files: Callable[[pa.Table], pa.Table] | None = None


SNAPSHOTS: dict[str, SnapshotSpec] = {
    ALERTS.name: SnapshotSpec(prepare_alerts, merge_alerts),
    CONTROL_REQUEST_LATENCY.name: SnapshotSpec(prepare_control_requests, merge_control_requests, in_window_files),
}


def read_added_files(root: str, actions: pa.Table, table: str) -> pa.Table:
    """The rows of the files listed in `actions` (flattened add actions), partition columns restored, in the
    contract's types (lake.read: a MERGE's files hold view types)."""
    schema = TABLES[table].to_arrow()
    parts: list[pa.Table] = []
    part_cols = [c for c in actions.column_names if c.startswith("partition.")]
    for row in actions.select(["path", *part_cols]).to_pylist():
        t = read_file(f"{root}/{unquote(row['path'])}", schema)
        for c in part_cols:
            name = c.removeprefix("partition.")
            if name not in t.column_names:
                typ = schema.field(name).type if name in schema.names else pa.string()
                value = pa.scalar(row[c]) if row[c] is not None else pa.scalar(None, typ)
                t = t.append_column(name, pa.array([value.as_py()] * t.num_rows, value.type).cast(typ))
        parts.append(to_contract(t, schema))
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(parts, promote_options="permissive")
