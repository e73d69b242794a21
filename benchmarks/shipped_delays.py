"""Logs as operators ship them against the file path: the same incidents, caught through both, in one run.

    .venv/bin/python -m benchmarks.shipped_delays [--runs a,b] [--dir var/bench-shipped] [--json FILE]

Plays the Apache Kafka runs of ``planewatch demo`` (default: all three of the default demo, 3.9.1 ZooKeeper mode and
4.4.0 KRaft) with ``--logs both``: each run's brokers write their log files into the demo's file tree, which the
pipeline reads (the file path, cluster ``<run>``), AND rsyslog ships the same files into a topic of a logging Kafka
cluster, which the same pipeline reads (the shipped path, cluster ``<run>-shipped``). One pipeline, one lake, one
machine's load: the delays differ only by the way the lines travelled (rsyslog's imfile and omkafka, the logging
cluster, the Kafka source's trigger and de-duplication against the file source's tail).

Prints per injected incident its alert's delay (incident -> alert readable in GET /alerts) through each path and the
difference (the earliest alert of the type on each cluster: not always the same alert), what the shipped path
stored (records read from the topic, kept, dropped as delivered twice), then every alert raised through both ways
(same type, broker and start: the same lines) with how much later the shipped twin was readable: the path's own
cost, alert by alert; last, the two log queries' batches (medians of the batch and of its read): where it comes from.
Numbers depend on the machine's load: run it alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.batch_reports import parse_all, stage_medians
from benchmarks.exit import exit_with
from planewatch.demo.plan import RUNS
from planewatch.demo.shipping import SHIPPED_SUFFIX
from schemas.inputs import InputFamily, SourceKind, ingest_query

DEFAULT_RUNS = tuple(r.name for r in RUNS if r.kafka)
# the two log queries compared batch by batch: the file path's and the shipped path's
LOG_QUERIES = (ingest_query(InputFamily.LOGS, SourceKind.FILES), ingest_query(InputFamily.LOGS, SourceKind.KAFKA))
# The bar: the shipped path's delays within this of the file path's, per incident.
WITHIN_S = 2.0


def pairs(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each injected incident of the file path with its shipped copy: both delays (None: not caught)."""
    rows = report.get("incidents", [])
    shipped = {(r["run"][: -len(SHIPPED_SUFFIX)], r["event"], r["ts_ms"], r["alert_type"], r["broker_id"]): r
               for r in rows if r["run"].endswith(SHIPPED_SUFFIX)}
    out = []
    for r in rows:
        if r["run"].endswith(SHIPPED_SUFFIX):
            continue
        s = shipped.get((r["run"], r["event"], r["ts_ms"], r["alert_type"], r["broker_id"]))
        out.append({"run": r["run"], "alert_type": r["alert_type"], "broker_id": r["broker_id"],
                    "files_s": r["delay_s"], "shipped_s": None if s is None else s["delay_s"],
                    "files_visible_s": r.get("visible_delay_s"),
                    "shipped_visible_s": None if s is None else s.get("visible_delay_s"), "paired": s is not None})
    return out


def twins(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each alert of a file-path cluster with its twin of the shipped copy (same type, broker and start: raised from
    the same lines), and how much later the twin was readable in GET /alerts (negative: earlier)."""
    alerts = report.get("alerts", [])
    shipped = {(a["cluster"][: -len(SHIPPED_SUFFIX)], a["type"], a["broker_id"], a["visible_ms"]): a
               for a in alerts if a["cluster"].endswith(SHIPPED_SUFFIX)}
    out = []
    for a in alerts:
        twin = shipped.get((a["cluster"], a["type"], a["broker_id"], a["visible_ms"]))
        if twin is not None and a["visible_ms"] is not None:
            out.append({"run": a["cluster"], "type": a["type"], "broker_id": a["broker_id"],
                        "files_visible_s": (a["seen_ms"] - a["visible_ms"]) / 1000,
                        "shipped_visible_s": (twin["seen_ms"] - a["visible_ms"]) / 1000,
                        "later_s": (twin["seen_ms"] - a["seen_ms"]) / 1000})
    return out


def _print_twins(rows: list[dict[str, Any]]) -> None:
    print(f"\nthe same alert through both ways (same type, broker and start):\n{'run':<44} {'alert':<34} {'broker':>6} "
          f"{'files: from visible s':>21} {'shipped':>8} {'later s':>8}")
    for r in rows:
        print(f"{r['run']:<44} {r['type']:<34} {r['broker_id']!s:>6} {r['files_visible_s']:>21.1f} "
              f"{r['shipped_visible_s']:>8.1f} {r['later_s']:>+8.1f}")
    later = sorted(r["later_s"] for r in rows)
    if later:
        print(f"shipped later than files: median {statistics.median(later):+.1f} s, p90 "
              f"{later[int(0.9 * (len(later) - 1))]:+.1f} s, max {later[-1]:+.1f} s; within {WITHIN_S:g} s: "
              f"{sum(abs(x) <= WITHIN_S for x in later)}/{len(later)}")


def batch_stages(lines: list[str]) -> dict[str, dict[str, float]]:
    """Per log query, over its batches that read records: how many, the median records, the median batch seconds
    and the median of its `read` stage (the file path: the driver reads the pieces; the shipped path: the Spark job
    that reads the topic, de-duplicates and collects)."""
    reports = parse_all(lines)
    out = {}
    for q in LOG_QUERIES:
        medians = stage_medians([b for b in reports if b.query == q])
        if medians:
            out[q] = {"batches": medians["batches"], "records": medians["records"], "seconds": medians["seconds"],
                      "read_s": medians.get("read", 0.0)}
    return out


def _print_stages(stages: dict[str, dict[str, float]]) -> None:
    print(f"\n{'log query (batches with records)':<34} {'batches':>8} {'records':>8} {'batch s':>8} {'read s':>7}"
          "  (medians)")
    for q in LOG_QUERIES:
        if q in stages:
            r = stages[q]
            print(f"{q:<34} {r['batches']:>8.0f} {r['records']:>8.0f} {r['seconds']:>8.2f} {r['read_s']:>7.2f}")


def _dedup_counts(lake: Path) -> dict[str, int]:
    from deltalake import DeltaTable

    from schemas.dq import DEDUP_EXPECTATION, DEDUP_SUITE

    rows = DeltaTable(str(lake / "dq_results")).to_pyarrow_table().to_pylist()
    mine = [r for r in rows if r["suite"] == DEDUP_SUITE and r["expectation"] == DEDUP_EXPECTATION]
    read = sum(int(r["element_count"] or 0) for r in mine)
    dropped = sum(int(r["unexpected_count"] or 0) for r in mine)
    return {"read": read, "kept": read - dropped, "dropped_twice": dropped}


def _print(rows: list[dict[str, Any]], counts: dict[str, int], seconds: float) -> None:
    def s(v: float | None) -> str:
        return "missed" if v is None else f"{v:.1f}"

    print(f"\n{'run':<44} {'alert':<34} {'files s':>8} {'shipped s':>10} {'diff s':>7}   {'from visible: files':>19} "
          f"{'shipped':>8} {'diff':>6}")
    diffs = []
    for r in rows:
        if not r["paired"]:
            print(f"{r['run']:<44} {r['alert_type']:<34} {s(r['files_s']):>8} {'-':>10} {'-':>7}   (a metric rule's "
                  "alert: its samples are scraped, not shipped)")
            continue
        diff = None if r["files_s"] is None or r["shipped_s"] is None else r["shipped_s"] - r["files_s"]
        vdiff = (None if r["files_visible_s"] is None or r["shipped_visible_s"] is None
                 else r["shipped_visible_s"] - r["files_visible_s"])
        if diff is not None:
            diffs.append(diff)
        print(f"{r['run']:<44} {r['alert_type']:<34} {s(r['files_s']):>8} {s(r['shipped_s']):>10} {s(diff):>7}   "
              f"{s(r['files_visible_s']):>19} {s(r['shipped_visible_s']):>8} {s(vdiff):>6}")
    if diffs:
        print(f"\nshipped - files: median {statistics.median(diffs):+.1f} s, worst {max(diffs, key=abs):+.1f} s; "
              f"within {WITHIN_S:g} s: {sum(abs(x) <= WITHIN_S for x in diffs)}/{len(diffs)}")
    print(f"shipped path: {counts['read']} records read from the topic, {counts['kept']} kept, "
          f"{counts['dropped_twice']} dropped as delivered twice")
    print(f"({seconds:.0f} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=",".join(DEFAULT_RUNS))
    parser.add_argument("--dir", type=Path, default=Path("var/bench-shipped"))
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    from planewatch.demo.runner import DemoOptions, run_demo

    start = time.monotonic()
    runs = tuple(r for r in args.runs.split(",") if r)
    d = args.dir.resolve()
    rc = run_demo(DemoOptions(dir=d, port=0, duration_s=300.0 * len(runs) + 300, runs=runs, serve=False,
                              logs="both"))
    report = json.loads((d / "report.json").read_text()) if (d / "report.json").exists() else {}
    rows = pairs(report)
    same = twins(report)
    _print(rows, _dedup_counts(d / "lake"), time.monotonic() - start)
    _print_twins(same)
    log = d / "logs" / "pipeline.log"
    stages = batch_stages(log.read_text(errors="replace").splitlines()) if log.exists() else {}
    _print_stages(stages)
    if args.json:
        args.json.write_text(json.dumps({"incidents": rows, "same_alerts": same, "batches": stages}, indent=2))
    return rc


if __name__ == "__main__":
    exit_with(main())
