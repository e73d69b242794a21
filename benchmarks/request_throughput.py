"""Request throughput on loopback: ApiVersions and Metadata with 1, 8 and 64 connections.

A broker in a child process (default threads: 3 network, 8 io) with a metadata cache of METADATA_PARTITIONS
partitions (one UpdateMetadata); clients in LOAD_PROCESSES other processes, one thread per connection, one request in
flight per connection (Kafka's max.in.flight=1 shape), for DURATION_S per case. Prints requests/s, the per-request
latency p50/p99 and the broker's CPU time per request (user+system of the broker process: the figure that stays
comparable when other processes share the cores) for each (request, connections) case. Bounded: 6 cases x DURATION_S.
Run: .venv/bin/python -m benchmarks.request_throughput
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from typing import Any

import psutil

from benchmarks.broker_support import (
    RawClient,
    api_versions_wire,
    broker_process,
    metadata_wire,
    percentile,
    raise_fd_limit,
    update_metadata_wire,
)

CONNECTIONS = (1, 8, 64)
DURATION_S = 4.0
METADATA_PARTITIONS = 20  # a small cluster's worth: Metadata cost is dominated by the request path, not encoding
LOAD_PROCESSES = 2  # client processes (the broker has its own); more would only fight for the 2 cores


def _clients(port: int, wire: bytes, connections: int, duration: float, out: Any) -> None:
    latencies: list[float] = []
    lock = threading.Lock()
    clients = [RawClient(port) for _ in range(connections)]
    start_at = time.monotonic() + 0.2
    end_at = start_at + duration

    def run(client: RawClient) -> None:
        mine: list[float] = []
        while time.monotonic() < start_at:
            time.sleep(0.001)
        while time.monotonic() < end_at:
            t = time.perf_counter()
            client.call(wire)
            mine.append((time.perf_counter() - t) * 1000)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=run, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(duration + 30)
    for c in clients:
        c.close()
    out.put(latencies)


def _cpu_s(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


def run_case(port: int, wire: bytes, connections: int, broker: psutil.Process) -> tuple[float, float, float, float]:
    procs = min(LOAD_PROCESSES, connections)
    per = [connections // procs + (1 if i < connections % procs else 0) for i in range(procs)]
    out: Any = multiprocessing.Queue()
    workers = [multiprocessing.Process(target=_clients, args=(port, wire, n, DURATION_S, out)) for n in per]
    cpu_before = _cpu_s(broker)
    for w in workers:
        w.start()
    latencies = [ms for _ in workers for ms in out.get(timeout=DURATION_S + 60)]
    cpu_us = (_cpu_s(broker) - cpu_before) * 1e6 / max(len(latencies), 1)
    for w in workers:
        w.join(30)
    return len(latencies) / DURATION_S, percentile(latencies, 50), percentile(latencies, 99), cpu_us


def main() -> None:
    raise_fd_limit(4096)
    props = {"listeners": "PLAINTEXT://127.0.0.1:0"}
    with broker_process(props) as (ports, pid):
        port = ports["PLAINTEXT"]
        broker = psutil.Process(pid)
        setup = RawClient(port)
        setup.call(update_metadata_wire(METADATA_PARTITIONS, 2, port))
        setup.close()
        print(f"request throughput on loopback (broker: 3 network threads, 8 io threads; {DURATION_S:.0f} s per case)")
        for name, wire in (("ApiVersions v0", api_versions_wire(1)), ("Metadata v1 (all topics)", metadata_wire(1))):
            for n in CONNECTIONS:
                rate, p50, p99, cpu_us = run_case(port, wire, n, broker)
                print(f"  {name:<25} {n:3d} connections: {rate:9.0f} req/s  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms"
                      f"  broker CPU {cpu_us:6.1f} us/request")


if __name__ == "__main__":
    main()
