"""lake.writer: one writer per Delta table per process, whatever query or app id commits through it."""

from __future__ import annotations

import datetime as dt
import shutil
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lake.merge import DeltaMerger
from lake.sink import DeltaSink
from lake.state import StateTable
from lake.tables import table_location
from lake.writer import TableWriter
from schemas.tables import ALERTS, PAIRING_STATE, QUARANTINE
from tests.lake_helpers import stage_and_commit

# Two queries (the log and the metric family) committing to one table from two threads, this many batches each: a
# few, so the test is quick, and enough that unserialised commits would race.
BATCHES_PER_QUERY = 8
JOIN_TIMEOUT_S = 120.0

T0 = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def _quarantine(n: int, start: int) -> pa.Table:
    rows = [dict.fromkeys(QUARANTINE.names) for _ in range(n)]
    for i, row in enumerate(rows):
        row.update({"cluster": "c1", "stage": "parse", "reason": "no pattern", "record": f"line {start + i}",
                    "source": "f", "source_offset": start + i, "ingest_ts": T0, "date": T0.date()})
    return pa.Table.from_pylist(rows, schema=QUARANTINE.to_arrow())


def test_every_sink_merger_and_state_of_a_table_share_its_one_writer(tmp_path: Path) -> None:
    path = str(tmp_path / "quarantine")
    logs, metrics = DeltaSink(path, QUARANTINE, "logs:quarantine"), DeltaSink(path, QUARANTINE, "metrics:quarantine")
    assert logs.writer is metrics.writer is TableWriter.of(table_location(path))
    alerts = str(tmp_path / "alerts")
    mergers = [DeltaMerger(alerts, ALERTS, app, ["alert_id"]) for app in ("a", "b")]
    assert mergers[0].writer is mergers[1].writer
    state = str(tmp_path / "pairing_state")
    assert StateTable(state, PAIRING_STATE, "a").writer is StateTable(state, PAIRING_STATE, "b").writer
    assert logs.writer is not TableWriter.of(table_location(alerts))


@pytest.mark.spark
def test_two_queries_commit_to_one_table_without_racing_each_other(spark, tmp_path: Path) -> None:
    """The log and the metric query append to quarantine at once: every batch of each lands once, one commit each,
    and none of them lost a race to the other (the process's writer serialises them)."""
    path = str(tmp_path / "quarantine")
    sinks = [DeltaSink(path, QUARANTINE, f"{family}:quarantine") for family in ("logs", "metrics")]
    errors: list[BaseException] = []

    def run(sink: DeltaSink, offset: int) -> None:
        try:
            for batch in range(BATCHES_PER_QUERY):
                result = stage_and_commit(sink, _quarantine(5, offset + batch * 5), batch)
                assert not result.skipped
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s, i * 1000)) for i, s in enumerate(sinks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_TIMEOUT_S)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    table = DeltaTable(path)
    assert table.to_pyarrow_dataset().count_rows() == 2 * BATCHES_PER_QUERY * 5
    assert [table.transaction_version(s.app_id) for s in sinks] == [BATCHES_PER_QUERY - 1] * 2
    writer = sinks[0].writer
    assert (writer.commits, writer.retries) == (2 * BATCHES_PER_QUERY, 0)
    # a replay of either query's batch commits nothing
    assert stage_and_commit(sinks[1], _quarantine(5, 0), 3).skipped


@pytest.mark.spark
def test_a_table_removed_and_created_again_is_written_by_a_new_sink(spark, tmp_path: Path) -> None:
    """The writer outlives a table (it is the process's, by location); a sink's handle is its own: a new query's
    sink over a table created again reads that table, not what the old sink's handle knew."""
    path = str(tmp_path / "quarantine")
    sink = DeltaSink(path, QUARANTINE, "logs:quarantine")
    assert not stage_and_commit(sink, _quarantine(3, 0), 0).skipped
    shutil.rmtree(path)
    again = DeltaSink(path, QUARANTINE, "logs:quarantine")
    assert again.writer is sink.writer
    # batch 0 of the same app: a new table has no transaction of it, so it is written, not taken for a replay
    assert not stage_and_commit(again, _quarantine(3, 10), 0).skipped
    assert DeltaTable(path).to_pyarrow_dataset().count_rows() == 3
