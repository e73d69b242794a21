"""Source records (jobs.sources.streams.RAW_RECORD_DDL) -> the bronze table's rows (`raw_logs` / `raw_metrics`).

Every source yields the same record columns; bronze renames `kind` to the family's column (`log_kind`,
`metric_format`), drops `truncated` (the record's `line_bytes` beyond its kept text says it), and stamps the
micro-batch id and the UTC date of `ingest_ts` (the partition column). :func:`to_raw` does it to a Spark frame (the
stream's rows), :func:`arrow_to_raw` to record batches read without Spark (the file source's pieces read where the
engine runs); both give the bronze table's schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F

from schemas.routes import RAW_TABLES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["arrow_to_raw", "kind_column", "to_raw"]


def kind_column(family: str) -> str:
    """The bronze column that holds a record's `kind`."""
    return "log_kind" if family == "logs" else "metric_format"


def to_raw(df: DataFrame, family: str, batch_id: int) -> DataFrame:
    """Source records as a Spark frame -> the bronze table's columns."""
    made = {
        kind_column(family): F.col("kind"),
        "batch_id": F.lit(batch_id).cast("long"),
        "date": F.to_date(F.col("ingest_ts")),  # the session's time zone is UTC (jobs.run.session)
    }
    return df.select(*[made.get(name, F.col(name)).alias(name) for name in RAW_TABLES[family].names])


def arrow_to_raw(batch: pa.RecordBatch, family: str, batch_id: int) -> pa.RecordBatch:
    """Source records as a pyarrow batch -> a batch of the bronze table's schema."""
    schema = RAW_TABLES[family].to_arrow()
    made = {
        kind_column(family): batch.column("kind"),
        "batch_id": pa.nulls(batch.num_rows, pa.int64()).fill_null(batch_id),
        # the UTC date, as the session's zone
        "date": pc.cast(pc.cast(batch.column("ingest_ts"), pa.timestamp("us")), pa.date32()),
    }
    columns = [made[f.name] if f.name in made else batch.column(f.name) for f in schema]
    return pa.RecordBatch.from_arrays([c.cast(f.type) for c, f in zip(columns, schema, strict=True)], schema=schema)
