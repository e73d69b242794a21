"""Helpers of the data-plane tests: a real broker (in-process or subprocess) on 127.0.0.1 and a raw wire client."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from broker.apis.factory import build_kafka_apis
from broker.config import KafkaConfig
from broker.protocol import decode_response, encode_request
from broker.server import KafkaServer
from tests.polling import threads_since, wait_until

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def broker(tmp_path: Path, **props: Any) -> Iterator[KafkaServer]:
    """An in-process reference broker with the real data plane; always shut down, threads checked."""
    port = free_port()
    base = {"broker.id": "1", "listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": str(tmp_path / "data"),
            "kafka.logs.dir": str(tmp_path / "logs"), "metrics.dir": str(tmp_path / "metrics"),
            "metrics.interval.ms": "60000", "group.initial.rebalance.delay.ms": "0"}
    base.update({k.replace("__", "."): str(v) for k, v in props.items()})
    before = set(threading.enumerate())
    server = KafkaServer(KafkaConfig(base), build_kafka_apis)
    server.startup()
    try:
        yield server
    finally:
        server.shutdown()
        wait_until(lambda: not threads_since(before), 10,
                   lambda: f"the server's threads to end (still alive: {threads_since(before)})", interval=0.05)


def bootstrap(server: KafkaServer) -> str:
    return f"127.0.0.1:{server.bound_port('PLAINTEXT')}"


class BrokerProcess:
    """``planewatch broker`` as a subprocess (its own process group), for kill -9 tests.

    ``open_files`` sets the broker's open-file limit: one number for soft and hard (so its start-up raise of the
    soft limit to the hard one cannot undo it), or ``(soft, hard)``; the test process keeps its own."""

    def __init__(self, tmp_path: Path, port: int, extra: str = "",
                 open_files: int | tuple[int, int] | None = None) -> None:
        self.port = port
        self.open_files = open_files
        self.props = tmp_path / "broker.properties"
        self.props.write_text(f"broker.id=1\nlisteners=PLAINTEXT://127.0.0.1:{port}\n"
                              f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={tmp_path}/data\n"
                              f"kafka.logs.dir={tmp_path}/logs\nmetrics.dir={tmp_path}/metrics\n"
                              f"group.initial.rebalance.delay.ms=0\n{extra}")
        self.out = tmp_path / "broker.out"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.out, "ab") as out:
            cmd = [sys.executable, "-m", "planewatch.cli", "broker", "--config", str(self.props)]
            limit = self.open_files

            def limit_open_files() -> None:  # runs in the child, between fork and exec
                if limit is not None:
                    resource.setrlimit(resource.RLIMIT_NOFILE, limit if isinstance(limit, tuple) else (limit, limit))

            self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=limit_open_files)
        proc = self.proc

        def accepting() -> bool:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                return True
            except OSError:
                if proc.poll() is not None:
                    raise AssertionError(f"broker exited: {self.out.read_text()[-2000:]}") from None
                return False

        wait_until(accepting, 30, "the broker to start", interval=0.1)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        self.proc.wait(30)
        self.proc = None


class Wire:
    """A raw Kafka connection for hand-made (and broken) requests."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), 5)
        self.sock.settimeout(10)
        self.correlation = 0

    def send_raw(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def read_frame(self) -> bytes:
        head = self._exact(4)
        (size,) = struct.unpack(">i", head)
        return self._exact(size)

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        self.correlation += 1
        self.send_raw(encode_request(api_key, version, self.correlation, "wire-test", body))
        corr, resp = decode_response(api_key, version, self.read_frame())
        assert corr == self.correlation
        return resp

    def close(self) -> None:
        self.sock.close()
