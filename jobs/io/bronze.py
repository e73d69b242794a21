"""Source records (jobs.io.sources.RAW_RECORD_DDL) -> the bronze table's rows (`raw_logs` / `raw_metrics`).

Every source yields the same record columns; bronze renames `kind` to the family's column (`log_kind`,
`metric_format`), drops `truncated` (the record's `line_bytes` beyond its kept text says it), and stamps the
micro-batch id and the UTC date of `ingest_ts` (the partition column). :func:`to_raw` does it to a Spark frame (the
stream's rows), :func:`arrow_to_raw` to record batches read without Spark (the file source's pieces read where the
engine runs); both give the bronze table's schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.parsing.engine import RAW_TABLES

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["arrow_to_raw", "kind_column", "to_raw"]


def kind_column(family: str) -> str:
    """The bronze column that holds a record's `kind`."""
    return "log_kind" if family == "logs" else "metric_format"


def to_raw(df: DataFrame, family: str, batch_id: int) -> DataFrame:
    """Source records as a Spark frame -> the bronze table's columns."""
    from pyspark.sql import functions as F

    return df.select(
        "cluster",
        "broker_id",
        F.col("kind").alias(kind_column(family)),
        "line",
        "line_bytes",
        "source",
        "source_offset",
        "ingest_ts",
        F.lit(batch_id).cast("long").alias("batch_id"),
        F.to_date(F.col("ingest_ts")).alias("date"),  # the session's time zone is UTC (jobs.io.session)
    )


def arrow_to_raw(batch: pa.RecordBatch, family: str, batch_id: int) -> pa.RecordBatch:
    """Source records as a pyarrow batch -> a batch of the bronze table's schema."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = RAW_TABLES[family].to_arrow()
    n = batch.num_rows
    ts = batch.column("ingest_ts")
    columns = {
        **{name: batch.column(name) for name in ("cluster", "broker_id", "line", "line_bytes", "source",
                                                 "source_offset", "ingest_ts")},
        kind_column(family): batch.column("kind"),
        "batch_id": pa.nulls(n, pa.int64()).fill_null(batch_id),
        "date": pc.cast(pc.cast(ts, pa.timestamp("us")), pa.date32()),  # the UTC date, as the session's zone
    }
    return pa.RecordBatch.from_arrays([columns[f.name].cast(f.type) for f in schema], schema=schema)
