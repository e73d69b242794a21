"""The driver-side path of an ingest micro-batch: small batches parsed and validated in the driver (pure).

A micro-batch of a few lines costs the executor path (jobs/ingest.py) a Spark job per output table - several seconds
on a busy 2-core machine, almost all of it fixed cost - which is most of the detection delay of an incident on a
quiet cluster. Below ``sink.driver_batch_max_rows`` records the batch is collected once (one Spark job) and everything
else happens here, with the same parsers (:mod:`pipelines.parsing.pylogs`, :mod:`pipelines.parsing.pymetrics`, which
produce the rows the Spark parsers produce), the same hard rules (:mod:`pipelines.quality.arrow_rules`) and the same
quarantine rows; the tables are then committed through the same exactly-once sinks (``DeltaSink.write_arrow``).
Larger batches keep the executor path, so a backfill still scales past one machine.

:func:`route_batch` is pure: bronze rows in (Arrow), the rows of every table out.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from schemas.tables import METRIC_SAMPLES, QUARANTINE, REQUEST_EVENTS, STATE_CHANGE_EVENTS, Table

if TYPE_CHECKING:
    import pyarrow as pa

    from pipelines.quality.rules import Suite

__all__ = ["DriverBatch", "route_batch", "spark_json"]

# Parser route -> silver table, per family (the executor path's FAMILY_TABLES, keyed by the Python engines' routes).
ROUTE_TABLES: dict[str, dict[str, Table]] = {
    "logs": {"state_change": STATE_CHANGE_EVENTS, "request": REQUEST_EVENTS},
    "metrics": {"sample": METRIC_SAMPLES},
}
# A quarantined record keeps at most this much text (QUARANTINE.record's contract: 64 KiB), as in jobs/ingest.py.
MAX_RECORD_CHARS = 64 * 1024


@dataclass
class DriverBatch:
    """Every table's rows of one micro-batch, and the counts of its reconciliation row."""

    silver: dict[str, pa.Table] = field(default_factory=dict)  # table name -> valid rows
    quarantine: pa.Table | None = None
    unused: int = 0
    # table name -> {failed expectation name: rows}, for the per-rule dq_results rows
    failed_rules: dict[str, dict[str, int]] = field(default_factory=dict)


def _json_value(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        v = v.astimezone(dt.UTC)
        return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z"
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, list):  # an Arrow map column as a list of (key, value) pairs
        return {str(k): _json_value(x) for k, x in v}
    return v


def spark_json(row: Mapping[str, Any]) -> str:
    """A row as Spark's ``to_json(struct(...))`` writes it: compact, null fields left out, timestamps
    ``yyyy-MM-dd'T'HH:mm:ss.SSSXXX`` in UTC, maps as objects."""
    return json.dumps({k: _json_value(v) for k, v in row.items() if v is not None}, separators=(",", ":"),
                      ensure_ascii=False)


def _validation_quarantine(bad_rows: list[dict[str, Any]], table: Table, reasons: list[str]) -> list[dict[str, Any]]:
    out = []
    for row, reason in zip(bad_rows, reasons, strict=True):
        record = spark_json({c: row.get(c) for c in table.names if c in row})
        date = row.get("date") or (row["ingest_ts"].date() if row.get("ingest_ts") is not None else None)
        out.append({
            "cluster": row.get("cluster"), "broker_id": row.get("broker_id"), "target_table": table.name,
            "stage": "validate", "reason": reason, "record": record[:MAX_RECORD_CHARS], "source": row.get("source"),
            "source_offset": row.get("source_offset"), "ingest_ts": row.get("ingest_ts"),
            "batch_id": row.get("batch_id"), "date": date,
        })
    return out


def route_batch(raw: pa.Table, family: str, batch_id: int, suites: Mapping[str, Suite] | None) -> DriverBatch:
    """Bronze rows (RAW_LOGS / RAW_METRICS columns) -> silver rows per table, quarantine rows, unused count.

    `suites`: the hard rules per silver table (None: quality off, every parsed row is valid)."""
    import pyarrow as pa

    from pipelines.parsing.pylogs import parse_line
    from pipelines.parsing.pymetrics import parse_metric
    from pipelines.quality.arrow_rules import REASON, split_valid_arrow

    parse: Callable[[Mapping[str, Any]], tuple[str, dict[str, Any]]] = parse_line if family == "logs" else parse_metric
    tables = ROUTE_TABLES[family]
    rows: dict[str, list[dict[str, Any]]] = {route: [] for route in tables}
    rejected: list[dict[str, Any]] = []
    unused = 0
    for rec in raw.to_pylist():
        route, row = parse(rec)
        if route in rows:
            row["batch_id"] = batch_id
            rows[route].append(row)
        elif route == "rejected":
            row["batch_id"] = batch_id
            rejected.append(row)
        else:
            unused += 1
    out = DriverBatch(unused=unused)
    quarantine = rejected
    for route, table in tables.items():
        tbl = pa.Table.from_pylist(rows[route], schema=table.to_arrow())
        suite = None if suites is None else suites.get(table.name)
        if suite is None:
            out.silver[table.name] = tbl
            continue
        good, bad = split_valid_arrow(tbl, suite)
        out.silver[table.name] = good
        if bad.num_rows:
            reasons = [str(r) for r in bad.column(REASON).to_pylist()]
            out.failed_rules[table.name] = dict(Counter(reasons))
            quarantine = quarantine + _validation_quarantine(bad.drop_columns([REASON]).to_pylist(), table, reasons)
        else:
            out.failed_rules[table.name] = {}
    out.quarantine = pa.Table.from_pylist(quarantine, schema=QUARANTINE.to_arrow())
    return out
