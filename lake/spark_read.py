"""Reading Delta tables from Spark: a snapshot (`read_delta`) or some of a table's files (`read_files`).

`read_delta(spark, path)` reads exactly the snapshot's active files, listed by delta-rs (never a directory listing,
which would include removed files), when that is the whole table: reader protocol 1, as both sinks write. A table
whose readers need more (column mapping, deletion vectors: reader protocol 2 and up) is read natively with delta-spark
(`format("delta")`, the session must have loaded it: jobs.run.jars). The file list is the default because it is the
faster: one partition of a 200k-row table counted in 0.32 s against 0.79 s natively (benchmarks.sinks_and_sources);
`native=True` asks for delta-spark regardless. `read_files` is how a batch's committed files reach the executors
(the delta-spark committer, a replay's bronze rows, the pairing of a batch the executors processed). Files on an
object store are read by the executors' Python workers with pyarrow (a task per few files), which reads the
environment's object store as the sink wrote it; the session needs no Hadoop file system for it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from deltalake import DeltaTable
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from lake import LakeError
from lake.log import strip_file_scheme
from lake.read import read_file, table_schema, with_partition_columns
from lake.storage import is_remote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["read_delta", "read_files"]

# The highest reader protocol whose snapshot is just its active Parquet files (2 adds column mapping, 3 reader
# features such as deletion vectors): up to it delta-rs's file list reads a table exactly.
FILE_LIST_READER_VERSION = 1
# The SQL extension a session that reads Delta natively has loaded (jobs.run.jars puts it in the session's conf).
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"


def _spark_schema(arrow_schema: Any) -> StructType:
    schema: StructType = from_arrow_schema(arrow_schema)
    return schema


def read_delta(spark: SparkSession, path: str, version: int | None = None,
               partitions_in: list[list[tuple[str, str, Any]]] | None = None, native: bool | None = None
               ) -> DataFrame:
    """The table's snapshot (latest or `version`) as a Spark DataFrame, columns in table order.

    `partitions_in`: only the files of these partitions (delta-rs tuple filters in disjunctive normal form, e.g.
    ``[[("cluster", "=", "c1"), ("date", "=", "2026-11-23")]]``, `=` only): Spark neither lists nor plans the other
    files (natively: a partition filter Delta prunes by). `native`: read with delta-spark (True), through delta-rs's
    file list (False), or natively only when the table's reader protocol needs it (None).

    Raises:
        LakeError: `path` is not a Delta table, or needs delta-spark and the session lacks it.
    """
    if not DeltaTable.is_deltatable(path):
        raise LakeError(f"not a Delta table: {path}")
    dt = DeltaTable(path, version=version)
    if native is None:
        native = dt.protocol().min_reader_version > FILE_LIST_READER_VERSION
        if native and DELTA_EXTENSION not in (spark.conf.get("spark.sql.extensions", "") or ""):
            raise LakeError(f"{path} needs a Delta reader of protocol {dt.protocol().min_reader_version} "
                                  "(column mapping or deletion vectors): a session with delta-spark (jobs.run.jars)")
    if native:
        return _read_native(spark, path, version, partitions_in)
    schema = _spark_schema(table_schema(dt))
    files = dt.file_uris(file_pruning_predicate=partitions_in) if partitions_in is not None else dt.file_uris()
    return read_files(spark, dt.table_uri, schema, dt.metadata().partition_columns, files)


def _read_native(spark: SparkSession, path: str, version: int | None,
                 partitions_in: list[list[tuple[str, str, Any]]] | None) -> DataFrame:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    df = reader.load(path)
    if partitions_in is None:
        return df
    types = {f.name: f.dataType for f in df.schema.fields}
    conjunctions = []
    for conj in partitions_in:
        terms = []
        for col, op, value in conj:
            if op != "=":
                raise LakeError(f"read_delta: partition filter {col} {op} {value!r}: only '=' is supported")
            terms.append(F.col(col) == F.lit(value).cast(types[col]))
        conjunctions.append(reduce(lambda a, b: a & b, terms, F.lit(True)))
    return df.where(reduce(lambda a, b: a | b, conjunctions, F.lit(False)))


def read_files(spark: SparkSession, table_path: str, schema: StructType, partition_by: Sequence[str],
               files: Sequence[str]) -> DataFrame:
    """Some of a table's files (absolute paths or file URIs under `table_path`) as a DataFrame of `schema`, the
    partition columns taken from the Hive-style directories, as a table read gives them (empty: no files)."""
    if not files:
        return spark.createDataFrame([], schema)
    if any(is_remote(f) for f in files):
        return _read_remote(spark, schema, partition_by, list(files))
    reader = spark.read.schema(schema)
    if partition_by:
        reader = reader.option("basePath", strip_file_scheme(table_path))
    return reader.parquet(*files).select(*[f.name for f in schema.fields])


def _read_remote(spark: SparkSession, schema: StructType, partition_by: Sequence[str], files: list[str]
                 ) -> DataFrame:
    """:func:`read_files` of files on an object store: each task reads its share with pyarrow, the partition
    columns from the files' Hive-style directories."""
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    names = [f.name for f in schema.fields]
    data = [n for n in names if n not in partition_by]
    tasks = max(1, min(len(files), spark.sparkContext.defaultParallelism))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for i in batch.column("id").to_pylist():
                uri = files[i]
                part = read_file(uri, pa.schema([arrow_schema.field(n) for n in data]), data)
                part = with_partition_columns(part, uri, partition_by, arrow_schema)
                yield from part.select(names).cast(arrow_schema).to_batches()

    return spark.range(0, len(files), 1, tasks).mapInArrow(run, schema)
