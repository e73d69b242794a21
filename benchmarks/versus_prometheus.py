"""planewatch side by side with the Prometheus rule sets operators run, on the same brokers, in one run.

    .venv/bin/python -m benchmarks.versus_prometheus [--runs a,b] [--dir var/bench-versus-prometheus]
                                                     [--duration SECONDS] [--json FILE]

Starts Alertmanager and one Prometheus per public rule set of ``conf/anchors/`` (Strimzi's Kafka rules, Confluent's
jmx-monitoring-stacks broker alerts, the Grafana Kafka mixin), each with its stack's scrape and evaluation intervals
(``benchmarks/anchors/stacks.py``), on 127.0.0.1 from Debian's packages (``scripts/bootstrap.sh`` installs them).
Then it plays ``planewatch demo`` (the same runs, pipeline and API, ``--runs`` as the demo's) while the anchors
scrape the running cluster's Prometheus endpoints: the reference brokers' and Apache Kafka's JMX exporters.

Prints, per incident (a run's timeline marker), the fastest anchor rule and planewatch alert that caught it, each
delay from the marker to the alert being readable (Alertmanager's API; planewatch's GET /alerts), both polled every
0.25 s, and the ratio; then every anchor alert that fired, with the rules that also fire on a healthy run flagged as
noise (they are not counted as detections). The machine's load average is printed with the numbers: other
processes sharing the cores slow planewatch's pipeline, not Prometheus' timers.

Bounded by ``--duration`` (the demo stops there); Ctrl-C, SIGTERM or an error stops every process it started.
The anchor alerts are kept in ``<dir>/anchors/alerts.json`` beside the demo's ``report.json``: ``--summarize DIR...``
prints one table from runs played in several parts (on a machine too loaded for the whole demo in one go).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from types import FrameType
from typing import Any

from benchmarks.anchors.score import AnchorAlert, noisy_rules, render, rows_of
from benchmarks.anchors.servers import AnchorServers, binary
from benchmarks.anchors.stacks import STACKS
from benchmarks.anchors.watch import AlertmanagerWatcher, TargetFollower
from planewatch.demo.plan import ALL_RUNS, RUNS

# The whole benchmark's bound: the default demo takes 8-12 minutes on 2 cores; past this the demo stops.
DEFAULT_DURATION_S = 1800.0


def _quiet_runs() -> set[str]:
    """Runs where nothing is injected and no alert of any type may fire (the healthy runs)."""
    from broker.scenarios import expected as reference
    from planewatch.kafka import expected as kafka

    return {run for run, types in {**reference.FORBIDDEN, **kafka.FORBIDDEN}.items() if reference.ANY in types}


def _timelines(d: Path, runs: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    """Each run's first timeline event and its ``cluster-stopped`` event (ms since the epoch)."""
    starts: dict[str, int] = {}
    stops: dict[str, int] = {}
    for run in runs:
        path = d / "timeline" / f"{run}.jsonl"
        events = [json.loads(x) for x in path.read_text().splitlines() if x.startswith("{")] if path.exists() else []
        if events:
            starts[run] = int(events[0]["ts_ms"])
        stopped = [int(e["ts_ms"]) for e in events if e.get("event") == "cluster-stopped"]
        if stopped:
            stops[run] = stopped[0]
    return starts, stops


def _version(kind: str) -> str:
    out = subprocess.run([binary(kind), "--version"], capture_output=True, text=True, check=False)
    return (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else "?"


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} / {fifteen:.1f} (1/5/15 min) on {os.cpu_count()} cores"


def _terminate(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    raise KeyboardInterrupt  # the same clean stop as Ctrl-C


def _play(d: Path, runs: list[str], duration_s: float) -> int:
    """Start the anchors, play the demo's ``runs`` under ``d``, save the anchor alerts in ``d/anchors/alerts.json``;
    the demo's exit code (1 when a child of the demo died: no report then)."""
    from planewatch.demo.runner import DemoOptions, run_demo

    shutil.rmtree(d / "anchors", ignore_errors=True)
    (d / "anchors").mkdir(parents=True)
    print(f"anchors: {_version('prometheus')}; {_version('alertmanager')}")
    for s in STACKS:
        print(f"  {s.name:<14} {s.rules.name:<30} scrape {s.scrape_interval_s:>2} s, "
              f"evaluate {s.evaluation_interval_s:>2} s ({s.intervals_from})")
    print(f"at start: {_load()}", flush=True)
    with AnchorServers(logs=d / "anchors") as servers:
        watcher = AlertmanagerWatcher(servers.alertmanager_url)
        follower = TargetFollower(d, servers)
        watcher.start()
        follower.start()
        try:
            rc = run_demo(DemoOptions(dir=d, port=0, duration_s=duration_s, runs=tuple(runs), serve=False))
        except RuntimeError as e:  # a child of the demo died (it has stopped the others): no report to compare
            print(f"the demo failed: {e}", file=sys.stderr)
            return 1
        finally:
            follower.stop()
            watcher.stop()
        (d / "anchors" / "alerts.json").write_text(json.dumps([asdict(a) for a in watcher.alerts()], indent=2))
    print(f"at the end: {_load()}", flush=True)
    return rc


def _score(dirs: list[Path]) -> dict[str, Any]:
    """The side-by-side rows of one or more played directories (``--summarize`` joins runs played separately:
    noise is any rule that fired on a healthy run of any of them)."""
    reports = [json.loads((d / "report.json").read_text()) for d in dirs]
    alerts = [AnchorAlert(**a) for d in dirs for a in json.loads((d / "anchors" / "alerts.json").read_text())]
    starts: dict[str, int] = {}
    stops: dict[str, int] = {}
    played: set[str] = set()
    for d in dirs:
        runs = sorted(p.stem for p in (d / "timeline").glob("*.jsonl"))
        played.update(runs)
        run_starts, run_stops = _timelines(d, runs)
        starts.update(run_starts)
        stops.update(run_stops)
    noisy = noisy_rules(alerts, _quiet_runs() & played)
    rows = [row for report in reports for row in rows_of(report, alerts, noisy, stops)]
    return {"rows": rows, "alerts": alerts, "noisy": noisy, "starts": starts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", default=",".join(r.name for r in RUNS), help="comma-separated demo runs")
    parser.add_argument("--dir", type=Path, default=Path("var/bench-versus-prometheus"))
    parser.add_argument("--duration", type=float, default=DEFAULT_DURATION_S, help="bound of the whole run (s)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows and anchor alerts here")
    parser.add_argument("--summarize", type=Path, nargs="+", default=None, metavar="DIR",
                        help="play nothing: one table from earlier runs' --dir (runs played in several parts)")
    args = parser.parse_args(argv)
    runs = [r for r in args.runs.split(",") if r]
    unknown = sorted(set(runs) - {r.name for r in ALL_RUNS})
    if unknown:
        parser.error(f"unknown run(s): {', '.join(unknown)}")
    signal.signal(signal.SIGTERM, _terminate)
    started = time.monotonic()
    rc = 0
    if args.summarize is None:
        rc = _play(args.dir.resolve(), runs, args.duration)
        if rc not in (0, 1) or not (args.dir / "report.json").exists():
            return rc
    scored = _score([d.resolve() for d in (args.summarize or [args.dir])])
    print("\nplanewatch versus the anchors (delays in seconds from the incident's timeline marker to the alert "
          "readable in GET /alerts or Alertmanager)\n")
    print(render(scored["rows"], scored["alerts"], scored["noisy"], scored["starts"]))
    print("\nwindow: how long the run's cluster stayed up after the marker (what the anchors could scrape); "
          "noise: rules that also fired on a healthy run, not counted")
    print(f"\n{time.monotonic() - started:.0f} s; now: {_load()}")
    if args.json:
        args.json.write_text(json.dumps({"rows": [asdict(r) | {"ratio": r.ratio} for r in scored["rows"]],
                                         "anchor_alerts": [asdict(a) for a in scored["alerts"]],
                                         "noisy_rules": sorted(scored["noisy"])}, indent=2))
    return rc


if __name__ == "__main__":
    sys.exit(main())
