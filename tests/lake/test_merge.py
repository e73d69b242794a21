"""DeltaMerger into a (cluster, date)-partitioned table reads only the partitions its rows may match, and still
updates a key whose date moved across midnight instead of inserting it twice."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable

from lake.merge import DeltaMerger, _partitions_near
from schemas.tables import CONTROL_REQUEST_LATENCY

DAY = dt.date(2026, 12, 1)


def row(key: str, day: dt.date, e2e: float, cluster: str = "c1") -> dict[str, Any]:
    sent = dt.datetime.combine(day, dt.time(23, 59, 30), dt.UTC)
    return {"cluster": cluster, "broker_id": 1, "request": "LeaderAndIsr", "sent_ts": sent, "end_to_end_ms": e2e,
            "status": "completed", "request_key": key, "date": day}


def table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, CONTROL_REQUEST_LATENCY.to_arrow())


def test_a_merge_reads_the_partitions_near_its_rows_and_updates_what_it_matches(tmp_path: Path) -> None:
    path = str(tmp_path / "control_request_latency")
    merger = DeltaMerger(path, CONTROL_REQUEST_LATENCY, "q", ["request_key"])
    for d in range(10):  # ten days, a file each, and another cluster
        day = DAY + dt.timedelta(days=d)
        merger.insert_arrow(table([row(f"k{d}-{i}", day, 10.0) for i in range(50)] + [row(f"o{d}", day, 1.0, "c2")]),
                            d)
    last = DAY + dt.timedelta(days=9)
    # an update of day 9's key, a key first dated day 8 whose send turned out to be on day 9, and a new key
    source = table([row("k9-1", last, 99.0), row("k8-2", last, 88.0), row("new", last, 77.0)])
    assert _partitions_near(source, CONTROL_REQUEST_LATENCY.partition_by) == [
        "t.`cluster` IN ('c1')", "t.`date` >= '2026-12-09'", "t.`date` <= '2026-12-11'"]
    merger.write_arrow(source, 100)
    got = {r["request_key"]: (r["end_to_end_ms"], r["date"]) for r in DeltaTable(path).to_pyarrow_table().to_pylist()}
    assert len(got) == 10 * 51 + 1
    assert got["k9-1"] == (99.0, last)
    assert got["k8-2"] == (88.0, last)  # moved to its new day, not kept twice
    assert got["new"] == (77.0, last)
    assert got["k0-0"] == (10.0, DAY)
    # the partitions read: day 8's and day 9's files of c1 only (of c1's ten and c2's ten)
    history = DeltaTable(path).history(1)[0]
    metrics = history["operationMetrics"]
    assert (metrics["num_target_files_scanned"], metrics["num_target_files_skipped_during_scan"]) == (2, 18)
    assert metrics["num_target_files_removed"] == 2


def test_tables_not_partitioned_by_cluster_and_date_merge_on_their_keys_alone() -> None:
    rows = pa.table({"cluster": ["c"], "date": [DAY]})
    assert _partitions_near(rows, ()) == []
    assert _partitions_near(rows.set_column(0, "cluster", pa.array([None], pa.string())), ("cluster", "date")) == []
    assert _partitions_near(pa.table({"cluster": ["o'brien"], "date": [DAY]}), ("cluster", "date"))[0] == \
        "t.`cluster` IN ('o''brien')"
