"""`planewatch demo`: the whole loop on one machine.

1. the API (`planewatch api`, bearer token generated) and the streaming pipeline (`planewatch pipeline` over
   ``<dir>/clusters``, continuous, short trigger) start; with Apache Kafka runs, first a logging Kafka cluster their
   brokers ship their logs to through rsyslog, which the pipeline reads too (planewatch.demo.shipping, `--logs`),
   and a Prometheus scraping their JMX exporters, which the pipeline reads (planewatch.demo.metrics_path,
   `--metrics`);
2. the scenarios run one after another, each on its own 3-broker reference cluster under
   ``<dir>/clusters/<run>/cluster`` (``<dir>/current`` points at the running one: the API's GET /cluster);
3. the demo polls GET /alerts, waits (bounded) until every injected incident is caught, prints the
   incident-to-alert table and writes it to ``<dir>/report.json``;
4. the API and pipeline keep running for the dashboard until Ctrl-C or the end of ``--duration``.

Everything it writes is under ``<dir>`` (default ``var/demo``), which it clears (its own subdirectories only) at
the start of each demo.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import IO, Any

import yaml

from pipelines.detection.metric_detectors import METRIC_RULES
from planewatch.demo.metrics_path import (
    RULES,
    operator_prometheus,
    planewatch_jobs,
    prometheus_name,
    prometheus_source,
    watching,
)
from planewatch.demo.plan import (
    ALL_RUNS,
    RUNS,
    SCRAPE_INTERVAL_S,
    DemoRun,
    Detection,
    Incident,
    ProcessFailure,
    explained_alerts,
    incidents_of,
    last_error,
    match,
    query_restarts,
    render_incidents,
    render_rolls,
    render_table,
    unexpected_alerts,
)
from planewatch.demo.processes import (
    Child,
    StartFailed,
    free_port,
    planewatch_cmd,
    wait_http_ok,
    wait_lake_ready,
    wait_pipeline_settled,
    wait_queries_started,
)
from planewatch.demo.shipping import (
    LOGGING_KAFKA,
    LOGS_TOPIC,
    logging_cluster,
    pipeline_config,
    run_dir,
    shipped_name,
)
from planewatch.demo.watch import AlertWatcher
from planewatch.kafka import expected as kafka_expected
from planewatch.kafka.prometheus import PrometheusMissing, binary
from planewatch.kafka.shipper import RsyslogMissing, rsyslogd
from schemas.inputs import InputFamily, SourceKind, ingest_query

__all__ = ["DemoOptions", "run_demo"]

# Spark, Delta and the API need this long at most to come up on a loaded 2-core machine.
API_START_S = 60.0
# How long the demo waits for the pipeline's queries (Spark start, first batches) before the first scenario.
PIPELINE_START_S = 180.0
# The pipeline's queries over the demo's file tree (one per input family: ingestion, pairing and rules).
FILE_QUERIES = tuple(ingest_query(f, SourceKind.FILES) for f in InputFamily)
# ... and the one over the logging cluster's topic, when the Apache Kafka runs' logs are shipped
KAFKA_LOG_QUERY = ingest_query(InputFamily.LOGS, SourceKind.KAFKA)
# ... and the one over the demo's Prometheus, when the metrics are read from it
PROMETHEUS_QUERY = ingest_query(InputFamily.METRICS, SourceKind.PROMETHEUS_SERVER)
# After the last scenario, how long the demo waits for alerts still in flight (watermarks, windows, triggers).
DETECTION_GRACE_S = 120.0
# After every incident is caught, how long the demo waits for each catching alert's incident (written by a later
# batch than the alert: a few triggers).
INCIDENT_GRACE_S = 30.0
# After the last run, how long the demo waits for the pipeline to have read and acted on every line written
# (SETTLE_S), a query with no batch in flight counting as done once it committed nothing for SETTLE_QUIET_S (a file
# source plans no batch without a new file; 5 triggers: a loaded machine lists the tree slowly).
SETTLE_S = 90.0
SETTLE_QUIET_S = 10.0
# Micro-batch interval of the demo's pipeline: the detection delay's floor.
TRIGGER = "2 seconds"
# A scenario run that takes longer than this is interrupted (each is bounded below it: the gated rolling restart
# waits at most 5 minutes for each of four verdicts, and takes 2-4 minutes when the cluster recovers).
RUN_TIMEOUT_S = 1500.0
# The subdirectories the demo owns under --dir (cleared at start).
OWNED = ("clusters", "shipped", "logging", "prometheus", "pipeline.yaml", "lake", "checkpoints", "timeline", "logs",
         "current", "report.json")


@dataclass(frozen=True)
class DemoOptions:
    """What `planewatch demo` was asked to do."""

    dir: Path
    port: int = 8080
    duration_s: float | None = None  # None: scenarios, table, then serve until Ctrl-C
    runs: tuple[str, ...] = tuple(r.name for r in RUNS)
    serve: bool = True
    config: Path | None = None
    scrape_interval_s: float = SCRAPE_INTERVAL_S  # Apache Kafka's exporters (the reference brokers write files)
    logs: str = "shipped"  # how the Apache Kafka runs' logs reach planewatch (planewatch.demo.shipping.LOGS_MODES)
    metrics: str = "prometheus"  # how their metrics do (planewatch.demo.metrics_path.METRICS_MODES)


class Progress:
    """One line per step, prefixed with the time since the demo started and the run being played."""

    def __init__(self, out: IO[str], total: int) -> None:
        self.out = out
        self.total = total
        self.t0 = time.monotonic()
        self.current = ""

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.t0:6.1f}s] {self.current}{text}", file=self.out, flush=True)

    def start_run(self, index: int, run: DemoRun) -> None:
        self.current = ""
        self.say(f"=== [{index}/{self.total}] {run.name}: {run.title}")
        self.current = f"{run.name}: "

    def event(self, ev: dict[str, Any]) -> None:
        skip = {"ts", "ts_ms", "scenario", "event", "dir"}
        fields = " ".join(f"{k}={v}" for k, v in ev.items() if k not in skip and not isinstance(v, dict | list))
        self.say(f"{ev.get('event')} {fields}".rstrip())


def _clear(d: Path) -> None:
    for name in OWNED:
        p = d / name
        if p.is_symlink() or p.is_file():
            p.unlink()
        elif p.is_dir():
            shutil.rmtree(p)


def _env(token: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                "PYSPARK_DRIVER_PYTHON": sys.executable, "GX_ANALYTICS_ENABLED": "False",
                "PLANEWATCH_API_TOKEN": token, "PYTHONUNBUFFERED": "1"})
    return env


def _point_current(d: Path, run_home: Path) -> None:
    link = d / "current"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(run_home.relative_to(d) / "cluster")


def _play(run: DemoRun, d: Path, env: dict[str, str], progress: Progress, deadline: float,
          scrape_interval_s: float, home: Path, ship: tuple[str, ...]) -> list[dict[str, Any]]:
    """Run one scenario as a child in `home`, echo its timeline as progress, return its events; `ship`: the
    scenario's --ship-* arguments (its brokers' logs shipped), or none."""
    kafka = ("--kafka", run.kafka, "--exporter", run.exporter, "--log4j", run.log4j, "--scrape-interval",
             str(scrape_interval_s), "--roll-check-lake", str(d / "lake"), *ship) if run.kafka else ()
    cmd = planewatch_cmd("scenario", run.scenario_name, *kafka, "--dir", str(home),
                         "--timeline", str(d / "timeline" / f"{run.name}.jsonl"))
    child = Child("scenario", cmd, d / "logs" / f"scenario-{run.name}.log", env, pipe_stdout=True)
    events: list[dict[str, Any]] = []
    stop_at = min(deadline, time.monotonic() + RUN_TIMEOUT_S)
    try:
        os.set_blocking(child.stdout.fileno(), False)
        buf = b""
        while child.alive() or buf:
            chunk = child.stdout.read() or b""
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line.startswith(b"{"):
                    ev = json.loads(line)
                    events.append(ev)
                    progress.event(ev)
            if not child.alive() and not chunk:
                break
            if time.monotonic() > stop_at:
                progress.say("time is up: interrupting the scenario")
                break
            time.sleep(0.2)
    finally:
        rc = child.stop()
    if rc not in (0, None):
        progress.say(f"scenario exited with code {rc} (see {d / 'logs' / f'scenario-{run.name}.log'})")
    return events


def _wait_detections(incidents: Sequence[Incident], watcher: AlertWatcher, progress: Progress,
                     deadline: float, children: Sequence[Child]) -> list[Detection]:
    end = min(deadline, time.monotonic() + DETECTION_GRACE_S)
    said = -1
    while all(c.alive() for c in children):
        dets = match(incidents, watcher.alerts())
        caught = sum(1 for x in dets if x.alert is not None)
        if caught != said:
            progress.say(f"{caught}/{len(incidents)} injected incidents caught so far")
            said = caught
        if caught == len(incidents) or time.monotonic() > end:
            return dets
        time.sleep(1.0)
    return match(incidents, watcher.alerts())  # nothing more can come: a process of the demo exited


def _wait_incidents(detections: Sequence[Detection], watcher: AlertWatcher, deadline: float
                    ) -> list[dict[str, Any]]:
    """The incidents, once each caught alert belongs to one (an alert's incident is written by a batch after the
    alert's), or INCIDENT_GRACE_S on."""
    end = min(deadline, time.monotonic() + INCIDENT_GRACE_S)
    caught = {x.alert.alert_id for x in detections if x.alert is not None}
    while True:
        rows = watcher.incidents()
        grouped = {aid for inc in rows for aid in inc.get("alert_ids", [])}
        if caught <= grouped or time.monotonic() > end:
            return rows
        time.sleep(1.0)


def _report(d: Path, detections: Sequence[Detection], false_alarms: Sequence[Any], engines: dict[str, str],
            failures: Sequence[ProcessFailure], watcher: AlertWatcher, causes: dict[str, str],
            explained: Sequence[Any], rolls: Mapping[str, Any], incident_rows: Sequence[Mapping[str, Any]],
            seen: Sequence[Any]) -> None:
    rows = [{**asdict(x.incident), "engine": engines.get(x.incident.run, "reference"),
             "alert": None if x.alert is None else asdict(x.alert), "delay_s": x.delay_s,
             "visible_delay_s": x.visible_delay_s,
             "incident_cause": None if x.alert is None else causes.get(x.alert.alert_id)} for x in detections]
    (d / "report.json").write_text(json.dumps(
        {"incidents": rows, "unexpected": [asdict(a) for a in false_alarms],
         "explained": [{**asdict(a), "incident_cause": causes.get(a.alert_id)} for a in explained],
         "rolling_restarts": dict(rolls),
         "incident_rows": [dict(i) for i in incident_rows if i.get("cluster") in engines],
         "failures": [asdict(f) for f in failures],
         "alerts": [asdict(a) for a in seen if a.cluster in engines],
         "alert_polls": {"polls": watcher.polls, "failed": dict(watcher.failures)}}, indent=2))


def _logging_kafka(stack: contextlib.ExitStack, d: Path, logs: str, runs: Sequence[DemoRun], progress: Progress
                   ) -> str | None:
    """Start the logging cluster when Apache Kafka runs ship their logs (`logs` not `files`): its bootstrap, or None
    (files only: asked, no Apache Kafka run, or rsyslog missing, said)."""
    if logs == "files" or not any(r.kafka for r in runs):
        return None
    try:
        rsyslogd()
    except RsyslogMissing as e:
        progress.say(f"{e}: the Apache Kafka runs' logs are read from their files")
        return None
    progress.say(f"logging cluster: Apache Kafka {LOGGING_KAFKA}, topic {LOGS_TOPIC}; the Apache Kafka runs' "
                 f"brokers ship their logs to it through rsyslog ({logs})")
    return str(stack.enter_context(logging_cluster(d / "logging")).bootstrap_servers())


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []


def _prometheus(stack: contextlib.ExitStack, d: Path, opts: DemoOptions, runs: Sequence[DemoRun],
                homes: Mapping[str, Path], progress: Progress, pipeline_address: str, api_address: str, token: str
                ) -> str | None:
    """Start the Prometheus scraping the Apache Kafka runs' exporters unless `--metrics direct`, and planewatch
    itself (the pipeline's metrics at `pipeline_address`, the API's with `token`) with the project's rules: its URL,
    or None (no Apache Kafka run, or Prometheus not installed: the pipeline then scrapes them itself)."""
    kafka_runs = [r for r in runs if r.kafka]
    if opts.metrics == "direct" or not kafka_runs:
        return None
    try:
        binary("prometheus")
    except PrometheusMissing as e:
        progress.say(f"{e}: the pipeline scrapes the exporters itself")
        return None
    cluster_jsons = {prometheus_name(r.name, opts.metrics): homes[r.name] / "cluster" / "cluster.json"
                     for r in kafka_runs}
    token_file = d / "prometheus" / "planewatch-api-token"
    token_file.parent.mkdir(parents=True, exist_ok=True)
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    watch = planewatch_jobs(pipeline_address, api_address, token_file)
    prom = stack.enter_context(operator_prometheus(d / "prometheus", opts.scrape_interval_s, cluster_jsons,
                                                   rule_files=[RULES], extra_jobs=watch))
    progress.say(f"Prometheus {prom.url} scrapes the Apache Kafka runs' exporters every {opts.scrape_interval_s:g} s; "
                 f"the pipeline reads it ({opts.metrics})")
    return prom.url


def _failures(children: Sequence[Child], logs: Path) -> list[ProcessFailure]:
    """The demo's own processes that failed so far: a child that exited, and the pipeline's query restarts."""
    out = query_restarts(_read_lines(logs / "pipeline.log"))
    for child in children:
        if not child.alive():
            out.append(ProcessFailure(child.kind, f"exited with code {child.proc.returncode}",
                                      last_error(_read_lines(logs / f"{child.kind}.log"))))
    return out


def run_demo(opts: DemoOptions, out: IO[str] = sys.stdout,
             expected: Callable[[], tuple[Sequence[Any], dict[str, tuple[str, ...]]]] | None = None) -> int:
    """The whole demo; 0 when it ran (its API and pipeline up throughout, no pipeline query failed), else 1.

    Whether each incident was caught is the table's finding, not the exit status; the table's footer names every
    failure of the demo's own processes with its error."""
    if expected is None:
        from broker.scenarios import expected as reference
        from planewatch.kafka import expected as kafka

        def expected() -> tuple[Sequence[Any], dict[str, tuple[str, ...]]]:
            return (*reference.EXPECTED, *kafka.EXPECTED), {**reference.FORBIDDEN, **kafka.FORBIDDEN}
    want, forbidden = expected()
    forbidden = dict(forbidden)
    runs = [r for r in ALL_RUNS if r.name in opts.runs]
    logs = opts.logs
    d = opts.dir.resolve()
    d.mkdir(parents=True, exist_ok=True)
    _clear(d)
    for sub in ("clusters", "lake", "checkpoints", "timeline", "logs"):
        (d / sub).mkdir()
    start = time.monotonic()
    deadline = start + opts.duration_s if opts.duration_s else float("inf")
    progress = Progress(out, len(runs))
    token = secrets.token_urlsafe(24)
    env = _env(token)
    port = free_port(opts.port)
    url = f"http://127.0.0.1:{port}"
    children: list[Child] = []
    watcher: AlertWatcher | None = None
    stack = contextlib.ExitStack()
    try:
        bootstrap = _logging_kafka(stack, d, logs, runs, progress)
        if bootstrap is None:
            logs = "files"
        homes = {r.name: run_dir(d, r.name, bool(r.kafka), logs) for r in runs}
        metrics_port = free_port(0)  # the pipeline's own metrics, which the demo's Prometheus scrapes
        prom_url = _prometheus(stack, d, opts, runs, homes, progress, f"127.0.0.1:{metrics_port}",
                               f"127.0.0.1:{port}", token)
        metrics = opts.metrics if prom_url is not None else "direct"
        api = Child("api", planewatch_cmd("api", "--lake", str(d / "lake"), "--port", str(port), "--cluster-dir",
                                          str(d / "current"), "--log-level", "warning"), d / "logs" / "api.log", env)
        children.append(api)
        pipe_args = ["pipeline", "--input", str(d / "clusters"), "--lake", str(d / "lake"), "--checkpoints",
                     str(d / "checkpoints"), "--trigger", TRIGGER]
        config = opts.config
        if bootstrap is not None or prom_url is not None:  # the logging cluster's topic, the demo's Prometheus
            config = d / "pipeline.yaml"
            server = prometheus_source(prom_url) if prom_url is not None else None
            raw = pipeline_config(opts.config, bootstrap, server)
            if prom_url is not None:
                raw["observability"] = {**raw.get("observability", {}), "metrics_port": metrics_port}
            config.write_text(yaml.safe_dump(raw, sort_keys=False))
        if config is not None:
            pipe_args += ["--config", str(config)]
        # Apache Kafka exports its metrics only on the JMX exporters' endpoints: scraped by the demo's Prometheus, or
        # by the pipeline itself while each run's cluster is up (named: a shipped run's cluster lies outside the file
        # tree; with --logs both, the shipped copy has no metrics: an endpoint is asked once, under one name)
        if metrics in ("direct", "both"):
            for run in runs:
                if run.kafka:
                    pipe_args += ["--scrape", f"{run.name}={homes[run.name] / 'cluster' / 'cluster.json'}"]
            if any(run.kafka for run in runs):
                pipe_args += ["--scrape-interval", str(opts.scrape_interval_s)]
        children.append(Child("pipeline", planewatch_cmd(*pipe_args), d / "logs" / "pipeline.log", env))
        wait_http_ok(f"{url}/livez", API_START_S, api)
        queries = (FILE_QUERIES + (KAFKA_LOG_QUERY,) * (bootstrap is not None)
                   + (PROMETHEUS_QUERY,) * (prom_url is not None))
        # the first scenario starts once the pipeline's queries are up: a Kafka cluster starting beside Spark's own
        # start-up on 2 cores made Python workers miss Spark's fixed 10 s connect-back, and a real Kafka's first
        # scrapes went unread
        if not wait_lake_ready(url, PIPELINE_START_S, children[1]):
            progress.say(f"the pipeline's tables are not all there after {PIPELINE_START_S:.0f} s; playing anyway")
        # and once each of its queries (ingestion and detection, one per family and source) committed its first
        # batch: they start one after the other, and their first batches (Python workers, the first plans, the
        # logging topic's reader: ~12 s) took 65 s while the first run's Kafka cluster started beside them on 2
        # cores; an incident played meanwhile measured the pipeline's start-up, which a pipeline running for months
        # is past, not detection
        elif not wait_queries_started(d / "checkpoints", queries, PIPELINE_START_S, children[1], committed=queries):
            progress.say(f"the pipeline's queries have not all started after {PIPELINE_START_S:.0f} s; playing anyway")
        progress.say(f"dashboard: {url}/#token={token}")
        progress.say(f"API token: {token}   (curl -H 'Authorization: Bearer {token}' {url}/alerts)")
        progress.say(f"everything is written under {d}; logs in {d / 'logs'}")
        watcher = AlertWatcher(url, token).start()
        incidents: list[Incident] = []
        rolls: dict[str, dict[str, Any]] = {}
        for i, run in enumerate(runs, 1):
            if time.monotonic() > deadline:
                progress.say(f"--duration reached: {run.name} and later runs skipped")
                break
            if not all(c.alive() for c in children):
                progress.say(f"a process of the demo exited: {run.name} and later runs not played (see "
                             f"{d / 'logs'})")
                break
            _point_current(d, homes[run.name])
            progress.start_run(i, run)
            ship = ("--ship-to", bootstrap, "--ship-topic", LOGS_TOPIC, "--ship-cluster",
                    shipped_name(run.name, logs)) if run.kafka and bootstrap is not None else ()
            events = _play(run, d, env, progress, deadline, opts.scrape_interval_s, homes[run.name], ship)
            found = incidents_of(run.name, events, want)
            incidents += found
            if ship and logs == "both":  # the same incidents, caught again through the shipped copy's lines
                copy = shipped_name(run.name, logs)  # (a metric rule's: its samples are scraped, not shipped)
                incidents += [replace(x, run=copy) for x in found if x.alert_type not in METRIC_RULES]
                forbidden[copy] = forbidden.get(run.name, ())
            if run.kafka and metrics == "both":  # the metric incidents, caught again through Prometheus's copy
                copy = prometheus_name(run.name, metrics)
                incidents += [replace(x, run=copy) for x in found if x.alert_type in METRIC_RULES]
                forbidden[copy] = forbidden.get(run.name, ())
            for ev in events:
                if ev.get("event") == "roll-finished":
                    rolls[run.name] = ev
        progress.current = ""
        played_until = time.time()
        detections = _wait_detections(incidents, watcher, progress, deadline, children)
        # the report is what the lake holds once the pipeline has read and acted on every line the runs wrote: an
        # alert of a batch still in flight joined an incident after the report and changed its cause
        settle_s = max(0.0, min(SETTLE_S, deadline - time.monotonic()))
        if not wait_pipeline_settled(d / "checkpoints", queries, played_until, SETTLE_QUIET_S, settle_s,
                                     children[1]):
            progress.say(f"the pipeline has not settled within {settle_s:.0f} s; reporting anyway")
        if not watcher.refresh():  # the API busy: once more, else the background thread's last read
            time.sleep(1.0)
            watcher.refresh()
        detections = match(incidents, watcher.alerts())
        incident_rows = _wait_incidents(detections, watcher, deadline)
        causes = watcher.causes(incident_rows)
        seen, names = watcher.alerts(), [r.name for r in runs]
        engines = {r.name: r.engine for r in runs}
        for r in runs:
            if r.kafka and logs == "both":
                names.append(shipped_name(r.name, logs))
                engines[shipped_name(r.name, logs)] = f"{r.engine}, shipped"
            if r.kafka and metrics == "both":
                names.append(prometheus_name(r.name, metrics))
                engines[prometheus_name(r.name, metrics)] = f"{r.engine}, via Prometheus"
        # an alert that caught an injected incident is that catch, whatever its run forbids otherwise
        caught = {x.alert.alert_id for x in detections if x.alert is not None}
        rest = [a for a in seen if a.alert_id not in caught]
        false_alarms = unexpected_alerts(rest, forbidden, names, causes, kafka_expected.EXPLAINED)
        explained = explained_alerts(rest, forbidden, names, causes, kafka_expected.EXPLAINED)
        failures = _failures(children, d / "logs")
        _report(d, detections, false_alarms, engines, failures, watcher, causes, explained, rolls, incident_rows,
                seen)
        print("\n" + render_table(detections, false_alarms, engines, failures, causes, explained) + "\n", file=out,
              flush=True)
        print(render_incidents(incident_rows, seen, names) + "\n", file=out, flush=True)
        if rolls:
            print(render_rolls(rolls, engines, seen) + "\n", file=out, flush=True)
        failed = sum(watcher.failures.values())
        progress.say(f"GET /alerts: {watcher.polls} polls, {failed} failed"
                     + "".join(f"; {n} x {err}" for err, n in watcher.failures.most_common()))
        if prom_url is not None:
            progress.say(f"Prometheus {prom_url} watching planewatch: {watching(prom_url)}")
        progress.say(f"report: {d / 'report.json'}; dashboard: {url}/#token={token}")
        if opts.serve and time.monotonic() < deadline and not failures:
            progress.say("the API and pipeline keep running for the dashboard; Ctrl-C stops everything")
            while time.monotonic() < deadline and all(c.alive() for c in children):
                time.sleep(0.5)
        return 0 if not failures else 1
    except KeyboardInterrupt:
        progress.current = ""
        progress.say("interrupted: stopping")
        return 130
    except StartFailed as e:  # the API or the pipeline did not come up (processes.wait_*)
        progress.current = ""
        progress.say(f"the demo could not start: {e}")
        for f in _failures(children, d / "logs"):
            progress.say(f"  {f.process}: {f.what}: {f.error or '(no error in its log)'}")
        return 1
    finally:
        if watcher is not None:
            watcher.stop()
        for child in reversed(children):  # pipeline before API
            child.stop()
        stack.close()  # the logging cluster, after the pipeline reading it
        progress.current = ""
        progress.say("stopped: clusters, pipeline and API are down")
