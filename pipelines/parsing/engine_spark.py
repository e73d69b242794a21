"""The engine (:mod:`pipelines.parsing.engine`) on Spark's executors, through ``mapInArrow``.

Each Arrow batch of bronze rows goes through :func:`~pipelines.parsing.engine.run_engine` in the executor's Python
worker (vectorized: polars over the whole batch, no per-row Python call), and comes back as ONE wide frame of
:func:`wide_schema`: every output row carries its `_route` (a silver route, ``rejected``, ``invalid`` for a silver
row that failed a hard rule, or ``unused``), `_rule` (``<table>|<expectation>`` of an invalid row) and its table's
columns in the struct column named after that table. :func:`route_frame` selects one route's rows in its table's
columns. Unused records come back as a bare `_route` row (they are counted, not written: bronze holds them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from pipelines.parsing.engine import ROUTE_TABLES, run_engine
from schemas.tables import QUARANTINE

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from pipelines.quality.rules import Suite

__all__ = ["engine_frame", "route_frame", "routes", "wide_schema"]


def routes(family: str) -> tuple[str, ...]:
    """Every value `_route` takes for `family`."""
    return (*ROUTE_TABLES[family], "rejected", "invalid", "unused")


def _struct_name(family: str, route: str) -> str:
    if route in ("rejected", "invalid"):
        return QUARANTINE.name
    return ROUTE_TABLES[family][route].name


def wide_schema(family: str) -> StructType:
    """`_route`, `_rule`, then one nullable struct column per output table of `family`."""
    fields = [StructField("_route", StringType()), StructField("_rule", StringType())]
    for table in (*ROUTE_TABLES[family].values(), QUARANTINE):
        fields.append(StructField(table.name, table.to_spark()))
    return StructType(fields)


def _arrow_wide(family: str) -> pa.Schema:
    fields = [pa.field("_route", pa.string()), pa.field("_rule", pa.string())]
    for table in (*ROUTE_TABLES[family].values(), QUARANTINE):
        fields.append(pa.field(table.name, pa.struct(list(table.to_arrow()))))
    return pa.schema(fields)


def _wide_batch(result: Any, family: str, schema: pa.Schema) -> pa.RecordBatch:
    """One engine result as rows of the wide schema."""
    parts: list[tuple[str, list[str | None], str, pa.Table]] = []
    for route, table in ROUTE_TABLES[family].items():
        tbl = result.silver[table.name]
        parts.append((route, [None] * tbl.num_rows, table.name, tbl))
    q = result.quarantine
    stages = q.column("stage").to_pylist()
    q_routes = ["invalid" if s == "validate" else "rejected" for s in stages]
    rules = [f"{t}|{r}" if s == "validate" else None for s, t, r in
             zip(stages, q.column("target_table").to_pylist(), q.column("reason").to_pylist(), strict=True)]
    n_unused = result.unused.num_rows
    total = sum(p[3].num_rows for p in parts) + q.num_rows + n_unused
    route_col: list[str] = []
    rule_col: list[str | None] = []
    for route, rule, _, tbl in parts:
        route_col += [route] * tbl.num_rows
        rule_col += rule
    route_col += q_routes + ["unused"] * n_unused
    rule_col += rules + [None] * n_unused
    columns: list[pa.Array] = [pa.array(route_col, pa.string()), pa.array(rule_col, pa.string())]
    offset = 0
    spans = dict.fromkeys(schema.names[2:], (0, 0))
    for _, _, name, tbl in parts:
        spans[name] = (offset, tbl.num_rows)
        offset += tbl.num_rows
    spans[QUARANTINE.name] = (offset, q.num_rows)
    sources = {name: tbl for _, _, name, tbl in parts}
    sources[QUARANTINE.name] = q
    for f in list(schema)[2:]:
        start, n = spans[f.name]
        struct = pa.StructArray.from_arrays(
            [c.combine_chunks() for c in sources[f.name].columns], fields=list(f.type)) if n else None
        if struct is None:
            columns.append(pa.nulls(total, f.type))
            continue
        before = pa.nulls(start, f.type)
        after = pa.nulls(total - start - n, f.type)
        columns.append(pa.concat_arrays([before, struct, after]))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def engine_frame(bronze: DataFrame, family: str, suites: Mapping[str, Suite] | None, batch_id: int,
                 cluster_tz: str = "UTC") -> DataFrame:
    """Bronze rows -> the wide frame of the engine's outputs (one engine run per Arrow batch, on the executors)."""
    arrow_schema = _arrow_wide(family)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            result = run_engine(pa.Table.from_batches([batch]), family, cluster_tz=cluster_tz, suites=suites,
                                batch_id=batch_id)
            yield _wide_batch(result, family, arrow_schema)

    return bronze.mapInArrow(run, wide_schema(family))


def route_frame(wide: DataFrame, family: str, route: str) -> DataFrame:
    """The rows of `route` (a silver route, or ``quarantine``: rejected and invalid) in their table's columns."""
    if route == "quarantine":
        return wide.where(F.col("_route").isin("rejected", "invalid")).select(f"{QUARANTINE.name}.*")
    return wide.where(F.col("_route") == F.lit(route)).select(f"{_struct_name(family, route)}.*")
