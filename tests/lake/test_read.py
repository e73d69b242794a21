"""lake.read: plain types at any depth, the contract's types and columns, a filtered read of one file that
compares contract types whatever the file holds, and a time range given to a table's scan (the readers over whole
lakes: tests/test_view_typed_lake.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from lake.read import LatestTable, contract_types, plain_type, read_file, time_range, to_contract, to_plain

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


TIMED = pa.schema([("id", pa.string()), ("ts", pa.timestamp("us", "UTC"))])


def test_a_time_filter_keeps_its_spans_rows_over_plain_and_view_typed_files(tmp_path: Path) -> None:
    t0 = dt.datetime(2026, 11, 28, 8, tzinfo=dt.UTC)
    rows = pa.table({"id": [f"r{i}" for i in range(8)], "ts": [t0 + dt.timedelta(minutes=i) for i in range(8)]},
                    schema=TIMED)
    path = str(tmp_path / "t")
    write_deltalake(path, rows.slice(0, 4), mode="append")
    write_deltalake(path, rows.slice(4), mode="append")
    # a MERGE rewrites a file in view types (deltalake 1.6): the scan's time filter must still compare
    (DeltaTable(path).merge(rows.slice(4, 1), "t.id = s.id", source_alias="s", target_alias="t")
     .when_matched_update_all().execute())
    spans = [(t0 + dt.timedelta(minutes=1), t0 + dt.timedelta(minutes=2)),
             (t0 + dt.timedelta(minutes=5), t0 + dt.timedelta(minutes=9))]
    got = LatestTable(path, TIMED).read(time_filter=time_range("ts", spans), where=pc.field("id") != "r7")
    assert sorted(got["id"].to_pylist()) == ["r1", "r2", "r5", "r6"]
    assert got.schema.equals(TIMED)
    assert time_range("ts", []) is None
