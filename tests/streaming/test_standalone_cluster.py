"""The same ingest job by spark-submit on a Spark standalone cluster: a master and two workers on 127.0.0.1, each
pinned to its own CPU, the executors in the workers' JVMs, the lake on an object store (s3proxy,
planewatch.objectstore). Every line of the input is in the tables once, and both workers ran the job's tasks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.run.local_cluster import start_cluster, stop_cluster
from planewatch.objectstore import ObjectStore
from tests.lake_helpers import lake_rows

pytestmark = [pytest.mark.slow, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "ingest"
SUBMIT_TIMEOUT_S = 600
WORKERS = 2


def test_spark_submit_on_two_pinned_workers_writes_the_object_store_lake(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    inp = tmp_path / "input"
    for broker in ("broker-1", "broker-2"):
        shutil.copytree(FIXTURE / "demo-cluster" / broker, inp / "demo-cluster" / broker)
    cfg = tmp_path / "pipeline.yaml"
    # driver_batch_max_rows 0: the executors write every Parquet file, however small the batch (what this proves)
    cfg.write_text("quality:\n  enabled: false\nsink:\n  driver_batch_max_rows: 0\n"
                   "spark:\n  conf:\n    spark.executor.memory: 700m\n    spark.executor.cores: 1\n")
    with ObjectStore(tmp_path / "s3") as store:
        lake = store.uri("lake")
        for key, value in store.env().items():  # this process reads the lake too
            monkeypatch.setenv(key, value)
        cluster = start_cluster(str(tmp_path / "cluster"), cores=1, memory="900m", workers=WORKERS, pin=True)
        try:
            assert len(set(cluster.cpus)) == min(WORKERS, len(os.sched_getaffinity(0)))  # a CPU each
            env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
                   "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
            submit = [str(Path(sys.executable).parent / "spark-submit"), "--master", cluster.master_url]
            submit += ["--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1"]
            submit += [str(REPO / "jobs" / "ingest_logs.py"), "--config", str(cfg), "--once", "--input", str(inp)]
            submit += ["--lake", lake, "--checkpoints", str(tmp_path / "ck")]
            proc = subprocess.run(submit, cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=SUBMIT_TIMEOUT_S)
            assert proc.returncode == 0, proc.stderr[-3000:]
        finally:
            stop_cluster(str(tmp_path / "cluster"))
        # each worker launched an executor of the app in its own JVM (its work directory holds the executor's log)
        for w in range(WORKERS):
            assert any((tmp_path / "cluster" / "work" / f"worker-{w}").glob("app-*/*/stderr")), w
        raw = lake_rows(lake, "raw_logs")
        lines = [(f.parent.name, line) for f in inp.rglob("*.log") for line in f.read_text().splitlines()
                 if line.strip()]
        assert len(raw) == len(lines)
        assert len({(r["broker_id"], r["line"]) for r in raw}) == len(set(lines))
        sc = lake_rows(lake, "state_change_events")
        assert 17 in {r["correlation_id"] for r in sc}
