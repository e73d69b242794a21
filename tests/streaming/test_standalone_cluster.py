"""The same ingest job on a Spark standalone cluster (master + worker on 127.0.0.1, executors in their own JVMs)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.run.local_cluster import start_cluster, stop_cluster
from tests.lake_helpers import lake_table

pytestmark = [pytest.mark.slow, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "ingest"
SUBMIT_TIMEOUT_S = 600


def test_spark_submit_on_a_standalone_cluster(tmp_path: Path) -> None:
    inp = tmp_path / "input"
    shutil.copytree(FIXTURE / "demo-cluster" / "broker-2", inp / "demo-cluster" / "broker-2")
    cfg = tmp_path / "pipeline.yaml"
    # driver_batch_max_rows 0: the executors write every Parquet file, however small the batch (what this proves)
    cfg.write_text("quality:\n  enabled: false\nsink:\n  driver_batch_max_rows: 0\n"
                   "spark:\n  conf:\n    spark.executor.memory: 1g\n")
    cluster = start_cluster(str(tmp_path / "cluster"), cores=1, memory="1500m")
    try:
        env = {
            **os.environ,
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1",
        }
        submit = [str(Path(sys.executable).parent / "spark-submit"), "--master", cluster.master_url]
        submit += ["--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1"]
        submit += [str(REPO / "jobs" / "ingest_logs.py"), "--config", str(cfg), "--once", "--input", str(inp)]
        submit += ["--lake", str(tmp_path / "lake"), "--checkpoints", str(tmp_path / "ck")]
        proc = subprocess.run(submit, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=SUBMIT_TIMEOUT_S)
        assert proc.returncode == 0, proc.stderr[-3000:]
        # The executors ran in the worker's JVMs (the worker's work dir has the app's executor logs).
        assert any((tmp_path / "cluster" / "work").glob("app-*/*/stderr"))
    finally:
        stop_cluster(str(tmp_path / "cluster"))
    raw = lake_table(tmp_path / "lake", "raw_logs")
    lines = sum(1 for f in inp.rglob("*.log") for line in f.read_text().splitlines() if line.strip())
    assert raw.num_rows == lines
    sc = lake_table(tmp_path / "lake", "state_change_events")
    assert 17 in sc.column("correlation_id").to_pylist()
