"""Reads of the lake in the contract's Arrow types (schemas.tables), whatever types a writer chose for a file.

Why: deltalake 1.6's MERGE (and its UPDATE and DELETE: every operation that rewrites files through DataFusion)
writes string columns as `string_view` (1.5.1 wrote `string`) and has no option to write anything else, while its
append, `optimize` and overwrite write `string`; other writers choose `large_string`. Over months a table holds
files of each kind. pyarrow's kernels take no view type in a comparison, `is_in`, a sort or a join key, and a
filtered dataset scan compares in each file's own type: one view-typed file fails the whole read (`Function
'equal' has no kernel matching input types (string, string_view)`), even when it is the table's only file.
DataFusion (delta-rs's QueryBuilder, `planewatch sql`) answers strings as `string_view` too.

So the readers of jobs/ and api/ read through here, and get plain types before any filter:

* `open_table`, `is_table`: a handle on a table (every module outside lake/ opens one here);
* `LatestTable`: a Delta table read at its latest version through one handle brought up to date per read.
* `read_table`: the rows of a Delta table's snapshot (or of some of its files), cast, then filtered. Filtering
  after the cast measured as fast as a filtered scan (100,000 alerts in 40 files: 62 ms against 65 ms): pyarrow
  evaluates a dataset filter on decoded batches either way. What a filtered scan does save is the row groups its
  statistics exclude, so a time range (`time_range`, on a timestamp column: the same type in every file, whoever
  wrote it) is given to the scan as well: a compacted partition of a day is one file, and a reader of the last
  minutes of it reads the row groups of those minutes (metric_samples, 400,000 rows of a day's first hours compacted
  in 65,536-row groups: its last six minutes, 28,800 rows, in 21 ms against 76 ms for the whole file).
  `LatestTable.read_spans` gives a (cluster, date)-partitioned table's readers both prunings at once.
* `read_file` and `file_batches`: one data file named by the Delta log; `committed_rows`: some committed files of a
  table, partition columns restored from their Hive-style directories.
* `to_contract`, `contract_types`, `to_plain`: tables from elsewhere (a SQL answer has no contract: plain types).

Plain types: `string` for `string_view`/`large_string`, `binary` for `binary_view`/`large_binary`, `list` for the
large and view lists, at any depth (map keys and values, struct fields, list items).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from lake import LakeError

if TYPE_CHECKING:
    from schemas.tables import Table

__all__ = [
    "HIVE_NULL",
    "FilePruning",
    "LatestTable",
    "TableNotFoundError",
    "committed_rows",
    "contract_types",
    "file_batches",
    "is_table",
    "open_table",
    "parse_partition_dir",
    "plain_schema",
    "plain_type",
    "query_builder",
    "read_file",
    "read_table",
    "table_schema",
    "time_range",
    "to_contract",
    "to_plain",
    "with_partition_columns",
]

# delta-rs tuple filters in disjunctive normal form, on partition values and on the files' column statistics,
# e.g. [[("cluster", "=", "c1"), ("date", "=", "2026-11-23")]]: which files a read opens.
FilePruning = list[list[tuple[str, str, Any]]]


# A Hive-style partition directory's name for a null value (`date=__HIVE_DEFAULT_PARTITION__`).
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

def is_table(path: str) -> bool:
    """Whether `path` holds a Delta table (a log with at least one commit)."""
    return bool(DeltaTable.is_deltatable(path))


def open_table(path: str, version: int | None = None) -> DeltaTable:
    """A handle on the Delta table at `path`, at its latest version or `version`.

    Raises:
        TableNotFoundError: no table there (no directory, or no commit in its log yet).
    """
    return DeltaTable(path, version=version)


def query_builder() -> Any:
    """A delta-rs DataFusion query builder (register handles from `open_table`, then execute SQL)."""
    from deltalake import QueryBuilder  # DataFusion's bindings: only the readers that run SQL load them

    return QueryBuilder()


def plain_type(typ: pa.DataType) -> pa.DataType:
    """`typ` with every view and large variable-size type in it, nested ones too, in its plain form."""
    if pa.types.is_string_view(typ) or pa.types.is_large_string(typ):
        return pa.string()
    if pa.types.is_binary_view(typ) or pa.types.is_large_binary(typ):
        return pa.binary()
    if pa.types.is_map(typ):
        return pa.map_(_plain_field(typ.key_field), _plain_field(typ.item_field), typ.keys_sorted)
    if pa.types.is_fixed_size_list(typ):
        return pa.list_(_plain_field(typ.value_field), typ.list_size)
    if (pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_list_view(typ)
            or pa.types.is_large_list_view(typ)):
        return pa.list_(_plain_field(typ.value_field))
    if pa.types.is_struct(typ):
        return pa.struct([_plain_field(typ.field(i)) for i in range(typ.num_fields)])
    return typ


def _plain_field(field: pa.Field) -> pa.Field:
    return field.with_type(plain_type(field.type))


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """`schema` with every field in its plain type (names, nullability and metadata kept)."""
    return pa.schema([_plain_field(f) for f in schema], metadata=schema.metadata)


def _cast(t: pa.Table, schema: pa.Schema) -> pa.Table:
    return t if t.schema.equals(schema) else t.cast(schema)


def to_plain(t: pa.Table) -> pa.Table:
    """`t` with every column in its plain type: for results no contract describes (a SQL answer)."""
    return _cast(t, plain_schema(t.schema))


def contract_types(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """`t`'s columns, in its order: those of the contract `schema` in the contract's types, the others in their
    plain types."""
    fields = [f.with_type(schema.field(f.name).type if f.name in schema.names else plain_type(f.type))
              for f in t.schema]
    return _cast(t, pa.schema(fields, metadata=t.schema.metadata))


def to_contract(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """`t` in the contract's types (`contract_types`) with every column of `schema`: one `t` lacks (a table older
    than the contract) is appended, all nulls."""
    for f in schema:
        if f.name not in t.column_names:
            t = t.append_column(pa.field(f.name, f.type, True), pa.nulls(t.num_rows, f.type))
    return contract_types(t, schema)


def table_schema(dt: DeltaTable) -> pa.Schema:
    """The Arrow schema of a Delta table's metadata, in plain types."""
    return plain_schema(pa.schema(dt.schema().to_arrow()))


def time_range(column: str, spans: Sequence[tuple[dt.datetime, dt.datetime]]) -> pc.Expression | None:
    """The rows whose timestamp `column` lies in one of `spans` (closed, tz-aware bounds); None: no span. For a
    scan's `time_filter`: a timestamp has the same type in every file, so the scan can compare in it."""
    expr: pc.Expression | None = None
    for lo, hi in spans:
        one = ((pc.field(column) >= pa.scalar(lo, pa.timestamp("us", "UTC")))
               & (pc.field(column) <= pa.scalar(hi, pa.timestamp("us", "UTC"))))
        expr = one if expr is None else expr | one
    return expr


def read_table(dt_: DeltaTable, schema: pa.Schema, files: FilePruning | None = None,
               where: pc.Expression | None = None, time_filter: pc.Expression | None = None) -> pa.Table:
    """The rows `where` keeps (None: all) of the files of `dt_`'s snapshot that `files` selects (None: all), as
    `to_contract` with `schema` gives them; `where` is applied after the cast, so whatever a file holds it
    compares contract types. `time_filter` (`time_range`) is applied by the scan itself, so row groups whose
    statistics lie outside it are not decoded."""
    scanned = dt_.to_pyarrow_dataset(file_pruning_predicate=files).to_table(filter=time_filter)
    table = to_contract(scanned, schema)
    return table if where is None else table.filter(where)


def _is_plain(schema: pa.Schema) -> bool:
    return bool(schema.equals(plain_schema(schema)))


def read_file(path: str, schema: pa.Schema, columns: Sequence[str] | None = None,
              where: pc.Expression | None = None) -> pa.Table:
    """The rows `where` keeps of one Parquet data file, its `columns` (None: all), in the contract's types
    (`contract_types`: the file's columns only; a Delta table's partition columns are the caller's).

    A file in plain types is filtered as it is read (its row groups' statistics skip what they can); one holding
    view or large types is read whole, cast, and then filtered (a filter would compare in the file's types)."""
    if where is None or _is_plain(pq.read_schema(path)):
        return contract_types(pq.read_table(path, columns=columns, filters=where), schema)
    table = contract_types(pq.read_table(path), schema).filter(where)
    return table if columns is None else table.select(list(columns))


def file_batches(path: str, schema: pa.Schema, batch_rows: int) -> Iterator[pa.Table]:
    """One Parquet data file, `batch_rows` rows at a time (bounded memory for a big file), each in the contract's
    types (`contract_types`)."""
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
        yield contract_types(pa.Table.from_batches([batch]), schema)


def parse_partition_dir(rel_dir: str, partition_by: Sequence[str]) -> dict[str, str | None]:
    """The partition values a Hive-style relative directory spells (`partition_by` order, HIVE_NULL as None);
    LakeError when it is not that table's layout."""
    values: dict[str, str | None] = {}
    parts = [p for p in rel_dir.split("/") if p]
    if len(parts) != len(partition_by):
        raise LakeError(f"unexpected partition directory {rel_dir!r} for {list(partition_by)}")
    for part, name in zip(parts, partition_by, strict=True):
        key, _, raw = part.partition("=")
        if key != name:
            raise LakeError(f"partition directory {part!r}: expected column {name}")
        value = unquote(raw)
        values[name] = None if value == HIVE_NULL else value
    return values


def with_partition_columns(part: pa.Table, path: str, partition_by: Sequence[str], schema: pa.Schema) -> pa.Table:
    """`part` (rows of the data file at `path`) with the partition columns of `schema` among `partition_by`
    appended, their values from the file's Hive-style directories."""
    values = parse_partition_dir("/".join(path.split("/")[-1 - len(partition_by):-1]), partition_by)
    for name in partition_by:
        if name in schema.names:
            part = part.append_column(name, pa.array([values[name]] * part.num_rows, pa.string())
                                      .cast(schema.field(name).type))
    return part


def committed_rows(paths: Sequence[str], table: Table, columns: list[str] | None = None,
                   where: pc.Expression | None = None, limit: int | None = None) -> pa.Table:
    """The rows of committed files of `table` that `where` keeps (the first `limit`, when given), in the table's
    types, with `columns` (None: all); the partition columns come from each file's Hive-style directories (`where`
    reads data columns only)."""
    names = table.names if columns is None else columns
    schema = table.to_arrow(names)
    data = [n for n in names if n not in table.partition_by]
    parts: list[pa.Table] = []
    rows = 0
    for path in paths:
        part = read_file(path, schema, data, where)
        if limit is not None:
            part = part.slice(0, limit - rows)
        part = with_partition_columns(part, path, table.partition_by, schema)
        parts.append(part.select(names).cast(schema))
        rows += part.num_rows
        if limit is not None and rows >= limit:
            break
    return pa.concat_tables(parts) if parts else schema.empty_table()


class LatestTable:
    """A Delta table read on the driver without Spark, at its latest version, through one handle that each read
    brings up to date with the new log entries only (opening the table anew reads its checkpoint, whose size grows
    with the table's files: per micro-batch that is the cost that grows). Reads give the contract `schema`'s types
    (lake.read), whichever types a writer chose for a file."""

    def __init__(self, path: str, schema: pa.Schema) -> None:
        self.path = path
        self.schema = schema
        self._table: DeltaTable | None = None

    def exists(self) -> bool:
        return self._table is not None or DeltaTable.is_deltatable(self.path)

    def read(self, files: FilePruning | None = None, where: pc.Expression | None = None,
             time_filter: pc.Expression | None = None) -> pa.Table:
        """The rows `where` and `time_filter` keep (None: all) of the files `files` selects (delta-rs tuple filters
        in disjunctive normal form, on partition values and on the files' column statistics; None: every file);
        `time_filter` is applied by the scan (`read_table`).

        Raises:
            FileNotFoundError: `path` is not a Delta table.
        """
        if self._table is None:
            if not DeltaTable.is_deltatable(self.path):
                raise FileNotFoundError(f"not a Delta table: {self.path}")
            self._table = DeltaTable(self.path)
        else:
            self._table.update_incremental()
        return read_table(self._table, self.schema, files, where, time_filter)

    def read_spans(self, spans: Sequence[tuple[str, dt.datetime, dt.datetime]], column: str = "ts",
                   where: pc.Expression | None = None) -> pa.Table:
        """The rows of a (cluster, date)-partitioned table whose timestamp `column` lies in a span of its cluster
        (`(cluster, lo, hi)`, closed; a superset across clusters whose spans overlap) and that `where` keeps: the
        files of those clusters and days whose statistics reach into a span, and of them the row groups that do
        (`time_range`)."""
        files: FilePruning = []
        for cluster, lo, hi in spans:
            days = [(lo.date() + dt.timedelta(days=i)).isoformat() for i in range((hi.date() - lo.date()).days + 1)]
            files.append([("cluster", "=", cluster), ("date", "in", days), (column, ">=", lo), (column, "<=", hi)])
        return self.read(files, where, time_range(column, [(lo, hi) for _, lo, hi in spans]))
