"""planewatch's process trees stop whole: SIGTERM and SIGHUP stop them as Ctrl-C does, and after SIGKILL of the
parent its children stop themselves (`broker.lifecycle`).

Each test starts a real command (`planewatch cluster`, `pipeline`, `demo`) in its own session, waits until its
process tree is complete (brokers, Spark's JVM, the demo's API, pipeline and scenario), records that tree, sends the
signal, and polls until every recorded process is gone; anything left is killed by the test and fails it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from broker.lifecycle import PARENT_ENV, child_env, deferred_stop_signals, watch_parent
from planewatch.demo.processes import free_port, planewatch_cmd
from tests.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Until the command's tree is complete: a reference cluster starts in seconds, the pipeline's JVM in 10-30 s, the
# demo's first scenario after Spark's start and the pipeline's first batches (minutes on a loaded 2-core machine).
TREE_TIMEOUT_S = {"cluster": 60.0, "pipeline": 120.0, "demo": 300.0}
# After the signal: the demo stops a scenario, the pipeline and the API in turn (their budgets add up), and a child
# whose parent was killed notices within broker.lifecycle.PARENT_POLL_S before stopping itself.
GONE_TIMEOUT_S = 150.0
POLL_S = 0.2


def _tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return [root]


def _cmdlines(procs: list[psutil.Process]) -> list[str]:
    out = []
    for p in procs:
        try:
            out.append(" ".join(p.cmdline()))
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            continue
    return out


def _await_tree(proc: subprocess.Popen[bytes], complete: Callable[[list[str]], bool], timeout_s: float,
                log: Path) -> list[psutil.Process]:
    """The command's process tree once ``complete`` holds for its command lines."""
    root = psutil.Process(proc.pid)

    def tree() -> list[psutil.Process] | None:
        assert proc.poll() is None, f"exited with {proc.returncode}: {log.read_text(errors='replace')[-3000:]}"
        procs = _tree(root)
        return procs if complete(_cmdlines(procs)) else None

    return wait_until(tree, timeout_s, lambda: f"the complete tree (now {_cmdlines(_tree(root))})", interval=POLL_S)


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _assert_all_stop(tree: list[psutil.Process], timeout_s: float = GONE_TIMEOUT_S) -> None:
    wait_until(lambda: not any(map(_alive, tree)), timeout_s,
               lambda: f"every process to stop (still running: {_cmdlines([p for p in tree if _alive(p)])})",
               interval=POLL_S)


@contextmanager
def _command(args: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A planewatch command in its own session; whatever of its tree is left at the end is killed."""
    env = {k: v for k, v in os.environ.items() if k != PARENT_ENV}
    env.update({"SPARK_LOCAL_IP": "127.0.0.1", "PYTHONUNBUFFERED": "1"})
    with log.open("ab") as out:
        proc = subprocess.Popen(planewatch_cmd(*args), stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    seen = [psutil.Process(proc.pid)]
    try:
        yield proc
    finally:
        seen += _tree(seen[0])
        for p in seen:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        proc.wait(10)


def _port_free(port: int) -> bool:
    """Whether the demo would get ``port`` again (its own check: `free_port`)."""
    return free_port(port) == port


def test_watch_parent_is_off_without_a_planewatch_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PARENT_ENV, raising=False)
    assert watch_parent() is None
    env = child_env({"A": "1"})
    assert env == {"A": "1", PARENT_ENV: str(os.getpid())}


def test_a_stop_signal_inside_a_deferred_block_arrives_after_it() -> None:
    steps: list[str] = []

    def block() -> None:
        with deferred_stop_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGHUP)  # held too: only the first is sent again
            time.sleep(0.05)  # handlers run between bytecodes: give a held signal its chance to (wrongly) raise
            steps.append("block finished")
        steps.append("after the block")  # never: the held SIGTERM raises on the way out

    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            block()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert steps == ["block finished"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL], ids=lambda s: s.name)
def test_cluster_stops_its_controller_and_brokers(tmp_path: Path, sig: signal.Signals) -> None:
    log = tmp_path / "cluster.log"
    with _command(["cluster", "--brokers", "2", "--dir", str(tmp_path / "cluster")], log) as proc:
        tree = _await_tree(proc, lambda cmds: sum("broker.cluster.node" in c for c in cmds) == 2
                           and any("broker.cluster.controller_main" in c for c in cmds),
                           TREE_TIMEOUT_S["cluster"], log)
        os.kill(proc.pid, sig)
        _assert_all_stop(tree)
        if sig != signal.SIGKILL:
            assert proc.wait(10) == 0, log.read_text(errors="replace")[-2000:]
            assert "cluster stopped" in log.read_text(errors="replace")


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGKILL], ids=lambda s: s.name)
def test_pipeline_stops_its_spark_jvm(tmp_path: Path, sig: signal.Signals) -> None:
    log = tmp_path / "pipeline.log"
    (tmp_path / "input").mkdir()
    args = ["pipeline", "--input", str(tmp_path / "input"), "--lake", str(tmp_path / "lake"), "--checkpoints",
            str(tmp_path / "checkpoints"), "--trigger", "2 seconds", "--no-detect"]
    with _command(args, log) as proc:
        tree = _await_tree(proc, lambda cmds: any("java" in c.split(" ", 1)[0] for c in cmds),
                           TREE_TIMEOUT_S["pipeline"], log)
        os.kill(proc.pid, sig)
        _assert_all_stop(tree)
        if sig != signal.SIGKILL:
            assert proc.wait(10) in (0, 130), log.read_text(errors="replace")[-2000:]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_demo_stops_its_api_pipeline_scenario_and_cluster(tmp_path: Path, sig: signal.Signals) -> None:
    log = tmp_path / "demo.log"
    port = free_port(0)
    args = ["demo", "--dir", str(tmp_path / "demo"), "--port", str(port), "--runs", "healthy", "--no-serve"]
    with _command(args, log) as proc:
        tree = _await_tree(proc, lambda cmds: any("broker.cluster.node" in c for c in cmds)
                           and any("java" in c.split(" ", 1)[0] for c in cmds)
                           and any(" api " in f" {c} " for c in cmds),
                           TREE_TIMEOUT_S["demo"], log)
        os.kill(proc.pid, sig)
        _assert_all_stop(tree)
        if sig != signal.SIGKILL:
            assert proc.wait(10) == 130, log.read_text(errors="replace")[-3000:]
            assert "stopped: clusters, pipeline and API are down" in log.read_text(errors="replace")
        assert _port_free(port), f"the API's port {port} is still taken"
