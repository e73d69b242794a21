"""Helpers of the multi-process cluster tests: start/stop a cluster, its state, raw control requests."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict

from broker.cluster.controller import Controller, ControllerSettings
from broker.cluster.http import ControllerClient, ControllerHttpServer
from broker.cluster.launcher import Cluster, ClusterSpec
from broker.log4j import Log4j
from broker.metrics.registry import MetricsRegistry
from broker.protocol import decode_response, encode_request

_I32 = struct.Struct(">i")

# How long a cluster test waits for a state of the cluster (a leader, an ISR), and how it polls for it
# (tests.polling.wait_until): every 0.2 s, one status request to the controller; a controller or broker that does
# not answer yet (restarting), or a partition it does not list yet, is "not yet".
CLUSTER_S = 30.0


class ClusterPoll(TypedDict):
    interval: float
    ignoring: tuple[type[Exception], ...]


CLUSTER_POLL: ClusterPoll = {"interval": 0.2, "ignoring": (OSError, ConnectionError, KeyError)}


@contextmanager
def running_cluster(directory: Path, **spec: Any) -> Iterator[Cluster]:
    """A started cluster, always stopped (SIGTERM, then SIGKILL) at exit."""
    cluster = Cluster(ClusterSpec(directory, **spec))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@contextmanager
def running_controller(directory: Path) -> Iterator[tuple[Controller, ControllerClient]]:
    """An in-process cluster controller with its HTTP server on 127.0.0.1 and a client to it; stopped on exit."""
    log4j = Log4j().configure(directory / "logs", controller_log=True)
    c = Controller(directory / "state", log4j, MetricsRegistry(), ControllerSettings(session_timeout_ms=60_000))
    c.start()
    http = ControllerHttpServer(c)
    http.start()
    try:
        yield c, ControllerClient(f"http://127.0.0.1:{http.port}", timeout_s=10)
    finally:
        http.shutdown()
        c.shutdown()
        log4j.close()


def status(cluster: Cluster) -> dict[str, Any]:
    """The controller's view."""
    return ControllerClient(cluster.controller_url, timeout_s=10).status()


def partition(cluster: Cluster, topic: str, p: int) -> dict[str, Any] | None:
    """The controller's state of one partition."""
    for entry in status(cluster)["partitions"]:
        if entry["topic"] == topic and entry["partition"] == p:
            return dict(entry)
    return None


def control_request(port: int, api_key: int, version: int, body: dict[str, Any], correlation_id: int = 99
                    ) -> dict[str, Any]:
    """Send one request to 127.0.0.1:port and return the decoded response body."""
    frame = encode_request(api_key, version, correlation_id, "test-controller", body)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(frame)
        size = _I32.unpack(_recv(s, 4))[0]
        corr, resp = decode_response(api_key, version, _recv(s, size))
    assert corr == correlation_id
    return resp


def _recv(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)
