"""The lake on an object store: s3proxy (planewatch.objectstore, a real S3 server on 127.0.0.1) holds every table.

The pipeline's default sink writes the batches' files where they stay (`staged/`) and commits them with delta-rs's
conditional puts; a run on the object store gives the tables a run on a local directory gives; kill -9 of the
pipeline while a batch is committed part-way, then a restart, gives them again (nothing lost or doubled); the API
and `planewatch sql` read the tables there; no batch is left open."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from deltalake import DeltaTable
from fastapi.testclient import TestClient

from api.main import create_app
from api.settings import Settings, get_settings
from jobs.run.runner import run_pipeline
from lake.read import read_table, table_schema
from lake.sink import PENDING_DIR, STAGED_DIR
from lake.storage import list_files
from planewatch.objectstore import ObjectStore
from tests.lake_helpers import pipeline_settings
from tests.streaming.test_crash_restart import BATCH_BYTES, _run_and_kill, _write_input

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.integration, pytest.mark.timeout(600)]

TABLES = ("raw_logs", "state_change_events", "quarantine", "control_request_latency", "alerts")
# Columns stamped by the run (read time, batch numbering), not by the input.
RUN_COLUMNS = {"ingest_ts", "batch_id", "run_ts", "duration_ms", "updated_at"}
# An alert's columns the input decides (its evidence and sightings hold wall-clock times: how late it was found).
ALERT_COLUMNS = ("type", "cluster", "broker_id", "listener", "severity", "started_at")
PLANEWATCH = Path(sys.executable).with_name("planewatch")


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStore]:
    """The object store, its environment in this process (and so in the pipelines it starts) for the module."""
    with ObjectStore(tmp_path_factory.mktemp("s3")) as s:
        saved = {k: os.environ.get(k) for k in s.env()}
        os.environ.update(s.env())
        try:
            yield s
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
                spark.sparkContext.environment.pop(k, None)  # the session's later jobs: the local lake again


def _snapshot(lake: str) -> dict[str, list[tuple]]:
    out = {}
    for t in TABLES:
        dt = DeltaTable(f"{lake}/{t}")
        rows = read_table(dt, table_schema(dt)).to_pylist()
        if t == "alerts":
            rows = [{k: r[k] for k in ALERT_COLUMNS} for r in rows]
        out[t] = sorted(tuple(sorted((k, str(v)) for k, v in r.items() if k not in RUN_COLUMNS)) for r in rows)
    return out


def _commits(lake: str, table: str) -> int:
    return sum(1 for uri, _ in list_files(f"{lake}/{table}/_delta_log") if uri.endswith(".json"))


def _open_batches(lake: str, table: str) -> int:
    return sum(1 for _ in list_files(f"{lake}/{table}/{PENDING_DIR}"))


@pytest.fixture(scope="module")
def clean(spark, store: ObjectStore, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list]]:
    """The input, and the tables one run on the object store wrote from it (the executors' path)."""
    tmp = tmp_path_factory.mktemp("s3-clean")
    inp = tmp / "input"
    _write_input(inp)
    lake = store.uri("clean")
    settings = pipeline_settings(tmp, files=inp, max_bytes_per_batch=BATCH_BYTES, quality={"enabled": False},
                                 sink={"driver_batch_max_rows": 0}, lake=lake)
    assert run_pipeline(spark, settings, families=("logs",)) == 0
    return inp, _snapshot(lake)


def test_a_run_on_the_object_store_writes_every_row_once_in_place(store: ObjectStore, clean) -> None:
    _inp, snap = clean
    assert len(snap["raw_logs"]) == 372
    assert len(snap["control_request_latency"]) == 120
    assert [dict(a)["type"] for a in snap["alerts"]] == ["DELAYED_LEADER_AND_ISR"]
    lake = store.uri("clean")
    for table in ("raw_logs", "state_change_events", "quarantine"):
        files = DeltaTable(f"{lake}/{table}").file_uris()
        assert files and all(f"/{table}/{STAGED_DIR}/" in f for f in files), table  # committed where written
        assert _open_batches(lake, table) == 0
    # the bucket's files are the objects: nothing of the lake was written to a local directory
    assert not (Path.cwd() / "s3:").exists()


def test_kill_9_mid_commit_then_restart_equals_the_clean_run(store: ObjectStore, clean, tmp_path: Path) -> None:
    inp, snap = clean
    lake = store.uri("crash")
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(f"sources:\n  files:\n    path: {inp}\n    max_bytes_per_batch: {BATCH_BYTES}\n"
                   "quality:\n  enabled: false\nsink:\n  driver_batch_max_rows: 0\n")

    def in_between() -> bool:  # raw_logs committed a batch whose quarantine files are staged, not committed
        return _commits(lake, "raw_logs") > _commits(lake, "quarantine") and _open_batches(lake, "quarantine") > 0

    assert _run_and_kill(cfg, lake, tmp_path / "ck", in_between) is None  # type: ignore[arg-type]
    assert _open_batches(lake, "quarantine") > 0  # killed with a batch open
    assert _run_and_kill(cfg, lake, tmp_path / "ck", None) == 0  # type: ignore[arg-type]
    assert _snapshot(lake) == snap
    assert all(_open_batches(lake, t) == 0 for t in ("raw_logs", "state_change_events", "quarantine"))


def test_the_api_and_planewatch_sql_read_the_tables_on_the_object_store(store: ObjectStore, clean) -> None:
    lake = store.uri("clean")
    app = create_app()
    app.dependency_overrides[get_settings] = lambda: Settings(lake=lake, background_reload=False)
    with TestClient(app) as client:
        got = client.get("/alerts")
        assert got.status_code == 200, got.text
        assert [a["type"] for a in got.json()["data"]] == ["DELAYED_LEADER_AND_ISR"]
    done = subprocess.run([str(PLANEWATCH), "sql", "--lake", lake, "--format", "json",
                           "SELECT count(*) AS n FROM control_request_latency"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["n"] == 120
