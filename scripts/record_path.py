"""The path one record travels from its input file to GET /alerts: which project files it crosses, in what order, and
where the path comes back to a file it already left.

Two record kinds, each traced on its own, in one process (one SparkSession, one FastAPI app):

* metric: ONE Prometheus-text sample, ``kafka_network_requestchannel_requestqueuesize 500.0 <ms>`` (the data-plane
  request queue at `queued.max.requests`), a new scrape file ``<input>/c1/broker-1/metrics/scrape-<ms>.prom`` read
  by the file source. A metric rule needs ``detection.min_samples`` (2) samples in a window, so an untraced warm-up
  batch first commits one sample 5 s earlier to metric_samples; the traced sample's batch reads it back
  (jobs.batch_detect.MetricRules._history) and raises REQUEST_QUEUE_SATURATED. The traced batch holds one record.
* log: ONE state-change.log line, ``[Broker id=1] Received LeaderAndIsr request with broker epoch 24 smaller than the
  current broker epoch 25``, appended to ``<input>/c1/broker-1/state-change.log`` after an untraced warm-up batch
  of one ordinary LeaderAndIsr line; the in-batch log rules (jobs.batch_detect.LogRules) raise STALE_BROKER_EPOCH
  from that one line. (The pairing query's alerts, jobs/detect.py, need two lines and a second query: not traced.)

Each runs the product's own code: jobs.io.session.build_session, jobs.ingest.start_ingest_queries (the file source,
a 1 s processing-time trigger, in-batch detection on) and api.main.create_app under fastapi's TestClient. The one
change is that every IngestBatch is built with ``where="driver"`` (jobs.ingest_batch: the batch is read by the file
source's reader, jobs.io.file_tail.read_piece, and process() runs in this process, so the whole micro-batch is
Python that sys.setprofile sees). The warm-up batch and a warm-up GET /alerts run first, untraced, so the traced
record takes the steady-state path of a running pipeline (modules imported, tables open, caches filled).

What is counted: every Python function call (sys.setprofile / threading.setprofile "call" events, in every thread of
this process) whose code lives in the project's packages jobs/, pipelines/, schemas/, api/, planewatch/ (a module
body run by an import is listed apart, not counted). The count of a record kind is two windows:

1. START: the ingest query's foreachBatch function is entered for the micro-batch that holds the record
   (jobs.ingest_batch.IngestBatch.__call__, called by Spark through py4j; what it does first is decide where the
   batch runs and read its offsets, then the file source's reader reads the input). END: the alert is committed
   (the first AlertWriter.write of the batch that writes a row returns: bronze and silver are committed and the
   alert is in `alerts`). What the batch does after that (dq_results, file accounting) is not on the record's way
   to GET /alerts; it is reported apart (the whole batch's count and the files only it crosses).
2. START: the request GET /alerts (bearer token) enters the app through the TestClient. END: the response is back
   (the alert is checked to be in it). The service reads each request's tables fresh (refresh_interval_ms=0,
   background_reload=false, as the API tests do): with the defaults a request right after the commit is served the
   previous version while the new one loads in the background, and a later request carries the alert.

Out of scope: the JVM, Spark's Python processes (the file source's planner, latestOffset/commit, runs in a Python
worker Spark starts; with the driver path no executor task runs project code), this script's own frames, the
session and app start-up, the query start (tables created, checkpoint, quality suites prepared).

The target is stated in STAGE files: the project files crossed, less the vocabulary every stage speaks (schemas/:
the tables, routes and alert types), and a stage file is VISITED AGAIN when a call enters it while none of its
frames is on the stack (the path had left it and comes back); a callback into a caller still on the stack is a
nested call, not a second visit.

Output per record kind: the stage count, the stage files visited again, the vocabulary files; then the number of
distinct project files (and, of them, how many are called at or after the file source's reader, jobs/io/file_tail.py,
is first entered); the files in order of first entry (with the function first entered, the number of calls and of
distinct functions, the project files each calls into); every revisit, a file A entered again by a call (not a
return) from a file B first entered after A, printed ``A -> B -> A`` with B's calling function and A's called
function (``A.f still on the stack``: B was reached from A and calls back into it); the files crossed through at
most 2 functions (hop candidates). A resumed generator is marked ``resume``.

    .venv/bin/python scripts/record_path.py [--json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobs.ingest_batch import IngestBatch

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ("jobs", "pipelines", "schemas", "api", "planewatch")
CLUSTER = "c1"
VOCABULARY = "schemas/"  # the tables', routes' and alert types' definitions: read by every stage, not a stage
READER = "jobs/io/file_tail.py"  # the file source's reader (read_piece): where the input is read
TOKEN = "record-path-token"
T0 = dt.datetime(2026, 3, 2, 8, 0, 0, tzinfo=dt.UTC)
QUEUE_METRIC = "kafka_network_requestchannel_requestqueuesize"
LAI_LINE = ("[{ts}] INFO [Broker id=1] Handling LeaderAndIsr request correlationId 16 from controller 1 for 3 "
            "partitions (state.change.logger)")
STALE_LINE = ("[{ts}] INFO [Broker id=1] Received LeaderAndIsr request with broker epoch 24 smaller than the current "
              "broker epoch 25 (state.change.logger)")
BATCH_TIMEOUT_S = 90.0
_GENERATOR_LIKE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR

for _k, _v in (("SPARK_LOCAL_IP", "127.0.0.1"), ("PYSPARK_PYTHON", sys.executable),
               ("PYSPARK_DRIVER_PYTHON", sys.executable), ("GX_ANALYTICS_ENABLED", "False")):
    os.environ.setdefault(_k, _v)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@dataclass
class Entry:
    order: int
    file: str
    function: str  # the first function of the file entered
    phase: str  # batch | api
    thread: str
    called_from: str | None  # the nearest project frame below the first entry (file:function)
    calls: int = 0
    functions: set[str] = field(default_factory=set)
    first_seq: int = 0  # the number of the project call that first entered the file (in the trace's calls)
    last_seq: int = 0  # ... that entered it last
    into: set[str] = field(default_factory=set)  # the project files it called into


class Tracer:
    """A profile function recording the first entry of each project file and the revisits (see the docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = str(root) + os.sep
        self._rel: dict[str, str | None] = {}
        self.lock = threading.Lock()
        self.active = False
        self.phase = "batch"
        self.reset()

    def reset(self) -> None:
        self.entries: dict[str, Entry] = {}
        self.revisits: Counter[tuple[str, str, str, str, str, str | None]] = Counter()
        self.imported: set[str] = set()
        self.seq = 0
        self._started: dict[int, Any] = {}  # generator-like frames seen (id -> code): a later call is a resume

    def rel(self, filename: str) -> str | None:
        try:
            return self._rel[filename]
        except KeyError:
            rel = None
            if filename.startswith(self.root):
                r = filename[len(self.root):]
                if r.split(os.sep, 1)[0] in PROJECT:
                    rel = r
            self._rel[filename] = rel
            return rel

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or not self.active:
            return
        code = frame.f_code
        rel = self.rel(code.co_filename)
        if rel is None:
            return
        if code.co_name == "<module>":
            self.imported.add(rel)
            return
        below: list[tuple[str, str]] = []  # project frames under this one, nearest first
        f = frame.f_back
        while f is not None:
            name = f.f_code.co_filename
            if name.startswith("<frozen importlib"):  # run by an import: not the record's path
                self.imported.add(rel)
                return
            r = self.rel(name)
            if r is not None:
                below.append((r, f.f_code.co_qualname))
            f = f.f_back
        kind = "call"
        if code.co_flags & _GENERATOR_LIKE:
            if self._started.get(id(frame)) is code:
                kind = "resume"
            else:
                self._started[id(frame)] = code
        fn = code.co_qualname
        with self.lock:
            entry = self.entries.get(rel)
            if entry is None:
                entry = self.entries[rel] = Entry(
                    len(self.entries) + 1, rel, fn, self.phase, threading.current_thread().name,
                    f"{below[0][0]}:{below[0][1]}" if below else None, first_seq=self.seq + 1)
            self.seq += 1
            entry.last_seq = self.seq
            entry.calls += 1
            entry.functions.add(fn)
            if not below or below[0][0] == rel:
                return
            caller, caller_fn = below[0]
            first = self.entries.get(caller)
            if first is not None:
                first.into.add(rel)
            if first is not None and first.order > entry.order:
                on_stack = next((f for r, f in below if r == rel), None)
                self.revisits[(rel, caller, caller_fn, fn, kind, on_stack)] += 1

    def snapshot(self) -> dict[str, Any]:
        entries = sorted(self.entries.values(), key=lambda e: e.order)
        revisits = [
            {"earlier": a, "later": b, "from_function": b_fn, "into_function": a_fn, "kind": kind,
             "earlier_on_stack": on_stack, "count": n}
            for (a, b, b_fn, a_fn, kind, on_stack), n in sorted(
                self.revisits.items(), key=lambda kv: (self.entries[kv[0][0]].order, self.entries[kv[0][1]].order))
        ]
        reader = self.entries.get(READER)
        return {
            "files": len(entries),
            # files called at or after the file source's reader first read the input (None: no reader in the trace)
            "files_from_reader": None if reader is None else sum(e.last_seq >= reader.first_seq for e in entries),
            "order": [{**asdict(e), "functions": sorted(e.functions), "into": sorted(e.into)} for e in entries],
            "revisits": revisits,
            "revisited_files": sorted({r["earlier"] for r in revisits}, key=lambda f: self.entries[f].order),
            "imported_during_trace": sorted(self.imported),
        }


TRACER = Tracer(ROOT)


class Run:
    """What the patched foreachBatch shares with the script: arm the next non-empty batch's trace, its outcome."""

    armed = False
    done: list[tuple[Any, dict[str, Any] | None]] = []
    # the traced batch's files when its alert was committed (the end of the record's way into `alerts`)
    at_alert: dict[str, Any] | None = None


def _patch_alert_commit() -> None:
    """End the batch window where the alert is committed: the first AlertWriter.write of the traced batch that
    writes a row. What the batch does after (dq_results, file accounting) is not on the record's way to GET
    /alerts; the trace goes on to the batch's end for the whole-batch numbers."""
    from jobs.alert_writer import AlertWriter

    original = AlertWriter.write

    def write(self: AlertWriter, *args: Any, **kwargs: Any) -> int:
        written = original(self, *args, **kwargs)
        if TRACER.active and written and Run.at_alert is None:
            Run.at_alert = TRACER.snapshot()
        return written

    AlertWriter.write = write  # type: ignore[method-assign]


def _traced_batch_class() -> type[IngestBatch]:
    from jobs.ingest_batch import IngestBatch

    class TracedBatch(IngestBatch):  # scaffolding: its frames are not project frames
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["where"] = "driver"
            super().__init__(*args, **kwargs)

        def __call__(self, df: Any, batch_id: int) -> None:
            armed = Run.armed
            if armed:
                Run.at_alert = None
                TRACER.reset()
                TRACER.phase = "batch"
                sys.setprofile(TRACER.profile)  # py4j's callback thread may predate threading.setprofile
                TRACER.active = True
            try:
                super().__call__(df, batch_id)
            finally:
                TRACER.active = False
                report = self.reports[-1]
                trace = None
                if armed and report.raw:
                    Run.armed = False
                    trace = TRACER.snapshot()
                Run.done.append((report, trace))

    return TracedBatch


def _wait_batch(queries: list[Any], seen: int) -> tuple[Any, dict[str, Any] | None]:
    """The first batch with records after the `seen` first ones."""
    deadline = time.monotonic() + BATCH_TIMEOUT_S
    while time.monotonic() < deadline:
        for report, trace in Run.done[seen:]:
            if report.raw:
                return report, trace
        for q in queries:
            if q.exception() is not None:
                raise RuntimeError(f"query {q.name} failed: {q.exception()}")
        time.sleep(0.1)
    raise TimeoutError(f"no batch with records within {BATCH_TIMEOUT_S:.0f} s")


def _ms(t: dt.datetime) -> int:
    return int(t.timestamp() * 1000)


def _write_scrape(inp: Path, t: dt.datetime, value: float) -> None:
    """A scrape answer holding one sample, moved into the input tree whole (a .prom file is read once)."""
    d = inp / CLUSTER / "broker-1" / "metrics"
    d.mkdir(parents=True, exist_ok=True)
    tmp = inp.parent / f"scrape-{_ms(t)}.prom"
    tmp.write_text(f"{QUEUE_METRIC} {value} {_ms(t)}\n")
    tmp.rename(d / tmp.name)


def _append_log(inp: Path, line: str, t: dt.datetime) -> None:
    d = inp / CLUSTER / "broker-1"
    d.mkdir(parents=True, exist_ok=True)
    ts = t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"
    with open(d / "state-change.log", "a") as f:
        f.write(line.format(ts=ts) + "\n")


def _trace_record(spark: Any, settings: Any, client: Any, family: str, warm_up: Any, record: Any,
                  alert_type: str, warm_get: bool) -> dict[str, Any]:
    from jobs.ingest import start_ingest_queries

    auth = {"Authorization": f"Bearer {TOKEN}"}
    queries = start_ingest_queries(spark, settings, family)
    try:
        warm_up()
        warm, _ = _wait_batch(queries, len(Run.done))
        if warm_get:  # the service's steady state: routes, store and tables opened by an earlier request
            client.get("/alerts", headers=auth)
        Run.armed = True
        seen = len(Run.done)
        record()
        report, trace = _wait_batch(queries, seen)
    finally:
        Run.armed = False
        for q in queries:
            q.stop()
    assert trace is not None
    if report.path != "driver":
        raise RuntimeError(f"the batch ran on {report.path}, not the driver")
    if Run.at_alert is None:
        raise RuntimeError(f"the traced batch committed no {alert_type} alert")
    whole_batch = trace
    trace = Run.at_alert
    TRACER.reset()
    TRACER.phase = "api"
    # carry the batch's entries on: the API window continues the same path
    TRACER.entries = {e["file"]: Entry(**{**e, "functions": set(e["functions"]), "into": set(e["into"])})
                      for e in trace["order"]}
    TRACER.seq = max((e.last_seq for e in TRACER.entries.values()), default=0)
    for r in trace["revisits"]:
        TRACER.revisits[(r["earlier"], r["later"], r["from_function"], r["into_function"], r["kind"],
                         r["earlier_on_stack"])] = r["count"]
    TRACER.imported = set(trace["imported_during_trace"])
    sys.setprofile(TRACER.profile)
    TRACER.active = True
    try:
        resp = client.get("/alerts", headers=auth)
    finally:
        TRACER.active = False
    resp.raise_for_status()
    body = resp.json()
    items = body.get("data", []) if isinstance(body, dict) else body
    found = [a for a in items if isinstance(a, dict) and a.get("type") == alert_type]
    if not found:
        raise RuntimeError(f"GET /alerts has no {alert_type} alert: {json.dumps(body)[:500]}")
    out = TRACER.snapshot()
    out.update({
        "batch_id": report.batch_id, "batch_records": report.raw, "warm_up_records": warm.raw, "where": report.path,
        "silver": report.silver, "alert": alert_type, "batch_files": sum(1 for e in out["order"]
                                                                         if e["phase"] == "batch"),
        "whole_batch_files": whole_batch["files"],
        "after_alert": [e["file"] for e in whole_batch["order"] if e["file"] not in trace_files(trace)],
    })
    out.update(path_counts(out))
    return out


def trace_files(trace: dict[str, Any]) -> set[str]:
    return {e["file"] for e in trace["order"]}


def path_counts(r: dict[str, Any]) -> dict[str, Any]:
    """The counts the target is stated in: STAGE files (the project files the record crosses, less the vocabulary
    every stage speaks: schemas/, where the tables, routes and alert types are defined) and the stage files the path
    COMES BACK to (a call into a stage file none of whose frames is on the stack: the path had left it; a callback
    into a caller still on the stack is a nested call, not a second visit)."""
    vocabulary = [e["file"] for e in r["order"] if e["file"].startswith(VOCABULARY)]
    stages = [e["file"] for e in r["order"] if not e["file"].startswith(VOCABULARY)]
    back = sorted({v["earlier"] for v in r["revisits"]
                   if v["earlier_on_stack"] is None and not v["earlier"].startswith(VOCABULARY)},
                  key=stages.index)
    return {"stage_files": len(stages), "vocabulary_files": vocabulary, "stage_revisits": back}


def measure(tmp: Path) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    import jobs.ingest
    from api.main import create_app
    from api.settings import Settings as ApiSettings
    from api.settings import get_settings
    from jobs.io.session import build_session
    from jobs.io.settings import parse_settings

    inp, lake = tmp / "input", tmp / "lake"
    inp.mkdir()
    settings = parse_settings({
        "lake": str(lake), "checkpoints": str(tmp / "checkpoints"),
        "trigger": {"interval": "1 second"},
        "sources": {"files": {"path": str(inp)}},
    }, "record_path")
    jobs.ingest.IngestBatch = _traced_batch_class()  # type: ignore[attr-defined]
    _patch_alert_commit()
    spark = build_session(settings, "record-path")
    spark.sparkContext.setLogLevel("ERROR")
    app = create_app()
    api_settings = ApiSettings.model_validate({"lake": lake, "api_token": TOKEN, "refresh_interval_ms": 0,
                                               "background_reload": False})
    app.dependency_overrides[get_settings] = lambda: api_settings
    results: dict[str, Any] = {}
    try:
        with TestClient(app) as client:
            results["metric"] = _trace_record(
                spark, settings, client, "metrics",
                lambda: _write_scrape(inp, T0, 500.0), lambda: _write_scrape(inp, T0 + dt.timedelta(seconds=5), 500.0),
                "REQUEST_QUEUE_SATURATED", warm_get=True)
            results["log"] = _trace_record(
                spark, settings, client, "logs",
                lambda: _append_log(inp, LAI_LINE, T0 + dt.timedelta(seconds=10)),
                lambda: _append_log(inp, STALE_LINE, T0 + dt.timedelta(seconds=11)),
                "STALE_BROKER_EPOCH", warm_get=False)
    finally:
        spark.stop()
    return results


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")


def _thin(r: dict[str, Any]) -> list[str]:
    """Files the record crosses through at most 2 functions: hop candidates (a forwarder calls on into other project
    files; a leaf only answers)."""
    out = []
    for e in r["order"]:
        if len(e["functions"]) <= 2:
            role = f"forwards to {', '.join(e['into'])}" if e["into"] else "leaf"
            out.append(f"{e['file']} ({', '.join(e['functions'])}; {e['calls']} call(s); {role})")
    return out


def __say(results: dict[str, Any]) -> None:
    names = {"metric": "metric sample", "log": "log line"}
    for kind, r in results.items():
        _say(f"== {names[kind]}: {r['stage_files']} stage files, {len(r['stage_revisits'])} visited again "
              f"({', '.join(r['stage_revisits']) or 'none'}); vocabulary: {', '.join(r['vocabulary_files'])}")
        _say(f"   {r['files']} project files ({r['batch_files']} in the micro-batch up to the alert's commit, "
              f"{r['files'] - r['batch_files']} more in GET /alerts; {r['files_from_reader']} called from the reader's "
              f"first read on); batch {r['batch_id']} of {r['batch_records']} record(s) on the {r['where']}, alert "
              f"{r['alert']}; the whole batch crosses {r['whole_batch_files']} (after the alert's commit: "
              f"{', '.join(r['after_alert']) or 'none'})")
        for e in r["order"]:
            into = f"; into {', '.join(e['into'])}" if e["into"] else ""
            _say(f"  {e['order']:2d}. [{e['phase']:5s}] {e['file']:40s} {e['function']}  "
                  f"({e['calls']} call(s), {len(e['functions'])} function(s); from {e['called_from']}{into})")
        _say(f"  revisits: {len(r['revisits'])} ({len(r['revisited_files'])} file(s) visited again: "
              f"{', '.join(r['revisited_files']) or 'none'})")
        for v in r["revisits"]:
            stack = f"; {v['earlier']}:{v['earlier_on_stack']} still on the stack" if v["earlier_on_stack"] else ""
            _say(f"    {v['earlier']} -> {v['later']} -> {v['earlier']}: {v['from_function']} "
                  f"{'resumes' if v['kind'] == 'resume' else 'calls'} {v['into_function']} (x{v['count']}{stack})")
        _say("  crossed through at most 2 functions:")
        for line in _thin(r):
            _say(f"    {line}")
        if r["imported_during_trace"]:
            _say(f"  imported during the trace (module bodies, not counted): {', '.join(r['imported_during_trace'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    threading.setprofile(TRACER.profile)  # threads started from now on (py4j callbacks, the app's worker threads)
    tmp = Path(tempfile.mkdtemp(prefix="record-path-"))
    try:
        results = measure(tmp)
    finally:
        threading.setprofile(None)
        sys.setprofile(None)
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        _say(json.dumps(results, indent=2, default=str))
    else:
        __say(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
