"""Every reader of the lake over tables written the way deltalake 1.6 writes them (issue 24): its MERGE, UPDATE and
DELETE write string columns as string_view next to the plain files of appends, `optimize` and overwrites, and
another writer may add large_string files. Each history below ends with the same rows as one plain append, so
each reader must answer over it exactly what it answers over the plain table (lake.read)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from api.store import LakeStore
from jobs.detect.alerts import AlertWriter
from jobs.detect.pairing import LogPairing
from jobs.detect.rules import MetricRules
from jobs.run.settings import Settings
from pipelines.detection.config import DetectionConfig
from pipelines.detection.latency_detectors import state_change_spans
from planewatch.commands import sql
from schemas.alerts import DetectQuery
from schemas.tables import ALERTS, METRIC_SAMPLES, STATE_CHANGE_EVENTS, Table
from tests.api.lake import T0, alert, samples
from tests.lake_helpers import pipeline_settings

CFG = DetectionConfig()
ROWS = 6  # rows of each table; the histories' steps take slices of them

Rows = list[dict[str, Any]]
Step = Callable[[str, Table, str, Rows], None]


def _arrow(table: Table, rows: Rows) -> pa.Table:
    return pa.Table.from_pylist([{c: r.get(c) for c in table.names} for r in rows], schema=table.to_arrow())


def _large(t: pa.Table) -> pa.Table:
    """Another writer's choice: every string column as large_string."""
    return t.cast(pa.schema([f.with_type(pa.large_string()) if pa.types.is_string(f.type) else f for f in t.schema]))


def _literal(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value)


def _matching(key: str, rows: Rows) -> str:
    return " OR ".join(f"{key} = {_literal(r[key])}" for r in rows)


def append(path: str, table: Table, key: str, rows: Rows) -> None:
    write_deltalake(path, _arrow(table, rows), mode="append", partition_by=list(table.partition_by) or None)


def append_large(path: str, table: Table, key: str, rows: Rows) -> None:
    write_deltalake(path, _large(_arrow(table, rows)), mode="append", partition_by=list(table.partition_by) or None)


def merge(path: str, table: Table, key: str, rows: Rows) -> None:
    """The pipeline's upsert (lake.merge.DeltaMerger): deltalake's MERGE, update all or insert all."""
    (DeltaTable(path).merge(_arrow(table, rows), f"t.{key} = s.{key}", source_alias="s", target_alias="t")
     .when_matched_update_all().when_not_matched_insert_all().execute())


def delete(path: str, table: Table, key: str, rows: Rows) -> None:
    DeltaTable(path).delete(_matching(key, rows))


def update(path: str, table: Table, key: str, rows: Rows) -> None:
    """An UPDATE that changes no value (the file is rewritten all the same)."""
    DeltaTable(path).update(updates={key: key}, predicate=_matching(key, rows))


def compact(path: str, table: Table, key: str, rows: Rows) -> None:
    DeltaTable(path).optimize.compact()


def restore(path: str, table: Table, key: str, rows: Rows) -> None:
    """A restore by hand: the table overwritten with its own rows."""
    write_deltalake(path, DeltaTable(path).to_pyarrow_table(), mode="overwrite",
                    partition_by=list(table.partition_by) or None)


# name -> steps (operation, first row, end row); each ends with rows [0, ROWS) as they were written.
HISTORIES: dict[str, list[tuple[Step, int, int]]] = {
    "plain appends": [(append, 0, 3), (append, 3, ROWS)],
    "a merge rewrites the only file": [(append, 0, ROWS), (merge, 0, 1)],
    "a merge inserts next to plain files": [(append, 0, 4), (merge, 4, ROWS)],
    "compacted after merges": [(append, 0, 3), (merge, 3, 5), (merge, 5, ROWS), (compact, 0, 0)],
    "compacted, merged, restored, merged": [(append, 0, 2), (append, 2, 5), (compact, 0, 0), (merge, 5, ROWS),
                                            (restore, 0, 0), (merge, 0, 1)],
    "deleted, updated, merged back": [(append, 0, ROWS), (delete, 1, 2), (update, 2, 3), (merge, 1, 2)],
    "another writer's large types": [(append, 0, 5), (append_large, 5, ROWS), (merge, 0, 1)],
}
# The string types of the live files each history leaves in `alerts` with deltalake 1.6.6 (the premise).
LIVE_STRING_TYPES = {
    "plain appends": {"string"},
    "a merge rewrites the only file": {"string_view"},
    "a merge inserts next to plain files": {"string", "string_view"},
    "compacted after merges": {"string"},
    "compacted, merged, restored, merged": {"string_view"},
    "deleted, updated, merged back": {"string_view"},
    "another writer's large types": {"large_string", "string_view"},
}


def build(lake: Path, table: Table, key: str, rows: Rows, history: str) -> str:
    path = str(lake / table.name)
    for step, start, end in HISTORIES[history]:
        step(path, table, key, rows[start:end])
    return path


def alert_rows() -> Rows:
    """Open alerts (even) and resolved ones (odd), of a type the latency query owns."""
    return [alert(i, status="open" if i % 2 == 0 else "resolved") for i in range(ROWS)]


def sample_rows() -> Rows:
    """Samples over two UTC days, one source offset each."""
    rows = samples(1, "RequestQueueSize", T0.replace(hour=23, minute=59, second=57), ROWS, labels=[("k", "v")])
    return [{**r, "source_offset": i, "date": r["ts"].date()} for i, r in enumerate(rows)]


def state_change_rows() -> Rows:
    """Controller lines of two clusters, one source offset each."""
    return [{"cluster": f"c{i % 2}", "broker_id": 0, "ts": T0 + dt.timedelta(seconds=i), "level": "INFO",
             "role": "controller", "event": "leader_and_isr_sent", "request": "LeaderAndIsr", "correlation_id": i,
             "source": "f", "source_offset": i, "date": T0.date()} for i in range(ROWS)]


def live_string_types(path: str) -> set[str]:
    return {str(f.type) for uri in DeltaTable(path).file_uris()
            for f in pq.read_schema(uri.removeprefix("file://")) if f.name == "status"}


@pytest.fixture(params=list(HISTORIES))
def history(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return pipeline_settings(tmp_path, once=False)


@pytest.fixture
def plain(tmp_path: Path) -> Settings:
    """The same rows, appended once in the contract's types: what every reader must answer."""
    return pipeline_settings(tmp_path / "plain", once=False)


def test_the_histories_leave_the_files_deltalake_writes(tmp_path: Path, history: str) -> None:
    path = build(tmp_path, ALERTS, "alert_id", alert_rows(), history)
    assert live_string_types(path) == LIVE_STRING_TYPES[history]


def _open_alerts(settings: Settings) -> list[dict[str, Any]]:
    writer = AlertWriter(settings, DetectQuery.LOG, "test-alerts", CFG)
    return sorted(writer.open_alerts(), key=lambda a: a["alert_id"])


def test_open_alerts(settings: Settings, plain: Settings, history: str) -> None:
    build(Path(settings.lake), ALERTS, "alert_id", alert_rows(), history)
    build(Path(plain.lake), ALERTS, "alert_id", alert_rows(), "plain appends")
    assert _open_alerts(settings) == _open_alerts(plain)


def test_a_pipeline_resumes_over_the_lake(settings: Settings, history: str) -> None:
    """The next batch resolves the open alerts (a MERGE over the lake), and the one after reads them again."""
    build(Path(settings.lake), ALERTS, "alert_id", alert_rows(), history)
    writer = AlertWriter(settings, DetectQuery.LOG, "test-alerts", CFG)
    assert writer.write([], T0 + dt.timedelta(days=1), 0) == len(range(0, ROWS, 2))
    assert writer.open_alerts() == []


def _history_rows(settings: Settings) -> pa.Table:
    new = pa.Table.from_pylist([{"cluster": "c1", "ts": T0.replace(hour=23, minute=59, second=59)}],
                               schema=METRIC_SAMPLES.to_arrow(["cluster", "ts"]))
    return MetricRules(settings, "ingest_metrics", "r1", CFG)._history(new).sort_by("source_offset")


def test_metric_history(settings: Settings, plain: Settings, history: str) -> None:
    build(Path(settings.lake), METRIC_SAMPLES, "source_offset", sample_rows(), history)
    build(Path(plain.lake), METRIC_SAMPLES, "source_offset", sample_rows(), "plain appends")
    assert _history_rows(settings).equals(_history_rows(plain))


def _fetcher_lines(settings: Settings) -> pa.Table:
    batch = pa.table({"cluster": ["c0"], **{c: pa.array([T0], pa.timestamp("us", "UTC"))
                                            for c in ("handling_ts", "finished_ts", "sent_ts")}})
    pairing = LogPairing(settings, "q", "r1", CFG, None)
    return pairing.state_changes.read_spans(state_change_spans(batch, CFG)).sort_by("source_offset")


def test_pairing_state_change_lines(settings: Settings, plain: Settings, history: str) -> None:
    build(Path(settings.lake), STATE_CHANGE_EVENTS, "source_offset", state_change_rows(), history)
    build(Path(plain.lake), STATE_CHANGE_EVENTS, "source_offset", state_change_rows(), "plain appends")
    assert _fetcher_lines(settings).equals(_fetcher_lines(plain))


def _snapshot(lake: str) -> pa.Table:
    store = LakeStore(Path(lake), refresh_interval_s=0, background_reload=False)
    try:
        return store.snapshot(ALERTS.name)
    finally:
        store.close()


def test_api_snapshot(settings: Settings, plain: Settings, history: str) -> None:
    build(Path(settings.lake), ALERTS, "alert_id", alert_rows(), history)
    build(Path(plain.lake), ALERTS, "alert_id", alert_rows(), "plain appends")
    assert _snapshot(settings.lake).equals(_snapshot(plain.lake))


OPEN_ALERTS_SQL = "SELECT alert_id, status FROM alerts WHERE status = 'open' ORDER BY alert_id"


def _query(lake: str) -> pa.Table:
    store = LakeStore(Path(lake), refresh_interval_s=0, background_reload=False)
    try:
        return store.query(OPEN_ALERTS_SQL, [ALERTS.name], cache=False)
    finally:
        store.close()


def test_api_query_answers_in_plain_types(settings: Settings, history: str) -> None:
    """DataFusion answers strings as string_view over any table; the store's answers hold plain strings."""
    build(Path(settings.lake), ALERTS, "alert_id", alert_rows(), history)
    assert _query(settings.lake).schema == pa.schema([("alert_id", pa.string(), False), ("status", pa.string())])


def _sql_lines(lake: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    args = argparse.Namespace(query=OPEN_ALERTS_SQL, file=None, lake=Path(lake), format="json", max_rows=100)
    assert sql.run(args) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_planewatch_sql(settings: Settings, plain: Settings, history: str, capsys: pytest.CaptureFixture[str]
                        ) -> None:
    build(Path(settings.lake), ALERTS, "alert_id", alert_rows(), history)
    build(Path(plain.lake), ALERTS, "alert_id", alert_rows(), "plain appends")
    assert _sql_lines(settings.lake, capsys) == _sql_lines(plain.lake, capsys)


@pytest.mark.spark
def test_spark_reads_the_snapshot(spark: Any, settings: Settings, plain: Settings, history: str) -> None:
    from lake.spark_read import read_delta

    build(Path(settings.lake), ALERTS, "alert_id", alert_rows(), history)
    build(Path(plain.lake), ALERTS, "alert_id", alert_rows(), "plain appends")
    got, want = (sorted(map(tuple, read_delta(spark, s.table_path(ALERTS.name), native=False).collect()))
                 for s in (settings, plain))
    assert got == want
