"""The soak's load (benchmarks.soak): what N brokers of one Kafka cluster write, as files under the input tree the
file source reads: state-change.log chatter, server.log and controller.log lines, jmx_exporter scrape answers,
hourly log4j rotation, and injected incidents (a LeaderAndIsr of 8 s on one broker)."""

from __future__ import annotations

import datetime as dt
import math
import os
import queue
import random
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from benchmarks.detection_latency import incident_lines

CLUSTER = "soak"
# Broker 1 is the active controller (ZooKeeper-mode Kafka 3.x): the Sending lines are in its state-change.log. The
# epoch is incident_lines' (a second epoch would read as a controller failover to pairing).
CONTROLLER = 1
CONTROLLER_EPOCH = 3
# One chatter "round" to a broker: Sending/Handling/Finished LeaderAndIsr + Sending UpdateMetadata/its Add line.
LINES_PER_ROUND = 5
# A steady request's handling time (ms): what a healthy broker logs, far below the 5 s warning.
CHATTER_MS = (2, 40)
# Round timestamps trail the wall clock by this much so no line is stamped in the future when it is written.
CHATTER_LAG_S = 0.1
# The generator wakes this often: whole lines, flushed per tick (log4j's immediateFlush writes line by line).
TICK_S = 0.25
# jmx_exporter scrape interval of every broker (Prometheus' common 15 s); brokers are staggered over it.
SCRAPE_INTERVAL_S = 15.0
# server.log lines per broker and controller.log lines of the controller: seconds between two (a quiet broker).
SERVER_LOG_EVERY_S = 10.0
CONTROLLER_LOG_EVERY_S = 30.0
# The incident: incident_lines' LeaderAndIsr of 8 s; its Sending line is stamped 8.01 s before the Finished one, so
# the broker gets no chatter for this long before it (one request in flight per broker, as the controller does).
INCIDENT_PAUSE_S = 8.5
# Between the incident's first two lines and its Finished line (as benchmarks.detection_latency).
INCIDENT_FINISH_AFTER_S = 0.3
# Scrape files older than this are deleted by the generator (a landing zone's retention; 0: keep all).
SCRAPE_RETENTION_S = 600.0


# --- the load ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """What the generator writes."""

    brokers: int = 30
    lines_per_s: float = 300.0  # state-change.log lines, all brokers
    samples_per_s: float = 80.0  # Prometheus samples, all brokers
    incident_every_s: float = 300.0  # 0: no incident
    rotate_s: float = 3600.0
    scrape_interval_s: float = SCRAPE_INTERVAL_S
    scrape_retention_s: float = SCRAPE_RETENTION_S

    @property
    def samples_per_scrape(self) -> int:
        return max(1, round(self.samples_per_s * self.scrape_interval_s / self.brokers))


@dataclass(frozen=True)
class Incident:
    """An injected 8-second LeaderAndIsr: its broker, and when its Finished line was flushed."""

    index: int
    broker: int
    correlation_id: int
    sent_at: float  # epoch seconds of its Sending line
    finished_at: float  # epoch seconds when the Finished line was flushed
    finished_mono: float  # the same, time.monotonic()


def log_time(t: float) -> str:
    """log4j's `%d` of Kafka's layout (UTC): 2024-05-10 09:00:00,123."""
    d = dt.datetime.fromtimestamp(t, dt.UTC)
    return d.strftime("%Y-%m-%d %H:%M:%S,") + f"{d.microsecond // 1000:03d}"


def chatter_round(broker: int, corr: int, t: float, took_ms: int, partitions: int) -> list[tuple[float, int, str]]:
    """A LeaderAndIsr, then an UpdateMetadata, from the controller to `broker`, starting at `t`: (timestamp, the
    broker whose state-change.log holds the line, line). The broker's two requests have correlation ids corr and
    corr + 1 (the controller's channel to a broker numbers its requests)."""
    leaders = partitions // 3
    handled = t + 0.001
    finished = handled + took_ms / 1000
    um_sent = finished + 0.001
    sc = "(state.change.logger)"
    return [
        (t, CONTROLLER, f"[{log_time(t)}] INFO [Controller id={CONTROLLER} epoch={CONTROLLER_EPOCH}] Sending "
         f"LeaderAndIsr request to broker {broker} with {leaders} become-leader and {partitions - leaders} "
         f"become-follower partitions {sc}"),
        (handled, broker, f"[{log_time(handled)}] INFO [Broker id={broker}] Handling LeaderAndIsr request "
         f"correlationId {corr} from controller {CONTROLLER} for {partitions} partitions {sc}"),
        (finished, broker, f"[{log_time(finished)}] INFO [Broker id={broker}] Finished LeaderAndIsr request in "
         f"{took_ms}ms correlationId {corr} from controller {CONTROLLER} for {partitions} partitions {sc}"),
        (um_sent, CONTROLLER, f"[{log_time(um_sent)}] INFO [Controller id={CONTROLLER} epoch={CONTROLLER_EPOCH}] "
         f"Sending UpdateMetadata request to brokers HashSet({broker}) for {partitions} partitions {sc}"),
        (um_sent + 0.002, broker, f"[{log_time(um_sent + 0.002)}] INFO [Broker id={broker}] Add {partitions} "
         f"partitions and deleted 0 partitions from metadata cache in response to UpdateMetadata request sent by "
         f"controller {CONTROLLER} epoch {CONTROLLER_EPOCH} with correlation id {corr + 1} {sc}"),
    ]


# (name, labels) of one jmx_exporter scrape, most telling first (cut to Load.samples_per_scrape; filled up with
# per-processor response queues). Names as the kafka-2_0_0 / jmx_exporter 1.x rules export them
# (pipelines/parsing/metric_names.py resolves them).
_QUANTILES = ("0.50", "0.75", "0.95", "0.98", "0.99", "0.999")
SCRAPE_SERIES: tuple[tuple[str, str], ...] = (
    ("kafka_network_requestchannel_requestqueuesize", ""),
    ("kafka_network_requestchannel_controlplanerequestqueuesize", ""),
    ("kafka_network_socketserver_networkprocessoravgidlepercent", ""),
    ("kafka_network_socketserver_controlplanenetworkprocessoravgidlepercent", ""),
    ("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count_total", ""),
    ("kafka_server_kafkarequesthandlerpool_controlplanerequesthandleravgidlepercent_count_total", ""),
    ("kafka_network_acceptor_acceptorblockedpercent_count_total", 'listener="PLAINTEXT"'),
    ("kafka_network_acceptor_controlplaneacceptorblockedpercent_count_total", 'listener="CONTROLLER"'),
    ("kafka_network_requestchannel_responsequeuesize", ""),
    ("kafka_network_requestchannel_controlplaneresponsequeuesize", ""),
    *((f"kafka_network_requestmetrics_{m}", f'quantile="{q}",request="{r}"')
      for r in ("LeaderAndIsr", "UpdateMetadata") for m in ("requestqueuetimems", "totaltimems") for q in _QUANTILES),
    *((f"kafka_network_requestmetrics_{m}_count_total", f'request="{r}"')
      for r in ("LeaderAndIsr", "UpdateMetadata") for m in ("requestqueuetimems", "totaltimems")),
)


class ScrapeState:
    """One broker's exporter: cumulative counters carried from scrape to scrape, healthy gauge values."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.counters: dict[str, float] = {}

    def value(self, name: str, labels: str, interval_s: float) -> float:
        r = self.rng
        if name.endswith("_count_total"):
            if "avgidlepercent" in name:  # Yammer meter Count: idle nanoseconds (FACTS.md section 3)
                step = interval_s * 1e9 * (r.uniform(0.97, 1.0) if "controlplane" in name else r.uniform(0.75, 0.95))
            elif "blockedpercent" in name:
                step = 0.0
            else:  # requests seen
                step = float(r.randint(20, 40))
            key = name + labels
            self.counters[key] = self.counters.get(key, 0.0) + step
            return self.counters[key]
        if name.endswith("avgidlepercent"):
            return r.uniform(0.97, 1.0) if "controlplane" in name else r.uniform(0.75, 0.95)
        if "requestmetrics_requestqueuetimems" in name:
            return float(r.randint(0, 2))
        if "requestmetrics_totaltimems" in name:
            return float(r.randint(5, 40))
        if "controlplane" in name:
            return 0.0
        return float(r.randint(0, 3))


def scrape_text(state: ScrapeState, ts_ms: int, n: int, interval_s: float) -> str:
    """A jmx_exporter answer of `n` samples at `ts_ms` (`# TYPE` per family, then the samples)."""
    series = list(SCRAPE_SERIES[:n])
    series += [("kafka_network_requestchannel_responsequeuesize", f'processor="{k}"') for k in range(n - len(series))]
    out: list[str] = []
    typed: set[str] = set()
    for name, labels in series:
        if name not in typed:
            typed.add(name)
            out.append(f"# TYPE {name} untyped")
        sel = f"{{{labels}}}" if labels else ""
        out.append(f"{name}{sel} {state.value(name, labels, interval_s)!r} {ts_ms}")
    return "\n".join(out) + "\n"


def rotated_name(name: str, period_start: float, rotate_s: float) -> str:
    """log4j DailyRollingFileAppender's name for a log of the period that began at `period_start`."""
    fmt = "%Y-%m-%d-%H" if rotate_s >= 3600 else "%Y-%m-%d-%H-%M" if rotate_s >= 60 else "%Y-%m-%d-%H-%M-%S"
    return f"{name}.{dt.datetime.fromtimestamp(period_start, dt.UTC).strftime(fmt)}"


LOG_NAMES = ("state-change.log", "server.log", "controller.log")


class KafkaOutput:
    """The files N brokers of one cluster write, advanced by step(now); the incidents it injected go to a queue."""

    def __init__(self, input_dir: Path, load: Load, start: float, seed: int = 26) -> None:
        self.root = input_dir / CLUSTER
        self.load = load
        self.rng = random.Random(seed)
        self.brokers = list(range(1, load.brokers + 1))
        self.corr = dict.fromkeys(self.brokers, 0)
        self.busy_until = dict.fromkeys(self.brokers, 0.0)  # a broker's last line's timestamp: rounds follow it
        self.files: dict[tuple[int, str], IO[str]] = {}
        self.last = start
        self.credit = 0.0
        self.turn = 0
        self.period = math.floor(start / load.rotate_s)
        self.next_scrape = {b: start + (i + 0.5) * load.scrape_interval_s / load.brokers
                            for i, b in enumerate(self.brokers)}
        self.scrapes = {b: ScrapeState(random.Random(seed * 1000 + b)) for b in self.brokers}
        self.scrape_files: deque[tuple[float, Path]] = deque()
        self.next_server_log = start
        self.next_controller_log = start
        self.next_incident = start + load.incident_every_s / 2 if load.incident_every_s > 0 else math.inf
        self.paused: int | None = None
        self.pending: tuple[int, int, float, float] | None = None  # broker, corr, sent_at, finish_at
        self.incidents: queue.Queue[Incident] = queue.Queue()
        self.injected = 0
        self.lines = 0
        self.samples = 0
        self.rotations = 0
        for b in self.brokers:
            (self.root / f"broker-{b}" / "metrics").mkdir(parents=True, exist_ok=True)
        self._open_logs()

    def _open_logs(self) -> None:
        for b in self.brokers:
            for name in LOG_NAMES:
                self.files[(b, name)] = open(self.root / f"broker-{b}" / name, "a", encoding="utf-8")  # noqa: SIM115

    def close(self) -> None:
        for fh in self.files.values():
            fh.close()
        self.files.clear()

    def _rotate(self, now: float) -> None:
        period = math.floor(now / self.load.rotate_s)
        if period == self.period:
            return
        self.close()
        for b in self.brokers:
            d = self.root / f"broker-{b}"
            for name in LOG_NAMES:
                src = d / name
                if src.exists() and src.stat().st_size:
                    os.replace(src, d / rotated_name(name, self.period * self.load.rotate_s, self.load.rotate_s))
        self.period = period
        self.rotations += 1
        self._open_logs()

    def _write(self, entries: list[tuple[float, int, str]], log: str = "state-change.log") -> None:
        touched = set()
        for _, broker, line in sorted(entries, key=lambda e: e[0]):
            fh = self.files[(broker, log)]
            fh.write(line + "\n")
            touched.add(broker)
        for b in touched:
            self.files[(b, log)].flush()
        if log == "state-change.log":
            self.lines += len(entries)

    def _chatter(self, now: float) -> list[tuple[float, int, str]]:
        rounds_per_s = self.load.lines_per_s / LINES_PER_ROUND
        span = now - self.last
        self.credit += span * rounds_per_s
        n = int(self.credit)
        self.credit -= n
        spacing_ms = 1000.0 * self.load.brokers / max(rounds_per_s, 1e-9)
        top = max(CHATTER_MS[0], min(CHATTER_MS[1], int(spacing_ms / 2) - 4))
        out: list[tuple[float, int, str]] = []
        for j in range(n):
            t = self.last + (j + 1) * span / n - CHATTER_LAG_S
            for _ in range(len(self.brokers)):
                b = self.brokers[self.turn % len(self.brokers)]
                self.turn += 1
                if b != self.paused:
                    break
            else:
                continue
            lines = chatter_round(b, self.corr[b], max(t, self.busy_until[b] + 0.001),
                                  self.rng.randint(CHATTER_MS[0], top), self.rng.randint(1, 60))
            self.busy_until[b] = lines[-1][0]
            self.corr[b] += 2
            out += lines
        return out

    def _other_logs(self, now: float) -> None:
        if now >= self.next_server_log:
            self.next_server_log += SERVER_LOG_EVERY_S
            ts = log_time(now - CHATTER_LAG_S)
            for b in self.brokers:
                p = self.rng.randint(0, 49)
                line = (f"[{ts}] INFO [ProducerStateManager partition=__consumer_offsets-{p}] Wrote producer snapshot "
                        f"at offset {self.rng.randint(1000, 900000)} with 0 producer ids in 1 ms. "
                        "(kafka.log.ProducerStateManager)")
                self.files[(b, "server.log")].write(line + "\n")
                self.files[(b, "server.log")].flush()
        if now >= self.next_controller_log:
            self.next_controller_log += CONTROLLER_LOG_EVERY_S
            ts = log_time(now - CHATTER_LAG_S)
            fh = self.files[(CONTROLLER, "controller.log")]
            fh.write(f"[{ts}] INFO [Controller id={CONTROLLER}] Processing automatic preferred replica leader "
                     "election (kafka.controller.KafkaController)\n")
            fh.write(f"[{ts}] TRACE [Controller id={CONTROLLER}] Checking need to trigger auto leader balancing "
                     "(kafka.controller.KafkaController)\n")
            fh.flush()

    def _scrapes(self, now: float) -> None:
        if self.load.samples_per_s <= 0:
            return
        for b in self.brokers:
            if now < self.next_scrape[b]:
                continue
            self.next_scrape[b] += self.load.scrape_interval_s
            ts_ms = int(now * 1000)
            d = self.root / f"broker-{b}" / "metrics"
            tmp = d / f".scrape-{ts_ms}.prom.tmp"  # hidden: never read; renamed whole
            n = self.load.samples_per_scrape
            tmp.write_text(scrape_text(self.scrapes[b], ts_ms, n, self.load.scrape_interval_s), encoding="utf-8")
            final = d / f"scrape-{ts_ms}.prom"
            os.replace(tmp, final)
            self.scrape_files.append((now, final))
            self.samples += n
        if self.load.scrape_retention_s > 0:
            while self.scrape_files and self.scrape_files[0][0] < now - self.load.scrape_retention_s:
                self.scrape_files.popleft()[1].unlink(missing_ok=True)

    def _incident(self, now: float) -> list[tuple[float, int, str]]:
        """Start, then finish, the due incident; the Finished line's entry (written with the step's chatter)."""
        if self.pending is None and now >= self.next_incident - INCIDENT_PAUSE_S:
            self.paused = self.brokers[self.injected % len(self.brokers)]
        if self.pending is None and now >= self.next_incident and self.paused is not None:
            b = self.paused
            corr = self.corr[b]
            self.corr[b] += 1
            finish = now + INCIDENT_FINISH_AFTER_S
            before, _ = incident_lines(b, corr, dt.datetime.fromtimestamp(finish - CHATTER_LAG_S, dt.UTC))
            self._write([(0.0, CONTROLLER, before[0])])
            self._write([(0.0, b, before[1])])
            self.pending = (b, corr, finish - CHATTER_LAG_S - 8.01, finish)
        elif self.pending is not None and now >= self.pending[3]:
            b, corr, _, _ = self.pending
            _, done = incident_lines(b, corr, dt.datetime.fromtimestamp(now - CHATTER_LAG_S, dt.UTC))
            self.busy_until[b] = now - CHATTER_LAG_S
            return [(now - CHATTER_LAG_S, b, done)]
        return []

    def _finish_incident(self) -> None:
        """The incident's Finished line is on disk (fsync): its clock starts."""
        assert self.pending is not None
        b, corr, sent, _ = self.pending
        os.fsync(self.files[(b, "state-change.log")].fileno())
        self.incidents.put(Incident(self.injected, b, corr, sent, time.time(), time.monotonic()))
        self.injected += 1
        self.pending = None
        self.paused = None
        self.next_incident += self.load.incident_every_s

    def step(self, now: float) -> None:
        """Write everything due up to `now` (epoch seconds); every line is stamped CHATTER_LAG_S behind it."""
        self._rotate(now)
        finished = self._incident(now)
        self._write(finished + self._chatter(now))
        if finished:
            self._finish_incident()
        self._other_logs(now)
        self._scrapes(now)
        self.last = now

    def run(self, stop: threading.Event, end: float) -> None:
        """step() every TICK_S until `end` (epoch seconds) or `stop`."""
        try:
            while not stop.is_set():
                now = time.time()
                if now >= end:
                    break
                self.step(now)
                stop.wait(TICK_S)
        finally:
            self.close()
