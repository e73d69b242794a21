"""schemas.lake_read: plain types at any depth, the contract's types and columns, and a filtered read of one file
that compares contract types whatever the file holds (the readers over whole lakes: tests/test_view_typed_lake.py)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from schemas.lake_read import contract_types, plain_type, read_file, to_contract, to_plain

CONTRACT = pa.schema([("id", pa.string()), ("status", pa.string()), ("n", pa.int64())])


@pytest.mark.parametrize(("typ", "plain"), [
    (pa.string_view(), pa.string()),
    (pa.large_string(), pa.string()),
    (pa.binary_view(), pa.binary()),
    (pa.large_binary(), pa.binary()),
    (pa.map_(pa.string_view(), pa.large_string()), pa.map_(pa.string(), pa.string())),
    (pa.large_list(pa.string_view()), pa.list_(pa.string())),
    (pa.list_view(pa.binary_view()), pa.list_(pa.binary())),
    (pa.struct([("a", pa.string_view()), ("b", pa.int32())]), pa.struct([("a", pa.string()), ("b", pa.int32())])),
    (pa.timestamp("us", "UTC"), pa.timestamp("us", "UTC")),
])
def test_plain_type(typ: pa.DataType, plain: pa.DataType) -> None:
    assert plain_type(typ) == plain


def _views(t: pa.Table) -> pa.Table:
    return t.cast(pa.schema([f.with_type(pa.string_view()) if pa.types.is_string(f.type) else f for f in t.schema]))


ROWS = pa.table({"id": ["a", "b", "c"], "status": ["open", "resolved", "open"], "n": [1, 2, 3]}, schema=CONTRACT)


def test_contract_types_cast_view_columns_and_keep_the_others_plain() -> None:
    extra = _views(ROWS).append_column("note", pa.array(["x", "y", "z"], pa.large_string()))
    assert contract_types(extra, CONTRACT).schema == CONTRACT.append(pa.field("note", pa.string()))


def test_to_contract_appends_a_missing_column_as_nulls() -> None:
    assert to_contract(ROWS.drop_columns(["n"]), CONTRACT).column("n").null_count == ROWS.num_rows


def test_to_plain_answers_a_sql_result_in_plain_types() -> None:
    assert to_plain(_views(ROWS)).equals(ROWS)


@pytest.mark.parametrize("stored", [ROWS, _views(ROWS)], ids=["plain", "string_view"])
def test_read_file_filters_in_contract_types(tmp_path: Path, stored: pa.Table) -> None:
    path = str(tmp_path / "part-0.parquet")
    pq.write_table(stored, path)
    got = read_file(path, CONTRACT, ["id"], pc.field("status") == "open")
    assert got.equals(pa.table({"id": ["a", "c"]}))
