"""A lake written by an older planewatch keeps working when a table gains columns: the sink adds them (a metadata
commit, nothing rewritten), old rows read them as null, and appends and merges carry on (delta-rs, no Spark)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from lake.merge import DeltaMerger
from lake.tables import add_missing_columns, ensure_table
from schemas.tables import CONTROL_REQUEST_LATENCY, Table

# the columns control_request_latency gained with the request log's time breakdown
ADDED = ("broker_queue_ms", "local_ms", "remote_ms", "response_queue_ms", "response_send_ms", "served_ms",
         "listener", "witnesses")


def _older(table: Table) -> Table:
    return Table(table.name, table.layer, tuple(c for c in table.columns if c.name not in ADDED), table.partition_by)


def _row(table: Table, key: str, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(table.names)
    row.update(cluster="c1", broker_id=1, request="LeaderAndIsr", status="completed", request_key=key,
               date=dt.date(2026, 11, 28), end_to_end_ms=10.0)
    row.update(values)
    return row


def test_an_older_table_gains_the_new_columns_and_keeps_its_rows(tmp_path: Path) -> None:
    path = str(tmp_path / "control_request_latency")
    old = _older(CONTROL_REQUEST_LATENCY)
    write_deltalake(path, pa.Table.from_pylist([_row(old, "a")], old.to_arrow()),
                    partition_by=list(old.partition_by))
    before = DeltaTable(path).version()

    ensure_table(path, CONTROL_REQUEST_LATENCY)

    table = DeltaTable(path)
    assert [f.name for f in table.schema().fields] == CONTROL_REQUEST_LATENCY.names
    assert table.version() == before + 1  # one metadata commit
    assert len(table.file_uris()) == 1  # no file rewritten
    assert add_missing_columns(path, CONTROL_REQUEST_LATENCY) == []  # a second start adds nothing

    merger = DeltaMerger(path, CONTROL_REQUEST_LATENCY, "pairing", ("request_key",))
    merger.insert_arrow(pa.Table.from_pylist([_row(CONTROL_REQUEST_LATENCY, "b", local_ms=9854.0,
                                                   listener="CONTROLLER")], CONTROL_REQUEST_LATENCY.to_arrow()), 0)
    merger.write_arrow(pa.Table.from_pylist([_row(CONTROL_REQUEST_LATENCY, "a", broker_queue_ms=56.0)],
                                            CONTROL_REQUEST_LATENCY.to_arrow()), 1)
    rows = {r["request_key"]: r for r in DeltaTable(path).to_pyarrow_table().to_pylist()}
    assert (rows["a"]["broker_queue_ms"], rows["a"]["local_ms"]) == (56.0, None)  # the old row, merged
    assert (rows["b"]["local_ms"], rows["b"]["listener"]) == (9854.0, "CONTROLLER")
