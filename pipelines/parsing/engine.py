"""The one parse-and-validate engine: bronze records in (Arrow), every table's rows out. Pure: no Spark, no I/O.

Both paths of an ingest micro-batch run exactly this function: the driver on a small batch it collected, the
executors inside ``mapInArrow`` on the pieces of a large one; ``planewatch parse`` runs it on the records of a file.

1. :func:`pipelines.parsing.engine_logs.parse_logs` / :func:`pipelines.parsing.engine_metrics.parse_metrics` route
   every record (vectorized polars expressions driven by :mod:`pipelines.parsing.patterns` and
   :mod:`pipelines.parsing.metric_names`);
2. the silver rows of each table are checked against the hard rules of the table's suite
   (:func:`pipelines.quality.rules.split_valid_arrow`); a failing row leaves silver for quarantine (stage ``validate``);
3. every input record lands in exactly one of: a silver table, quarantine (stage ``parse``/``source``/``validate``
   with a reason), or unused (a recognised record that carries nothing planewatch uses, kept in bronze only).
   A record its reader cut at its length cap is quarantined (stage ``parse``, reason
   :data:`~pipelines.parsing.stages.CUT_REASON`) whatever its start looks like: the rest of it is not there.
   :attr:`EngineResult.counts` says how many went where, so a batch reconciles.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from pipelines.parsing.engine_logs import parse_logs
from pipelines.parsing.engine_metrics import parse_metrics
from pipelines.parsing.stages import CUT_REASON, QUARANTINE_RECORD_CHARS, cut_by_reader
from pipelines.quality.rules import REASON, split_valid_arrow
from schemas.routes import RAW_TABLES, ROUTE_TABLES, SOURCE_ERROR_FORMAT, SOURCE_STAGE
from schemas.tables import METRIC_SAMPLES, QUARANTINE, Table

if TYPE_CHECKING:
    from pipelines.quality.rules import Suite

__all__ = ["RAW_TABLES", "ROUTE_TABLES", "EngineResult", "record_json", "route_records", "run_engine"]

# RAW_TABLES and ROUTE_TABLES (the routes' vocabulary) live in schemas.routes; re-exported for the engine's callers.
_PROV = ("source", "source_offset", "ingest_ts", "batch_id")


@dataclass
class EngineResult:
    """Every table's rows of one batch of records, and the counts of its reconciliation."""

    silver: dict[str, pa.Table] = field(default_factory=dict)  # table name -> valid rows
    quarantine: pa.Table | None = None  # parse/source rejects and validation failures
    unused: pa.Table | None = None  # bronze columns + `reason`
    # parser route -> records (before validation); `validate` -> silver rows that failed a hard rule
    counts: dict[str, int] = field(default_factory=dict)
    # table name -> {failed expectation name: rows}, for the per-rule dq_results rows
    failed_rules: dict[str, dict[str, int]] = field(default_factory=dict)


def _routed(raw: pa.Table, family: str, cluster_tz: str) -> pl.DataFrame:
    frame = pl.from_arrow(raw.select(RAW_TABLES[family].names))
    assert isinstance(frame, pl.DataFrame)
    routed = parse_logs(frame, cluster_tz) if family == "logs" else parse_metrics(frame)
    cut = cut_by_reader(pl.col("line"), pl.col("line_bytes"))
    stage = [] if family == "logs" else [pl.when(cut).then(pl.lit("parse")).otherwise(pl.col("_stage")).alias("_stage")]
    return routed.with_columns(
        pl.when(cut).then(pl.lit("rejected")).otherwise(pl.col("_route")).alias("_route"),
        pl.when(cut).then(pl.lit(CUT_REASON)).otherwise(pl.col("_reason")).alias("_reason"),
        *stage,
    )


def _utc_date(ts: pl.Expr) -> pl.Expr:
    return ts.dt.convert_time_zone("UTC").dt.date()


def _select(routed: pl.DataFrame, family: str, route: str) -> pl.DataFrame:
    """The rows of `route` in their table's columns (unused: the bronze columns + `reason`)."""
    rows = routed.filter(pl.col("_route") == route)
    raw_names = RAW_TABLES[family].names
    if route == "unused":
        return rows.select(*raw_names, pl.col("_reason").alias("reason"))
    if route == "rejected":
        target = pl.col("_target") if family == "logs" else pl.lit(METRIC_SAMPLES.name)
        stage = (pl.when(pl.col("log_kind") == SOURCE_ERROR_FORMAT).then(pl.lit(SOURCE_STAGE))
                 .otherwise(pl.lit("parse")) if family == "logs" else pl.col("_stage"))
        return rows.select(
            "cluster", "broker_id", target.alias("target_table"), stage.alias("stage"),
            pl.col("_reason").alias("reason"),
            pl.col("line").str.slice(0, QUARANTINE_RECORD_CHARS).alias("record"), *_PROV, "date",
        )
    table = ROUTE_TABLES[family][route]
    prefix = {"state_change": "sc_", "request": "rq_", "sample": "m_"}[route]
    ts = pl.col("ts") if family == "logs" else pl.col("m_ts")
    cols: list[pl.Expr] = []
    for name in table.names:
        if name in ("cluster", *_PROV):
            cols.append(pl.col(name))
        elif name == "date":
            cols.append(_utc_date(ts).alias("date"))
        elif name == "ts":
            cols.append(ts.alias("ts"))
        elif name in ("level", "logger", "message"):
            cols.append(pl.col(name))
        elif name == "broker_id" and route == "request":
            cols.append(pl.col("broker_id"))
        else:
            cols.append(pl.col(prefix + name).alias(name))
    return rows.select(cols)


def _to_arrow(frame: pl.DataFrame, schema: pa.Schema) -> pa.Table:
    """A polars frame as an Arrow table of exactly `schema` (label lists become Arrow maps)."""
    tbl = frame.to_arrow()
    arrays = []
    for f in schema:
        col = tbl.column(f.name).combine_chunks()
        if pa.types.is_map(f.type):
            col = col.cast(pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())])))
            keys = pa.compute.struct_field(col.flatten(), "key")
            values = pa.compute.struct_field(col.flatten(), "value")
            col = pa.MapArray.from_arrays(col.offsets, keys, values, mask=col.is_null())
            if col.type != f.type:
                col = col.cast(f.type)
        else:
            col = col.cast(f.type)
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=schema)


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


def record_json(row: Mapping[str, Any]) -> str:
    """A silver row as a quarantine `record`: compact JSON, null fields left out, timestamps
    ``yyyy-MM-dd'T'HH:mm:ss.SSSZ`` in UTC, maps as objects."""
    return json.dumps({k: _json_value(v) for k, v in row.items() if v is not None}, separators=(",", ":"),
                      ensure_ascii=False)


def _validation_quarantine(bad: pa.Table, table: Table, reasons: list[str]) -> pa.Table:
    """Silver rows that failed a hard rule, as quarantine rows (stage validate; rare, so built row by row)."""
    out = []
    for row, reason in zip(bad.to_pylist(), reasons, strict=True):
        record = record_json({c: row.get(c) for c in table.names if c in row})
        date = row.get("date") or (row["ingest_ts"].date() if row.get("ingest_ts") is not None else None)
        out.append({
            "cluster": row.get("cluster"), "broker_id": row.get("broker_id"), "target_table": table.name,
            "stage": "validate", "reason": reason, "record": record[:QUARANTINE_RECORD_CHARS],
            **{c: row.get(c) for c in _PROV}, "date": date,
        })
    return pa.Table.from_pylist(out, schema=QUARANTINE.to_arrow())


def run_engine(raw: pa.Table, family: str, *, cluster_tz: str = "UTC", suites: Mapping[str, Suite] | None = None,
               batch_id: int | None = None) -> EngineResult:
    """Bronze records (the RAW_LOGS / RAW_METRICS columns) -> silver rows per table, quarantine rows, unused rows.

    Args:
        raw: the batch's bronze rows.
        family: ``logs`` or ``metrics``.
        cluster_tz: the zone the brokers' log4j timestamps are written in (an IANA name); results are UTC.
        suites: the hard rules per silver table name (None: quality off, every parsed row is valid).
        batch_id: stamped on every output row (None: the rows keep the bronze `batch_id`).
    """

    if batch_id is not None:
        raw = raw.set_column(raw.schema.get_field_index("batch_id"), "batch_id",
                             pa.array([batch_id] * raw.num_rows, pa.int64()))
    routed = _routed(raw, family, cluster_tz)
    counts = {str(k): int(v) for k, v in routed["_route"].value_counts().iter_rows()}
    out = EngineResult(counts=counts)
    quarantine = [_to_arrow(_select(routed, family, "rejected"), QUARANTINE.to_arrow())]
    for route, table in ROUTE_TABLES[family].items():
        tbl = _to_arrow(_select(routed, family, route), table.to_arrow())
        suite = None if suites is None else suites.get(table.name)
        if suite is None:
            out.silver[table.name] = tbl
            continue
        good, bad = split_valid_arrow(tbl, suite)
        out.silver[table.name] = good
        reasons = [str(r) for r in bad.column(REASON).to_pylist()]
        out.failed_rules[table.name] = dict(Counter(reasons))
        if bad.num_rows:
            quarantine.append(_validation_quarantine(bad.drop_columns([REASON]), table, reasons))
    out.counts["validate"] = sum(sum(v.values()) for v in out.failed_rules.values())
    out.quarantine = pa.concat_tables(quarantine)
    unused_schema = pa.schema([*RAW_TABLES[family].to_arrow(), pa.field("reason", pa.string())])
    out.unused = _to_arrow(_select(routed, family, "unused"), unused_schema)
    return out


def route_records(raw: pa.Table, family: str, cluster_tz: str = "UTC") -> list[tuple[str, dict[str, Any]]]:
    """Each record's (route, row of that route's table) in input order, without validation: what the parser alone
    makes of every record (``planewatch parse``, the parser tests). Unused rows carry `reason`."""
    routed = _routed(raw, family, cluster_tz).with_row_index("_i")
    order: list[tuple[int, str, dict[str, Any]]] = []
    routes = (*ROUTE_TABLES[family], "rejected", "unused")
    for route in routes:
        sel = _select(routed, family, route)
        idx = routed.filter(pl.col("_route") == route)["_i"].to_list()
        if route in ROUTE_TABLES[family]:
            schema = ROUTE_TABLES[family][route].to_arrow()
        elif route == "rejected":
            schema = QUARANTINE.to_arrow()
        else:
            schema = pa.schema([*RAW_TABLES[family].to_arrow(), pa.field("reason", pa.string())])
        rows = _to_arrow(sel, schema).to_pylist()
        order += [(i, route, row) for i, row in zip(idx, rows, strict=True)]
    order.sort(key=lambda t: t[0])
    return [(route, _maps_as_dicts(row)) for _, route, row in order]


def _maps_as_dicts(row: dict[str, Any]) -> dict[str, Any]:
    """Arrow maps come back from to_pylist as (key, value) lists; rows of this module's callers use dicts."""
    if isinstance(row.get("labels"), list):
        row["labels"] = dict(row["labels"])
    return row
