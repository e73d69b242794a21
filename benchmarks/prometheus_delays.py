"""Metrics through the operator's Prometheus against the pipeline's own scrape: the same incidents, caught both ways,
in one run.

    .venv/bin/python -m benchmarks.prometheus_delays [--runs a,b] [--scrape-interval 15] [--dir var/bench-prom]
                                                     [--json FILE]

Plays Apache Kafka runs of ``planewatch demo`` whose incidents are a metric rule's (default: the 4.4.0 KRaft
metadata lag and slow publish, the 3.9.1 connection storm) with ``--metrics both`` at an operator's scrape interval:
the pipeline scrapes each run's JMX exporters itself (the direct path, cluster ``<run>``) AND a Prometheus the demo
starts scrapes them at the same interval, which the same pipeline reads through its query API (cluster
``<run>-prom``). One pipeline, one lake, one machine's load: the delays differ only by the way the samples travelled
(Prometheus's own scrape phase, the read at the metrics trigger).

Prints per injected incident its alert's delay (incident -> alert readable in GET /alerts) through each path and the
difference, against the issue's bar (at most one scrape interval later than the direct scrape's).
Numbers depend on the machine's load: run it alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from planewatch.demo.metrics_path import PROM_SUFFIX

DEFAULT_RUNS = ("kraft-metadata-lag", "kraft-metadata-publish-slow", "kafka-connection-storm")
# Operators scrape every 15-60 s; the bar is one interval.
DEFAULT_SCRAPE_S = 15.0


def pairs(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each injected incident of the direct path with its copy through Prometheus: both delays (None: not caught)."""
    rows = report.get("incidents", [])
    via = {(r["run"][: -len(PROM_SUFFIX)], r["event"], r["ts_ms"], r["alert_type"], r["broker_id"]): r
           for r in rows if r["run"].endswith(PROM_SUFFIX)}
    out = []
    for r in rows:
        if r["run"].endswith(PROM_SUFFIX):
            continue
        p = via.get((r["run"], r["event"], r["ts_ms"], r["alert_type"], r["broker_id"]))
        if p is None:
            continue  # a log rule's incident: its lines are not in Prometheus
        out.append({"run": r["run"], "alert_type": r["alert_type"], "direct_s": r["delay_s"],
                    "prometheus_s": p["delay_s"], "direct_visible_s": r.get("visible_delay_s"),
                    "prometheus_visible_s": p.get("visible_delay_s")})
    return out


def _print(rows: list[dict[str, Any]], interval_s: float, seconds: float) -> None:
    def s(v: float | None) -> str:
        return "missed" if v is None else f"{v:.1f}"

    print(f"\nscrape interval {interval_s:g} s (both paths)\n{'run':<30} {'alert':<26} {'direct s':>9} "
          f"{'via Prometheus s':>17} {'diff s':>7}")
    diffs = []
    for r in rows:
        diff = None if r["direct_s"] is None or r["prometheus_s"] is None else r["prometheus_s"] - r["direct_s"]
        if diff is not None:
            diffs.append(diff)
        print(f"{r['run']:<30} {r['alert_type']:<26} {s(r['direct_s']):>9} {s(r['prometheus_s']):>17} {s(diff):>7}")
    missed = sum(1 for r in rows if r["prometheus_s"] is None)
    if diffs:
        within = sum(x <= interval_s for x in diffs)
        print(f"\nvia Prometheus - direct: median {statistics.median(diffs):+.1f} s, latest {max(diffs):+.1f} s; "
              f"at most one scrape interval ({interval_s:g} s) later: {within}/{len(diffs)}; missed through "
              f"Prometheus: {missed}")
    print(f"({seconds:.0f} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=",".join(DEFAULT_RUNS))
    parser.add_argument("--scrape-interval", type=float, default=DEFAULT_SCRAPE_S)
    parser.add_argument("--dir", type=Path, default=Path("var/bench-prom"))
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    from planewatch.demo.runner import DemoOptions, run_demo

    start = time.monotonic()
    runs = tuple(r for r in args.runs.split(",") if r)
    d = args.dir.resolve()
    rc = run_demo(DemoOptions(dir=d, port=0, duration_s=400.0 * len(runs) + 300, runs=runs, serve=False,
                              logs="files", metrics="both", scrape_interval_s=args.scrape_interval))
    report = json.loads((d / "report.json").read_text()) if (d / "report.json").exists() else {}
    rows = pairs(report)
    _print(rows, args.scrape_interval, time.monotonic() - start)
    if args.json:
        args.json.write_text(json.dumps({"scrape_interval_s": args.scrape_interval, "incidents": rows}, indent=2))
    return rc


if __name__ == "__main__":
    sys.exit(main())
