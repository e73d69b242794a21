"""The lake on an object store: s3proxy (planewatch.objectstore, a real S3 server on 127.0.0.1) holds every table.

The pipeline (`planewatch pipeline`, the default sink on the executors' path) is killed with -9 while a batch is
committed to raw_logs and still open for quarantine, then restarted: every line of the input is stored once, every
pairing and the alert are there as a clean run on a directory gives them (tests/streaming/test_crash_restart.py's
input and numbers), each file committed where it was written (`staged/`), no batch left open; the API and
`planewatch sql` read the tables on the store."""

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
from lake import LakeError
from lake.sink import PENDING_DIR, STAGED_DIR
from lake.storage import check_lake, list_files
from planewatch.objectstore import ObjectStore
from tests.lake_helpers import lake_rows, pipeline_settings
from tests.streaming.test_crash_restart import _run_and_kill, _write_input

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.integration, pytest.mark.timeout(600)]

# Six batches of the input: the kill still lands between two tables' commits of one, the restart has fewer to do.
BATCH_BYTES = 9000
STAGED_TABLES = ("raw_logs", "state_change_events", "quarantine")
# How long the killed run holds each quarantine commit: the test's polls (S3 listings, ~0.1 s) see the window.
QUARANTINE_HOLD_S = 5
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


def _commits(lake: str, table: str) -> int:
    return sum(1 for uri, _ in list_files(f"{lake}/{table}/_delta_log") if uri.endswith(".json"))


def _open_batches(lake: str, table: str) -> int:
    return sum(1 for _ in list_files(f"{lake}/{table}/{PENDING_DIR}"))


@pytest.fixture(scope="module")
def restarted(spark, store: ObjectStore, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The lake of a run killed mid-commit and restarted (the restart in this process's session)."""
    tmp = tmp_path_factory.mktemp("s3-crash")
    inp = tmp / "input"
    _write_input(inp)
    lake, ck = store.uri("crash"), tmp / "ck"
    cfg = tmp / "pipeline.yaml"
    cfg.write_text(f"sources:\n  files:\n    path: {inp}\n    max_bytes_per_batch: {BATCH_BYTES}\n"
                   "quality:\n  enabled: false\nsink:\n  driver_batch_max_rows: 0\n")

    def in_between() -> bool:  # raw_logs committed a batch whose quarantine files are staged, not committed
        return _commits(lake, "raw_logs") > _commits(lake, "quarantine") and _open_batches(lake, "quarantine") > 0

    # the tables of a batch commit at once: quarantine's commit is held (lake.failpoints) so that the kill lands
    # after raw_logs committed the batch and before quarantine did, every run
    assert _run_and_kill(cfg, lake, ck, in_between, failpoints=f"commit:quarantine={QUARANTINE_HOLD_S}") is None  # type: ignore[arg-type]
    assert _open_batches(lake, "quarantine") > 0  # killed with a batch open
    settings = pipeline_settings(tmp, files=inp, max_bytes_per_batch=BATCH_BYTES, quality={"enabled": False},
                                 sink={"driver_batch_max_rows": 0}, lake=lake, checkpoints=str(ck))
    assert run_pipeline(spark, settings, families=("logs",)) == 0
    return lake


def test_kill_9_mid_commit_then_a_restart_stores_every_line_once(restarted: str) -> None:
    raw = lake_rows(restarted, "raw_logs")
    assert len(raw) == 372
    assert len({(r["broker_id"], r["line"]) for r in raw}) == 372  # each line once
    latency = lake_rows(restarted, "control_request_latency")
    assert len(latency) == 120
    assert len({(r["broker_id"], r["correlation_id"]) for r in latency}) == 120
    assert len(lake_rows(restarted, "quarantine")) == 12  # "not a kafka line" every tenth request
    assert [(a["type"], a["cluster"], a["broker_id"]) for a in lake_rows(restarted, "alerts")] == [
        ("DELAYED_LEADER_AND_ISR", "prod", 2)]
    for table in STAGED_TABLES:
        files = DeltaTable(f"{restarted}/{table}").file_uris()
        assert files, table
        assert all(f"/{table}/{STAGED_DIR}/" in f for f in files), table  # committed where they were written
        assert _open_batches(restarted, table) == 0  # the killed batch's marker went with its orphans


def test_the_api_and_planewatch_sql_read_the_tables_on_the_object_store(restarted: str) -> None:
    app = create_app()
    app.dependency_overrides[get_settings] = lambda: Settings(lake=restarted, background_reload=False)
    with TestClient(app) as client:
        got = client.get("/alerts")
        assert got.status_code == 200, got.text
        assert [a["type"] for a in got.json()["data"]] == ["DELAYED_LEADER_AND_ISR"]
    done = subprocess.run([str(PLANEWATCH), "sql", "--lake", restarted, "--format", "json",
                           "SELECT count(*) AS n FROM control_request_latency"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["n"] == 120  # one JSON object a row


def test_a_lake_whose_bucket_is_missing_or_whose_keys_are_refused_is_said_before_any_table(
        store: ObjectStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(LakeError, match=r"bucket 'no-such-bucket' does not exist"):
        check_lake("s3://no-such-bucket/lake")
    done = subprocess.run([str(PLANEWATCH), "pipeline", "--once", "--input", str(tmp_path), "--lake",
                           "s3://no-such-bucket/lake", "--checkpoints", str(tmp_path / "ck")],
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 1
    assert "bucket 'no-such-bucket' does not exist" in done.stderr
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(LakeError, match=r"cannot reach the lake .* AWS_SECRET_ACCESS_KEY"):
        check_lake(store.uri("lake"))
