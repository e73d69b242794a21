"""planewatch over Apache Kafka itself: every real-Kafka demo run, what Kafka wrote and what became of it.

    .venv/bin/python -m benchmarks.real_kafka [--runs a,b] [--dir var/bench-real-kafka] [--json FILE]

Plays the Apache Kafka runs of ``planewatch demo`` (default: all of them, 3.9.1 ZooKeeper mode and 4.4.0 KRaft) with
the streaming pipeline scraping the clusters' JMX exporters, then prints per run:

* log records Kafka wrote to state-change.log, controller.log and kafka-request.log, the raw_logs rows of those files,
  how many became silver rows, were recognised but unused, or were quarantined (a real Kafka line in quarantine is a
  parser bug);
* scraped metric samples, how many resolved to a known planewatch signal, and the quarantined ones (by stage: a scrape
  of a stopped or paused JVM is a ``source`` row, a sample that fails parsing or validation is a bug);
* control requests paired (completed / in flight / never completed) against Kafka's INFO ``Handling`` lines;
(after the demo, one ``planewatch pipeline --once`` over the same checkpoints reads what the demo's pipeline had not
read yet when it stopped: the demo stops once every incident is caught)
* each injected incident's alert and its delay from the incident to the alert being readable in GET /alerts, and any
  alert where none was expected;
* the pages: the demo's API pushes its alerts to a real Alertmanager (Debian's, group_wait 0, every alert its own
  group) whose webhook receiver counts each notification per run, with its delay from the alert's start (a healthy
  roll's symptoms are expected and page nothing; a ROLL_TOO_FAST pages). ``--no-pages`` leaves Alertmanager out.

Numbers depend on the machine's load: run it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.anchors.pager import Pager
from benchmarks.anchors.servers import AnchorServers
from benchmarks.exit import exit_with
from planewatch.demo.plan import ALL_RUNS

KAFKA_RUNS = tuple(r.name for r in ALL_RUNS if r.kafka)
LOG_FILES = re.compile(r"^(state-change|controller|kafka-request)\.log")
_START = re.compile(rb"^\[\d{4}-\d\d-\d\d ")
_HANDLING = re.compile(rb"\] INFO \[Broker id=\d+\] Handling (LeaderAndIsr|StopReplica) request correlationId")


def _table(lake: Path, name: str) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    try:
        return list(DeltaTable(str(lake / name)).to_pyarrow_table().to_pylist())
    except Exception:
        return []


def _kafka_records(cluster: Path) -> tuple[int, int, set[str]]:
    """(log4j records, INFO Handling lines, the files) of Kafka's state-change/controller/request logs."""
    records = handling = 0
    files: set[str] = set()
    for f in cluster.rglob("*"):
        if f.is_file() and LOG_FILES.match(f.name):
            files.add(str(f))
            for line in f.read_bytes().split(b"\n"):
                records += bool(_START.match(line))
                handling += bool(_HANDLING.search(line))
    return records, handling, files


# How often the demo's API pushes its alerts while paging is measured (its default is 5 s).
PUSH_INTERVAL_S = 1.0


def summarize(d: Path, runs: list[str], pages: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Per run: the numbers of the module docstring, from the demo's directory."""
    lake = d / "lake"
    raw = _table(lake, "raw_logs")
    quarantine = _table(lake, "quarantine")
    silver_tables = {t: _table(lake, t) for t in ("state_change_events", "request_events")}
    samples = _table(lake, "metric_samples")
    latency = _table(lake, "control_request_latency")
    report = json.loads((d / "report.json").read_text()) if (d / "report.json").exists() else {}
    from pipelines.parsing import SIGNALS

    known = set(SIGNALS)
    out = []
    for run in runs:
        cluster = d / "clusters" / run / "cluster"
        written, handling, files = _kafka_records(cluster)
        mine = [r for r in raw if r["source"] in files]
        q_logs = [r for r in quarantine if r["source"] in files]
        q_metrics = Counter(r["stage"] for r in quarantine if r["cluster"] == run and r["source"] not in files
                            and r["target_table"] == "metric_samples")
        silver = sum(1 for rows in silver_tables.values() for r in rows if r.get("source") in files)
        run_samples = [s for s in samples if s["cluster"] == run]
        lat = Counter((r["request"], r["status"]) for r in latency if r["cluster"] == run)
        incidents = [{"alert": i["alert_type"], "caught": i["alert"] is not None, "delay_s": i["delay_s"]}
                     for i in report.get("incidents", []) if i["run"] == run]
        unexpected = [f"{a['type']} broker {a['broker_id']}" for a in report.get("unexpected", [])
                      if a["cluster"] == run]
        out.append({"run": run, "log_records_written": written, "raw_logs_rows": len(mine),
                    "quarantined_log_rows": len(q_logs), "silver_rows": silver,
                    "handling_info_lines": handling,
                    "latency_rows": {f"{k[0]}/{k[1]}": v for k, v in sorted(lat.items())},
                    "metric_samples": len(run_samples),
                    "metric_samples_known_signal": sum(1 for s in run_samples if s["signal"] in known),
                    "quarantined_metric_rows": dict(q_metrics), "incidents": incidents, "unexpected": unexpected,
                    "pages": None if pages is None else [p for p in pages if p["cluster"] == run]})
    return out


def _print(rows: list[dict[str, Any]], elapsed_s: float) -> None:
    print(f"planewatch over Apache Kafka: {len(rows)} run(s), {elapsed_s:.0f} s")
    for r in rows:
        print(f"\n{r['run']}")
        print(f"  Kafka log records written {r['log_records_written']:>7}   raw_logs {r['raw_logs_rows']:>7}   "
              f"silver {r['silver_rows']:>7}   quarantined {r['quarantined_log_rows']}")
        print(f"  INFO Handling lines {r['handling_info_lines']}   control_request_latency {r['latency_rows']}")
        print(f"  metric samples {r['metric_samples']} ({r['metric_samples_known_signal']} of a known signal)   "
              f"quarantined metric rows {r['quarantined_metric_rows'] or 0}")
        for i in r["incidents"]:
            print(f"  incident -> {i['alert']}: " + (f"caught in {i['delay_s']:.1f} s" if i["caught"] else "MISSED"))
        print(f"  unexpected alerts: {', '.join(r['unexpected']) or 'none'}")
        if r["pages"] is not None:
            print("  pages: " + (", ".join(f"{p['type']} broker {p['broker_id']} {p['delay_s']:.1f} s after its start"
                                           for p in r["pages"]) or "none"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", default=",".join(KAFKA_RUNS), help="comma-separated Apache Kafka demo runs")
    parser.add_argument("--dir", type=Path, default=Path("var/bench-real-kafka"))
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    parser.add_argument("--summarize-only", action="store_true", help="only read an earlier run's --dir")
    parser.add_argument("--no-pages", dest="pages", action="store_false",
                        help="run without Alertmanager (no page counts)")
    parser.add_argument("--scrape-interval", type=float, default=None, metavar="SECONDS",
                        help="how often the exporters are scraped (default: the demo's)")
    args = parser.parse_args(argv)
    runs = [r for r in args.runs.split(",") if r]
    unknown = sorted(set(runs) - set(KAFKA_RUNS))
    if unknown:
        parser.error(f"not Apache Kafka runs: {', '.join(unknown)} (known: {', '.join(KAFKA_RUNS)})")
    start = time.monotonic()
    pages: list[dict[str, Any]] | None = None
    if not args.summarize_only:
        cmd = [sys.executable, "-m", "planewatch.cli", "demo", "--dir", str(args.dir), "--port", "0", "--runs",
               ",".join(runs), "--no-serve", "--duration", str(300 * len(runs) + 300),
               # its accounting matches raw rows to the files Kafka wrote by path: the file path (the shipped one:
               # benchmarks.shipped_delays)
               "--logs", "files"]
        if args.scrape_interval is not None:
            cmd += ["--scrape-interval", str(args.scrape_interval)]
        if args.pages:
            with Pager() as pager, AnchorServers((), webhook_url=pager.url) as servers:
                env = {**os.environ, "PLANEWATCH_ALERTMANAGER_URL": servers.alertmanager_url,
                       "PLANEWATCH_PUSH_INTERVAL_S": str(PUSH_INTERVAL_S)}
                subprocess.run(cmd, check=False, env=env)
                pages = pager.pages()
        else:
            subprocess.run(cmd, check=False)
        # the demo stops once every incident is caught: the last runs' lines may still be unread; drain them
        drain = [sys.executable, "-m", "planewatch.cli", "pipeline", "--once", "--input", str(args.dir / "clusters"),
                 "--lake", str(args.dir / "lake"), "--checkpoints", str(args.dir / "checkpoints")]
        subprocess.run(drain, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = summarize(args.dir.resolve(), runs, pages)
    _print(rows, time.monotonic() - start)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    exit_with(main())
