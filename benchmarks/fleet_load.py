"""The fleet benchmark's load (benchmarks.fleet): what N Kafka clusters' brokers ship, as the records rsyslog's
omkafka puts into a logging cluster's topic (planewatch's template: `{"host", "file", "offset", "line"}`, hosts
`kafka-<id>.<cluster>`, the `host` mapping preset), pure: records in, no I/O.

Each broker's state-change.log gets a LeaderAndIsr and an UpdateMetadata from its controller (broker 1 of its
cluster, whose state-change.log holds the Sending lines) every ROUND_EVERY_S, and its server.log a line every
SERVER_EVERY_S. Injected incidents are LeaderAndIsr requests of INCIDENT_S (DELAYED_LEADER_AND_ISR), placed between
two of the broker's rounds (one request in flight per broker, as the controller keeps it). Two bursts:

* a controller failover of the FAILOVER cluster: a new controller (epoch + 1) sends every broker a LeaderAndIsr
  for FAILOVER_PARTITIONS partitions, logged at TRACE as Kafka 3.9 logs it (a Sending line per partition at the
  controller, a Handling and a Completed line per partition at the broker, the INFO summaries), then one
  UpdateMetadata to all; one broker's LeaderAndIsr takes INCIDENT_S (the burst's incident);
* a rolling restart of the ROLL cluster: each broker in turn shut down (server.log), its leaderships moved (a
  LeaderAndIsr to every other broker and an UpdateMetadata to all), started again.

Per-partition `Cached leader info` TRACE lines (one per partition per broker per UpdateMetadata: 25,000 x 500 for
one failover) are not generated: no operator keeps them on.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["FAILOVER", "ROLL", "ClusterSpec", "Fleet", "Incident", "fleet_specs", "log_time"]

# A round of control requests to each broker (LeaderAndIsr + UpdateMetadata, 5 lines) this often: a fleet's steady
# leadership and metadata changes (partition moves, topic creations), spread over its brokers.
ROUND_EVERY_S = 60.0
# server.log lines of a quiet broker (segment rolls, ISR changes): one per this many seconds.
SERVER_EVERY_S = 10.0
# An injected incident: a LeaderAndIsr of this long (DELAYED_LEADER_AND_ISR's warning is 5 s).
INCIDENT_S = 8.0
# The bursts' clusters: sizes as the issue sets them.
FAILOVER, ROLL = "failover-500", "roll-100"
FAILOVER_BROKERS, ROLL_BROKERS = 500, 100
# Partitions each broker of the failover cluster gets in the failover's LeaderAndIsr (500 brokers x 4 TRACE lines
# per partition x 50: ~10^5 lines).
FAILOVER_PARTITIONS = 50
# The roll restarts a broker every this many seconds (compressed: a real roll waits minutes per broker).
ROLL_STEP_S = 2.0
# The other clusters' size.
CLUSTER_BROKERS = 50
LOG_DIR = "/var/log/kafka"
_SC = "(state.change.logger)"


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    brokers: int


def fleet_specs(brokers: int) -> list[ClusterSpec]:
    """`brokers` brokers: the failover and roll clusters first (when the fleet is big enough), then clusters of
    CLUSTER_BROKERS (the last one smaller)."""
    specs: list[ClusterSpec] = []
    left = brokers
    for name, size in ((FAILOVER, FAILOVER_BROKERS), (ROLL, ROLL_BROKERS)):
        if left >= size + CLUSTER_BROKERS:
            specs.append(ClusterSpec(name, size))
            left -= size
    i = 0
    while left > 0:
        size = min(CLUSTER_BROKERS, left)
        specs.append(ClusterSpec(f"c{i:03d}", size))
        left -= size
        i += 1
    return specs


@dataclass(frozen=True)
class Incident:
    """An injected slow LeaderAndIsr: where, and the event time (epoch s) of its Finished line."""

    cluster: str
    broker: int
    correlation_id: int
    finished_at: float


def log_time(t: float) -> str:
    """log4j's `%d` of Kafka's layout (UTC): 2024-05-10 09:00:00,123."""
    d = dt.datetime.fromtimestamp(t, dt.UTC)
    return d.strftime("%Y-%m-%d %H:%M:%S,") + f"{d.microsecond // 1000:03d}"


@dataclass
class _Cluster:
    spec: ClusterSpec
    phase: dict[int, float]  # a broker's round offset within ROUND_EVERY_S
    controller: int = 1
    epoch: int = 3
    corr: dict[int, int] = field(default_factory=dict)  # the controller's next correlation id per broker
    quiet_until: float = 0.0  # no steady rounds before this (a burst owns the cluster)


class Fleet:
    """The fleet's output. `lines(t0, t1)`: every steady line stamped in [t0, t1) with its incidents (one per
    `incident_every_s` across the fleet); `failover(t)`, `roll(t)`: the bursts. Lines come as (time, cluster, broker,
    file, line); `records` turns them into rsyslog envelopes with per-file byte offsets."""

    def __init__(self, specs: list[ClusterSpec], incident_every_s: float = 20.0, seed: int = 44) -> None:
        self.rng = random.Random(seed)
        self.clusters = {s.name: _Cluster(s, {b: self.rng.uniform(0, ROUND_EVERY_S) for b in range(1, s.brokers + 1)})
                         for s in specs}
        self.incident_every_s = incident_every_s
        self.offsets: dict[tuple[str, int, str], int] = {}
        self.incidents: list[Incident] = []
        self.history: list[Incident] = []  # the incidents forgotten (forget_incidents), earliest first
        self._next_incident: float | None = None
        self._pending: list[tuple[float, str, int, str, str]] = []  # incident lines stamped later than now

    def forget_incidents(self) -> None:
        """The incidents so far are history: forgotten (their lines not yet out still come out, so no request is
        left without its end), and the next one placed from the next :meth:`lines` call on, not back-dated to fill
        the time since the last (a new phase's first lines would carry every incident of the gap at once)."""
        self.history += self.incidents
        self.incidents.clear()
        self._next_incident = None

    @property
    def brokers(self) -> int:
        return sum(c.spec.brokers for c in self.clusters.values())

    def _corr(self, c: _Cluster, broker: int) -> int:
        n = c.corr.get(broker, 0)
        c.corr[broker] = n + 2
        return n

    # --- steady output -------------------------------------------------------------------------------------
    def _leader_and_isr(self, c: _Cluster, b: int, corr: int, sent: float, handled: float, took_ms: int,
                        partitions: int, leaders: int) -> list[tuple[float, str, int, str, str]]:
        """A LeaderAndIsr's three INFO lines: the controller's Sending, the broker's Handling and Finished."""
        ctl, name, finished = c.controller, c.spec.name, handled + took_ms / 1000
        return [
            (sent, name, ctl, "state-change.log", f"[{log_time(sent)}] INFO [Controller id={ctl} epoch={c.epoch}] "
             f"Sending LeaderAndIsr request to broker {b} with {leaders} become-leader and {partitions - leaders} "
             f"become-follower partitions {_SC}"),
            (handled, name, b, "state-change.log", f"[{log_time(handled)}] INFO [Broker id={b}] Handling LeaderAndIsr "
             f"request correlationId {corr} from controller {ctl} for {partitions} partitions {_SC}"),
            (finished, name, b, "state-change.log", f"[{log_time(finished)}] INFO [Broker id={b}] Finished "
             f"LeaderAndIsr request in {took_ms}ms correlationId {corr} from controller {ctl} for {partitions} "
             f"partitions {_SC}"),
        ]

    def _round(self, c: _Cluster, b: int, t: float, took_ms: int, partitions: int
               ) -> list[tuple[float, str, int, str, str]]:
        corr = self._corr(c, b)
        ctl, ep, name = c.controller, c.epoch, c.spec.name
        um = t + 0.002 + took_ms / 1000
        head = f"[Controller id={ctl} epoch={ep}]"
        return [
            *self._leader_and_isr(c, b, corr, t, t + 0.001, took_ms, partitions, partitions // 3),
            (um, name, ctl, "state-change.log", f"[{log_time(um)}] INFO {head} Sending UpdateMetadata request to "
             f"brokers HashSet({b}) for {partitions} partitions {_SC}"),
            (um + 0.002, name, b, "state-change.log", f"[{log_time(um + 0.002)}] INFO [Broker id={b}] Add {partitions} "
             f"partitions and deleted 0 partitions from metadata cache in response to UpdateMetadata request sent by "
             f"controller {ctl} epoch {ep} with correlation id {corr + 1} {_SC}"),
        ]

    def _server_line(self, name: str, b: int, t: float) -> tuple[float, str, int, str, str]:
        p = self.rng.randrange(200)
        return (t, name, b, "server.log", f"[{log_time(t)}] INFO [LocalLog partition=events-{p}, dir=/var/lib/kafka] "
                f"Rolled new log segment at offset {self.rng.randrange(10**9)} in 1 ms. (kafka.log.LocalLog)")

    def lines(self, t0: float, t1: float) -> list[tuple[float, str, int, str, str]]:
        """The steady lines stamped in [t0, t1), incidents included, in time order."""
        out: list[tuple[float, str, int, str, str]] = []
        for c in self.clusters.values():
            name = c.spec.name
            for b, phase in c.phase.items():
                k = int((t0 - phase) // ROUND_EVERY_S) + 1
                while (t := phase + k * ROUND_EVERY_S) < t1:
                    if t >= c.quiet_until:
                        out += self._round(c, b, t, self.rng.randint(2, 40), self.rng.randint(3, 30))
                    k += 1
                s = int((t0 - phase) // SERVER_EVERY_S) + 1
                while (t := phase + s * SERVER_EVERY_S) < t1:
                    out.append(self._server_line(name, b, t))
                    s += 1
        out += self._incidents(t0, t1)
        out.sort(key=lambda x: x[0])
        return out

    def _incidents(self, t0: float, t1: float) -> list[tuple[float, str, int, str, str]]:
        """The incident lines stamped in [t0, t1): incidents are placed INCIDENT_S + 1 s ahead of their turn, so
        every line of one comes out at its own time."""
        if self.incident_every_s > 0:
            if self._next_incident is None:
                self._next_incident = t0 + self.incident_every_s / 2
            names = [n for n in self.clusters if n not in (FAILOVER, ROLL)] or list(self.clusters)
            while self._next_incident < t1:
                done = self._next_incident + INCIDENT_S + 1.0
                c = self.clusters[self.rng.choice(names)]
                for _ in range(100):  # a broker none of whose rounds falls inside the request
                    b = self.rng.randrange(1, c.spec.brokers + 1)
                    if b != c.controller and INCIDENT_S + 1 <= (done - c.phase[b]) % ROUND_EVERY_S <= ROUND_EVERY_S - 1:
                        self._pending += self._slow(c, b, done)
                        break
                self._next_incident += self.incident_every_s
        now = [x for x in self._pending if x[0] < t1]
        self._pending = [x for x in self._pending if x[0] >= t1]
        return now

    def _slow(self, c: _Cluster, b: int, done: float) -> list[tuple[float, str, int, str, str]]:
        corr = self._corr(c, b)
        self.incidents.append(Incident(c.spec.name, b, corr, done))
        return self._leader_and_isr(c, b, corr, done - INCIDENT_S - 0.01, done - INCIDENT_S, int(INCIDENT_S * 1000),
                                    1, 1)

    # --- bursts --------------------------------------------------------------------------------------------
    def failover(self, t: float) -> list[tuple[float, str, int, str, str]]:
        """A controller failover of the FAILOVER cluster at `t` (about two seconds of lines)."""
        c = self.clusters[FAILOVER]
        n = c.spec.brokers
        c.controller, c.epoch = 2, c.epoch + 1
        c.corr = {}
        c.quiet_until = t + 10.0
        ctl, ep, name = c.controller, c.epoch, c.spec.name
        head = f"[Controller id={ctl} epoch={ep}]"
        slow = self.rng.randrange(3, n + 1)
        out: list[tuple[float, str, int, str, str]] = []

        def add(ts: float, broker: int, level: str, text: str) -> None:
            out.append((ts, name, broker, "state-change.log", f"[{log_time(ts)}] {level} {text} {_SC}"))

        at, parts_n = t, FAILOVER_PARTITIONS
        for b in range(1, n + 1):
            corr = self._corr(c, b)
            leader = (b % n) + 1
            parts = [f"events-{(b * parts_n + i) % 5000}" for i in range(parts_n)]
            for tp in parts:
                topic, idx = tp.rsplit("-", 1)
                add(at, ctl, "TRACE", f"{head} Sending become-follower LeaderAndIsr request LeaderAndIsrPartitionState("
                    f"topicName='{topic}', partitionIndex={idx}, controllerEpoch={ep}, leader={leader}, leaderEpoch=7, "
                    f"isr=[{leader}, {b}], partitionEpoch=9, replicas=[{leader}, {b}], addingReplicas=[], "
                    f"removingReplicas=[], isNew=false, leaderRecoveryState=0) to broker {b} for partition {tp}")
            add(at, ctl, "INFO", f"{head} Sending LeaderAndIsr request to broker {b} with 0 become-leader and "
                f"{parts_n} become-follower partitions")
            h = at + 0.002
            add(h, b, "INFO", f"[Broker id={b}] Handling LeaderAndIsr request correlationId {corr} from controller "
                f"{ctl} for {parts_n} partitions")
            took = INCIDENT_S if b == slow else self.rng.uniform(0.005, 0.2)
            for i, tp in enumerate(parts):
                ts = h + took * (i + 1) / parts_n
                add(ts, b, "TRACE", f"[Broker id={b}] Handling LeaderAndIsr request correlationId {corr} from "
                    f"controller {ctl} epoch {ep} starting the become-follower transition for partition {tp} with "
                    f"leader {leader}")
                add(ts, b, "TRACE", f"[Broker id={b}] Completed LeaderAndIsr request correlationId {corr} from "
                    f"controller {ctl} epoch {ep} for the become-follower transition for partition {tp} with leader "
                    f"{leader}")
            f = h + took
            add(f, b, "INFO", f"[Broker id={b}] Finished LeaderAndIsr request in {int(took * 1000)}ms correlationId "
                f"{corr} from controller {ctl} for {parts_n} partitions")
            if b == slow:
                self.incidents.append(Incident(name, b, corr, f))
            at += 2.0 / n
        um = at + 0.01
        add(um, ctl, "INFO", f"{head} Sending UpdateMetadata request to brokers "
            f"HashSet({', '.join(map(str, range(1, n + 1)))}) for {n * parts_n} partitions")
        for b in range(1, n + 1):
            ts = um + 0.01 + (INCIDENT_S if b == slow else 0.0) + 0.001 * (b % 50)
            add(ts, b, "INFO", f"[Broker id={b}] Add {n * parts_n} partitions and deleted 0 partitions from metadata "
                f"cache in response to UpdateMetadata request sent by controller {ctl} epoch {ep} with correlation id "
                f"{c.corr[b] - 1}")
        out.sort(key=lambda x: x[0])
        return out

    def roll(self, t: float) -> Iterator[tuple[float, list[tuple[float, str, int, str, str]]]]:
        """A rolling restart of the ROLL cluster from `t`: per restarted broker, (its time, its lines)."""
        c = self.clusters[ROLL]
        n = c.spec.brokers
        c.quiet_until = t + n * ROLL_STEP_S + ROUND_EVERY_S
        name, ctl = c.spec.name, c.controller
        head = f"[Controller id={ctl} epoch={c.epoch}]"
        for i, victim in enumerate(b for b in range(1, n + 1) if b != ctl):
            at = t + i * ROLL_STEP_S
            out: list[tuple[float, str, int, str, str]] = [
                (at, name, victim, "server.log", f"[{log_time(at)}] INFO [KafkaServer id={victim}] shutting down "
                 "(kafka.server.KafkaServer)")]
            for b in range(1, n + 1):
                if b == victim:
                    continue
                out += self._round(c, b, at + 0.01 + 0.0005 * b, self.rng.randint(2, 30), 3)[:3]
            um = at + 0.2
            corr_of = {b: c.corr[b] - 1 for b in range(1, n + 1) if b != victim}
            out.append((um, name, ctl, "state-change.log", f"[{log_time(um)}] INFO {head} Sending UpdateMetadata "
                        f"request to brokers HashSet({', '.join(map(str, sorted(corr_of)))}) for 300 partitions {_SC}"))
            for b, corr in corr_of.items():
                ts = um + 0.005
                out.append((ts, name, b, "state-change.log", f"[{log_time(ts)}] INFO [Broker id={b}] Add 300 "
                            "partitions and deleted 0 partitions from metadata cache in response to UpdateMetadata "
                            f"request sent by controller {ctl} epoch {c.epoch} with correlation id {corr} {_SC}"))
            up = at + ROLL_STEP_S * 0.8
            out.append((up, name, victim, "server.log", f"[{log_time(up)}] INFO [KafkaServer id={victim}] started "
                        "(kafka.server.KafkaServer)"))
            out.sort(key=lambda x: x[0])
            yield at, out

    # --- records -------------------------------------------------------------------------------------------
    def records(self, lines: list[tuple[float, str, int, str, str]]) -> list[tuple[bytes, bytes]]:
        """(key, value) Kafka records of `lines` as rsyslog ships them with the project's configuration: the value
        the planewatch template's envelope, each file's byte offsets carried on; the key its host and file (the
        planewatch_key template: a file's lines in one partition)."""
        out = []
        for _t, cluster, broker, name, line in lines:
            key = (cluster, broker, name)
            off = self.offsets.get(key, 0)
            self.offsets[key] = off + len(line.encode()) + 1
            host, file = f"kafka-{broker}.{cluster}", f"{LOG_DIR}/{name}"
            out.append((f"{host}:{file}".encode(), json.dumps(
                {"host": host, "file": file, "offset": off, "line": line}, separators=(",", ":")).encode()))
        return out
