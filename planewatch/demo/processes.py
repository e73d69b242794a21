"""The demo's child processes: the API, the streaming pipeline and one scenario at a time.

Each child runs in its own session (process group), so that Ctrl-C in the terminal reaches the demo alone and the
demo stops the children in order: the scenario first (its cluster is stopped by the scenario itself on SIGINT),
then the pipeline (its queries stop cleanly on SIGINT), then the API. A child that does not stop in time is
killed with its whole process group (a scenario's brokers are in its group).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from broker.lifecycle import child_env

__all__ = ["Child", "StartFailed", "free_port", "planewatch_cmd", "query_settled", "wait_http_ok", "wait_lake_ready",
           "wait_pipeline_settled", "wait_queries_started"]

# Graceful stop budget per child kind before SIGKILL of its process group.
STOP_TIMEOUT_S = {"scenario": 45.0, "pipeline": 60.0, "api": 10.0, "shipper": 10.0}
# Poll interval when waiting for an HTTP endpoint.
HTTP_POLL_S = 0.25


class StartFailed(RuntimeError):
    """A child died or did not answer while the demo waited for it to come up."""


def planewatch_cmd(*args: str) -> list[str]:
    """The command line of a `planewatch` subcommand with this interpreter (works without the console script)."""
    return [sys.executable, "-m", "planewatch.cli", *args]


def free_port(preferred: int) -> int:
    """``preferred`` when it is free on 127.0.0.1 (0: none preferred), else a free port the kernel picks."""
    for port in ((preferred, 0) if preferred else (0,)):
        with socket.socket() as s:
            # as the API's server binds: a port whose last connections linger in TIME_WAIT is free to it
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise OSError("no free port on 127.0.0.1")


class Child:
    """A child process in its own session, its output going to a log file (or a pipe for stdout)."""

    def __init__(self, kind: str, cmd: list[str], log: Path, env: dict[str, str], *, pipe_stdout: bool = False,
                 cwd: Path | None = None) -> None:
        self.kind = kind
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log: IO[bytes] = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE if pipe_stdout else self._log, stderr=self._log, env=child_env(env),
            cwd=cwd, start_new_session=True, text=False,
        )

    @property
    def stdout(self) -> IO[bytes]:
        assert self.proc.stdout is not None
        return self.proc.stdout

    def alive(self) -> bool:
        return self.proc.poll() is None

    def interrupt(self) -> None:
        """Ask the child to stop (SIGINT to the child only: it stops what it started)."""
        if self.alive():
            self.proc.send_signal(signal.SIGINT)

    def stop(self, timeout_s: float | None = None) -> int | None:
        """Interrupt, wait up to the kind's budget, then SIGKILL the process group; the exit code."""
        self.interrupt()
        try:
            self.proc.wait(STOP_TIMEOUT_S[self.kind] if timeout_s is None else timeout_s)
        except subprocess.TimeoutExpired:
            pass
        try:  # the group may hold grandchildren (brokers, Spark's JVM) even after the child ended
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._log.close()
        return self.proc.returncode


def wait_lake_ready(url: str, timeout_s: float, child: Child) -> bool:
    """Poll the API's GET /health until every table it serves exists (the pipeline's queries have created them,
    which they do as they start); False when the time runs out first. StartFailed when the pipeline dies."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not child.alive():
            raise StartFailed(f"{child.kind} exited with code {child.proc.returncode} before the lake was ready")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as r:
                tables = json.loads(r.read())["tables"]
                if tables and all(t["available"] for t in tables):
                    return True
        except (urllib.error.URLError, OSError, ValueError, KeyError):
            pass
        time.sleep(HTTP_POLL_S)
    return False


def wait_queries_started(checkpoints: Path, queries: Sequence[str], timeout_s: float, child: Child,
                         committed: Sequence[str] = ()) -> bool:
    """Poll until every one of `queries` has started (Spark writes its checkpoint's `metadata` file then) and each of
    `committed` has committed its first batch (its first, cold batch is behind it); False when the time runs out
    first. StartFailed when the pipeline dies."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not child.alive():
            raise StartFailed(f"{child.kind} exited with code {child.proc.returncode} before its queries started")
        if (all((checkpoints / q / "metadata").is_file() for q in queries)
                and all((checkpoints / q / "commits" / "0").is_file() for q in committed)):
            return True
        time.sleep(HTTP_POLL_S)
    return False


def _last_batch(log: Path) -> tuple[int, float] | None:
    """The newest batch of a query's offsets or commits log (Spark names each entry by its batch id) and the time
    it was written; None when there is none."""
    ids = [int(p.name) for p in log.iterdir() if p.name.isdigit()] if log.is_dir() else []
    if not ids:
        return None
    newest = max(ids)
    return newest, (log / str(newest)).stat().st_mtime


def _written_at(log: Path, batch: int) -> float | None:
    path = log / str(batch)
    return path.stat().st_mtime if path.is_file() else None


def query_settled(checkpoint: Path, since: float, quiet_s: float, now: float) -> bool:
    """Whether a query has read what was there at `since` (wall-clock seconds) and acted on it: no batch in flight
    (its newest offsets entry is committed) and either that batch was planned after `since` (it read everything
    written before), or nothing has been committed for `quiet_s` (its input stopped growing: a file source with no
    new file plans no batch). Spark lists a batch's input after committing the batch before and then writes its
    offsets entry, so a batch counts as planned after `since` when the commit before it was written at or after
    `since` (its first batch: its offsets entry). A query that never planned a batch has nothing in flight."""
    planned = _last_batch(checkpoint / "offsets")
    if planned is None:
        return True
    done = _last_batch(checkpoint / "commits")
    if done is None or done[0] < planned[0]:
        return False
    listed = planned[1] if planned[0] == 0 else _written_at(checkpoint / "commits", planned[0] - 1)
    return (listed is not None and listed >= since) or now - done[1] >= quiet_s


def wait_pipeline_settled(checkpoints: Path, queries: Sequence[str], since: float, quiet_s: float,
                          timeout_s: float, child: Child) -> bool:
    """Poll until every one of `queries` has settled (:func:`query_settled`) since `since`; False when the time runs
    out first or the pipeline exits (its last batches are then all there will be)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and child.alive():
        if all(query_settled(checkpoints / q, since, quiet_s, time.time()) for q in queries):
            return True
        time.sleep(HTTP_POLL_S)
    return False


def wait_http_ok(url: str, timeout_s: float, child: Child | None = None) -> None:
    """Poll ``url`` until it answers 200; StartFailed when the child dies or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if child is not None and not child.alive():
            raise StartFailed(f"{child.kind} exited with code {child.proc.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(HTTP_POLL_S)
    raise StartFailed(f"{url} did not answer within {timeout_s:.0f} s")
