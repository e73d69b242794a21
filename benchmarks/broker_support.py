"""Shared pieces of the network benchmarks: a broker in a child process, raw Kafka clients, percentiles.

The broker runs as ``python -m planewatch.cli broker`` in its own process (its own GIL), listening on 127.0.0.1
ephemeral ports that are read from its stdout; it is always terminated (SIGTERM, then SIGKILL) by the context manager.
Load clients do not decode responses (only the framing) so the measuring process stays light.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from broker.protocol import encode_request

_LISTENER_LINE = re.compile(r"listener (\S+)\s+127\.0\.0\.1:(\d+)")
START_TIMEOUT_S = 60.0


def raise_fd_limit(wanted: int) -> int:
    """Raise RLIMIT_NOFILE towards ``wanted`` (bounded by the hard limit); returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        soft = min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return soft


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


@contextlib.contextmanager
def broker_process(props: dict[str, Any], workdir: Path | None = None) -> Iterator[tuple[dict[str, int], int]]:
    """Run ``planewatch broker`` with ``props``; yields ({listener: port}, pid)."""
    tmp = workdir or Path(tempfile.mkdtemp(prefix="pw-bench-"))
    conf = tmp / "broker.properties"
    base = {"broker.id": 1, "log.dirs": tmp / "data", "metrics.interval.ms": 5000,
            "kafka.request.logger.level": "WARN"}
    base.update(props)
    conf.write_text("".join(f"{k}={v}\n" for k, v in base.items()))
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "planewatch.cli", "broker", "--config", str(conf)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True,
    )  # the child inherits this process's (raised) descriptor limit
    ports: dict[str, int] = {}
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"broker exited with {proc.wait()}")
            m = _LISTENER_LINE.search(line)
            if m:
                ports[m.group(1)] = int(m.group(2))
            if line.startswith("  logs"):
                break
        yield ports, proc.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


class RawClient:
    """One blocking connection; ``call`` sends a pre-encoded request and returns the raw response frame."""

    def __init__(self, port: int, timeout: float = 60.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def call(self, wire: bytes) -> bytes:
        self.sock.sendall(wire)
        return self.read_frame()

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def _exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise ConnectionError("closed by the broker")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()


def update_metadata_wire(partitions: int, topics: int, data_port: int, correlation_id: int = 1) -> bytes:
    """UpdateMetadata v5 from controller 1 (epoch 1) describing ``topics`` x ``partitions`` led by broker 1."""
    per_topic = partitions // topics
    body = {
        "controller_id": 1, "controller_epoch": 1, "broker_epoch": -1,
        "topic_states": [
            {"topic_name": f"bench-{t}", "partition_states": [
                {"partition_index": p, "controller_epoch": 1, "leader": 1, "leader_epoch": 1, "isr": [1],
                 "zk_version": 1, "replicas": [1], "offline_replicas": []} for p in range(per_topic)]}
            for t in range(topics)
        ],
        "live_brokers": [{"id": 1, "endpoints": [{"port": data_port, "host": "127.0.0.1", "listener": "PLAINTEXT",
                                                  "security_protocol": 0}], "rack": None}],
    }
    return encode_request(6, 5, correlation_id, "1", body)


def leader_and_isr_wire(correlation_id: int, leader_epoch: int, data_port: int) -> bytes:
    """LeaderAndIsr v2 for one partition (a controller's smallest request)."""
    body = {
        "controller_id": 1, "controller_epoch": 1, "broker_epoch": -1,
        "topic_states": [{"topic_name": "lair-probe", "partition_states": [
            {"partition_index": 0, "controller_epoch": 1, "leader": 1, "leader_epoch": leader_epoch, "isr": [1],
             "zk_version": leader_epoch, "replicas": [1], "is_new": False}]}],
        "live_leaders": [{"broker_id": 1, "host_name": "127.0.0.1", "port": data_port}],
    }
    return encode_request(4, 2, correlation_id, "1", body)


def api_versions_wire(correlation_id: int) -> bytes:
    return encode_request(18, 0, correlation_id, "bench", {})


def metadata_wire(correlation_id: int, topics: list[str] | None = None) -> bytes:
    body = {"topics": None if topics is None else [{"name": t} for t in topics]}
    return encode_request(3, 1, correlation_id, "bench", body)


def rss_mb(pid: int) -> float:
    """Resident set size of a process in MiB (psutil)."""
    import psutil

    return float(psutil.Process(pid).memory_info().rss) / (1024 * 1024)
