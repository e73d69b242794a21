"""Catch-up: the pipeline stopped for an hour while Kafka kept writing, then restarted. How long until it has caught
up, how large did its batches get, and were the gap's incidents raised, marked as found late?

Run: ``.venv/bin/python -m benchmarks.catch_up [--gap-minutes 60] [--brokers 30] [--dir DIR] [--json]``

What it does (one run directory: ``--dir``, kept, or a temp dir removed at the end unless --keep):
1. the soak's generator (benchmarks.soak_load: N brokers' state-change, server and controller logs, a jmx_exporter
   scrape per broker every 15 s, scrapes older than 10 minutes pruned like a landing zone's, an 8 s LeaderAndIsr
   every --incident-every-s) writes --before-minutes of output, stamped as it happened, ending an hour ago;
2. ``planewatch pipeline --once`` processes it: the pipeline was running then (its checkpoints are where a stopped
   pipeline leaves them);
3. the generator writes the gap: the --gap-minutes up to now, as fast as it can, stamped as it happened (log
   rotation, incidents and scrape pruning on that clock), while no pipeline runs;
4. ``planewatch pipeline`` (continuous, conf/pipeline.yaml) and ``planewatch api`` start, and the generator goes on
   live (Kafka keeps writing while the pipeline catches up);
5. until every gap incident's alert is readable in GET /alerts and /health's data age of control_request_latency
   and metric_samples is under CAUGHT_UP_AGE_S (or --timeout-minutes): polls every second, and prints the
   catch-up time, the micro-batches of the catch-up (count, largest records and seconds per query, from the
   pipeline's log), and each gap incident: its broker, when it happened, when its alert became readable after the
   restart, and the alert's `found_late_s`.
Exit 0 when every gap incident was raised and marked as found late and the pipeline caught up, else 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import queue
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.batch_reports import parse_all
from benchmarks.soak import ALERT_START_SLACK_S, API_START_S, INCIDENT_ALERT, PIPELINE_START_S, Api, Run, say
from benchmarks.soak_load import CLUSTER, TICK_S, Incident, KafkaOutput, Load
from pipelines.detection.lifecycle import FOUND_LATE
from planewatch.demo.processes import Child, free_port, planewatch_cmd, wait_http_ok

# Caught up: the newest row of these tables is at most this old (GET /health's data_age_s).
CAUGHT_UP_TABLES = ("control_request_latency", "metric_samples")
CAUGHT_UP_AGE_S = 30.0
POLL_S = 1.0
# An incident this much older than FOUND_LATE at the restart must be marked found late (a younger one may not be:
# the restarted pipeline can reach it within FOUND_LATE of its event time).
FOUND_LATE_MARGIN_S = 60.0
# `planewatch pipeline --once` over the minutes before the gap: a Spark start plus those minutes' batches.
ONCE_TIMEOUT_S = 900.0
# A micro-batch line of the pipeline's log: its query, its raw records, its seconds.


@dataclass
class GapIncident:
    """An incident written while the pipeline was down, and what the restarted pipeline made of it."""

    broker: int
    sent_at: float
    found_after_s: float | None = None  # seconds after the restart its alert was readable
    found_late_s: float | None = None  # the alert's evidence
    alert_id: str | None = None


def backfill(gen: KafkaOutput, start: float, end: float) -> list[Incident]:
    """Step the generator from `start` to `end` (epoch seconds) as fast as it goes; the incidents it injected."""
    now = start
    while now < end:
        now = min(end, now + TICK_S)
        gen.step(now)
    out: list[Incident] = []
    while True:
        try:
            out.append(gen.incidents.get_nowait())
        except queue.Empty:
            return out


def check(api: Api, inc: GapIncident, restart: float) -> None:
    """Look for the incident's alert (its broker, started at the incident) and note when and how late."""
    page = api.get(f"/alerts?broker_id={inc.broker}&type={INCIDENT_ALERT}&limit=100")
    for row in page.get("data", []):
        started = row.get("started_at")
        if started and abs(dt.datetime.fromisoformat(started).timestamp() - inc.sent_at) <= ALERT_START_SLACK_S + 10:
            ev = row.get("evidence")
            ev = json.loads(ev) if isinstance(ev, str) else (ev or {})
            inc.found_after_s = time.monotonic() - restart
            inc.found_late_s = ev.get("found_late_s") if isinstance(ev, dict) else None
            inc.alert_id = row.get("alert_id")
            return


def data_ages(api: Api) -> dict[str, float]:
    try:
        h = api.get("/health")
    except (OSError, ValueError, http.client.HTTPException):
        return {}
    return {t["name"]: t["data_age_s"] for t in h.get("tables", [])
            if t.get("name") in CAUGHT_UP_TABLES and isinstance(t.get("data_age_s"), int | float)}


def batches(log: Path) -> dict[str, dict[str, float]]:
    """Per ingest query of the pipeline's log: batches, largest raw records, largest and total seconds."""
    out: dict[str, dict[str, float]] = {}
    for report in parse_all(log.read_text(encoding="utf-8", errors="replace").splitlines()):
        q = out.setdefault(report.query, {"batches": 0, "max_raw": 0, "max_s": 0.0, "total_s": 0.0})
        q["batches"] += 1
        q["max_raw"] = max(q["max_raw"], report.raw)
        q["max_s"] = max(q["max_s"], report.seconds)
        q["total_s"] += report.seconds
    return out


def catch_up(opts: argparse.Namespace) -> int:
    t0 = time.monotonic()
    d = (opts.dir or Path(tempfile.mkdtemp(prefix="pw-catchup-"))).resolve()
    run = Run(d)
    for sub in (run.input, run.lake, run.checkpoints, run.logs):
        sub.mkdir(parents=True, exist_ok=True)
    (run.input / CLUSTER).mkdir(exist_ok=True)
    load = Load(opts.brokers, opts.lines_per_s, opts.samples_per_s, opts.incident_every_s, 3600.0)
    gap_s, before_s = opts.gap_minutes * 60, opts.before_minutes * 60
    start = time.time() - gap_s - before_s
    gen = KafkaOutput(run.input, load, start)
    env = run.env()
    stop = threading.Event()
    live: threading.Thread | None = None
    result: dict[str, Any] = {"gap_minutes": opts.gap_minutes, "brokers": opts.brokers}
    failures: list[str] = []
    try:
        backfill(gen, start, start + before_s)
        say(f"{opts.before_minutes:g} min before the gap written; planewatch pipeline --once over them", t0)
        once = Child("pipeline", planewatch_cmd("pipeline", "--once", "--input", str(run.input), "--lake",
                                                     str(run.lake), "--checkpoints", str(run.checkpoints)),
                     run.logs / "pipeline-once.log", env)
        run.children.append(once)
        code = once.proc.wait(ONCE_TIMEOUT_S)
        if code != 0:
            failures.append(f"pipeline --once exited {code} (see {run.logs}/pipeline-once.log)")
            return 1
        gap_start = start + before_s
        t_gap = time.monotonic()
        gap = backfill(gen, gap_start, time.time())
        result["gap_written_s"] = round(time.monotonic() - t_gap, 1)
        result["gap_lines"] = gen.lines
        say(f"the gap written ({result['gap_written_s']} s, {len(gap)} incidents); the pipeline restarts", t0)
        port = free_port(0)
        api = Api(port, run.token)
        restart, restart_at = time.monotonic(), time.time()
        pipe = Child("pipeline", planewatch_cmd("pipeline", "--input", str(run.input), "--lake", str(run.lake),
                                                "--checkpoints", str(run.checkpoints)), run.logs / "pipeline.log", env)
        api_child = Child("api", planewatch_cmd("api", "--lake", str(run.lake), "--host", "127.0.0.1", "--port",
                                                str(port), "--log-level", "warning"), run.logs / "api.log", env)
        run.children += [api_child, pipe]
        live = threading.Thread(target=gen.run, args=(stop, time.time() + opts.timeout_minutes * 60),
                                name="catch-up-generator", daemon=True)
        live.start()
        wait_http_ok(f"http://127.0.0.1:{port}/livez", API_START_S, api_child)
        incidents = [GapIncident(i.broker, i.sent_at) for i in gap]
        deadline = restart + opts.timeout_minutes * 60
        caught: float | None = None
        while time.monotonic() < deadline and pipe.alive():
            for inc in incidents:
                if inc.found_after_s is None:
                    try:
                        check(api, inc, restart)
                    except (OSError, ValueError, http.client.HTTPException):
                        pass
            ages = data_ages(api)
            fresh = len(ages) == len(CAUGHT_UP_TABLES) and max(ages.values()) <= CAUGHT_UP_AGE_S
            if fresh and all(i.found_after_s is not None for i in incidents):
                caught = time.monotonic() - restart
                break
            time.sleep(POLL_S)
        if not pipe.alive():
            failures.append(f"the pipeline exited {pipe.proc.returncode} (see {run.logs}/pipeline.log)")
        result["caught_up_after_s"] = None if caught is None else round(caught, 1)
        result["start_budget_s"] = PIPELINE_START_S
        result["batches"] = batches(run.logs / "pipeline.log")
        result["incidents"] = [asdict(i) for i in incidents]
        if caught is None:
            failures.append(f"not caught up within {opts.timeout_minutes:g} min")
        missed = [i for i in incidents if i.found_after_s is None]
        due = FOUND_LATE.total_seconds() + FOUND_LATE_MARGIN_S
        unmarked = [i for i in incidents
                    if i.found_after_s is not None and i.found_late_s is None and restart_at - i.sent_at > due]
        if missed:
            failures.append(f"{len(missed)} of {len(incidents)} gap incidents not raised")
        if unmarked:
            failures.append(f"{len(unmarked)} gap incident(s) raised without found_late_s")
        api.close()
    finally:
        stop.set()
        if live is not None:
            live.join(10)
        gen.close()
        for child in reversed(run.children):
            child.stop()
    result["failures"] = failures
    (d / "summary.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2) if opts.json else render(result))
    if opts.dir is None and not opts.keep:
        shutil.rmtree(d, ignore_errors=True)
    else:
        say(f"summary in {d / 'summary.json'}, logs in {run.logs}", t0)
    return 1 if failures else 0


def render(r: dict[str, Any]) -> str:
    lines = [f"catch-up after a {r['gap_minutes']:g}-minute stop, {r['brokers']} brokers: "
             f"{r.get('gap_lines', 0):,} state-change lines written in all, the gap in {r.get('gap_written_s')} s",
             f"caught up after: {r.get('caught_up_after_s')} s (pipeline start included; every gap incident's alert "
             f"readable and data age <= {CAUGHT_UP_AGE_S:g} s)", "", "query                      batches  max records  "
             "max s  total s"]
    for q, b in sorted(r.get("batches", {}).items()):
        lines.append(f"{q:<26} {b['batches']:>7.0f}  {b['max_raw']:>11,.0f}  {b['max_s']:>5.1f}  {b['total_s']:>7.1f}")
    lines += ["", "incident  broker  happened (UTC)       readable after restart  found_late_s"]
    for n, i in enumerate(r.get("incidents", []), 1):
        at = dt.datetime.fromtimestamp(i["sent_at"], dt.UTC).strftime("%H:%M:%S")
        found = f"{i['found_after_s']:.1f} s" if i["found_after_s"] is not None else "NOT RAISED"
        lines.append(f"{n:>8}  {i['broker']:>6}  {at:<19}  {found:>22}  {i['found_late_s']}")
    lines += [f"FAILED: {f}" for f in r.get("failures", [])]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.catch_up", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gap-minutes", type=float, default=60.0, help="how long the pipeline was down (default 60)")
    p.add_argument("--before-minutes", type=float, default=3.0, help="output processed before the stop (default 3)")
    p.add_argument("--brokers", type=int, default=30)
    p.add_argument("--lines-per-s", type=float, default=300.0)
    p.add_argument("--samples-per-s", type=float, default=80.0)
    p.add_argument("--incident-every-s", type=float, default=300.0)
    p.add_argument("--timeout-minutes", type=float, default=30.0, help="give up catching up after this long")
    p.add_argument("--dir", type=Path, default=None)
    p.add_argument("--keep", action="store_true")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if a.gap_minutes <= 0 or a.brokers < 1 or a.timeout_minutes <= 0:
        p.error("--gap-minutes, --brokers and --timeout-minutes must be positive")
    return catch_up(a)


if __name__ == "__main__":
    sys.exit(main())
