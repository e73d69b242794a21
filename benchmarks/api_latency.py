"""API latency on loopback: GET /alerts and GET /brokers/{id}/metrics against an empty endpoint of the same service.

    .venv/bin/python -m benchmarks.api_latency [--alerts 100000] [--samples 10000000] [--requests 400]

What it does (everything under one temp dir, removed at the end):
1. writes 100,000 alerts (one commit) and 10 million metric samples (10 commits of 1M rows, partitioned by
   cluster/date, 3 brokers x 8 signals at 1 s over ~4.8 days ending now) with pyarrow + delta-rs;
2. starts `planewatch api` as its own process (one uvicorn worker) with a token;
3. starts a writer process that keeps appending (every second: 20 alerts and 24 x 10 samples) for the whole run;
4. first the cheap endpoints taking turns (sequential, one keep-alive httpx client: p50/p99, req/s), so machine
   noise hits them alike; then each endpoint alone, sequential and over 4 client threads;
5. prints the table and the verdict against the targets (/alerts >= half the empty endpoint's rate, p99 < 50 ms).

Endpoints: /livez (no lake access: the framework's baseline), /alerts?status=open (first page of 100),
/alerts?broker_id=1&type=... (filtered), /brokers/1/metrics?name=RequestQueueSize (the last hour, downsampled in
DataFusion; repeated queries hit the per-version result cache), the same with a different window on every request
(always a fresh DataFusion query over metric_samples), and /brokers.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from schemas.tables import ALERTS, METRIC_SAMPLES

TOKEN = "bench-token"
SIGNALS = [
    "RequestQueueSize",
    "ControlPlaneRequestQueueSize",
    "NetworkProcessorAvgIdlePercent",
    "ControlPlaneNetworkProcessorAvgIdlePercent",
    "RequestHandlerAvgIdlePercent",
    "ControlPlaneRequestHandlerAvgIdlePercent",
    "AcceptorBlockedPercent",
    "ResponseQueueSize",
]
BROKERS = 3
TYPES = ["DELAYED_LEADER_AND_ISR", "ACCEPTOR_BLOCKED", "LOCK_CONTENTION", "REQUEST_QUEUE_SATURATED"]
ROWS_PER_COMMIT = 1_000_000
WRITER_PERIOD_S = 1.0
# Hard bound of the whole run (the writer and the server are stopped by then whatever happens).
MAX_RUN_S = 1800
START_TIMEOUT_S = 120


def _strings(values: list[str], idx: np.ndarray) -> pa.Array:
    return pa.array(values, pa.string()).take(pa.array(idx))


def alerts_batch(start: int, n: int, end: datetime, step_s: float = 5.0) -> pa.Table:
    """n alerts, alert ids start..start+n, started_at spaced step_s apart and ending at `end`; 10% open."""
    i = np.arange(start, start + n)
    end_us = int(end.timestamp() * 1e6)
    started = end_us - ((start + n - 1 - i) * step_s * 1e6).astype(np.int64)
    ts = pa.array(started, pa.timestamp("us", tz="UTC"))
    seen = pa.array(started + 60_000_000, pa.timestamp("us", tz="UTC"))
    open_ = (i % 10) == 0
    cols = {
        "alert_id": pa.array([f"bench-{k:08d}" for k in i]),
        "type": _strings(TYPES, i % len(TYPES)),
        "severity": _strings(["warning", "critical"], i % 2),
        "status": _strings(["resolved", "open"], open_.astype(np.int64)),
        "cluster": pa.array(["bench"] * n),
        "broker_id": pa.array((i % BROKERS).astype(np.int32)),
        "listener": pa.nulls(n, pa.string()),
        "started_at": ts,
        "last_seen_at": seen,
        "resolved_at": pa.array(started + 120_000_000, pa.timestamp("us", tz="UTC"), mask=open_),
        "summary": pa.array([f"bench alert {k}: LeaderAndIsr took {1000 + k % 5000} ms" for k in i]),
        "evidence": pa.array([f'{{"correlation_id": {k}, "end_to_end_ms": {1000 + k % 5000}}}' for k in i]),
        "value": pa.array((1000 + i % 5000).astype(np.float64)),
        "threshold": pa.array(np.full(n, 500.0)),
        "updated_at": seen,
    }
    return pa.table(cols, schema=ALERTS.to_arrow())


def samples_batch(first_second: int, seconds: int, per_series: int, end_s: int, batch_id: int) -> pa.Table:
    """Samples of 3 brokers x 8 signals, `per_series` per second, for `seconds` seconds from end_s - first_second."""
    series = BROKERS * len(SIGNALS)
    n = seconds * series * per_series
    k = np.arange(n)
    sec = first_second + k // (series * per_series)
    s = (k // per_series) % series
    broker = (s % BROKERS).astype(np.int32)
    sig = s // BROKERS
    ts_us = (end_s - sec) * 1_000_000 + (k % per_series) * (1_000_000 // per_series)
    ts = pa.array(ts_us, pa.timestamp("us", tz="UTC"))
    day = pa.array((ts_us // 86_400_000_000).astype(np.int32), pa.int32()).cast(pa.date32())
    rng = np.random.default_rng(batch_id)
    cols = {
        "cluster": pa.array(["bench"] * n),
        "broker_id": pa.array(broker),
        "ts": ts,
        "signal": _strings(SIGNALS, sig),
        "mbean": _strings([f"kafka.network:type=RequestChannel,name={x}" for x in SIGNALS], sig),
        "attribute": pa.array(["Value"] * n),
        "listener": pa.nulls(n, pa.string()),
        "request": pa.nulls(n, pa.string()),
        "processor": pa.nulls(n, pa.string()),
        "labels": pa.nulls(n, pa.map_(pa.string(), pa.string())),
        "value": pa.array(rng.random(n) * 20),
        "raw_name": _strings(SIGNALS, sig),
        "metric_format": pa.array(["json"] * n),
        "source": pa.array(["bench"] * n),
        "source_offset": pa.array(k.astype(np.int64)),
        "ingest_ts": ts,
        "batch_id": pa.array(np.full(n, batch_id, np.int64)),
        "date": day,
    }
    return pa.table(cols, schema=METRIC_SAMPLES.to_arrow())


def build_lake(lake: Path, n_alerts: int, n_samples: int, now: datetime) -> None:
    from deltalake import write_deltalake

    t0 = time.monotonic()
    write_deltalake(str(lake / "alerts"), alerts_batch(0, n_alerts, now - timedelta(seconds=30)))
    series = BROKERS * len(SIGNALS)
    total_seconds = n_samples // series
    per_commit_s = max(1, ROWS_PER_COMMIT // series)
    end_s = int(now.timestamp())
    done = 0
    # oldest first, as a pipeline would have written them
    for b, first in enumerate(range(total_seconds, 0, -per_commit_s)):
        secs = min(per_commit_s, first)
        t = samples_batch(first - secs, secs, 1, end_s, b)
        write_deltalake(str(lake / "metric_samples"), t, partition_by=["cluster", "date"], mode="append")
        done += t.num_rows
    print(f"lake: {n_alerts} alerts, {done} metric samples written in {time.monotonic() - t0:.1f} s", flush=True)


def writer(lake: str, stop: mp.synchronize.Event, duration_s: float) -> None:
    """Keeps appending alerts and samples (as the pipeline would) until stopped or the duration passes."""
    from deltalake import write_deltalake

    deadline = time.monotonic() + duration_s
    k = 0
    next_id = 10_000_000
    while not stop.is_set() and time.monotonic() < deadline:
        now = datetime.now(UTC)
        write_deltalake(f"{lake}/alerts", alerts_batch(next_id, 20, now, step_s=0.05), mode="append")
        next_id += 20
        end_s = int(now.timestamp())
        write_deltalake(
            f"{lake}/metric_samples",
            samples_batch(0, 1, 10, end_s, 1000 + k),
            partition_by=["cluster", "date"],
            mode="append",
        )
        k += 1
        stop.wait(WRITER_PERIOD_S)


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


def _quantiles(lat: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(lat, n=100)
    return q[49], q[98]


def interleaved(client: object, urls: dict[str, str], n: int) -> dict[str, tuple[float, float, float, int]]:
    """Sequential requests, the endpoints taking turns (so a noisy machine slows them alike).

    Returns per endpoint (p50 ms, p99 ms, req/s = requests / time spent in them, non-200 answers)."""
    import httpx

    assert isinstance(client, httpx.Client)
    lat: dict[str, list[float]] = {k: [] for k in urls}
    bad = dict.fromkeys(urls, 0)
    for _ in range(20):
        for u in urls.values():
            client.get(u)
    for _ in range(n):
        for k, u in urls.items():
            s = time.perf_counter()
            r = client.get(u)
            lat[k].append((time.perf_counter() - s) * 1000)
            bad[k] += r.status_code != 200
    return {k: (*_quantiles(v), 1000 * len(v) / sum(v), bad[k]) for k, v in lat.items()}


def measure(
    client: object, url_for: Callable[[int], str], n: int, threads: int = 4
) -> tuple[float, float, float, float, int]:
    """(p50 ms, p99 ms, sequential req/s, concurrent req/s with `threads` clients, non-200 answers)."""
    import httpx

    assert isinstance(client, httpx.Client)
    for i in range(min(20, n)):
        client.get(url_for(i))
    lat: list[float] = []
    bad = 0
    t0 = time.perf_counter()
    for i in range(n):
        s = time.perf_counter()
        r = client.get(url_for(i))
        lat.append((time.perf_counter() - s) * 1000)
        bad += r.status_code != 200
    seq = n / (time.perf_counter() - t0)
    per = max(1, n // threads)
    errors = [0] * threads

    def worker(w: int) -> None:
        for i in range(per):
            errors[w] += client.get(url_for(w * per + i)).status_code != 200

    ts = [threading.Thread(target=worker, args=(w,)) for w in range(threads)]
    t1 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    conc = per * threads / (time.perf_counter() - t1)
    p50, p99 = _quantiles(lat)
    return p50, p99, seq, conc, bad + sum(errors)




def wait_for_api(client: Any, server: subprocess.Popen[bytes]) -> None:
    """Poll `/livez` through the httpx `client` until the API answers; RuntimeError if it exits first or does not
    answer within START_TIMEOUT_S."""
    import httpx

    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            if client.get("/livez").status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            raise RuntimeError("the API did not start")
        time.sleep(0.2)

def stop_writer_and_api(stop: Any, wproc: Any, server: subprocess.Popen[bytes] | None) -> None:
    """Stop the benchmark's table writer (a process told by `stop`) and its API server (its process group: TERM,
    then KILL after 20 s)."""
    stop.set()
    if wproc is not None:
        wproc.join(timeout=30)
        if wproc.is_alive():
            wproc.terminate()
    if server is not None and server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)

def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--alerts", type=int, default=100_000)
    p.add_argument("--samples", type=int, default=10_000_000)
    p.add_argument("--requests", type=int, default=400)
    p.add_argument("--keep", action="store_true", help="keep the temp lake")
    args = p.parse_args()
    import httpx

    tmp = Path(tempfile.mkdtemp(prefix="pw-bench-"))
    lake = tmp / "lake"
    now = datetime.now(UTC).replace(microsecond=0)
    server: subprocess.Popen[bytes] | None = None
    stop = mp.get_context("spawn").Event()
    wproc = None
    try:
        build_lake(lake, args.alerts, args.samples, now)
        port = _free_port()
        env = {**os.environ, "PLANEWATCH_API_TOKEN": TOKEN}
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "planewatch.cli",
                "api",
                "--lake",
                str(lake),
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        wait_for_api(client, server)
        t = time.perf_counter()
        first = client.get("/alerts")
        print(
            f"first /alerts (loads the 100k-alert snapshot): {(time.perf_counter() - t) * 1000:.0f} ms, "
            f"status {first.status_code}",
            flush=True,
        )
        wproc = mp.get_context("spawn").Process(target=writer, args=(str(lake), stop, MAX_RUN_S), daemon=True)
        wproc.start()
        time.sleep(2)  # the writer has committed at least once: versions are moving from here on

        def window(i: int) -> str:
            until = (now - timedelta(minutes=i % 600)).strftime("%Y-%m-%dT%H:%M:%SZ")
            return f"/brokers/1/metrics?name=RequestQueueSize&cluster=bench&until={until}"

        fast = {
            "/livez (empty endpoint)": "/livez",
            "/alerts?status=open": "/alerts?status=open",
            "/alerts?broker_id=1&type=..": "/alerts?broker_id=1&type=LOCK_CONTENTION&limit=100",
        }
        print(f"\n1) interleaved, sequential, {args.requests} requests each, one keep-alive client:", flush=True)
        paired = interleaved(client, fast, args.requests)
        for name, (p50, p99, rate, bad) in paired.items():
            print(f"{name:40s} p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  {rate:7.1f} req/s  non-200: {bad}", flush=True)
        print("\n2) one endpoint at a time: sequential, then 4 client threads:", flush=True)
        endpoints: list[tuple[str, Callable[[int], str]]] = [
            ("/livez (empty endpoint)", lambda i: "/livez"),
            ("/alerts?status=open", lambda i: "/alerts?status=open"),
            ("/brokers/1/metrics (last hour)", lambda i: "/brokers/1/metrics?name=RequestQueueSize&cluster=bench"),
            ("/brokers/1/metrics (new window each)", window),
            ("/brokers", lambda i: "/brokers"),
        ]
        for name, url_for in endpoints:
            n = args.requests if name.startswith(("/livez", "/alerts")) else max(40, args.requests // 8)
            p50, p99, seq, conc, bad = measure(client, url_for, n)
            print(
                f"{name:40s} p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  {seq:7.1f} req/s seq  {conc:7.1f} req/s x4"
                f"  non-200: {bad}",
                flush=True,
            )
        base_rate = paired["/livez (empty endpoint)"][2]
        a = paired["/alerts?status=open"]
        print(
            f"\n/alerts rate = {a[2] / base_rate:.2f} x empty endpoint (target >= 0.5): "
            f"{'MET' if a[2] >= 0.5 * base_rate else 'MISSED'}; p99 {a[1]:.1f} ms (target < 50): "
            f"{'MET' if a[1] < 50 else 'MISSED'}; empty endpoint p99 {paired['/livez (empty endpoint)'][1]:.1f} ms"
            f"; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
        )
        client.close()
    finally:
        stop_writer_and_api(stop, wproc, server)
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"lake kept at {lake}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
