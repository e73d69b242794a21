"""Helpers for the socket-server tests: a scriptable KafkaApis, a blocking Kafka client, a server context manager.

The handler speaks the real protocol through broker.protocol (ApiVersions, Metadata, LeaderAndIsr); tests can make
it slow or hold it at a gate to saturate a plane deterministically.
"""

from __future__ import annotations

import contextlib
import resource
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from broker.config import KafkaConfig
from broker.metrics.registry import Gauge, Meter
from broker.network.request import Request, Response
from broker.protocol import SUPPORTED, ApiKey, decode_request, decode_response, encode_request, encode_response
from broker.server import KafkaServer
from tests.polling import threads_since, wait_until

API_VERSIONS, METADATA, LEADER_AND_ISR = int(ApiKey.API_VERSIONS), int(ApiKey.METADATA), int(ApiKey.LEADER_AND_ISR)
LAIR_BODY: dict[str, Any] = {"controller_id": 1, "controller_epoch": 1, "broker_epoch": -1, "topic_states": [],
                             "live_leaders": []}


def raise_fd_limit(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


class ScriptedApis:
    """A thread-safe handler: records the order it handled requests in; Metadata may wait on a gate or sleep."""

    def __init__(self, metadata_delay_s: float = 0.0) -> None:
        self.metadata_delay_s = metadata_delay_s
        self.gate = threading.Event()
        self.gate.set()
        self.handled: list[tuple[str, int, str]] = []  # (api name, correlation id, listener)
        self.in_handler: dict[str, int] = {}
        self.max_concurrent_per_connection = 0
        self.fail_correlation_ids: set[int] = set()
        self._lock = threading.Lock()

    def handle(self, request: Request) -> Response:
        with self._lock:
            n = self.in_handler.get(request.connection_id, 0) + 1
            self.in_handler[request.connection_id] = n
            self.max_concurrent_per_connection = max(self.max_concurrent_per_connection, n)
        try:
            header, _body = decode_request(request.frame)
            if header.correlation_id in self.fail_correlation_ids:
                raise RuntimeError("scripted failure")
            if header.api_key == METADATA:
                self.gate.wait(30)
                if self.metadata_delay_s:
                    time.sleep(self.metadata_delay_s)
                body: dict[str, Any] = {"brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 1, "rack": None}],
                                        "controller_id": 1, "topics": []}
                name = "Metadata"
            elif header.api_key == LEADER_AND_ISR:
                body, name = {"error_code": 0, "partition_errors": []}, "LeaderAndIsr"
            else:
                body = {"error_code": 0, "throttle_time_ms": 0,
                        "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi}
                                     for k, (lo, hi) in sorted(SUPPORTED.items())]}
                name = "ApiVersions"
            with self._lock:
                self.handled.append((name, header.correlation_id, request.listener))
            return Response(encode_response(header, body), metric_name=name, error_codes=(0,),
                            request_json={"x": 1}, response_json={"errorCode": 0})
        finally:
            with self._lock:
                self.in_handler[request.connection_id] -= 1

    def position(self, name: str) -> int:
        with self._lock:
            return [h[0] for h in self.handled].index(name)


class Client:
    """A blocking Kafka client on one connection."""

    def __init__(self, port: int, source: str | None = None, timeout: float = 10.0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        if source is not None:
            self.sock.bind((source, 0))
        self.sock.connect(("127.0.0.1", port))
        self.correlation = 0

    def send(self, api_key: int, version: int, body: dict[str, Any] | None = None) -> int:
        self.correlation += 1
        self.sock.sendall(encode_request(api_key, version, self.correlation, "test", body or {}))
        return self.correlation

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def _exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the broker")
            buf += chunk
        return bytes(buf)

    def call(self, api_key: int, version: int, body: dict[str, Any] | None = None) -> dict[str, Any]:
        corr = self.send(api_key, version, body)
        got, response = decode_response(api_key, 0 if api_key == API_VERSIONS and version > 3 else version,
                                        self.recv_frame())
        assert got == corr
        return response

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True when the broker closes the connection within ``timeout`` (anything received is skipped)."""
        self.sock.settimeout(timeout)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if self.sock.recv(65536) == b"":
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
        return False

    def close(self) -> None:
        self.sock.close()


def make_config(tmp_path: Path, **props: Any) -> KafkaConfig:
    base: dict[str, str] = {
        "broker.id": "1",
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(tmp_path / "data"),
        "metrics.interval.ms": "60000",
        "group.initial.rebalance.delay.ms": "0",
    }
    base.update({k.replace("__", "."): str(v) for k, v in props.items()})
    return KafkaConfig(base)


CONTROL_PLANE_PROPS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "control.plane.listener.name": "CONTROLLER",
}


@contextlib.contextmanager
def running_server(tmp_path: Path, apis: Any, props: dict[str, Any] | None = None) -> Iterator[KafkaServer]:
    """Start a KafkaServer on ephemeral loopback ports; always shut it down and check its threads are gone."""
    config = KafkaConfig({"broker.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
                          "metrics.interval.ms": "60000", **{k: str(v) for k, v in (props or {}).items()}})
    before = set(threading.enumerate())
    server = KafkaServer(config, lambda _s: apis)
    server.startup()
    try:
        yield server
    finally:
        apis_gate = getattr(apis, "gate", None)
        if apis_gate is not None:
            apis_gate.set()
        server.shutdown()
        wait_until(lambda: not threads_since(before), 10,
                   lambda: f"the server's threads to end (still alive: {threads_since(before)})", interval=0.05)


def gauge(server: KafkaServer, mbean: str, attribute: str = "Value") -> float:
    metric = server.registry.get(mbean)
    assert isinstance(metric, Gauge), mbean
    return metric.value(attribute)


def meter(server: KafkaServer, mbean: str) -> Meter:
    metric = server.registry.get(mbean)
    assert isinstance(metric, Meter), mbean
    return metric
