"""The path one record travels from its reader to GET /alerts, as a reader of the code follows it: which project files
it crosses (the functions it calls, and the files whose names those functions use: constants, vocabulary), in what
order, and where it comes back to a file it already left.

Two headline records, each traced under both placements of the ingest micro-batch (jobs.ingest.batch: `driver`, the
batch read and processed in this process; `executors`, staged by Spark tasks), in one process (one SparkSession, one
FastAPI app):

* log: a DELAYED_LEADER_AND_ISR from its three lines: the controller's ``Sending LeaderAndIsr request to broker 2``
  (broker 1's state-change.log), broker 2's ``Handling LeaderAndIsr request correlationId 17`` and ``Finished
  LeaderAndIsr request in 8010ms correlationId 17`` (broker 2's state-change.log), read by the file source; the log
  family's batch pairs them (jobs.detect.pairing) and raises the alert. An untraced warm-up batch first pairs one
  fast LeaderAndIsr, so the traced batch takes the steady-state path (tables open, pairing state loaded).
* metric: a CONTROL_PLANE_QUEUE_BACKLOG from a live scrape: ``kafka_network_requestchannel_controlplanerequestqueuesize
  17.0`` served by an exporter endpoint on 127.0.0.1 that the Prometheus source scrapes every second. The rule needs
  ``detection.min_samples`` (2) samples in a window: an untraced warm-up batch commits the first scrape's sample, the
  traced batch the next one, whose windows read it back.

Each runs the product's own code: jobs.run.session.build_session, jobs.ingest.queries.start_ingest_queries (a 1 s
trigger, detection on) and api.main.create_app under fastapi's TestClient; the only change is the batch's placement
(``IngestBatch.where``). Under `executors` the Spark tasks run in Python workers this process does not profile: their
files are not in the count (the driver's are).

What is counted: every Python function call (sys.setprofile / threading.setprofile "call" events, in every thread of
this process) whose code lives in the project's packages (jobs/, lake/, pipelines/, schemas/, api/, planewatch/),
from the ingest query's foreachBatch entered for the record's batch to the alert's commit (the first alert write of
the batch that writes a row), then from GET /alerts entering the app to its response (the alert checked in it). To
those files the STATIC CLOSURE adds every project module a touched function names without calling into it (a
constant, a table definition, an enum read in its body, through the imports of its file), and the modules those
names' own definitions name (to 3 levels): what a reader opens to understand the functions on the way.

A file is ENTERED AGAIN when a call enters it while none of its frames is on the stack (the path had left it and
comes back); a callback into a caller still on the stack is a nested call, not a second visit.

    .venv/bin/python scripts/record_path.py [--json] [--records log,metric] [--placements driver,executors]
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import http.server
import inspect
import json
import os
import shutil
import socketserver
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
    from jobs.ingest.batch import IngestBatch

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ("jobs", "lake", "pipelines", "schemas", "api", "planewatch")
CLUSTER = "c1"
VOCABULARY = "schemas/"  # the tables', routes' and alert types' definitions
TOKEN = "record-path-token"
T0 = dt.datetime(2026, 3, 2, 8, 0, 0, tzinfo=dt.UTC)
CP_QUEUE = "kafka_network_requestchannel_controlplanerequestqueuesize"
SEND = ("[{ts}] INFO [Controller id=1 epoch=9] Sending LeaderAndIsr request to broker 2 with 1 become-leader and 0 "
        "become-follower partitions (state.change.logger)")
HANDLING = ("[{ts}] INFO [Broker id=2] Handling LeaderAndIsr request correlationId {corr} from controller 1 for 1 "
            "partitions (state.change.logger)")
FINISHED = ("[{ts}] INFO [Broker id=2] Finished LeaderAndIsr request in {ms}ms correlationId {corr} from controller 1 "
            "for 1 partitions (state.change.logger)")
BATCH_TIMEOUT_S = 120.0
# How deep the static closure follows a name's definition into the modules it names.
CLOSURE_DEPTH = 3
RECORDS = ("log", "metric")
PLACEMENTS = ("driver", "executors")
ALERTS = {"log": "DELAYED_LEADER_AND_ISR", "metric": "CONTROL_PLANE_QUEUE_BACKLOG"}
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
        return {
            "files": len(entries),
            "order": [{**asdict(e), "functions": sorted(e.functions), "into": sorted(e.into)} for e in entries],
            "revisits": revisits,
            "revisited_files": sorted({r["earlier"] for r in revisits}, key=lambda f: self.entries[f].order),
            "imported_during_trace": sorted(self.imported),
        }


TRACER = Tracer(ROOT)


# ------------------------------------------------------------------------------------------------ the static closure
def _module_file(module: str) -> str | None:
    """The project file of a dotted module name (None: not a project module)."""
    parts = module.split(".")
    if parts[0] not in PROJECT:
        return None
    for candidate in (ROOT.joinpath(*parts).with_suffix(".py"), ROOT.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            return candidate.relative_to(ROOT).as_posix()
    return None


class _Names:
    """One project file's imports (local name -> (project module, name in it or None)) and its definitions."""

    def __init__(self, rel: str) -> None:
        self.rel = rel
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        self.tree = tree
        self.imports: dict[str, tuple[str, str | None]] = {}
        package = rel[:-3].replace("/", ".").removesuffix(".__init__")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.imports[(a.asname or a.name).split(".")[0]] = (a.name if a.asname else a.name.split(".")[0],
                                                                       None)
            elif isinstance(node, ast.ImportFrom) and node.module is not None:
                base = node.module
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + (rel.endswith("__init__.py"))]
                    base = ".".join([*up, node.module])
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    self.imports[a.asname or a.name] = (sub, None) if _module_file(sub) else (base, a.name)
        self.defs: dict[str, ast.AST] = {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.defs[node.name] = node
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Name):
                        self.defs[target.id] = node

    def function(self, qualname: str) -> ast.AST | None:
        """The definition of `qualname` (Class.method, outer.<locals>.inner)."""
        parts = [p for p in qualname.split(".") if p != "<locals>"]
        node: ast.AST | None = self.defs.get(parts[0])
        for part in parts[1:]:
            if node is None:
                return None
            node = next((n for n in ast.walk(node) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef
                                                                   | ast.ClassDef) and n.name == part), None)
        return node

    def named(self, node: ast.AST) -> set[tuple[str, str | None]]:
        """The project modules (and names in them) `node` names through this file's imports."""
        out: set[tuple[str, str | None]] = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in self.imports:
                module, name = self.imports[n.id]
                if _module_file(module):
                    out.add((module, name))
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in self.imports:
                module, name = self.imports[n.value.id]
                if name is None and _module_file(f"{module}.{n.attr}"):
                    out.add((f"{module}.{n.attr}", None))
            elif isinstance(n, ast.ImportFrom) and n.module and _module_file(n.module):
                out.add((n.module, None))
        return out


_NAMES: dict[str, _Names] = {}


def _names(rel: str) -> _Names:
    if rel not in _NAMES:
        _NAMES[rel] = _Names(rel)
    return _NAMES[rel]


def static_closure(order: list[dict[str, Any]]) -> list[str]:
    """The project files the touched functions name without calling into them (see the module doc), in the order
    a reader meets them."""
    called = [e["file"] for e in order]
    seen = set(called)
    out: list[str] = []
    todo: list[tuple[str, str | None, int]] = []
    for e in order:
        names = _names(e["file"])
        for fn in e["functions"]:
            node = names.function(fn)
            if node is not None:
                todo += [(m, n, 1) for m, n in sorted(names.named(node), key=str)]
    while todo:
        module, name, depth = todo.pop(0)
        rel = _module_file(module)
        if rel is None:
            continue
        if rel not in seen:
            seen.add(rel)
            out.append(rel)
        if name is None or depth >= CLOSURE_DEPTH:
            continue
        defined = _names(rel).defs.get(name)
        if defined is not None and not isinstance(defined, ast.FunctionDef | ast.AsyncFunctionDef):
            todo += [(m, n, depth + 1) for m, n in sorted(_names(rel).named(defined), key=str)]
    return out


# ------------------------------------------------------------------------------------------------ the run
class Run:
    """What the patched foreachBatch shares with the script: arm the next non-empty batch's trace, its outcome."""

    armed = False
    done: list[tuple[Any, dict[str, Any] | None]] = []
    at_alert: dict[str, Any] | None = None  # the traced batch's files when its alert was committed


def _patch_alert_commit() -> None:
    """End the batch window where the alert is committed: the first alert write of the traced batch that writes a
    row (the process's one alerts sink). What the batch does after (dq_results, file accounting) is reported apart."""
    from jobs.detect.alerts import AlertSink

    original = AlertSink.write

    def write(self: AlertSink, *args: Any, **kwargs: Any) -> int:
        written = original(self, *args, **kwargs)
        if TRACER.active and written and Run.at_alert is None:
            Run.at_alert = TRACER.snapshot()
        return written

    AlertSink.write = write  # type: ignore[method-assign]


def _traced_batch_class(where: str) -> type[IngestBatch]:
    from jobs.ingest.batch import IngestBatch

    class TracedBatch(IngestBatch):  # scaffolding: its frames are not project frames
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["where"] = where
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


def _stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def _append(inp: Path, broker: int, *lines: str) -> None:
    d = inp / CLUSTER / f"broker-{broker}"
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "state-change.log", "a") as f:
        f.write("".join(line + "\n" for line in lines))


def _request(inp: Path, corr: int, sent: dt.datetime, took_ms: int) -> None:
    """One LeaderAndIsr from controller 1 to broker 2: its three lines, each in its broker's log."""
    _append(inp, 1, SEND.format(ts=_stamp(sent)))
    handling = sent + dt.timedelta(milliseconds=5)
    done = handling + dt.timedelta(milliseconds=took_ms)
    _append(inp, 2, HANDLING.format(ts=_stamp(handling), corr=corr),
            FINISHED.format(ts=_stamp(done), ms=took_ms + 1, corr=corr))


class _Exporter(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def _exporter(value: float) -> _Exporter:
    """A JMX exporter's endpoint on 127.0.0.1 answering the control plane's queue size."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = f"# TYPE {CP_QUEUE} gauge\n{CP_QUEUE} {value}\n".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:
            return

    server = _Exporter(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, name="record-path-exporter", daemon=True).start()
    return server


def _trace_record(spark: Any, settings: Any, client: Any, family: str, warm_up: Any, record: Any, alert_type: str,
                  where: str) -> dict[str, Any]:
    import jobs.ingest.queries
    from jobs.ingest.queries import start_ingest_queries

    jobs.ingest.queries.IngestBatch = _traced_batch_class(where)  # type: ignore[attr-defined]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    queries = start_ingest_queries(spark, settings, family)
    try:
        warm_up()
        warm, _ = _wait_batch(queries, len(Run.done))
        client.get("/alerts", headers=auth)  # the service's steady state: routes, store and tables opened
        Run.armed = True
        seen = len(Run.done)
        record()
        report, trace = _wait_batch(queries, seen)
    finally:
        Run.armed = False
        for q in queries:
            q.stop()
    assert trace is not None
    if report.path != where:
        raise RuntimeError(f"the batch ran on the {report.path}, not the {where}")
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
    if not [a for a in items if isinstance(a, dict) and a.get("type") == alert_type]:
        raise RuntimeError(f"GET /alerts has no {alert_type} alert: {json.dumps(body)[:500]}")
    out = TRACER.snapshot()
    closure = static_closure(out["order"])
    out.update({
        "batch_id": report.batch_id, "batch_records": report.raw, "warm_up_records": warm.raw, "where": report.path,
        "silver": report.silver, "alert": alert_type,
        "batch_files": sum(1 for e in out["order"] if e["phase"] == "batch"),
        "whole_batch_files": whole_batch["files"],
        "after_alert": [e["file"] for e in whole_batch["order"]
                        if e["file"] not in {x["file"] for x in trace["order"]}],
        "closure": closure, "read_files": out["files"] + len(closure),
        "entered_again": sorted({v["earlier"] for v in out["revisits"] if v["earlier_on_stack"] is None},
                                key=[e["file"] for e in out["order"]].index),
    })
    return out


def measure(tmp: Path, records: list[str], placements: list[str]) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from api.main import create_app
    from api.settings import Settings as ApiSettings
    from api.settings import get_settings
    from jobs.run.session import build_session
    from jobs.run.settings import parse_settings

    lake = tmp / "lake"
    exporter = _exporter(17.0)
    base = {"lake": str(lake), "trigger": {"interval": "1 second"}}
    _patch_alert_commit()
    spark = build_session(parse_settings(base, "record_path"), "record-path")
    spark.sparkContext.setLogLevel("ERROR")
    app = create_app()
    api_settings = ApiSettings.model_validate({"lake": lake, "api_token": TOKEN, "refresh_interval_ms": 0,
                                               "background_reload": False})
    app.dependency_overrides[get_settings] = lambda: api_settings
    results: dict[str, Any] = {}
    try:
        with TestClient(app) as client:
            for where in placements:
                for kind in records:
                    inp = tmp / f"input-{kind}-{where}"
                    inp.mkdir()
                    ck = str(tmp / f"checkpoints-{kind}-{where}")
                    if kind == "log":
                        settings = parse_settings({**base, "checkpoints": ck,
                                                   "sources": {"files": {"path": str(inp)}}}, "record_path")
                        t = T0 + dt.timedelta(minutes=10 * len(results))
                        results[f"{kind}/{where}"] = _trace_record(
                            spark, settings, client, "logs", lambda inp=inp, t=t: _request(inp, 16, t, 20),
                            lambda inp=inp, t=t: _request(inp, 17, t + dt.timedelta(seconds=1), 8009),
                            ALERTS[kind], where)
                    else:
                        url = f"http://127.0.0.1:{exporter.server_address[1]}/metrics"
                        settings = parse_settings({**base, "checkpoints": ck, "cluster": CLUSTER, "sources": {
                            "files": {"enabled": False},
                            "prometheus": {"enabled": True, "interval": "1 second",
                                           "targets": [{"url": url, "cluster": CLUSTER, "broker_id": 1}]}}},
                            "record_path")
                        results[f"{kind}/{where}"] = _trace_record(
                            spark, settings, client, "metrics", lambda: None, lambda: None, ALERTS[kind], where)
    finally:
        spark.stop()
        exporter.shutdown()
    return results


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")


def report(results: dict[str, Any]) -> None:
    for key, r in results.items():
        _say(f"== {key}: {r['alert']}: {r['read_files']} files read ({r['files']} called into + {len(r['closure'])} "
             f"named), entered again: {', '.join(r['entered_again']) or 'none'}")
        _say(f"   batch {r['batch_id']} of {r['batch_records']} record(s) on the {r['where']}; "
             f"{r['batch_files']} files called in the batch up to the alert's commit, "
             f"{r['files'] - r['batch_files']} more in GET /alerts; the whole batch calls into "
             f"{r['whole_batch_files']} (after the alert: {', '.join(r['after_alert']) or 'none'})")
        for e in r["order"]:
            into = f"; into {', '.join(e['into'])}" if e["into"] else ""
            _say(f"  {e['order']:2d}. [{e['phase']:5s}] {e['file']:40s} {e['function']}  "
                 f"({e['calls']} call(s), {len(e['functions'])} function(s); from {e['called_from']}{into})")
        _say(f"  named, not called: {', '.join(r['closure']) or 'none'}")
        for v in r["revisits"]:
            stack = f"; {v['earlier']}:{v['earlier_on_stack']} still on the stack" if v["earlier_on_stack"] else ""
            _say(f"    {v['earlier']} -> {v['later']} -> {v['earlier']}: {v['from_function']} "
                 f"{'resumes' if v['kind'] == 'resume' else 'calls'} {v['into_function']} (x{v['count']}{stack})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--records", default=",".join(RECORDS), help="log, metric (comma-separated)")
    parser.add_argument("--placements", default=",".join(PLACEMENTS), help="driver, executors (comma-separated)")
    args = parser.parse_args(argv)
    threading.setprofile(TRACER.profile)  # threads started from now on (py4j callbacks, the app's worker threads)
    tmp = Path(tempfile.mkdtemp(prefix="record-path-"))
    try:
        results = measure(tmp, args.records.split(","), args.placements.split(","))
    finally:
        threading.setprofile(None)
        sys.setprofile(None)
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        _say(json.dumps(results, indent=2, default=str))
    else:
        report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
