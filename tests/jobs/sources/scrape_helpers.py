"""Scrape targets on 127.0.0.1 for the Prometheus source's tests: the reference broker's real endpoint (in this
process, or a `planewatch broker` process), an HTTP server answering what it is told to, a port nobody listens on,
and a port that accepts connections but never answers."""

from __future__ import annotations

import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from broker.metrics.prometheus import PrometheusServer
from broker.metrics.registry import MetricName, MetricsRegistry
from tests.polling import wait_until

# A `planewatch broker` process must serve /metrics within this long (Python start-up on a loaded 2-core machine).
BROKER_START_S = 60.0
GARBAGE = b"<html><body><h1>Welcome to nginx!</h1></body></html>\n"


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Endpoint:
    """The reference broker's Prometheus endpoint over a registry whose RequestQueueSize the test sets."""

    queue_size: list[float] = field(default_factory=lambda: [3.0])
    registry: MetricsRegistry = field(default_factory=MetricsRegistry)
    server: PrometheusServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}/metrics"


@contextmanager
def reference_endpoint() -> Iterator[Endpoint]:
    """broker.metrics.prometheus.PrometheusServer on an ephemeral port, with Kafka's request-queue and acceptor
    metrics registered."""
    ep = Endpoint()
    ep.registry.gauge(MetricName.of("kafka.network", "RequestChannel", "RequestQueueSize"), lambda: ep.queue_size[0])
    ep.registry.gauge(MetricName.of("kafka.network", "RequestChannel", "ControlPlaneRequestQueueSize"), lambda: 0.0)
    ep.registry.meter(MetricName.of("kafka.network", "Acceptor", "AcceptorBlockedPercent", listener="PLAINTEXT"), 1.0)
    ep.server = PrometheusServer(ep.registry, 0)
    ep.server.start()
    try:
        yield ep
    finally:
        ep.server.shutdown()


@contextmanager
def answering(status: int = 200, body: bytes = GARBAGE, content_type: str = "text/html",
              delay_s: float = 0.0) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 answering every GET with `status`, `content_type` and `body`, `delay_s` after
    the request (an exporter that takes that long to collect its answer); yields its URL."""
    collecting = threading.Event()  # never set: the delay is the exporter's work, not a wait for a condition

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if delay_s:
                collecting.wait(delay_s)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            del format, args

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/metrics"
    finally:
        httpd.shutdown()
        thread.join(10)
        httpd.server_close()


@contextmanager
def silent() -> Iterator[str]:
    """A port that accepts connections (the kernel's backlog) and never answers; yields its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield f"http://127.0.0.1:{s.getsockname()[1]}/metrics"


@contextmanager
def not_http() -> Iterator[str]:
    """A port whose service greets in another protocol and hangs up (an SSH banner); yields its URL."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    stop = threading.Event()

    def serve() -> None:
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}/metrics"
    finally:
        stop.set()
        thread.join(10)
        srv.close()


@contextmanager
def broker_process(tmp: Path) -> Iterator[str]:
    """A `planewatch broker` process with `prometheus.port` set; yields its /metrics URL; stopped on exit."""
    port, prom = free_port(), free_port()
    tmp.mkdir(parents=True, exist_ok=True)
    props = tmp / "broker.properties"
    props.write_text(
        f"broker.id=1\nlisteners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={tmp / 'data'}\nprometheus.port={prom}\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "planewatch.cli", "broker", "--config", str(props)],
        cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{prom}/metrics"

    def serving() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if b"requestqueuesize" in resp.read():
                    return True
        except OSError:
            pass
        if proc.poll() is not None:
            raise RuntimeError("planewatch broker did not serve /metrics")
        return False

    try:
        wait_until(serving, BROKER_START_S, "planewatch broker to serve /metrics", interval=0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
