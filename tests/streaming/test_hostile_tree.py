"""`planewatch pipeline --once` over a hostile input tree: it completes, skips and reports every entry that is not a
regular file, reads the last lines written without a newline, and reconciles records and bytes."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from schemas.dq import BYTES_EXPECTATION, SKIPPED_EXPECTATION, SKIPPED_SUITE
from tests.lake_helpers import lake_rows, pipeline_settings
from tests.polling import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.slow, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
# A run that hangs (a FIFO opened for reading) or crawls is stopped here and fails the test.
RUN_TIMEOUT_S = 420
# How often the test looks at the running pipeline.
POLL_S = 0.2
# Files are dated this far back: every tail has been quiet for longer than tail_quiet_s (30 s by default).
AGE_S = 3600
# Unix socket paths are limited to 108 bytes (sun_path).
SUN_PATH_MAX = 107

LAST_LOG_LINE = ("[2021-03-02 08:00:20,000] INFO [Broker id=1] Handling LeaderAndIsr request correlationId 99 from "
                 "controller 1 for 3 partitions (state.change.logger)")
LOG_LINES = [
    "[2021-03-02 08:00:01,010] INFO [Broker id=1] Handling LeaderAndIsr request correlationId 17 from controller 1 "
    "for 3 partitions (state.change.logger)",
    "[2021-03-02 08:00:02,000] INFO [Broker id=1] Finished LeaderAndIsr request in 990ms correlationId 17 from "
    "controller 1 for 3 partitions (state.change.logger)",
]
LAST_SAMPLE = "kafka_network_socketserver_networkprocessoravgidlepercent 0.25 1614672000000"
SCRAPE = (
    "# TYPE kafka_network_requestchannel_requestqueuesize untyped\n"
    "kafka_network_requestchannel_requestqueuesize 3.0 1614672000000\n"
    "# TYPE kafka_network_socketserver_networkprocessoravgidlepercent untyped\n" + LAST_SAMPLE  # no final newline
)


def _tree(root: Path, outside: Path) -> tuple[dict[str, dict[str, str]], dict[str, list[Path]]]:
    """The input tree; returns {raw table: {skipped path: reason prefix}} and {family: regular files read}."""
    b1 = root / "prod" / "broker-1"
    (b1 / "metrics").mkdir(parents=True)
    log = b1 / "state-change.log"
    log.write_text("\n".join([*LOG_LINES, LAST_LOG_LINE]))  # a log whose writer stopped mid-line
    scrape = b1 / "metrics" / "scrape-1614672000000.prom"
    scrape.write_text(SCRAPE)  # a scrape answer written without its final newline
    # an operator's link to a log directory elsewhere
    (outside / "broker-2").mkdir(parents=True)
    linked = outside / "broker-2" / "state-change.log"
    linked.write_text(LOG_LINES[0].replace("Broker id=1", "Broker id=2") + "\n")
    (root / "prod" / "broker-2").symlink_to(outside / "broker-2")
    for f in (log, scrape, linked):
        os.utime(f, (time.time() - AGE_S, time.time() - AGE_S))

    logs: dict[str, str] = {}
    both: dict[str, str] = {}  # names that say nothing: both families' queries skip them
    (b1 / "server.log").symlink_to(b1 / "server.log")
    logs[str(b1 / "server.log")] = "symlink loop"
    (b1 / "controller.log").symlink_to(b1 / "gone.log")
    logs[str(b1 / "controller.log")] = "dangling symlink"
    os.mkfifo(b1 / "kafka-request.log")
    logs[str(b1 / "kafka-request.log")] = "FIFO"
    os.mkfifo(b1 / "pipe")
    both[str(b1 / "pipe")] = "FIFO"
    (b1 / "up").symlink_to(root)
    both[str(b1 / "up")] = "symlink loop"
    unreadable = b1 / "state-change.log.2021-03-02-07"
    unreadable.write_text(LOG_LINES[0] + "\n")
    unreadable.chmod(0)
    logs[str(unreadable)] = "unreadable"
    sock = b1 / "sock"
    if len(str(sock)) <= SUN_PATH_MAX:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.bind(str(sock))  # the socket file stays after the close
        finally:
            s.close()
        both[str(sock)] = "socket"
    try:
        os.mknod(b1 / "server.log.1", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        logs[str(b1 / "server.log.1")] = "character device"
    except PermissionError:
        pass  # no CAP_MKNOD here
    expected = {"raw_logs": {**logs, **both}, "raw_metrics": dict(both)}
    return expected, {"logs": [log, root / "prod" / "broker-2" / "state-change.log"], "metrics": [scrape]}


def _command(cfg: Path, lake: Path, ck: Path) -> list[str]:
    cmd = [sys.executable, "-m", "planewatch.cli", "pipeline", "--once", "--no-detect", "--config", str(cfg),
           "--lake", str(lake), "--checkpoints", str(ck)]
    if os.geteuid() == 0:
        # root reads a mode-000 file: the pipeline runs without the capabilities that let it
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: no file is unreadable")
        cmd = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", *cmd]
    return cmd


def test_hostile_tree_pipeline_completes_reports_and_reconciles(tmp_path: Path) -> None:
    root = tmp_path / "input"
    expected, regular = _tree(root, tmp_path / "outside")
    lake, ck = tmp_path / "lake", tmp_path / "ck"
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(
        f"sources:\n  files:\n    path: {root}\n    tail_quiet_s: 30\n"
        "quality:\n  enabled: false\n"  # GE's import alone costs seconds per process; tested elsewhere
    )
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    out = tmp_path / "pipeline.out"
    with out.open("wb") as fh:
        proc = subprocess.Popen(_command(cfg, lake, ck), cwd=REPO, env=env, start_new_session=True, stdout=fh,
                                stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: proc.poll() is not None, RUN_TIMEOUT_S,
                   lambda: f"the pipeline to finish (still running)\n{out.read_text()[-4000:]}", interval=POLL_S)
        assert proc.poll() == 0, f"pipeline: {proc.poll()} (None: still running)\n{out.read_text()[-4000:]}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)

    dq = lake_rows(lake, "dq_results")
    for table, family in (("raw_logs", "logs"), ("raw_metrics", "metrics")):
        rows = [r for r in dq if r["table_name"] == table]
        # every skipped entry reported once, with its path and reason; the count row says how many
        skipped = [r["expectation"] for r in rows
                   if r["suite"] == SKIPPED_SUITE and r["expectation"] != SKIPPED_EXPECTATION]
        assert [e for e, n in Counter(skipped).items() if n > 1] == []
        reasons = {e.removeprefix("skipped ").split(": ", 1)[0]: e.split(": ", 1)[1] for e in skipped}
        assert set(reasons) == set(expected[table]), table
        for path, prefix in expected[table].items():
            assert reasons[path].startswith(prefix), (path, reasons[path])
        [count] = [r for r in rows if r["expectation"] == SKIPPED_EXPECTATION]
        assert (count["success"], count["unexpected_count"]) == (False, len(expected[table]))
        # records: raw = silver + quarantine + unused in every batch, and the batches cover every line
        raw = lake_rows(lake, table)
        lines = sum(1 for f in regular[family] for line in f.read_text().split("\n") if line.strip())
        assert len(raw) == lines
        records = [r for r in rows if r["suite"] == "reconciliation" and r["expectation"] != BYTES_EXPECTATION]
        assert records
        assert all(r["success"] for r in records)
        assert sum(r["element_count"] for r in records) == len(raw)
        # bytes: after the last batch every byte of every regular file was read
        by_bytes = sorted((r for r in rows if r["expectation"] == BYTES_EXPECTATION), key=lambda r: r["batch_id"])
        assert by_bytes
        assert (by_bytes[-1]["success"], by_bytes[-1]["unexpected_count"]) == (True, 0)
        assert by_bytes[-1]["element_count"] == sum(f.stat().st_size for f in regular[family])

    # the last lines, written without a newline, reached silver
    events = lake_rows(lake, "state_change_events")
    assert any(r["correlation_id"] == 99 and r["broker_id"] == 1 for r in events)
    assert any(r["broker_id"] == 2 for r in events)  # the linked directory's log
    samples = lake_rows(lake, "metric_samples")
    assert [r["value"] for r in samples if r["raw_name"] == LAST_SAMPLE.split()[0]] == [0.25]


def test_a_tree_without_regular_files_still_reports_its_entries(spark, tmp_path: Path) -> None:
    """A batch that reads no record (nothing but a broken link) still writes its dq rows."""
    from jobs.run.runner import run_pipeline

    root = tmp_path / "input" / "broker-1"
    root.mkdir(parents=True)
    (root / "server.log").symlink_to(tmp_path / "rotated-away")
    settings = pipeline_settings(tmp_path, files=tmp_path / "input", quality={"enabled": False})
    assert run_pipeline(spark, settings, families=("logs",), detection=False) == 0
    assert lake_rows(tmp_path / "lake", "raw_logs") == []
    dq = {(r["suite"], r["expectation"]): r for r in lake_rows(tmp_path / "lake", "dq_results")}
    reason = f"dangling symlink (target {tmp_path / 'rotated-away'} does not exist)"
    assert dq[(SKIPPED_SUITE, f"skipped {root / 'server.log'}: {reason}")]["success"] is False
    assert dq[(SKIPPED_SUITE, SKIPPED_EXPECTATION)]["unexpected_count"] == 1
