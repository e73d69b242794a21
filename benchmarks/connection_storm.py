"""KIP-402 benchmark: a storm of STORM connections while EXISTING connections keep sending requests.

One run against one broker (child process, 127.0.0.1, max.connections=MAX_CONNECTIONS):

1. baseline: EXISTING connections (in a separate load process) send ApiVersions back to back for PHASE_S seconds;
2. storm: the same, while this process opens STORM connections as fast as it can (non-blocking connects) and keeps
   them open; the broker accepts up to max.connections, the acceptor then waits for a slot and the rest queue in the
   kernel's listen backlog;
3. the storm connections are closed.

Prints the existing connections' p50/p99 latency in both phases and their ratio (target: storm p99 within 3x of the
baseline), the broker's peak RSS, and the highest number of accepted connections observed (psutil, on the broker
process) against max.connections. Bounded: fixed phase lengths and a deadline for the storm.
Run: .venv/bin/python -m benchmarks.connection_storm
"""

from __future__ import annotations

import errno
import json
import multiprocessing
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.broker_support import RawClient, api_versions_wire, broker_process, percentile, raise_fd_limit, rss_mb

STORM = 5000
EXISTING = 50
MAX_CONNECTIONS = 4000
PHASE_S = 5.0
STORM_DEADLINE_S = 30.0
SAMPLE_EVERY_S = 0.25


def _existing_load(port: int, phase: Any, results: Any) -> None:
    """EXISTING connections, one thread each; latencies tagged with the phase they were measured in."""
    clients = [RawClient(port) for _ in range(EXISTING)]
    ready = threading.Barrier(EXISTING)

    def one(client: RawClient) -> None:
        wire = api_versions_wire(1)
        out: list[tuple[int, float]] = []
        ready.wait()
        try:
            while phase.value < 3:
                p = phase.value
                start = time.perf_counter()
                client.call(wire)
                out.append((p, (time.perf_counter() - start) * 1000))
        except OSError:
            pass
        finally:
            client.close()
            results.put(out)

    threads = [threading.Thread(target=one, args=(c,), daemon=True) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(STORM_DEADLINE_S + 4 * PHASE_S)


def _open_storm(port: int, count: int, deadline: float) -> list[socket.socket]:
    socks: list[socket.socket] = []
    while len(socks) < count and time.monotonic() < deadline:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        rc = s.connect_ex(("127.0.0.1", port))
        if rc not in (0, errno.EINPROGRESS):
            s.close()
            time.sleep(0.001)
            continue
        socks.append(s)
    return socks


def peak_served_connections(metrics_dir: Path) -> int:
    """The highest sum of ``connection-count`` over the processors in one metrics report (the JSON-lines files)."""
    per_report: dict[int, float] = {}
    for f in metrics_dir.glob("metrics-*.jsonl"):
        for line in f.read_text().splitlines():
            row = json.loads(line)
            if row["attribute"] == "connection-count" and row["value"] is not None:
                per_report[row["ts"]] = per_report.get(row["ts"], 0.0) + row["value"]
    return int(max(per_report.values(), default=0))


def main() -> None:
    raise_fd_limit(STORM + EXISTING + 4096)
    props = {"listeners": "PLAINTEXT://127.0.0.1:0", "max.connections": MAX_CONNECTIONS, "num.network.threads": 3,
             "num.io.threads": 4, "metrics.interval.ms": 250}
    workdir = Path(tempfile.mkdtemp(prefix="pw-storm-"))
    with broker_process(props, workdir) as (ports, pid):
        port = ports["PLAINTEXT"]
        broker = psutil.Process(pid)
        phase = multiprocessing.Value("i", 0)
        results: Any = multiprocessing.Queue()
        loader = multiprocessing.Process(target=_existing_load, args=(port, phase, results), daemon=True)
        loader.start()
        peak_rss = rss_mb(pid)
        peak_conns = 0
        stop_sampling = threading.Event()

        def sample() -> None:
            nonlocal peak_rss, peak_conns
            while not stop_sampling.wait(SAMPLE_EVERY_S):
                try:
                    peak_rss = max(peak_rss, rss_mb(pid))
                    n = sum(1 for c in broker.net_connections(kind="tcp")
                            if c.status == psutil.CONN_ESTABLISHED and c.laddr and c.laddr.port == port)
                    peak_conns = max(peak_conns, n)
                except psutil.Error:
                    return

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        time.sleep(1.0)  # connections established
        phase.value = 1  # baseline
        time.sleep(PHASE_S)
        phase.value = 2  # storm
        t0 = time.monotonic()
        storm = _open_storm(port, STORM, t0 + STORM_DEADLINE_S)
        opened_s = time.monotonic() - t0
        time.sleep(PHASE_S)
        phase.value = 3
        per_thread = [results.get(timeout=60) for _ in range(EXISTING)]
        loader.join(30)
        for s in storm:
            s.close()
        time.sleep(2 * SAMPLE_EVERY_S)
        stop_sampling.set()
        sampler.join(10)
    baseline = [ms for out in per_thread for p, ms in out if p == 1]
    during = [ms for out in per_thread for p, ms in out if p == 2]
    print(f"connection storm: {len(storm)} connections opened in {opened_s:.2f} s while {EXISTING} existing "
          f"connections send ApiVersions back to back (max.connections={MAX_CONNECTIONS})")
    print(f"  baseline : {len(baseline):6d} requests  p50 {percentile(baseline, 50):7.2f} ms  "
          f"p99 {percentile(baseline, 99):7.2f} ms")
    print(f"  storm    : {len(during):6d} requests  p50 {percentile(during, 50):7.2f} ms  "
          f"p99 {percentile(during, 99):7.2f} ms")
    print(f"  p99 storm/baseline: {percentile(during, 99) / percentile(baseline, 99):.2f}x (target <= 3x)")
    print(f"  starved existing connections (no answer during the storm): "
          f"{sum(1 for out in per_thread if not any(p == 2 for p, _ in out))}")
    print(f"  broker peak RSS: {peak_rss:.1f} MiB")
    served = peak_served_connections(workdir / "metrics")
    print(f"  highest connection count (broker's socket-server-metrics connection-count, summed per report): "
          f"{served} vs max.connections={MAX_CONNECTIONS}: "
          f"{'never exceeded' if served <= MAX_CONNECTIONS else 'EXCEEDED'}")
    print(f"  highest sockets held by the broker process (psutil): {peak_conns} (includes the one the acceptor has "
          "accepted and holds while it waits for a slot, as Kafka's acceptor does)")


if __name__ == "__main__":
    main()
