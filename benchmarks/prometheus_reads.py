"""The ways to take Kafka's series from the operator's Prometheus, measured side by side on one Prometheus: the query
API (what planewatch_prometheus_server uses), federation, remote read, and remote write.

    .venv/bin/python -m benchmarks.prometheus_reads [--brokers 30] [--series 100] [--reads 10] [--json FILE]

1. **One trigger's read**: Prometheus (Debian's) holds an hour of `--brokers` x `--series` Kafka series at a 15 s
   scrape interval (backfilled with promtool); each way reads the newest 15 s (one sample a series) `--reads` times:
   latency, bytes on the wire, samples, and Prometheus's own CPU per read (its process_cpu_seconds_total).
2. **A 30-minute gap** (planewatch stopped): what each way can still read of it, and at what cost.
3. **Remote write**: Prometheus scrapes a live exporter every second and pushes to a receiver on 127.0.0.1: the delay
   from a sample's scrape to its arrival, and what arrives of a 30 s receiver outage once it is back.
Numbers depend on the machine's load: run it alone.
"""

from __future__ import annotations

import argparse
import http.server
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.prometheus_wire import MATCH_RE, decode_read_response, decode_write_request, read_request
from broker.metrics.prometheus import PrometheusServer
from broker.metrics.registry import MetricName, MetricsRegistry
from planewatch.kafka.prometheus import OperatorPrometheus, backfill

SELECTOR = '{__name__=~"kafka_.+"}'
STEP_S = 15
HISTORY_S = 3600
GAP_S = 1800
WINDOW_S = 600  # planewatch's max_window: the query API reads a gap in windows this long
OUTAGE_S = 30.0
LIVE_SCRAPE_S = 1.0
RUN_S = 30.0  # remote write: pushed samples measured this long before the outage, and after it


def history(brokers: int, series: int, first: int, last: int) -> str:
    """OpenMetrics text: per broker `series` series (10 metric names x topics), a sample every STEP_S."""
    names = [f"kafka_server_brokertopicmetrics_m{i}" for i in range(10)]
    lines: list[str] = []
    for name in names:
        lines.append(f"# TYPE {name} gauge")
        for b in range(1, brokers + 1):
            for topic in range(series // len(names)):
                labels = f'job="kafka",instance="kafka-{b}.prod:7071",topic="t{topic}"'
                lines += [f"{name}{{{labels}}} {(t // STEP_S) % 97} {t}" for t in range(first, last + 1, STEP_S)]
    return "\n".join([*lines, "# EOF"]) + "\n"


def cpu_s(client: httpx.Client) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("process_cpu_seconds_total "):
            return float(line.split()[1])
    raise RuntimeError("Prometheus serves no process_cpu_seconds_total")


def query_api(client: httpx.Client, start_ms: int, end_ms: int) -> tuple[int, int]:
    params = {"query": f"{SELECTOR}[{end_ms - start_ms}ms]", "time": f"{end_ms / 1000:.3f}"}
    r = client.get("/api/v1/query", params=params)
    r.raise_for_status()
    return len(r.content), sum(len(s["values"]) for s in r.json()["data"]["result"])


def federate(client: httpx.Client) -> tuple[int, int]:
    r = client.get("/federate", params={"match[]": SELECTOR})
    r.raise_for_status()
    return len(r.content), sum(1 for line in r.text.splitlines() if line and not line.startswith("#"))


def remote_read(client: httpx.Client, start_ms: int, end_ms: int) -> tuple[int, int]:
    body = read_request(start_ms, end_ms, [(MATCH_RE, "__name__", "kafka_.+")])
    r = client.post("/api/v1/read", content=body, headers={
        "Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
        "X-Prometheus-Remote-Read-Version": "0.1.0"})
    r.raise_for_status()
    return len(r.content), sum(len(samples) for _, samples in decode_read_response(r.content))


def _timed(client: httpx.Client, reads: int, fn: Any) -> dict[str, float]:
    before = cpu_s(client)
    times, size, samples = [], 0, 0
    for _ in range(reads):
        t0 = time.perf_counter()
        size, samples = fn()
        times.append(time.perf_counter() - t0)
    used = cpu_s(client) - before
    return {"ms_p50": statistics.median(times) * 1000, "ms_max": max(times) * 1000, "bytes": size,
            "samples": samples, "prometheus_cpu_ms_per_read": used * 1000 / reads}


class Receiver:
    """A remote-write receiver on 127.0.0.1: per sample (its timestamp, when it arrived); `up` False answers 503."""

    def __init__(self) -> None:
        self.arrived: list[tuple[int, float]] = []
        self.up = True
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not outer.up:
                    self.send_response(503)
                    self.end_headers()
                    return
                now = time.time()
                for labels, samples in decode_write_request(body):
                    if labels.get("__name__", "").startswith("kafka_"):
                        outer.arrived += [(ts, now) for ts, _ in samples]
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                del format, args

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/write"

    def close(self) -> None:
        self.httpd.shutdown()
        self.thread.join(10)
        self.httpd.server_close()


def remote_write(root: Path) -> dict[str, Any]:
    """Prometheus scraping a live exporter every LIVE_SCRAPE_S and pushing to a Receiver: the push delay, and what
    arrives of an OUTAGE_S receiver outage once it is back."""
    registry = MetricsRegistry()
    registry.gauge(MetricName.of("kafka.network", "RequestChannel", "RequestQueueSize"), lambda: 1.0)
    exporter = PrometheusServer(registry, 0)
    exporter.start()
    receiver = Receiver()
    job = {"job_name": "live", "scrape_interval": f"{LIVE_SCRAPE_S:g}s",
           "static_configs": [{"targets": [f"127.0.0.1:{exporter.port}"]}]}
    try:
        with OperatorPrometheus(root, 15.0, extra_jobs=[job], remote_write=[receiver.url]):
            time.sleep(RUN_S)
            live = [now - ts / 1000 for ts, now in receiver.arrived]
            receiver.up = False
            down_from = time.time() * 1000
            time.sleep(OUTAGE_S)
            down_to = time.time() * 1000
            receiver.up = True
            time.sleep(RUN_S)
            gap = {ts for ts, _ in receiver.arrived if down_from <= ts < down_to}
        return {"push_delay_s_p50": statistics.median(live), "push_delay_s_max": max(live),
                "outage_s": OUTAGE_S, "outage_scrapes_delivered_after": len(gap),
                "outage_scrapes_expected": int(OUTAGE_S / LIVE_SCRAPE_S)}
    finally:
        receiver.close()
        exporter.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=30)
    parser.add_argument("--series", type=int, default=100, help="series per broker")
    parser.add_argument("--reads", type=int, default=10)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    out: dict[str, Any] = {"brokers": args.brokers, "series_per_broker": args.series}
    with tempfile.TemporaryDirectory(prefix="planewatch-prom-reads-") as tmp:
        root = Path(tmp)
        last = int(time.time()) - 30
        first = last - HISTORY_S + STEP_S
        t0 = time.perf_counter()
        backfill(root / "p" / "data", history(args.brokers, args.series, first, last))
        out["backfill_s"] = time.perf_counter() - t0
        with OperatorPrometheus(root / "p") as prom, httpx.Client(base_url=prom.url, timeout=120) as client:
            end = last * 1000
            start = end - STEP_S * 1000
            out["one_trigger"] = {
                "query_api": _timed(client, args.reads, lambda: query_api(client, start, end)),
                "federation": _timed(client, args.reads, lambda: federate(client)),
                "remote_read": _timed(client, args.reads, lambda: remote_read(client, start, end)),
            }
            gap_from = end - GAP_S * 1000
            windows = [(w, min(end, w + WINDOW_S * 1000)) for w in range(gap_from, end, WINDOW_S * 1000)]

            def query_gap() -> tuple[int, int]:
                got = [query_api(client, a, b) for a, b in windows]
                return sum(g[0] for g in got), sum(g[1] for g in got)

            out["gap_30_min"] = {
                "query_api_in_10_min_windows": _timed(client, 1, query_gap),
                "remote_read_one_request": _timed(client, 1, lambda: remote_read(client, gap_from, end)),
                "federation": {"samples": 0, "note": "serves each series' latest sample only"},
                "expected_samples": args.brokers * (args.series // 10 * 10) * (GAP_S // STEP_S),
            }
        out["remote_write"] = remote_write(root / "rw")
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
