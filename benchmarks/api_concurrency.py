"""200 concurrent requests against the real API on a real lake: p50/p99 and req/s, beside a low-concurrency run.

    .venv/bin/python -m benchmarks.api_concurrency [--concurrency 200] [--requests 2000] [--alerts 50000]

What it does (everything under one temp dir, removed at the end):
1. writes a lake with delta-rs (alerts, control requests, metric samples of 3 brokers x 8 signals at 1 s);
2. starts `planewatch api` as its own process (one uvicorn worker, as `planewatch api` runs) with a token, and
   (unless --no-writer) a writer process appending alerts and samples every second, as the pipeline commits, so
   table versions move under the requests;
3. warms every endpoint once, then sends `--requests` requests with `--baseline` in flight at once, then the
   same number with `--concurrency` in flight (a minimal asyncio HTTP/1.1 client, one keep-alive connection per
   request in flight, see `run`), the
   endpoints of a dashboard taking turns: /alerts?status=open, /alerts/{id}, /control-requests, /brokers,
   /brokers/1/metrics, /panels/open_alerts, /panels/leader_and_isr_latency, /health;
4. prints p50/p99 latency, req/s and non-200 answers per run, and the machine's load average.

The client shares the machine with the server (and, on a shared machine, with whatever else runs): compare runs
made close together, and read the load average printed beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.api_latency import _free_port, alerts_batch, samples_batch, stop_writer_and_api, wait_for_api, writer

TOKEN = "bench-token"
# Hard bounds: one run, and the whole benchmark (the server is stopped by then in any case); the server's start is
# bounded by api_latency.START_TIMEOUT_S.
RUN_TIMEOUT_S = 300
REQUEST_TIMEOUT_S = 60
# Requests sent at most per run, whatever --requests says (each run stays within RUN_TIMEOUT_S on 2 cores).
MAX_REQUESTS = 20_000
CONTROL_REQUESTS = 5_000

ENDPOINTS = (
    "/alerts?status=open",
    "/alerts/bench-00000010",
    "/control-requests?limit=100",
    "/brokers",
    "/brokers/1/metrics?name=RequestQueueSize&cluster=bench",
    "/panels/open_alerts",
    "/panels/leader_and_isr_latency",
    "/health",
)


def build_lake(lake: Path, n_alerts: int, n_samples: int, now: datetime) -> None:
    """alerts, control_request_latency and metric_samples (partitioned by cluster/date), written with delta-rs."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from schemas.tables import CONTROL_REQUEST_LATENCY

    t0 = time.monotonic()
    write_deltalake(str(lake / "alerts"), alerts_batch(0, n_alerts, now - timedelta(seconds=30)))
    sent = [now - timedelta(seconds=i) for i in range(CONTROL_REQUESTS)]
    crl = {
        "cluster": ["bench"] * CONTROL_REQUESTS,
        "broker_id": [i % 3 for i in range(CONTROL_REQUESTS)],
        "controller_id": [0] * CONTROL_REQUESTS,
        "controller_epoch": [1] * CONTROL_REQUESTS,
        "correlation_id": list(range(CONTROL_REQUESTS)),
        "request": ["LeaderAndIsr"] * CONTROL_REQUESTS,
        "sent_ts": sent,
        "handling_ts": sent,
        "finished_ts": sent,
        "end_to_end_ms": [float(i % 2000) for i in range(CONTROL_REQUESTS)],
        "queue_ms": [1.0] * CONTROL_REQUESTS,
        "processing_ms": [1.0] * CONTROL_REQUESTS,
        "lock_wait_ms": [0.0] * CONTROL_REQUESTS,
        "partitions": [3] * CONTROL_REQUESTS,
        "status": ["completed"] * CONTROL_REQUESTS,
        "pairing": ["correlation_id"] * CONTROL_REQUESTS,
        "updated_at": sent,
        "date": [s.date() for s in sent],
    }
    schema = CONTROL_REQUEST_LATENCY.to_arrow()
    table = pa.Table.from_pydict({f.name: crl.get(f.name) or [None] * CONTROL_REQUESTS for f in schema}, schema)
    write_deltalake(
        str(lake / CONTROL_REQUEST_LATENCY.name), table, partition_by=list(CONTROL_REQUEST_LATENCY.partition_by) or None
    )
    series = 3 * 8
    seconds = max(1, n_samples // series)
    write_deltalake(
        str(lake / "metric_samples"),
        samples_batch(0, seconds, 1, int(now.timestamp()), 0),
        partition_by=["cluster", "date"],
    )
    print(f"lake: {n_alerts} alerts, {CONTROL_REQUESTS} control requests, {seconds * series} samples "
          f"written in {time.monotonic() - t0:.1f} s", flush=True)


async def _get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes) -> int:
    """One keep-alive HTTP/1.1 GET on an open connection: the status code (the body is read and dropped)."""
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length = next((int(v) for k, _, v in (ln.partition(":") for ln in lines[1:]) if k.lower() == "content-length"), 0)
    await reader.readexactly(length)
    return status


async def run(
    host: str, port: int, n: int, in_flight: int, verbose: bool = False
) -> tuple[float, float, float, int, dict[str, int]]:
    """(p50 ms, p99 ms, req/s of answered requests, non-200 answers, transport errors by kind) of n requests with
    `in_flight` at once; `verbose` prints each endpoint's quantiles too.

    The client is a minimal HTTP/1.1 one over asyncio streams, one keep-alive connection per request in flight:
    a full client library costs more CPU per request than the server's cheapest endpoint at this concurrency
    (httpx's AsyncClient took ~6 ms of CPU per /livez request with 200 connections), and it shares the cores.
    """
    lat: list[float] = []
    bad = 0
    errors: dict[str, int] = {}
    by_endpoint: dict[str, list[float]] = {}
    queue: asyncio.Queue[str] = asyncio.Queue()
    for i in range(n):
        queue.put_nowait(ENDPOINTS[i % len(ENDPOINTS)])

    async def worker() -> None:
        nonlocal bad
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while not queue.empty():
                url = queue.get_nowait()
                request = (f"GET {url} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                           f"Authorization: Bearer {TOKEN}\r\n\r\n").encode()
                s = time.perf_counter()
                try:
                    status = await _get(reader, writer, request)
                except (OSError, asyncio.IncompleteReadError) as e:  # the server closed or reset: counted, reopened
                    errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, port)
                    continue
                lat.append((time.perf_counter() - s) * 1000)
                by_endpoint.setdefault(url, []).append(lat[-1])
                bad += status != 200
        finally:
            writer.close()

    t0 = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(in_flight))), RUN_TIMEOUT_S)
    elapsed = time.perf_counter() - t0
    if verbose:
        for url, ms in by_endpoint.items():
            q = statistics.quantiles(ms, n=100)
            print(f"      {url:58s} p50 {q[49]:8.1f} ms  p99 {q[98]:8.1f} ms", flush=True)
    q = statistics.quantiles(lat, n=100)
    return q[49], q[98], len(lat) / elapsed, bad, errors


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", type=int, default=200)
    p.add_argument("--baseline", type=int, default=4, help="requests in flight of the comparison run")
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--alerts", type=int, default=50_000)
    p.add_argument("--samples", type=int, default=2_000_000)
    p.add_argument("--per-endpoint", action="store_true", help="print each endpoint's p50/p99 too")
    p.add_argument("--no-writer", action="store_true", help="no commits during the runs (a lake that stands still)")
    args = p.parse_args()
    import httpx

    n = min(args.requests, MAX_REQUESTS)
    tmp = Path(tempfile.mkdtemp(prefix="pw-conc-"))
    lake = tmp / "lake"
    server: subprocess.Popen[bytes] | None = None
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    wproc = None
    try:
        build_lake(lake, args.alerts, args.samples, datetime.now(UTC).replace(microsecond=0))
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "planewatch.cli", "api", "--lake", str(lake), "--port", str(port),
             "--log-level", "warning"],
            env={**os.environ, "PLANEWATCH_API_TOKEN": TOKEN},
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as c:
            wait_for_api(c, server)
            for url in ENDPOINTS:
                r = c.get(url)
                if r.status_code != 200:
                    raise RuntimeError(f"warm-up: {url} answered {r.status_code}: {r.text[:300]}")
        if not args.no_writer:
            wproc = ctx.Process(target=writer, args=(str(lake), stop, RUN_TIMEOUT_S * 3), daemon=True)
            wproc.start()
        print(f"{n} requests per run over {len(ENDPOINTS)} endpoints taking turns, "
              f"{'no commits' if args.no_writer else 'a commit to alerts and metric_samples every second'}:",
              flush=True)
        for in_flight in (args.baseline, args.concurrency):
            p50, p99, rate, bad, errors = asyncio.run(run("127.0.0.1", port, n, in_flight, args.per_endpoint))
            print(f"  {in_flight:4d} in flight: p50 {p50:8.1f} ms  p99 {p99:8.1f} ms  {rate:7.1f} req/s  "
                  f"non-200: {bad}  transport errors: {errors or 0}  "
                  f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)", flush=True)
    finally:
        stop_writer_and_api(stop, wproc, server)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
