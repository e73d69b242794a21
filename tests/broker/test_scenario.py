"""`planewatch scenario broker-bounce` end to end: the JSON-lines timeline says what happened, in order."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.integration, pytest.mark.slow]


def test_broker_bounce_scenario_timeline(tmp_path: Path) -> None:
    cli = str(Path(sys.executable).parent / "planewatch")
    proc = subprocess.Popen([cli, "scenario", "broker-bounce", "--dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=200)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, out.decode()[-3000:]
    events = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    names = [e["event"] for e in events]
    order = ["scenario-started", "cluster-started", "load-started", "broker-killed", "broker-restarted",
             "stale-request-sent", "isr-restored", "load-stopped", "verified", "cluster-stopped", "scenario-finished"]
    assert [n for n in names if n in order] == order
    by = {e["event"]: e for e in events}
    assert by["broker-restarted"]["broker_epoch"] > by["broker-killed"]["broker_epoch"]
    assert by["stale-request-sent"]["error_code"] == 77  # STALE_BROKER_EPOCH
    assert by["verified"]["lost"] == 0
    assert by["verified"]["acked"] > 0
    assert [e["ts_ms"] for e in events] == sorted(e["ts_ms"] for e in events)
    saved = (tmp_path / "scenario-broker-bounce.jsonl").read_text().splitlines()
    assert [json.loads(line)["event"] for line in saved] == names
    server_log = (tmp_path / "cluster" / "broker-2" / "logs" / "server.log").read_text()
    stale = by["broker-killed"]["broker_epoch"]
    assert f"with broker epoch {stale} smaller than the current broker epoch" in server_log
