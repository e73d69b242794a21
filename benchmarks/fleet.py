"""A fleet's logs through the pipeline: N brokers of many clusters shipped into a logging cluster's topic, read by
the log job (spark-submit jobs/ingest_logs.py) with detection on, the lake on an object store.

    .venv/bin/python -m benchmarks.fleet [--brokers 2000] [--backlog-lines 1000000] [--minutes 5]
                                         [--modes standalone,local] [--trigger '1 second']

Per mode (`standalone`: a Spark master and two workers on this machine, each pinned to its own CPU, an executor of
one core in each; `local`: local[2], everything in the driver's JVM), the same run:

1. **backlog**: once the job has committed a warm-up (WARM_UP_LINES), `--backlog-lines` of the fleet's steady
   output (benchmarks.fleet_load, stamped over the past, as a logging pipeline's outage leaves them) produced at
   once; the job drains them: lines/s, and lines per CPU-second of the Spark processes (driver and executors,
   their Python workers included: "per core");
2. **steady**: the fleet's output produced as it is stamped, for `--minutes`, with an injected slow LeaderAndIsr
   every `--incident-every` seconds: the delay from its Finished line's produce to its DELAYED_LEADER_AND_ISR alert
   readable in the lake (p50, p99; the lake read every POLL_S by a thread apart from the producing loop,
   LakeWatch), driver and executor memory every 10 s (first third against last third), the medians of the steady
   batches' stages (the job's BatchReport lines, benchmarks.batch_reports);
3. inside the steady phase, a **controller failover** of a 500-broker cluster (~77,000 lines in ~2 s, one broker's
   LeaderAndIsr slow) and a **rolling restart** of a 100-broker cluster: the time until every produced line is in
   raw_logs, and the burst's alert.

Apache Kafka 4.4.0 (one KRaft broker) is the logging cluster; s3proxy (planewatch.objectstore) serves the lake.
Everything shares this machine's cores: the producer, Kafka and s3proxy included. Say what else ran.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from deltalake import DeltaTable

from benchmarks.batch_reports import parse_all, stage_medians
from benchmarks.exit import exit_with
from benchmarks.fleet_load import FAILOVER, INCIDENT_S, ROLL, Fleet, Incident, fleet_specs
from lake.storage import filesystem, join
from schemas.inputs import Placement

REPO = Path(__file__).resolve().parents[1]
TOPIC_PARTITIONS = 4  # the logging topic: a broker's files spread over them (keyed by host and file)
LOGGING_KAFKA = "4.4.0"
# The steady phase produces this often (what a shipper's linger does to its batches).
TICK_S = 0.5
SAMPLE_S = 10.0
POLL_S = 1.0
# How long the lake watch may take to finish its poll in progress when the steady phase ends.
STOP_S = 60.0
# The bursts, seconds into the steady phase.
FAILOVER_AT_S, ROLL_AT_S = 40.0, 90.0
# The job's start (JVMs, session, first batch) is not the drain's: the drain's clock starts at its first commit.
JOB_START_TIMEOUT_S = 300.0
# Lines the job commits before the drain is timed (a few batches: JIT, Python workers, Delta's first commits).
WARM_UP_LINES = 20_000
DRAIN_TIMEOUT_S = 1800.0
# An alert belongs to an incident when it started within this much of the incident's request.
MATCH_S = 30.0
EXECUTOR_MEMORY, WORKER_MEMORY, DRIVER_MEMORY = "1g", "1300m", "1g"


@dataclass
class Result:
    mode: str
    backlog: int = 0
    drain_s: float = 0.0
    drain_cpu_s: float = 0.0
    drain_driver_cpu_s: float = 0.0
    delays: list[float] = field(default_factory=list)
    missed: int = 0
    burst_drained_s: dict[str, float] = field(default_factory=dict)
    burst_alert_s: float | None = None
    memory: list[dict[str, float]] = field(default_factory=list)
    steady_cpu_cores: float = 0.0
    unexpected: int = 0  # DELAYED_LEADER_AND_ISR alerts of the steady phase no injected incident explains
    # the whole run's (warm-up and backlog included): DELAYED_LEADER_AND_ISR alerts no injected incident explains,
    # and LEADER_AND_ISR_NOT_COMPLETED alerts (the load injects none)
    unexpected_all: int = 0
    never_completed_all: int = 0
    poll_s: list[float] = field(default_factory=list)  # the lake watch's polls, seconds each
    watch_lag_s: list[float] = field(default_factory=list)  # per alerts version: its commit -> the watch loaded it
    # each alerted incident: cluster, broker, its Finished line's event time, when it was produced, first readable
    matched: list[tuple[str, int, float, float, float]] = field(default_factory=list)
    produced: int = 0
    # medians of the steady phase's batches (those the driver staged: the drain's go to the executors)
    steady_batches: dict[str, float] = field(default_factory=dict)


def _tree_cpu_rss(pids: list[int]) -> tuple[float, float]:
    """CPU seconds and RSS (MB) of processes `pids` and all their descendants."""
    cpu = rss = 0.0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for p in procs:
            try:
                t = p.cpu_times()
                cpu += t.user + t.system + t.children_user + t.children_system
                rss += p.memory_info().rss / 2**20
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                pass
    return cpu, rss


class Producer:
    """confluent-kafka's producer into the logging topic, as omkafka produces (acks=all, lz4, small linger)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer as KafkaProducer

        self.topic = topic
        self.p = KafkaProducer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all",
                                "compression.type": "lz4", "queue.buffering.max.messages": 2_000_000,
                                "batch.num.messages": 10_000, "log_level": 0})
        self.sent = 0

    def send(self, records: list[tuple[bytes, bytes]]) -> None:
        """Produce (key, value) records; a full local queue waits for deliveries."""
        for k, v in records:
            while True:
                try:
                    self.p.produce(self.topic, v, k)
                    break
                except BufferError:
                    self.p.poll(0.05)
        self.p.poll(0)
        self.sent += len(records)

    def flush(self) -> None:
        self.p.flush(60)


def _table(lake: str, name: str) -> Any:
    try:
        return DeltaTable(join(lake, name))
    except Exception:  # not created yet
        return None


def _raw_rows(table: Any) -> int:
    n = table.get_add_actions(flatten=True).column("num_records").to_pylist()
    return sum(int(x) for x in n if x is not None)


class Tables:
    """Tables of the lake loaded once and then brought up to date with their new commits only (a full load of a
    growing table on the object store re-reads its whole log)."""

    def __init__(self, lake: str) -> None:
        self.lake = lake
        self._tables: dict[str, Any] = {}

    def latest(self, name: str) -> Any:
        """The table as of its newest commit, or None while it does not exist."""
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = _table(self.lake, name)
        else:
            table.update_incremental()
        return table

    def loaded(self, name: str) -> Any:
        """The table as last loaded (None: never)."""
        return self._tables.get(name)

    def alerts_of(self, alert_type: str) -> int:
        """Alerts of `alert_type` in the alerts table (one read of its type column)."""
        table = self.latest("alerts")
        if table is None:
            return 0
        types = table.to_pyarrow_table(columns=["type"]).column("type").to_pylist()
        return sum(1 for t in types if t == alert_type)

    def raw_count(self) -> int:
        """Rows committed to raw_logs (its add actions' record counts)."""
        table = self.latest("raw_logs")
        return 0 if table is None else _raw_rows(table)


def _delayed_alerts(table: Any, files: list[str]) -> list[tuple[str, int, float]]:
    """DELAYED_LEADER_AND_ISR alerts in `files` (paths relative to the alerts table): (cluster, broker, started_at
    epoch s)."""
    columns = ["type", "cluster", "broker_id", "started_at"]
    parts = [pq.read_table(key, columns=columns, filesystem=fs)
             for fs, key in (filesystem(join(table.table_uri, unquote(f))) for f in files)]
    if not parts:
        return []
    return [(r["cluster"], r["broker_id"], r["started_at"].timestamp())
            for r in pa.concat_tables(parts).to_pylist()
            if r["type"] == "DELAYED_LEADER_AND_ISR" and r["started_at"] is not None]


class LakeWatch(threading.Thread):
    """Watches the lake every POLL_S apart from the producing loop (a read of a growing table on the object store
    takes seconds; in the loop it would space the produced lines out and step the measured delays by its length):
    when each alert was first readable, and raw_logs' rows over time. Each table is loaded once and brought up to
    date with its new commits only."""

    def __init__(self, lake: str) -> None:
        super().__init__(name="lake-watch", daemon=True)
        self.lake = lake
        self.lock = threading.Lock()
        self.first_seen: dict[tuple[str, int, float], float] = {}  # alert -> wall time it was first read
        self.raw: list[tuple[float, int]] = []  # (wall time of the read, raw_logs rows)
        self.error: BaseException | None = None
        self._stop_event = threading.Event()
        self._tables = Tables(lake)
        self._alert_files: set[str] = set()
        self._polled = False
        self.poll_s: list[float] = []  # how long each poll took (an alert is first readable up to that earlier)
        self.versions: dict[int, float] = {}  # each version of the alerts table a poll loaded -> when, first

    def commit_lag(self) -> list[float]:
        """Per version of the alerts table the watch loaded: seconds from its commit (the commit's own timestamp)
        to the watch's load: what the watch adds to the delays it measures."""
        table = self._tables.loaded("alerts")
        if table is None:
            return []
        committed = {int(h["version"]): h["timestamp"] / 1000 for h in table.history() if "timestamp" in h}
        return [seen - committed[v] for v, seen in sorted(self.versions.items()) if v in committed]

    def poll(self) -> None:
        """One read of both tables: their new commits, and of the alerts only the files no earlier poll read (a
        file a MERGE rewrote brings its old rows again: their first time stays)."""
        began = time.time()
        alerts_table, raw_table = self._tables.latest("alerts"), self._tables.latest("raw_logs")
        found: list[tuple[str, int, float]] = []
        if alerts_table is not None and self._polled:  # the version found first may be minutes old
            self.versions.setdefault(alerts_table.version(), time.time())
        if alerts_table is not None:
            files = set(alerts_table.get_add_actions(flatten=True).column("path").to_pylist())
            found = _delayed_alerts(alerts_table, sorted(files - self._alert_files))
            self._alert_files = files
        rows = _raw_rows(raw_table) if raw_table is not None else 0
        now = time.time()
        with self.lock:
            for key in found:
                self.first_seen.setdefault(key, now)
            self.raw.append((now, rows))
            if self._polled:  # the first poll loads whole tables: not what a poll costs or lags
                self.poll_s.append(now - began)
            self._polled = True

    def run(self) -> None:
        try:
            while not self._stop_event.wait(POLL_S):
                self.poll()
        except BaseException as e:
            self.error = e

    def check(self) -> None:
        """Raise what ended the watch, if anything did."""
        if self.error is not None:
            raise RuntimeError("the lake watch failed") from self.error

    def stop(self) -> None:
        """End the watch; raise what ended it, if anything did."""
        self._stop_event.set()
        self.join(STOP_S)
        if self.is_alive():
            raise RuntimeError(f"the lake watch did not end within {STOP_S:.0f} s")
        self.check()

    def alert_seen(self, cluster: str, broker: int, started: float) -> float | None:
        """When an alert of `cluster`/`broker` that started within MATCH_S of `started` was first readable."""
        with self.lock:
            times = [t for (c, b, s), t in self.first_seen.items()
                     if c == cluster and b == broker and abs(s - started) < MATCH_S]
        return min(times) if times else None

    def unexplained(self, incidents: list[Incident], since: float) -> list[tuple[str, int, float]]:
        """The alerts that started after wall time `since` and match no injected incident (false alarms: every
        line the load makes besides the incidents is a request far under the alert's level)."""
        with self.lock:
            found = [a for a in self.first_seen if a[2] >= since]
        return [(c, b, s) for c, b, s in found if not any(
            i.cluster == c and i.broker == b and abs(s - (i.finished_at - INCIDENT_S)) < MATCH_S for i in incidents)]

    def raw_reached(self, rows: int, after: float) -> float | None:
        """The first read after wall time `after` that found at least `rows` rows in raw_logs."""
        with self.lock:
            return next((t for t, n in self.raw if t >= after and n >= rows), None)


class Run:
    """One mode's run: its topic, lake, job and measurements."""

    def __init__(self, mode: str, args: argparse.Namespace, work: Path, bootstrap: str, store: Any) -> None:
        self.mode, self.args, self.work, self.bootstrap = mode, args, work / mode, bootstrap
        self.work.mkdir(parents=True, exist_ok=True)
        self.topic = f"fleet-{mode}"
        self.lake = store.uri(f"lake-{mode}")
        self.tables = Tables(self.lake)  # the drain's reads (the steady phase's: its LakeWatch, a thread of its own)
        self.fleet = Fleet(fleet_specs(args.brokers), incident_every_s=args.incident_every)
        self.result = Result(mode)
        self.produced_at: dict[tuple[str, int, int], float] = {}  # incident -> wall time its Finished line went
        self.job: subprocess.Popen[bytes] | None = None
        self.workers: list[int] = []

    # --- load ----------------------------------------------------------------------------------------------
    def _create_topic(self) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        for f in admin.create_topics([NewTopic(self.topic, TOPIC_PARTITIONS, 1)]).values():
            f.result(60)

    def produce_history(self, producer: Producer, lines: int, t0: float) -> tuple[int, float]:
        """About `lines` lines of the fleet's steady output stamped from `t0` on, produced at once: (lines, the time
        after the last)."""
        n, t = 0, t0
        while n < lines:
            chunk = self.fleet.lines(t, t + 10.0)
            producer.send(self.fleet.records(chunk))
            n += len(chunk)
            t += 10.0
        producer.flush()
        return n, t

    # --- the job -------------------------------------------------------------------------------------------
    def _config(self) -> Path:
        spark_conf: dict[str, str] = {"spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC",
                                      "spark.driver.memory": DRIVER_MEMORY, "spark.ui.enabled": "false"}
        if self.mode == "standalone":
            spark_conf |= {"spark.executor.memory": EXECUTOR_MEMORY, "spark.executor.cores": "1",
                           "spark.cores.max": "2"}
        cfg = {
            "trigger": {"interval": self.args.trigger},
            "spark": {"conf": spark_conf},
            "sources": {
                "files": {"enabled": False},
                "kafka": {"enabled": True, "bootstrap_servers": self.bootstrap, "logs_topics": [self.topic],
                          "logs_envelope": "rsyslog", "logs_mapping": ["host"], "starting_offsets": "earliest",
                          "max_records_per_batch": self.args.batch_records,
                          "logs_dedup_horizon": self.args.dedup_horizon},
            },
        }
        path = self.work / "pipeline.yaml"
        path.write_text(yaml.safe_dump(cfg))
        return path

    def start_job(self, master: str) -> None:
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
               "SPARK_LOCAL_IP": "127.0.0.1"}
        cmd = [str(Path(sys.executable).parent / "spark-submit"), "--master", master,
               "--driver-memory", DRIVER_MEMORY, "--conf", "spark.driver.host=127.0.0.1",
               str(REPO / "jobs" / "ingest_logs.py"), "--config", str(self._config()),
               "--lake", self.lake, "--checkpoints", str(self.work / "ck")]
        log = open(self.work / "job.log", "wb")  # noqa: SIM115 - the job's whole life
        self.job = subprocess.Popen(cmd, cwd=self.work, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)

    def stop_job(self) -> None:
        if self.job is None or self.job.poll() is not None:
            return
        os.killpg(self.job.pid, signal.SIGINT)
        try:
            self.job.wait(60)
        except subprocess.TimeoutExpired:
            pass
        try:  # whatever of the job's session is left (its Python driver may outlive spark-submit)
            os.killpg(self.job.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.job.wait(10)

    def _alive(self) -> None:
        if self.job is not None and self.job.poll() is not None:
            tail = (self.work / "job.log").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the {self.mode} job exited with {self.job.returncode}:\n{tail}")

    def cpu_rss(self) -> tuple[float, float, float, float]:
        """(driver CPU s, driver RSS MB, executors CPU s, executors RSS MB)."""
        assert self.job is not None
        d_cpu, d_rss = _tree_cpu_rss([self.job.pid])
        e_cpu, e_rss = _tree_cpu_rss(self.workers)
        return d_cpu, d_rss, e_cpu, e_rss

    # --- phases --------------------------------------------------------------------------------------------
    def warm_up(self, target: int) -> None:
        """Until the job committed `target` lines (its JVMs, Python workers and first batches are not the drain's)."""
        t0 = time.monotonic()
        while self.tables.raw_count() < target:
            self._alive()
            if time.monotonic() - t0 > JOB_START_TIMEOUT_S:
                raise RuntimeError(f"the warm-up was not committed in {JOB_START_TIMEOUT_S:.0f} s; see {self.work}")
            time.sleep(0.2)

    def drain(self, producer: Producer, lines: int, t0: float) -> None:
        """Produce the backlog (`lines` from event time `t0`) and time the job's drain of it."""
        before = self.tables.raw_count()
        start, cpu0 = time.monotonic(), self.cpu_rss()
        n, _ = self.produce_history(producer, lines, t0)
        self.fleet.forget_incidents()  # the backlog's incidents are history: the delays are the steady phase's
        while (done := self.tables.raw_count()) < before + n:
            self._alive()
            if time.monotonic() - start > DRAIN_TIMEOUT_S:
                raise RuntimeError(f"drained {done - before:,} of {n:,} lines in {DRAIN_TIMEOUT_S:.0f} s")
            time.sleep(0.25)
        cpu1 = self.cpu_rss()
        r = self.result
        r.backlog, r.drain_s = n, time.monotonic() - start
        r.drain_driver_cpu_s = cpu1[0] - cpu0[0]
        r.drain_cpu_s = r.drain_driver_cpu_s + cpu1[2] - cpu0[2]

    def steady(self, producer: Producer) -> None:
        """The steady phase with its bursts, the lake watched by a thread of its own (LakeWatch)."""
        r = self.result
        end = time.monotonic() + self.args.minutes * 60
        seen: set[tuple[str, int, int]] = set()
        watch = LakeWatch(self.lake)
        watch.start()
        started = time.time()
        try:
            self._steady(producer, watch, seen, end)
        finally:
            watch.stop()
        r.unexpected = len(watch.unexplained(self.fleet.incidents, started))
        r.unexpected_all = len(watch.unexplained(self.fleet.history + self.fleet.incidents, 0.0))
        r.never_completed_all = self.tables.alerts_of("LEADER_AND_ISR_NOT_COMPLETED")
        r.poll_s = list(watch.poll_s)
        r.watch_lag_s = watch.commit_lag()
        r.produced = producer.sent
        r.missed = len(self.produced_at) - len(seen)
        log = [line for line in (self.work / "job.log").read_text(errors="replace").splitlines()
               if _logged_at(line) >= started]  # the steady phase's batches, not the warm-up's or the drain's
        r.steady_batches = stage_medians(parse_all(log), keep=lambda b: b.raw > 0 and b.path == Placement.DRIVER)

    def _steady(self, producer: Producer, watch: LakeWatch, seen: set[tuple[str, int, int]], end: float) -> None:
        r, fleet = self.result, self.fleet
        start_wall = time.time()
        t_prev = start_wall
        pending: list[tuple[float, str, int, str, str]] = []
        bursts: dict[str, tuple[float, int]] = {}  # burst -> (wall time its last line went, lines produced by then)
        failover_done = roll_done = False
        next_sample = time.monotonic()
        cpu0 = self.cpu_rss()
        t_cpu0 = time.monotonic()
        while time.monotonic() < end:
            now = time.time()
            if not failover_done and now - start_wall >= FAILOVER_AT_S and FAILOVER in fleet.clusters:
                pending += fleet.failover(now)
                failover_done = True
                bursts["failover"] = (max(x[0] for x in pending), 0)
            if not roll_done and now - start_wall >= ROLL_AT_S and ROLL in fleet.clusters:
                for _at, lines in fleet.roll(now):
                    pending += lines
                roll_done = True
                bursts["roll"] = (max(x[0] for x in pending), 0)
            lines = fleet.lines(t_prev, now)
            due = [x for x in pending if x[0] < now]
            pending = [x for x in pending if x[0] >= now]
            producer.send(fleet.records(sorted(lines + due, key=lambda x: x[0])))
            t_prev = now
            sent_at = time.time()
            for inc in fleet.incidents:
                key = (inc.cluster, inc.broker, inc.correlation_id)
                if key not in self.produced_at and inc.finished_at < now:
                    self.produced_at[key] = sent_at
            for name, (last, count) in list(bursts.items()):
                if count == 0 and last < now:
                    bursts[name] = (sent_at, producer.sent)
            self._alive()
            watch.check()
            self._match(fleet.incidents, seen, watch)
            self._drained(bursts, watch)
            if time.monotonic() >= next_sample:
                _, d_rss, _, e_rss = self.cpu_rss()
                r.memory.append({"t": time.monotonic(), "driver_mb": d_rss, "executors_mb": e_rss})
                next_sample = time.monotonic() + SAMPLE_S
            time.sleep(max(0.0, TICK_S - (time.time() - now)))
        producer.flush()
        cpu1 = self.cpu_rss()
        r.steady_cpu_cores = (cpu1[0] + cpu1[2] - cpu0[0] - cpu0[2]) / (time.monotonic() - t_cpu0)
        # the last incidents and bursts get their time to show
        settle = time.monotonic() + 60
        while time.monotonic() < settle and (len(seen) < len(self.produced_at) or
                                            any(n not in r.burst_drained_s for n in bursts)):
            watch.check()
            self._match(fleet.incidents, seen, watch)
            self._drained(bursts, watch)
            time.sleep(POLL_S)

    def _drained(self, bursts: dict[str, tuple[float, int]], watch: LakeWatch) -> None:
        """Each produced burst (wall time its last line went, lines produced by then) whose lines are all in raw_logs
        gets its drain time."""
        for name, (sent, count) in bursts.items():
            if count and name not in self.result.burst_drained_s and (
                    at := watch.raw_reached(count, sent)) is not None:
                self.result.burst_drained_s[name] = at - sent

    def _match(self, incidents: list[Incident], seen: set[tuple[str, int, int]], watch: LakeWatch) -> None:
        for inc in incidents:
            key = (inc.cluster, inc.broker, inc.correlation_id)
            if key in seen or key not in self.produced_at:
                continue
            at = watch.alert_seen(inc.cluster, inc.broker, inc.finished_at - INCIDENT_S)
            if at is not None:
                seen.add(key)
                # negative: the alert was readable before the Finished line went (raised while in flight)
                delay = at - self.produced_at[key]
                self.result.matched.append((inc.cluster, inc.broker, inc.finished_at, self.produced_at[key], at))
                if inc.cluster.startswith("failover"):
                    self.result.burst_alert_s = delay
                else:
                    self.result.delays.append(delay)


def _logged_at(line: str) -> float:
    """The time (epoch s) a Python logging line of the job was written (`2026-12-07 16:59:44,459 ...`, this
    machine's local time, as time.time() counts); 0 for a line without one (Spark's own, a traceback's)."""
    try:
        return dt.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    except ValueError:
        return 0.0


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))] if s else float("nan")


def _memory_trend(samples: list[dict[str, float]], key: str) -> str:
    if len(samples) < 6 or not samples[0][key]:
        return "-"
    third = len(samples) // 3
    first = statistics.mean(s[key] for s in samples[:third])
    last = statistics.mean(s[key] for s in samples[-third:])
    return f"{first:,.0f} -> {last:,.0f} MB ({last / first:.2f})"


def report(results: list[Result], brokers: int, cores: int) -> None:
    print(f"\nfleet: {brokers:,} brokers; {os.cpu_count()} CPUs here, shared by the producer, Kafka and s3proxy")
    head = f"{'':44}" + "".join(f"{r.mode:>22}" for r in results)
    print(head)

    def row(label: str, vals: list[str]) -> None:
        print(f"{label:44}" + "".join(f"{v:>22}" for v in vals))

    row("backlog drained (lines)", [f"{r.backlog:,}" for r in results])
    row("drain wall (s)", [f"{r.drain_s:.1f}" for r in results])
    row("lines/s end to end", [f"{r.backlog / r.drain_s:,.0f}" if r.drain_s else "-" for r in results])
    row(f"lines/s per core ({cores} cores)", [f"{r.backlog / r.drain_s / cores:,.0f}" if r.drain_s else "-"
                                             for r in results])
    row("lines per CPU-second (Spark processes)", [f"{r.backlog / r.drain_cpu_s:,.0f}" if r.drain_cpu_s else "-"
                                                   for r in results])
    row("  of it the driver's CPU share", [f"{r.drain_driver_cpu_s / r.drain_cpu_s:.0%}" if r.drain_cpu_s else "-"
                                           for r in results])
    row("steady: incidents alerted / injected", [f"{len(r.delays)} / {len(r.delays) + r.missed}" for r in results])
    row("steady: alerts no incident explains", [f"{r.unexpected}" for r in results])
    row("whole run: slow-request alerts no incident explains", [f"{r.unexpected_all}" for r in results])
    row("whole run: never-completed alerts (none injected)", [f"{r.never_completed_all}" for r in results])
    row("steady: the lake watch's poll p50 / max (s)",
        [f"{_pct(r.poll_s, 0.5):.2f} / {max(r.poll_s, default=float('nan')):.2f}" for r in results])
    row("steady: the watch's lag behind a commit p50 / max (s)",
        [f"{_pct(r.watch_lag_s, 0.5):.2f} / {max(r.watch_lag_s, default=float('nan')):.2f}" for r in results])
    row("steady: detection delay p50 (s)", [f"{_pct(r.delays, 0.5):.1f}" for r in results])
    row("steady: detection delay p99 (s)", [f"{_pct(r.delays, 0.99):.1f}" for r in results])
    row("steady: Spark CPU (cores)", [f"{r.steady_cpu_cores:.2f}" for r in results])
    row("steady: batches staged by the driver", [f"{r.steady_batches.get('batches', 0):.0f}" for r in results])
    for stage in ("records", "seconds", "open", "read", "stage", "commit", "detect", "dq"):
        row(f"  median {stage}" + ("" if stage == "records" else " (s)"),
            [f"{r.steady_batches[stage]:,.{0 if stage == 'records' else 2}f}" if stage in r.steady_batches else "-"
             for r in results])
    for burst in ("failover", "roll"):
        row(f"{burst}: every line in raw_logs after (s)",
            [f"{r.burst_drained_s[burst]:.1f}" if burst in r.burst_drained_s else "-" for r in results])
    row("failover: its slow request's alert after (s)",
        [f"{r.burst_alert_s:.1f}" if r.burst_alert_s is not None else "-" for r in results])
    row("driver RSS, first third -> last third", [_memory_trend(r.memory, "driver_mb") for r in results])
    row("executors RSS, first third -> last third", [_memory_trend(r.memory, "executors_mb") for r in results])
    for r in results:
        print(f"{r.mode}: steady detection delays (s): {' '.join(f'{d:.1f}' for d in sorted(r.delays))}")
        print(f"{r.mode}: per incident, seconds after its Finished line's time: produced, alert first readable")
        for cluster, broker, finished, produced, seen in r.matched:
            print(f"  {cluster} broker {broker}: {produced - finished:+.1f} {seen - finished:+.1f}")


def run_mode(mode: str, args: argparse.Namespace, work: Path, bootstrap: str, store: Any) -> Result:
    from jobs.run.local_cluster import start_cluster, stop_cluster

    run = Run(mode, args, work, bootstrap, store)
    run._create_topic()
    producer = Producer(bootstrap, run.topic)
    # event time: the warm-up, then the backlog (a logging pipeline's outage), then now (the steady phase)
    rate = len(Fleet(fleet_specs(args.brokers)).lines(0.0, 60.0)) / 60.0
    backlog_s = args.backlog_lines / rate + 60.0
    warm, t_backlog = run.produce_history(producer, WARM_UP_LINES, time.time() - backlog_s - WARM_UP_LINES / rate)
    cluster_dir = str(run.work / "cluster")
    try:
        if mode == "standalone":
            cluster = start_cluster(cluster_dir, cores=1, memory=WORKER_MEMORY, workers=2, pin=True)
            run.workers = list(cluster.worker_pids)
            master = cluster.master_url
        else:
            master = "local[2]"
        run.start_job(master)
        run.warm_up(warm)
        run.drain(producer, args.backlog_lines, t_backlog)
        r = run.result
        print(f"[{mode}] drained {r.backlog:,} lines in {r.drain_s:.1f} s ({r.backlog / r.drain_s:,.0f} lines/s, "
              f"{r.drain_cpu_s:.0f} CPU-s)", flush=True)
        run.steady(producer)
        print(f"[{mode}] steady: {len(r.delays)} incidents alerted, {r.missed} missed; bursts {r.burst_drained_s}",
              flush=True)
    finally:
        run.stop_job()
        if mode == "standalone":
            stop_cluster(cluster_dir)
    return run.result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--brokers", type=int, default=2000)
    parser.add_argument("--backlog-lines", type=int, default=1_000_000)
    parser.add_argument("--minutes", type=float, default=5.0, help="the steady phase")
    parser.add_argument("--modes", default="standalone,local")
    parser.add_argument("--trigger", default="1 second")
    parser.add_argument("--incident-every", type=float, default=20.0)
    parser.add_argument("--batch-records", type=int, default=200_000, help="sources.kafka.max_records_per_batch")
    parser.add_argument("--dedup-horizon", default="15 minutes", help="sources.kafka.logs_dedup_horizon")
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: a new temporary one)")
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from planewatch.kafka.cluster import KafkaCluster, KafkaClusterSpec
    from planewatch.objectstore import ObjectStore

    work = (args.dir or Path(tempfile.mkdtemp(prefix="pw-fleet-"))).resolve()
    print(f"work directory {work}; load average {os.getloadavg()[0]:.1f}", flush=True)
    kafka = KafkaCluster(KafkaClusterSpec(work / "logging-kafka", LOGGING_KAFKA, brokers=1, jmx_exporter=False,
                                          log4j="shipped"))
    results = []
    try:
        kafka.start()
        with ObjectStore(work / "s3") as store:
            os.environ.update(store.env())
            for mode in args.modes.split(","):
                results.append(run_mode(mode.strip(), args, work, kafka.bootstrap_servers(), store))
    finally:
        kafka.stop()
    report(results, args.brokers, 2)
    return 0


if __name__ == "__main__":
    exit_with(main())
