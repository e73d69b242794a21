"""Soak: planewatch run as an operator runs it, for a long time, under a steady Kafka load; does it stay flat?

Run: ``.venv/bin/python -m benchmarks.soak --minutes 120 --brokers 30 [--dir DIR] [--json]``
(short try: ``--minutes 8 --sample-s 30``).

What it does (everything under one run directory: ``--dir``, kept, or a temp dir removed at the end unless --keep):
1. starts ``planewatch pipeline`` (conf/pipeline.yaml: its trigger, sink and detection; --input/--lake/--checkpoints
   under the run dir) and ``planewatch api`` (bearer token, 127.0.0.1, a free port) as their own process groups;
2. once the pipeline's queries run, a generator thread (benchmarks.soak_load) writes what N brokers of one
   cluster write, under
   ``input/<cluster>/broker-<id>/``: steady state-change.log chatter (LeaderAndIsr and UpdateMetadata from the
   controller, broker 1, each handled in milliseconds: 5 lines per request pair, --lines-per-s in total), a few
   server.log and controller.log lines, one Prometheus scrape file per broker every 15 s (jmx_exporter names,
   --samples-per-s in total; scrape files older than --scrape-retention-s are pruned like a landing zone's), every
   log renamed hourly to ``<name>.YYYY-MM-DD-HH`` (log4j's DailyRollingFileAppender), and one incident every
   --incident-every-s (the first at half of it): a LeaderAndIsr of 8 s on one broker (DELAYED_LEADER_AND_ISR,
   benchmarks.detection_latency.incident_lines: Sending + Handling first, stamped 8 s back, so the controller's
   log holds one line out of time order per incident; the Finished line 0.3 s later, stamped now);
3. every --sample-s appends one JSON line to ``samples.jsonl``: per Delta table its live files, version, _delta_log
   files and bytes on disk (removed files included); per checkpoint its bytes, files and newest offset file's size;
   RSS, PSS, threads, open files and CPU (cores) of the pipeline's and the API's whole process trees (JVM and Python
   workers), and the JVM's own RSS and threads; the micro-batch durations the pipeline logged since the last sample
   (jobs.ingest.batch's BatchReport, the log batches' pairing); GET /alerts latency p50/p99 over 20 requests;
   GET /health's data age of control_request_latency and metric_samples (does the pipeline keep up); the input
   tree's files and bytes;
4. each incident's detection delay: from the Finished line's flush to its alert (that broker, started at the
   incident) in GET /alerts, polled every 0.5 s;
5. at the end (or Ctrl-C) prints per measure the first period's mean (the first 10% of samples, at least 3), the
   last period's, their ratio, the least-squares slope per hour over the run and over its second half, and which
   measures grow (last/first over 1.25 and both slopes positive: one that levelled off, as Spark's checkpoint does
   once it keeps its 100 batches, is flat; versions, table bytes and Delta log files grow with the data by design
   and are listed apart); then each incident's delay. Samples in ``samples.jsonl``, the summary in ``summary.json``.
   Exit 0 when the run completed with both processes up, 1 when one of them died or did not start.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import math
import os
import queue
import re
import secrets
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import psutil
from deltalake import DeltaTable

from benchmarks.batch_reports import parse
from benchmarks.soak_load import CLUSTER, SCRAPE_RETENTION_S, Incident, KafkaOutput, Load
from planewatch.demo.processes import (
    Child,
    StartFailed,
    free_port,
    planewatch_cmd,
    wait_http_ok,
    wait_lake_ready,
    wait_queries_started,
)

INCIDENT_ALERT = "DELAYED_LEADER_AND_ISR"
# An alert of the incident's broker started this much before the incident's Sending line still counts as its own
# (alert started_at is the request's start, possibly rounded).
ALERT_START_SLACK_S = 2.0
# Detection delay polling: resolution and give-up (the pipeline is broken, not slow).
ALERT_POLL_S = 0.5
INCIDENT_TIMEOUT_S = 300.0
# After the load ends, how long the run waits for the alerts of incidents still pending.
DETECTION_GRACE_S = 90.0
# GET /alerts requests per sample (sequential, one keep-alive connection): p50 and p99 of these.
API_REQUESTS = 20
HTTP_TIMEOUT_S = 10.0
# Start-up budget of the API, and of the pipeline's tables and queries, on a loaded 2-core machine.
API_START_S = 90.0
PIPELINE_START_S = 300.0
# The queries whose first checkpoint must exist before the load starts: one per input family (ingestion, pairing,
# rules).
QUERIES = ("ingest_logs_files", "ingest_metrics_files")
# Summary: a period is the first/last 10% of the samples, at least 3.
PERIOD_SHARE = 0.1
PERIOD_MIN_SAMPLES = 3
# A measure "grows" when its last period is over this many times its first and its slope is positive.
GROWTH_RATIO = 1.25
# Measures that grow with the data by design (every commit is a version; data and Delta's log are kept 30 days
# by default); reported, not counted as a failure to stay flat.
EXPECTED_GROWTH = re.compile(r"^table\.\w+\.(version|bytes|log_files)$|^(input|generator)\.")

# --- the measures -----------------------------------------------------------------------------------------------


def dir_bytes(path: Path) -> tuple[int, int]:
    """(bytes, files) under `path`, files that vanish meanwhile skipped."""
    total = files = 0
    for root, _, names in os.walk(path):
        for n in names:
            try:
                total += os.stat(os.path.join(root, n), follow_symlinks=False).st_size
                files += 1
            except OSError:
                pass
    return total, files


def table_measures(lake: Path) -> dict[str, float]:
    """Per Delta table: live files of the snapshot, version, files in _delta_log, bytes on disk."""
    out: dict[str, float] = {}
    if not lake.is_dir():
        return out
    for d in sorted(p for p in lake.iterdir() if (p / "_delta_log").is_dir()):
        key = f"table.{d.name}"
        try:
            t = DeltaTable(str(d))
            out[f"{key}.live_files"] = len(t.file_uris())
            out[f"{key}.version"] = t.version()
        except Exception:  # mid-commit or not yet a table: the next sample reads it
            pass
        out[f"{key}.log_files"] = sum(1 for _ in (d / "_delta_log").iterdir())
        out[f"{key}.bytes"] = dir_bytes(d)[0]
    return out


def checkpoint_measures(checkpoints: Path) -> dict[str, float]:
    """Per query: checkpoint bytes and files, the newest offsets/<n> file's size."""
    out: dict[str, float] = {}
    if not checkpoints.is_dir():
        return out
    for d in sorted(p for p in checkpoints.iterdir() if p.is_dir()):
        key = f"checkpoint.{d.name}"
        out[f"{key}.bytes"], out[f"{key}.files"] = dir_bytes(d)
        offsets = [p for p in (d / "offsets").glob("[0-9]*") if p.name.isdigit()] if (d / "offsets").is_dir() else []
        if offsets:
            try:
                out[f"{key}.offset_file_bytes"] = max(offsets, key=lambda p: int(p.name)).stat().st_size
            except OSError:
                pass
    return out


class TreeMeter:
    """RSS, threads, open files and CPU (cores over the last period) of a process and all its descendants."""

    def __init__(self, name: str, pid: int) -> None:
        self.name = name
        self.root = psutil.Process(pid)
        self.cpu: dict[tuple[int, float], float] = {}
        self.at = time.monotonic()

    def _procs(self) -> Iterator[psutil.Process]:
        yield self.root
        yield from self.root.children(recursive=True)

    def read(self) -> dict[str, float]:
        rss = pss = threads = fds = 0
        jvm: dict[str, float] = {}  # the JVM alone (Spark's driver): where a thread or heap growth lives
        cpu: dict[tuple[int, float], float] = {}
        for p in self._procs():
            try:
                with p.oneshot():
                    if p.name() == "java":
                        jvm = {f"{self.name}.jvm.rss_mb": p.memory_info().rss / 2**20,
                               f"{self.name}.jvm.threads": p.num_threads()}
                    rss += p.memory_info().rss
                    try:  # proportional: pages shared by the forked Python workers counted once
                        pss += p.memory_full_info().pss
                    except (psutil.AccessDenied, AttributeError):
                        pass
                    threads += p.num_threads()
                    fds += p.num_fds()
                    t = p.cpu_times()
                    cpu[(p.pid, p.create_time())] = t.user + t.system
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                pass
        now = time.monotonic()
        used = sum(v - self.cpu.get(k, 0.0) for k, v in cpu.items())
        cores = used / (now - self.at) if now > self.at else 0.0
        self.cpu, self.at = cpu, now
        n = self.name
        return {f"{n}.rss_mb": rss / 2**20, f"{n}.pss_mb": pss / 2**20, f"{n}.threads": threads,
                f"{n}.open_files": fds, f"{n}.cpu_cores": cores, f"{n}.processes": len(cpu), **jvm}


# jobs.detect.rules's log rules (the ingest batches: benchmarks.batch_reports):
# "<query> batch <id>: pairing ...; pairing <ms> ms, rules <ms> ms, alerts <ms> ms" (inside the batch's seconds).
_PAIRING_BATCH = re.compile(r" (?P<q>\w+) batch \d+: pairing .*; pairing (?P<ms>\d+) ms, rules \d+ ms, alerts \d+ ms")
_PROBLEM = re.compile(r" (WARNING|ERROR|CRITICAL) ")


def batch_seconds(lines: Sequence[str]) -> dict[str, list[float]]:
    """Micro-batch durations (s) per query in pipeline log lines, and the pairing's part of the log batches
    (`<query>.pairing`)."""
    out: dict[str, list[float]] = {}
    for line in lines:
        if (report := parse(line)) is not None:
            out.setdefault(report.query, []).append(report.seconds)
        elif m := _PAIRING_BATCH.search(line):
            out.setdefault(f"{m['q']}.pairing", []).append(int(m["ms"]) / 1000)
    return out


class LogTail:
    """The lines a growing log gained since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.rest = b""

    def new_lines(self) -> list[str]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        *lines, self.rest = (self.rest + data).split(b"\n")
        return [x.decode("utf-8", "replace") for x in lines]


class Api:
    """GET requests to the API with its token over one keep-alive connection."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.headers = {"Authorization": f"Bearer {token}"}
        self.conn: http.client.HTTPConnection | None = None

    def get(self, path: str) -> Any:
        for attempt in (0, 1):  # a closed keep-alive connection is reopened once
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HTTP_TIMEOUT_S)
            try:
                self.conn.request("GET", path, headers=self.headers)
                r = self.conn.getresponse()
                body = r.read()
            except (OSError, http.client.HTTPException):
                self.close()
                if attempt:
                    raise
                continue
            if r.status != 200:
                raise OSError(f"GET {path}: HTTP {r.status}")
            return json.loads(body)
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


# Tables whose freshness (GET /health: seconds since the newest row's event time) says whether the pipeline keeps
# up: paired control requests (logs through pairing) and metric samples (scrapes through ingestion).
FRESHNESS_TABLES = ("control_request_latency", "metric_samples")


def freshness(api: Api) -> dict[str, float]:
    """GET /health: data age (s) of FRESHNESS_TABLES, and 1 when the API says the pipeline keeps up."""
    try:
        h = api.get("/health")
    except (OSError, ValueError, http.client.HTTPException):
        return {}
    out: dict[str, float] = {"health.keeping_up": float(bool(h.get("keeping_up")))}
    for t in h.get("tables", []):
        if t.get("name") in FRESHNESS_TABLES and isinstance(t.get("data_age_s"), int | float):
            out[f"health.{t['name']}.data_age_s"] = t["data_age_s"]
    return out


def percentile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def api_latency(api: Api, n: int = API_REQUESTS) -> dict[str, float]:
    """GET /alerts (first page) n times: p50/p99 in ms, and how many failed."""
    lat: list[float] = []
    failed = 0
    for _ in range(n):
        t0 = time.perf_counter()
        try:
            api.get("/alerts")
        except (OSError, ValueError, http.client.HTTPException):
            failed += 1
            continue
        lat.append((time.perf_counter() - t0) * 1000)
    out: dict[str, float] = {"api.alerts_failed": failed}
    if lat:
        out |= {"api.alerts_p50_ms": percentile(lat, 0.5), "api.alerts_p99_ms": percentile(lat, 0.99)}
    return out


@dataclass
class Detection:
    """An incident and when (if) its alert became readable in GET /alerts."""

    incident: Incident
    delay_s: float | None = None
    alert_id: str | None = None
    severity: str | None = None
    timed_out: bool = False


class IncidentWatcher:
    """Polls GET /alerts for each injected incident's alert (its broker, started at the incident) every 0.5 s."""

    def __init__(self, api: Api, incidents: queue.Queue[Incident]) -> None:
        self.api = api
        self.incidents = incidents
        self.pending: list[Detection] = []
        self.done: list[Detection] = []
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-incidents", daemon=True)

    def start(self) -> IncidentWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(HTTP_TIMEOUT_S * 2)

    def all(self) -> list[Detection]:
        return sorted([*self.done, *self.pending], key=lambda d: d.incident.index)

    def _check(self, det: Detection) -> bool:
        inc = det.incident
        page = self.api.get(f"/alerts?broker_id={inc.broker}&type={INCIDENT_ALERT}&limit=100")
        for row in page.get("data", []):
            started = row.get("started_at")
            if started and dt.datetime.fromisoformat(started).timestamp() >= inc.sent_at - ALERT_START_SLACK_S:
                det.delay_s = time.monotonic() - inc.finished_mono
                det.alert_id, det.severity = row.get("alert_id"), row.get("severity")
                return True
        if time.monotonic() - inc.finished_mono > INCIDENT_TIMEOUT_S:
            det.timed_out = True
            return True
        return False

    def _run(self) -> None:
        while not self._stop.is_set():
            while True:
                try:
                    self.pending.append(Detection(self.incidents.get_nowait()))
                except queue.Empty:
                    break
            for det in list(self.pending):
                try:
                    finished = self._check(det)
                except (OSError, ValueError, http.client.HTTPException):
                    self.errors += 1
                    continue
                if finished:
                    self.pending.remove(det)
                    self.done.append(det)
            self._stop.wait(ALERT_POLL_S)

    def idle(self) -> bool:
        return not self.pending and self.incidents.empty()


# --- the summary ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trend:
    """One measure over the run: first and last period means, their ratio, the least-squares slope per hour."""

    measure: str
    first: float | None
    last: float | None
    ratio: float | None
    slope_per_h: float | None
    slope_last_half_per_h: float | None  # ~0 for a measure that grew, then levelled off (a retention kicked in)
    samples: int
    grows: bool
    expected: bool  # grows with the data by design (EXPECTED_GROWTH)


def slope_per_hour(ts_s: Sequence[float], ys: Sequence[float]) -> float | None:
    """Least-squares slope of ys over ts (seconds), per hour; None with fewer than 2 distinct times."""
    if len(ts_s) < 2:
        return None
    mt, my = statistics.fmean(ts_s), statistics.fmean(ys)
    den = sum((t - mt) ** 2 for t in ts_s)
    if den == 0:
        return None
    return sum((t - mt) * (y - my) for t, y in zip(ts_s, ys, strict=True)) / den * 3600


def period_size(n: int) -> int:
    """Samples in the first (and last) period: 10% of the run, at least 3 (all when fewer)."""
    return min(n, max(PERIOD_MIN_SAMPLES, math.ceil(PERIOD_SHARE * n)))


def trends(samples: Sequence[dict[str, Any]]) -> list[Trend]:
    """Each numeric measure of the samples (``{"t": seconds, "measures": {...}}``) summarised."""
    names = sorted({k for s in samples for k in s["measures"]})
    out = []
    for name in names:
        pts = [(float(s["t"]), float(v)) for s in samples
               if isinstance(v := s["measures"].get(name), int | float) and not isinstance(v, bool)]
        if not pts:
            continue
        k = period_size(len(pts))
        first = statistics.fmean(y for _, y in pts[:k])
        last = statistics.fmean(y for _, y in pts[-k:])
        ratio = last / first if first else None
        slope = slope_per_hour([t for t, _ in pts], [y for _, y in pts])
        half = pts[len(pts) // 2:]
        late = slope_per_hour([t for t, _ in half], [y for _, y in half])
        grows = len(pts) >= 2 * PERIOD_MIN_SAMPLES and bool(slope and slope > 0) and bool(late and late > 0) and (
            (ratio is not None and ratio > GROWTH_RATIO) or (first == 0 and last > 0))
        out.append(Trend(name, first, last, ratio, slope, late, len(pts), grows, bool(EXPECTED_GROWTH.search(name))))
    return out


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0 or 0.01 <= abs(x) < 1e6:
        return f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"
    return f"{x:.3g}"


def render(rows: Sequence[Trend], detections: Sequence[Detection], minutes: float) -> str:
    """The table an operator reads: every measure, then the incidents, then the verdict."""
    w = max([len(r.measure) for r in rows] + [7])
    lines = [f"{'measure':<{w}}  {'first':>10}  {'last':>10}  {'ratio':>6}  {'slope/h':>10}  {'late/h':>10}  n   "
             "trend"]
    for r in rows:
        trend = ("grows (data)" if r.expected else "GROWS") if r.grows else "flat"
        lines.append(f"{r.measure:<{w}}  {_num(r.first):>10}  {_num(r.last):>10}  "
                     f"{'-' if r.ratio is None else f'{r.ratio:.2f}':>6}  {_num(r.slope_per_h):>10}  "
                     f"{_num(r.slope_last_half_per_h):>10}  "
                     f"{r.samples:<3} {trend}")
    lines.append("")
    lines.append("incident  broker  Finished written (UTC)   detection delay")
    for d in detections:
        at = dt.datetime.fromtimestamp(d.incident.finished_at, dt.UTC).strftime("%H:%M:%S")
        delay = (f"{d.delay_s:.1f} s ({d.severity})" if d.delay_s is not None
                 else f"no alert after {INCIDENT_TIMEOUT_S:.0f} s" if d.timed_out else "pending at the end")
        lines.append(f"{d.incident.index + 1:>8}  {d.incident.broker:>6}  {at:<23}  {delay}")
    if not detections:
        lines.append("(none injected)")
    growing = [r.measure for r in rows if r.grows and not r.expected]
    lines.append("")
    lines.append(f"verdict after {minutes:.1f} min: " + ("flat" if not growing else "grows: " + ", ".join(growing)))
    return "\n".join(lines)


def summary_json(rows: Sequence[Trend], detections: Sequence[Detection], minutes: float,
                 failures: Sequence[str]) -> dict[str, Any]:
    return {"minutes": minutes, "measures": [asdict(r) for r in rows],
            "incidents": [{**asdict(d.incident), "delay_s": d.delay_s, "alert_id": d.alert_id,
                           "severity": d.severity, "timed_out": d.timed_out} for d in detections],
            "growing": [r.measure for r in rows if r.grows and not r.expected], "failures": list(failures)}


# --- the run ----------------------------------------------------------------------------------------------------


@dataclass
class Options:
    minutes: float
    load: Load
    sample_s: float
    dir: Path | None
    keep: bool
    json: bool
    pipeline_args: tuple[str, ...] = ()


@dataclass
class Run:
    """The run's directory, processes and sampling state."""

    d: Path
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    children: list[Child] = field(default_factory=list)

    @property
    def input(self) -> Path:
        return self.d / "input"

    @property
    def lake(self) -> Path:
        return self.d / "lake"

    @property
    def checkpoints(self) -> Path:
        return self.d / "checkpoints"

    @property
    def logs(self) -> Path:
        return self.d / "logs"

    def env(self) -> dict[str, str]:
        return {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                "PYSPARK_DRIVER_PYTHON": sys.executable, "GX_ANALYTICS_ENABLED": "False",
                "PLANEWATCH_API_TOKEN": self.token, "PYTHONUNBUFFERED": "1"}


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def say(text: str, t0: float) -> None:
    print(f"[{time.monotonic() - t0:7.1f}s] {text}", file=sys.stderr, flush=True)


def sample(run: Run, meters: Sequence[TreeMeter], api: Api, tail: LogTail, gen: KafkaOutput) -> dict[str, Any]:
    m: dict[str, Any] = {}
    for meter in meters:
        try:
            m |= meter.read()
        except psutil.NoSuchProcess:
            pass
    m |= table_measures(run.lake)
    m |= checkpoint_measures(run.checkpoints)
    new = tail.new_lines()
    for q, secs in batch_seconds(new).items():
        m[f"batch.{q}.mean_s"] = statistics.fmean(secs)
        m[f"batch.{q}.max_s"] = max(secs)
        m[f"batch.{q}.count"] = len(secs)
    m["pipeline.log_warnings"] = sum(1 for x in new if _PROBLEM.search(x))
    m |= api_latency(api)
    m |= freshness(api)
    m["input.bytes"], m["input.files"] = dir_bytes(run.input)
    m["generator.lines"], m["generator.samples"] = gen.lines, gen.samples
    return m


def soak(opts: Options) -> int:
    t0 = time.monotonic()
    d = (opts.dir or Path(tempfile.mkdtemp(prefix="pw-soak-"))).resolve()
    d.mkdir(parents=True, exist_ok=True)
    run = Run(d)
    for sub in (run.input, run.lake, run.checkpoints, run.logs):
        sub.mkdir(parents=True, exist_ok=True)
    port = free_port(0)
    api = Api(port, run.token)
    stop = threading.Event()
    gen_thread: threading.Thread | None = None
    watcher: IncidentWatcher | None = None
    samples: list[dict[str, Any]] = []
    failures: list[str] = []
    load_start = time.monotonic()
    old_term = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    say(f"run dir {d}; {opts.load.brokers} brokers, {opts.load.lines_per_s:g} lines/s, "
        f"{opts.load.samples_per_s:g} samples/s, {opts.minutes:g} min", t0)
    try:
        env = run.env()
        api_child = Child("api", planewatch_cmd("api", "--lake", str(run.lake), "--host", "127.0.0.1", "--port",
                                                str(port), "--log-level", "warning"), run.logs / "api.log", env)
        run.children.append(api_child)
        pipe = Child("pipeline", planewatch_cmd("pipeline", "--input", str(run.input), "--lake", str(run.lake),
                                                "--checkpoints", str(run.checkpoints), *opts.pipeline_args),
                     run.logs / "pipeline.log", env)
        run.children.append(pipe)
        # the cluster's directories exist from the start (as a broker's log.dirs), the files come with the load
        (run.input / CLUSTER).mkdir(exist_ok=True)
        wait_http_ok(f"http://127.0.0.1:{port}/livez", API_START_S, api_child)
        if not wait_lake_ready(f"http://127.0.0.1:{port}", PIPELINE_START_S, pipe):
            say(f"the pipeline's tables are not all there after {PIPELINE_START_S:.0f} s; loading anyway", t0)
        elif not wait_queries_started(run.checkpoints, QUERIES, PIPELINE_START_S, pipe):
            say(f"the pipeline's queries have not all started after {PIPELINE_START_S:.0f} s; loading anyway", t0)
        say(f"pipeline and API up (http://127.0.0.1:{port}); the load starts", t0)
        meters = [TreeMeter("pipeline", pipe.proc.pid), TreeMeter("api", api_child.proc.pid)]
        tail = LogTail(run.logs / "pipeline.log")
        tail.new_lines()  # start-up's batches are not the soak's
        load_start = time.monotonic()
        gen = KafkaOutput(run.input, opts.load, time.time())
        gen_thread = threading.Thread(target=gen.run, args=(stop, time.time() + opts.minutes * 60),
                                      name="soak-generator", daemon=True)
        gen_thread.start()
        watcher = IncidentWatcher(Api(port, run.token), gen.incidents).start()
        end = load_start + opts.minutes * 60
        next_sample = load_start + opts.sample_s
        with open(d / "samples.jsonl", "a", encoding="utf-8") as out:
            while time.monotonic() < end:
                time.sleep(max(0.0, min(next_sample, end) - time.monotonic()))
                if time.monotonic() < next_sample:
                    continue
                next_sample += opts.sample_s
                dead = [c for c in run.children if not c.alive()]
                if dead:
                    failures += [f"{c.kind} exited with code {c.proc.returncode} (see {run.logs}/{c.kind}.log)"
                                 for c in dead]
                    break
                if not gen_thread.is_alive():
                    failures.append("the generator stopped early")
                    break
                mm = sample(run, meters, api, tail, gen)
                s = {"t": round(time.monotonic() - load_start, 1), "wall": time.time(), "measures": mm}
                samples.append(s)
                out.write(json.dumps(s) + "\n")
                out.flush()
                say(f"sample {len(samples)}: pipeline {mm.get('pipeline.rss_mb', 0):.0f} MB "
                    f"{mm.get('pipeline.cpu_cores', 0):.2f} cores, api {mm.get('api.rss_mb', 0):.0f} MB, "
                    f"/alerts p99 {mm.get('api.alerts_p99_ms', math.nan):.1f} ms, incidents {gen.injected}", t0)
        stop.set()
        gen_thread.join(10)
        grace = time.monotonic() + DETECTION_GRACE_S
        while not failures and not watcher.idle() and time.monotonic() < grace and all(
                c.alive() for c in run.children):
            time.sleep(ALERT_POLL_S)
    except KeyboardInterrupt:
        say("interrupted: summarising what was sampled", t0)
    except StartFailed as e:
        failures.append(f"start failed: {e} (see {run.logs})")
    finally:
        stop.set()
        if gen_thread is not None:
            gen_thread.join(10)
        if watcher is not None:
            watcher.stop()
        api.close()
        for child in reversed(run.children):  # pipeline before API
            child.stop()
        signal.signal(signal.SIGTERM, old_term)
    minutes = (time.monotonic() - load_start) / 60 if samples else 0.0
    detections = watcher.all() if watcher is not None else []
    rows = sorted(trends(samples) + trends([  # the delays as one more measure: do they drift?
        {"t": x.incident.finished_mono - load_start, "measures": {"incident.delay_s": x.delay_s}}
        for x in detections if x.delay_s is not None]), key=lambda r: r.measure)
    summary = summary_json(rows, detections, minutes, failures)
    (d / "summary.json").write_text(json.dumps(summary, indent=2))
    if opts.json:
        print(json.dumps(summary, indent=2))
    else:
        print(render(rows, detections, minutes))
        for f in failures:
            print(f"FAILED: {f}")
    if opts.dir is None and not opts.keep:
        shutil.rmtree(d, ignore_errors=True)
    else:
        say(f"samples in {d / 'samples.jsonl'}, summary in {d / 'summary.json'}, logs in {run.logs}", t0)
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=120.0, help="how long the load runs (default 120)")
    p.add_argument("--brokers", type=int, default=30, help="brokers of the cluster (default 30)")
    p.add_argument("--lines-per-s", type=float, default=300.0, help="state-change lines per second, all brokers")
    p.add_argument("--samples-per-s", type=float, default=80.0, help="metric samples per second, all brokers")
    p.add_argument("--incident-every-s", type=float, default=300.0, help="seconds between incidents (0: none)")
    p.add_argument("--sample-s", type=float, default=60.0, help="seconds between two samples (default 60)")
    p.add_argument("--rotate-s", type=float, default=3600.0, help="log rotation period (default hourly)")
    p.add_argument("--scrape-retention-s", type=float, default=SCRAPE_RETENTION_S,
                   help="delete scrape files older than this (0: keep all)")
    p.add_argument("--config", type=Path, default=None, help="the pipeline's config (default conf/pipeline.yaml)")
    p.add_argument("--trigger", default=None, help="the pipeline's trigger interval, e.g. '2 seconds' (default: "
                   "the config's)")
    p.add_argument("--dir", type=Path, default=None, help="run directory (kept); default a temp dir")
    p.add_argument("--keep", action="store_true", help="keep the temp run directory")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    a = p.parse_args(argv)
    if a.brokers < 1 or a.minutes <= 0 or a.sample_s <= 0 or a.lines_per_s < 0 or a.samples_per_s < 0 \
            or a.rotate_s <= 0:
        p.error("--brokers, --minutes, --sample-s and --rotate-s must be positive, the rates not negative")
    load = Load(a.brokers, a.lines_per_s, a.samples_per_s, a.incident_every_s, a.rotate_s,
                scrape_retention_s=a.scrape_retention_s)
    extra = (*(("--config", str(a.config)) if a.config else ()), *(("--trigger", a.trigger) if a.trigger else ()))
    return soak(Options(a.minutes, load, a.sample_s, a.dir, a.keep, a.json, extra))


if __name__ == "__main__":
    sys.exit(main())
