"""How planewatch's processes stop: the signals that mean "stop", and children that do not outlive their parent.

Every planewatch process that starts children (``planewatch demo``, ``cluster``, ``scenario``, ``pipeline``, the
reference cluster's launcher) stops them the same way whether it is sent SIGINT (Ctrl-C), SIGTERM (``kill``,
``timeout``, a service manager, CI) or SIGHUP (the terminal closed): :data:`STOP_SIGNALS`.

A parent killed outright (SIGKILL, the OOM killer) runs no handler, so its children look after themselves:

* a Python child started with :func:`child_env` runs :func:`watch_parent` at start; it sends itself SIGTERM (and so
  stops what *it* started, gracefully) within :data:`PARENT_POLL_S` of its parent's death;
* a JVM child (Apache Kafka, ZooKeeper) is started with :func:`die_with_parent` as ``preexec_fn``: the kernel sends
  it SIGKILL when the parent dies (``PR_SET_PDEATHSIG``).

Only processes a planewatch parent started watch their parent: ``nohup planewatch broker &`` keeps running after
the shell that started it exits, as an operator expects.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

__all__ = [
    "BROKER_STARTED",
    "PARENT_ENV",
    "PARENT_POLL_S",
    "STOP_SIGNALS",
    "child_env",
    "deferred_stop_signals",
    "die_with_parent",
    "watch_parent",
]

# SIGINT: Ctrl-C; SIGTERM: kill, timeout, systemd, CI; SIGHUP: the controlling terminal went away.
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# What a reference broker process prints once it is up (broker.cluster.node.main; its launcher waits for it).
BROKER_STARTED = "broker {} started"
# The environment variable through which a parent names itself to the children that must not outlive it.
PARENT_ENV = "PLANEWATCH_PARENT_PID"
# How often an orphan-watching child checks its parent: an orphan stops within this (plus its own stop time).
PARENT_POLL_S = 0.5
# prctl(2) option: the signal the kernel sends this process when its parent (thread) dies.
_PR_SET_PDEATHSIG = 1


def child_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment) naming this process as the parent the child must watch."""
    return {**(os.environ if env is None else env), PARENT_ENV: str(os.getpid())}


def die_with_parent() -> None:
    """``preexec_fn`` for a child that cannot watch its parent itself (a JVM): SIGKILL when the parent dies.

    Linux only (``prctl``); elsewhere a no-op. The kernel tracks the *thread* that forked the child, so start such
    children from a thread that lives as long as they should (the main thread).
    """
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def watch_parent() -> threading.Thread | None:
    """When a planewatch parent started this process (:data:`PARENT_ENV` set), a daemon thread that sends this
    process SIGTERM once that parent is gone; None otherwise.

    The variable is removed from this process's environment so that its own children (Spark's JVM, brokers) do not
    inherit a parent that is not theirs; they get this process's pid through :func:`child_env` instead.
    """
    raw = os.environ.pop(PARENT_ENV, None)
    if raw is None or not raw.isdigit():
        return None
    parent = int(raw)

    def _watch() -> None:
        # Reparenting (to init or a subreaper) is how Linux tells a child its parent died.
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=_watch, name="parent-watch", daemon=True)
    thread.start()
    return thread


@contextmanager
def deferred_stop_signals() -> Iterator[None]:
    """Hold stop signals that arrive inside the block and deliver them when it ends (main thread only).

    For steps a stop must not cut in two, such as starting Spark's JVM: a KeyboardInterrupt while pyspark waits for
    the gateway leaves a JVM that nothing will stop. The block runs to its end, then the first held signal is sent
    again to this process, with the handlers that were in place before the block.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {sig: signal.signal(sig, lambda s, f: held.append(s)) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if held:
            os.kill(os.getpid(), held[0])
