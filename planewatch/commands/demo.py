"""`planewatch demo`: reference clusters suffer the seeds' incidents, the pipeline catches them, the API shows them.

    planewatch demo [--dir var/demo] [--port 8080] [--duration SECONDS] [--runs a,b,...] [--no-serve]

Runs the scenarios one after another (healthy, produce-backlog without and with a control plane, connection-storm,
fetcher-lock locked then async, broker-bounce), each on a 3-broker reference cluster, with the streaming pipeline
and the API running; prints the dashboard URL and token, a progress line per step, and at the end a table of each
injected incident against the alert that caught it (type, broker, detection delay). Ctrl-C stops everything.
Exit code 0 when every incident was caught and nothing unexpected fired.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from planewatch.demo.plan import ALL_RUNS, EXTRA_RUNS, RUNS, SCRAPE_INTERVAL_S


def _runs(text: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    known = [r.name for r in ALL_RUNS]
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown run(s) {', '.join(bad) or '(none)'}; known: {', '.join(known)}")
    return names


def _duration(text: str) -> float:
    v = float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError("must be > 0 seconds")
    return v


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", type=Path, default=Path("var/demo"), help="where everything goes (var/demo)")
    parser.add_argument("--port", type=int, default=8080, help="API port on 127.0.0.1 (a free one if taken)")
    parser.add_argument("--duration", type=_duration, default=None, metavar="SECONDS",
                        help="stop everything after this long (default: after the table, serve until Ctrl-C)")
    parser.add_argument("--runs", type=_runs, default=tuple(r.name for r in RUNS), metavar="A,B",
                        help="scenario runs to play, in the demo's order (default: "
                             + ", ".join(r.name for r in RUNS) + "; also: "
                             + ", ".join(r.name for r in EXTRA_RUNS) + ")")
    parser.add_argument("--no-serve", dest="serve", action="store_false",
                        help="exit after the table instead of serving the dashboard")
    parser.add_argument("--config", type=Path, default=None, help="pipeline YAML (default conf/pipeline.yaml)")
    parser.add_argument("--scrape-interval", type=_duration, default=SCRAPE_INTERVAL_S, metavar="SECONDS",
                        help=f"how often Apache Kafka's exporters are scraped (default {SCRAPE_INTERVAL_S:g}; "
                             "operators use 15-60)")
    parser.add_argument("--logs", default="shipped", choices=("shipped", "files", "both"),
                        help="the Apache Kafka runs' logs: shipped by rsyslog into a logging Kafka cluster the demo "
                             "starts (default), read from their files, or both (their shipped copy named "
                             "<run>-shipped; planewatch/demo/shipping.py)")
    parser.add_argument("--metrics", default="prometheus", choices=("prometheus", "direct", "both"),
                        help="the Apache Kafka runs' metrics: scraped by a Prometheus the demo starts, which the "
                             "pipeline reads (default), scraped by the pipeline itself, or both (Prometheus's copy "
                             "named <run>-prom; planewatch/demo/metrics_path.py)")


def run(args: argparse.Namespace) -> int:
    from planewatch.demo.runner import DemoOptions, run_demo

    opts = DemoOptions(dir=args.dir, port=args.port, duration_s=args.duration, runs=args.runs, serve=args.serve,
                       config=args.config, scrape_interval_s=args.scrape_interval, logs=args.logs,
                       metrics=args.metrics)
    return run_demo(opts)
