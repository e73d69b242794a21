"""Delta file statistics (numRecords, minValues, maxValues, nullCount) read from a Parquet footer.

The driver never touches the rows of a batch: the executors write the Parquet files, and the footer already carries
per-row-group statistics. Delta readers (delta-rs, polars, the API) use these for file skipping, so they must be
exact bounds or absent: a column gets min/max only when every row group has them, and strings longer than
`MAX_STAT_STRING` are left out (a truncated max would not be an upper bound).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

__all__ = ["MAX_STAT_STRING", "footer_stats"]

# Delta's own writers truncate string stats at 32 characters; longer values only bloat the log (a `line` column
# can hold megabytes), and a truncated maximum is not an upper bound, so such columns simply get no min/max.
MAX_STAT_STRING = 64


def _jsonable(value: Any) -> Any:
    """Convert a footer statistic to the JSON value Delta expects (timestamps as ISO-8601 UTC)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return None
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None  # NaN/inf bounds are not valid JSON stats
    return value


def footer_stats(metadata: Any, partition_columns: tuple[str, ...] = ()) -> tuple[int, str]:
    """Return (numRecords, Delta stats JSON) for a `pyarrow.parquet.FileMetaData`.

    Args:
        metadata: `pq.ParquetFile(path).metadata` (or `pq.read_metadata(path)`).
        partition_columns: columns held in the directory names, never in the file (skipped).
    """
    num_rows = int(metadata.num_rows)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    schema = metadata.schema.to_arrow_schema()
    top_level = {f.name for f in schema}
    usable: dict[str, bool] = {}
    for rg in range(metadata.num_row_groups):
        group = metadata.row_group(rg)
        for ci in range(group.num_columns):
            col = group.column(ci)
            name = col.path_in_schema
            if name not in top_level or name in partition_columns:
                continue  # nested (map) columns: no stats
            st = col.statistics
            if st is None:
                usable[name] = False
                continue
            if st.has_null_count:
                nulls[name] = nulls.get(name, 0) + int(st.null_count)
            if not st.has_min_max:
                # A row group of only nulls has no min/max; it does not narrow the bounds.
                if st.has_null_count and st.null_count == group.num_rows:
                    usable.setdefault(name, True)
                else:
                    usable[name] = False
                continue
            lo, hi = _jsonable(st.min), _jsonable(st.max)
            if lo is None or hi is None or (isinstance(lo, str) and max(len(lo), len(hi)) > MAX_STAT_STRING):
                usable[name] = False
                continue
            usable.setdefault(name, True)
            if name not in mins or lo < mins[name]:
                mins[name] = lo
            if name not in maxs or hi > maxs[name]:
                maxs[name] = hi
    stats = {
        "numRecords": num_rows,
        "minValues": {k: v for k, v in mins.items() if usable.get(k)},
        "maxValues": {k: v for k, v in maxs.items() if usable.get(k)},
        "nullCount": nulls,
    }
    return num_rows, json.dumps(stats, separators=(",", ":"))
