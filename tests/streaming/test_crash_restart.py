"""kill -9 of `planewatch pipeline` in the middle of micro-batches, restart: the tables equal one clean run's, the
pairing's (control_request_latency, pairing_state) and the alerts included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from jobs.run.runner import run_pipeline
from lake.failpoints import FAILPOINTS_ENV
from tests.lake_helpers import lake_rows, pipeline_settings
from tests.polling import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.slow, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
TABLES = ("raw_logs", "state_change_events", "request_events", "quarantine", "control_request_latency",
          "pairing_state")
# Columns that hold the wall clock of a write, not what was written.
WALL_CLOCK = ("ingest_ts", "date", "updated_at")
# What an alert row says that no wall clock changes.
ALERT_COLUMNS = ("alert_id", "type", "cluster", "broker_id", "status", "severity", "value", "started_at")
# Budget per micro-batch: the input below makes four batches.
BATCH_BYTES = 4500
# A crash run that never reaches the moment to kill (a very slow machine) is stopped here.
RUN_TIMEOUT_S = 300


def _write_input(root: Path) -> None:
    """120 LeaderAndIsr requests from controller 1 to broker 2, each in 20 ms but the last (8 s: an alert), and a
    line no parser knows every tenth request."""
    controller, broker = root / "prod" / "broker-1", root / "prod" / "broker-2"
    controller.mkdir(parents=True)
    broker.mkdir(parents=True)
    sends, lines = [], []
    for i in range(120):
        stamp = f"2021-03-02 08:{i // 60:02d}:{i % 60:02d}"
        took = 8000 if i == 119 else 20
        sends.append(f"[{stamp},005] INFO [Controller id=1 epoch=3] Sending LeaderAndIsr request to broker 2 with 3 "
                     "become-leader and 0 become-follower partitions (state.change.logger)")
        lines.append(f"[{stamp},010] INFO [Broker id=2] Handling LeaderAndIsr request correlationId {i} from "
                     "controller 1 for 3 partitions (state.change.logger)")
        lines.append(f"[{stamp},{10 + took % 1000:03d}] INFO [Broker id=2] Finished LeaderAndIsr request in "
                     f"{took}ms correlationId {i} from controller 1 for 3 partitions (state.change.logger)"
                     if took < 1000 else
                     f"[2021-03-02 08:{(i + 8) // 60:02d}:{(i + 8) % 60:02d},010] INFO [Broker id=2] Finished "
                     f"LeaderAndIsr request in {took}ms correlationId {i} from controller 1 for 3 partitions "
                     "(state.change.logger)")
        if i % 10 == 0:
            lines.append(f"not a kafka line {i}")
    (controller / "state-change.log").write_text("\n".join(sends) + "\n")
    (broker / "state-change.log").write_text("\n".join(lines) + "\n")


def _config(tmp: Path, inp: Path) -> Path:
    cfg = tmp / "pipeline.yaml"
    cfg.write_text(
        f"sources:\n  files:\n    path: {inp}\n    max_bytes_per_batch: {BATCH_BYTES}\n"
        "quality:\n  enabled: false\n"  # GE's import alone costs seconds per process; tested elsewhere
        "sink:\n  driver_batch_max_rows: 0\n"  # the executor path (pending files); the driver path: test_ingest_driver
    )
    return cfg


def _snapshot(lake: Path) -> dict[str, list[tuple]]:
    out = {}
    for t in TABLES:
        rows = lake_rows(lake, t) if (lake / t).is_dir() else []
        keep = [{k: v for k, v in r.items() if k not in WALL_CLOCK} for r in rows]
        out[t] = sorted(tuple(sorted((k, str(v)) for k, v in r.items())) for r in keep)
    alerts = lake_rows(lake, "alerts") if (lake / "alerts").is_dir() else []
    out["alerts"] = sorted(tuple(str(a[c]) for c in ALERT_COLUMNS) for a in alerts)
    return out


def _pending(lake: Path, table: str) -> bool:
    d = lake / table / "_pending"
    return d.is_dir() and any(d.iterdir())


def _commits(lake: Path, table: str) -> int:
    log = lake / table / "_delta_log"
    return len(list(log.glob("*.json"))) if log.is_dir() else 0


def _run_and_kill(cfg: Path, lake: Path, ck: Path, kill_when_table: str | Callable[[], bool] | None,
                  failpoints: str | None = None) -> int | None:
    """Run `planewatch pipeline --once`; kill -9 it once `kill_when_table` has pending files (or, a callable, says
    so); None when killed, else the exit code. `failpoints`: the run's PLANEWATCH_FAILPOINTS (lake.failpoints)."""
    kill_now = (lambda: _pending(lake, kill_when_table)) if isinstance(kill_when_table, str) else kill_when_table
    cmd = [sys.executable, "-m", "planewatch.cli", "pipeline", "--once", "--config", str(cfg)]
    cmd += ["--lake", str(lake), "--checkpoints", str(ck)]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    if failpoints:
        env[FAILPOINTS_ENV] = failpoints
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip

    def ended_or_due() -> str | None:
        if proc.poll() is not None:
            return "ended"
        return "kill" if kill_now is not None and kill_now() else None

    try:
        if wait_until(ended_or_due, RUN_TIMEOUT_S, "the pipeline run to finish", interval=0.02) == "kill":
            os.killpg(proc.pid, signal.SIGKILL)  # the Python driver and its Spark JVM, mid-batch
            proc.wait(30)
            return None
        return proc.returncode
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def test_kill_9_mid_batch_then_restart_equals_clean_run(spark, tmp_path: Path) -> None:
    inp = tmp_path / "input"
    _write_input(inp)
    cfg = _config(tmp_path, inp)
    # The clean run, in this process.
    clean_lake = tmp_path / "clean" / "lake"
    settings = pipeline_settings(tmp_path / "clean", files=inp, max_bytes_per_batch=BATCH_BYTES,
                                 quality={"enabled": False}, sink={"driver_batch_max_rows": 0})
    assert run_pipeline(spark, settings, families=("logs",)) == 0
    clean = _snapshot(clean_lake)
    assert len(clean["raw_logs"]) == 372
    assert len(clean["control_request_latency"]) == 120
    assert [a[1:3] for a in clean["alerts"]] == [("DELAYED_LEADER_AND_ISR", "prod")]

    # The crashing run: killed once raw_logs has committed a batch whose quarantine rows are not committed yet (the
    # hardest place: part of the batch is in the tables, its quarantine files pending); then the restart runs to
    # the end. (The orphan-file cleanup of a kill before any commit: tests/jobs/test_delta_sink.)
    lake, ck = tmp_path / "lake", tmp_path / "ck"

    def in_between() -> bool:
        return _commits(lake, "raw_logs") > _commits(lake, "quarantine") and _pending(lake, "quarantine")

    assert _run_and_kill(cfg, lake, ck, in_between) is None
    killed = _snapshot(lake)
    assert 0 < len(killed["raw_logs"]) < len(clean["raw_logs"])
    # the restart, in this process's session (the killed run's checkpoints and lake; a new JVM adds only its start)
    restart = pipeline_settings(tmp_path, files=inp, max_bytes_per_batch=BATCH_BYTES, quality={"enabled": False},
                                sink={"driver_batch_max_rows": 0})
    assert (restart.lake, restart.checkpoints) == (str(lake), str(ck))
    assert run_pipeline(spark, restart, families=("logs",)) == 0
    assert _snapshot(lake) == clean
    for t in TABLES:  # no pending files of a killed batch are left behind
        assert not _pending(lake, t)
