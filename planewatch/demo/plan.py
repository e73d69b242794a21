"""What `planewatch demo` runs and how it scores the result (pure: no processes, no I/O).

The demo runs the incident scenarios one after another, each on its own 3-broker reference cluster whose directory
name is the run name, so that every run is its own ``cluster`` in the lake. A scenario's timeline (JSON lines) says
what it injected and when; the expected alerts per run (``broker/scenarios/expected.py``) say which alert type and
broker must catch it and which alert types must stay quiet. The result is one row per injected incident: the alert
that caught it and the detection delay (from the timeline event to the moment the alert was readable through the
API), plus every alert that should not have fired.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from jobs.run.runner import QUERY_RESTART
from planewatch.kafka.cluster import SCRAPE_INTERVAL_S as KAFKA_SCRAPE_INTERVAL_S

__all__ = [
    "ALL_RUNS",
    "EXPLAINED_FIELDS",
    "EXTRA_RUNS",
    "KAFKA_KRAFT",
    "KAFKA_ZK",
    "RUNS",
    "SCRAPE_INTERVAL_S",
    "DemoRun",
    "Detection",
    "Incident",
    "ProcessFailure",
    "SeenAlert",
    "explained_alerts",
    "incidents_of",
    "last_error",
    "match",
    "query_restarts",
    "render_incidents",
    "render_rolls",
    "render_table",
    "unexpected_alerts",
]


@dataclass(frozen=True)
class DemoRun:
    """One scenario run of the demo: `planewatch scenario <scenario> [--kafka VERSION]` with its cluster under
    ``<clusters>/<name>`` (the run's name is its cluster's name in the lake)."""

    name: str
    title: str
    scenario: str = ""  # "" = the run's name
    kafka: str | None = None  # Apache Kafka version; None = the reference broker
    exporter: str = "kafka-2_0_0"  # Apache Kafka: whose JMX exporter namings (planewatch.kafka.exporters)
    log4j: str = "planewatch"  # Apache Kafka: planewatch's logger levels or Kafka's shipped ones ("shipped")

    @property
    def scenario_name(self) -> str:
        return self.scenario or self.name

    @property
    def engine(self) -> str:
        """What ran the brokers: ``reference`` or ``Apache Kafka X.Y.Z``."""
        return "reference" if self.kafka is None else f"Apache Kafka {self.kafka}"


# How often the demo's pipeline scrapes a running Apache Kafka's JMX exporters by default.
SCRAPE_INTERVAL_S = KAFKA_SCRAPE_INTERVAL_S

# Apache Kafka versions of the real-Kafka runs: the last ZooKeeper-mode line (KIP-291's control plane) and KRaft.
KAFKA_ZK = "3.9.1"
KAFKA_KRAFT = "4.4.0"

# healthy first, broker-bounce and the KRaft run last. KIP-291 runs on Apache Kafka itself; the designs Kafka never
# shipped (KAFKA-6974's async fetcher) and the fault injections planewatch's own controller makes possible run on
# the reference broker.
RUNS: tuple[DemoRun, ...] = (
    DemoRun("healthy", "healthy cluster under acks=all load: no alert expected"),
    DemoRun("kafka-produce-backlog-without-control-plane",
            "KIP-291 on Apache Kafka: LeaderAndIsr/UpdateMetadata queue behind a produce backlog (no control plane)",
            "produce-backlog-without-control-plane", KAFKA_ZK),
    DemoRun("kafka-produce-backlog-with-control-plane",
            "KIP-291 on Apache Kafka: the same backlog with control.plane.listener.name set",
            "produce-backlog-with-control-plane", KAFKA_ZK),
    DemoRun("connection-storm", "KIP-402: thousands of connections starve the acceptor and network threads"),
    DemoRun("fetcher-lock-locked", "KAFKA-6974: LeaderAndIsr blocked on the replica fetchers' partition lock"),
    DemoRun("fetcher-lock-async", "KAFKA-6974 fixed: the same load with asynchronous fetcher checkpoints"),
    DemoRun("broker-bounce", "kill -9 a broker and restart it: stale broker epoch requests fenced"),
    DemoRun("kraft-metadata-lag", "KRaft on Apache Kafka: the controller quorum paused, brokers' metadata falls behind",
            "metadata-lag", KAFKA_KRAFT),
)
# Runs `--runs` may name that the default demo leaves out (they add minutes; the default shows their incident
# elsewhere or they show none).
EXTRA_RUNS: tuple[DemoRun, ...] = (
    DemoRun("controller-failover", "the controller is killed under load and a new one takes over: no alert expected"),
    DemoRun("produce-backlog-without-control-plane",
            "KIP-291 on the reference broker: control requests wait behind a produce backlog (no control plane)"),
    DemoRun("produce-backlog-with-control-plane",
            "KIP-291 on the reference broker: the same backlog with a dedicated control-plane listener"),
    DemoRun("kafka-healthy", "a healthy Apache Kafka cluster under load: no alert expected", "healthy", KAFKA_ZK),
    DemoRun("kafka-connection-storm", "KIP-402 on Apache Kafka: a capped listener's acceptor blocks",
            "connection-storm", KAFKA_ZK),
    DemoRun("kafka-broker-bounce", "Apache Kafka: kill -9 a broker, restart it, a stale-epoch request fenced",
            "broker-bounce", KAFKA_ZK),
    DemoRun("kafka-controller-failover", "Apache Kafka: the active controller killed under load: no alert expected",
            "controller-failover", KAFKA_ZK),
    DemoRun("kraft-broker-fenced", "KRaft on Apache Kafka: a broker paused past its session timeout is fenced",
            "broker-fenced", KAFKA_KRAFT),
    DemoRun("kraft-controller-overload", "KRaft on Apache Kafka: topic-creation bursts overload the controller, "
            "brokers' heartbeats time out in its queue", "controller-overload", KAFKA_KRAFT),
    DemoRun("kraft-healthy", "a healthy KRaft cluster of Apache Kafka under load: no alert expected", "healthy",
            KAFKA_KRAFT),
    DemoRun("kraft-quorum-unstable", "KRaft on Apache Kafka: the active controller of three voters paused until "
            "another is elected, three times", "quorum-unstable", KAFKA_KRAFT),
    DemoRun("kraft-metadata-publish-slow", "KRaft on Apache Kafka: one broker starved of CPU applies the growing "
            "metadata log late (needs root: a cgroup CPU quota)", "metadata-publish-slow", KAFKA_KRAFT),
    DemoRun("kraft-elections", "KRaft on Apache Kafka: every broker shut down in turn and brought back: an unclean "
            "election, then one from the eligible leader replicas (KIP-966)", "elections", KAFKA_KRAFT),
    # roll safety: the same rolling restart on a fixed timer and gated by `planewatch roll-check`, side by side
    DemoRun("kafka-rolling-restart-timer", "Apache Kafka: a rolling restart on a fixed timer (8 s between stops) "
            "under acks=all load", "rolling-restart-timer", KAFKA_ZK),
    DemoRun("kafka-rolling-restart-gated", "Apache Kafka: the same roll, each restart after planewatch roll-check "
            "says safe", "rolling-restart-gated", KAFKA_ZK),
    DemoRun("kraft-rolling-restart-timer", "KRaft on Apache Kafka: a rolling restart on a fixed timer",
            "rolling-restart-timer", KAFKA_KRAFT),
    DemoRun("kraft-rolling-restart-gated", "KRaft on Apache Kafka: the same roll gated by planewatch roll-check",
            "rolling-restart-gated", KAFKA_KRAFT),
    DemoRun("kafka-rolling-restart-driven", "Apache Kafka: planewatch roll restarts every broker, each after the "
            "Admin API's verdict says safe, the controller last", "rolling-restart-driven", KAFKA_ZK),
    DemoRun("kafka-rolling-restart-strimzi", "Apache Kafka with Kafka's shipped log4j levels and Strimzi's exporter "
            "namings: each restart once every ISR is full again, as Strimzi rolls", "rolling-restart-isr-gated",
            KAFKA_ZK, "strimzi", "shipped"),
    DemoRun("kraft-rolling-restart-strimzi", "KRaft on Apache Kafka, shipped log4j levels, Strimzi's namings: each "
            "restart once every ISR is full again", "rolling-restart-isr-gated", KAFKA_KRAFT, "strimzi", "shipped"),
    # the timer rolls as operators run Kafka: its shipped log4j levels (no request log, state-change at INFO), a
    # public exporter stack's namings
    DemoRun("kafka-rolling-restart-timer-shipped", "Apache Kafka with Kafka's shipped log4j levels and Strimzi's "
            "exporter namings: a rolling restart on a fixed timer", "rolling-restart-timer", KAFKA_ZK, "strimzi",
            "shipped"),
    DemoRun("kraft-rolling-restart-timer-shipped", "KRaft on Apache Kafka, shipped log4j levels, Strimzi's namings: a "
            "rolling restart on a fixed timer", "rolling-restart-timer", KAFKA_KRAFT, "strimzi", "shipped"),
    DemoRun("kafka-rolling-restart-gated-shipped", "Apache Kafka with Kafka's shipped log4j levels and Strimzi's "
            "exporter namings: each restart after planewatch roll-check says safe", "rolling-restart-gated", KAFKA_ZK,
            "strimzi", "shipped"),
    DemoRun("kraft-rolling-restart-gated-shipped", "KRaft on Apache Kafka, shipped log4j levels, Strimzi's namings: "
            "each restart after planewatch roll-check says safe", "rolling-restart-gated", KAFKA_KRAFT, "strimzi",
            "shipped"),
    DemoRun("kraft-rolling-restart-driven", "KRaft on Apache Kafka: planewatch roll restarts every broker, then "
            "three controllers quorum-aware, the active one last", "rolling-restart-driven", KAFKA_KRAFT),
    # as operators run Kafka: its shipped log4j levels and a public exporter stack's namings
    DemoRun("kafka-connection-storm-strimzi", "KIP-402 on Apache Kafka with Strimzi's exporter namings and Kafka's "
            "shipped log4j levels", "connection-storm", KAFKA_ZK, "strimzi", "shipped"),
    DemoRun("kafka-produce-backlog-confluent", "KIP-291 on Apache Kafka (no control plane) with Confluent's exporter "
            "namings (metrics from 2 minutes after each start) and Kafka's shipped log4j levels",
            "produce-backlog-without-control-plane", KAFKA_ZK, "confluent", "shipped"),
)
ALL_RUNS = RUNS + EXTRA_RUNS


class Expectation(Protocol):
    """One expected incident (broker/scenarios/expected.py ExpectedIncident)."""

    @property
    def run(self) -> str: ...
    @property
    def event(self) -> str: ...
    @property
    def alert_type(self) -> str: ...
    @property
    def broker_id(self) -> int | str | None: ...
    @property
    def occurrence(self) -> int: ...
    @property
    def cause(self) -> str | None: ...


@dataclass(frozen=True)
class Incident:
    """An injected incident: the run (= cluster), the timeline event and when it happened, what must catch it."""

    run: str
    event: str
    ts_ms: int
    alert_type: str
    broker_id: int | None  # None: any broker of the cluster
    expected_cause: str | None = None  # the cause its alert's incident must have, where the run states one


@dataclass(frozen=True)
class SeenAlert:
    """An alert as GET /alerts returned it, with the wall-clock time (ms) the demo first saw it there."""

    alert_id: str
    type: str
    cluster: str
    broker_id: int | None
    severity: str | None
    summary: str | None
    seen_ms: int
    # the alert's `started_at` (ms): the event time its condition became visible in the data (the line that
    # completed a slow request written, the sample that crossed a threshold scraped, a running request's age crossing
    # the warning level); None when the API gave none
    visible_ms: int | None = None

    @classmethod
    def from_api(cls, row: Mapping[str, Any], seen_ms: int) -> SeenAlert:
        """From one element of GET /alerts `data`."""
        bid = row.get("broker_id")
        return cls(str(row["alert_id"]), str(row["type"]), str(row["cluster"]), None if bid is None else int(bid),
                   row.get("severity"), row.get("summary"), seen_ms, _epoch_ms(row.get("started_at")))


def _epoch_ms(value: Any) -> int | None:
    """An API timestamp (ISO 8601; naive means UTC) as epoch milliseconds; None if absent or unreadable."""
    import datetime as dt

    if not isinstance(value, str):
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int((t if t.tzinfo else t.replace(tzinfo=dt.UTC)).timestamp() * 1000)


@dataclass(frozen=True)
class Detection:
    """An incident and the alert that caught it (None: not caught)."""

    incident: Incident
    alert: SeenAlert | None

    @property
    def delay_s(self) -> float | None:
        """Seconds from the incident's timeline event to the alert being readable (never below 0)."""
        return None if self.alert is None else max(0.0, (self.alert.seen_ms - self.incident.ts_ms) / 1000)

    @property
    def visible_delay_s(self) -> float | None:
        """Seconds from the moment the condition became visible in the data (the alert's `started_at`, event time;
        the demo's brokers stamp their lines and samples with this machine's clock) to the alert being readable."""
        if self.alert is None or self.alert.visible_ms is None:
            return None
        return max(0.0, (self.alert.seen_ms - self.alert.visible_ms) / 1000)


def incidents_of(run: str, events: Iterable[Mapping[str, Any]], expected: Iterable[Expectation]) -> list[Incident]:
    """The incidents a run injected: each expectation of the run whose marker event (its `occurrence`-th, in
    timeline order) is in its timeline."""
    evs = list(events)
    out: list[Incident] = []
    for exp in expected:
        if exp.run != run:
            continue
        if exp.occurrence < 1:
            raise ValueError(f"{exp.run} {exp.event}: occurrence {exp.occurrence} (the first is 1)")
        marks = [ev for ev in evs if ev.get("event") == exp.event]
        if len(marks) < exp.occurrence:
            continue
        ev = marks[exp.occurrence - 1]
        bid = exp.broker_id
        broker = ev.get(bid) if isinstance(bid, str) else bid
        out.append(Incident(run, exp.event, int(ev["ts_ms"]), exp.alert_type, None if broker is None else int(broker),
                            None if exp.cause is None else str(exp.cause)))
    return out


def _catches(alert: SeenAlert, inc: Incident) -> bool:
    return alert.cluster == inc.run and alert.type == inc.alert_type and (
        inc.broker_id is None or alert.broker_id == inc.broker_id)


def match(incidents: Sequence[Incident], alerts: Iterable[SeenAlert]) -> list[Detection]:
    """Each incident with the earliest-seen alert of its type on its cluster (and broker, when it names one)."""
    seen = sorted(alerts, key=lambda a: (a.seen_ms, a.alert_id))
    return [Detection(inc, next((a for a in seen if _catches(a, inc)), None)) for inc in incidents]


def _forbidden(alerts: Iterable[SeenAlert], forbidden: Mapping[str, Sequence[str]], runs: Iterable[str]
               ) -> list[SeenAlert]:
    names = set(runs)
    out = [a for a in alerts if a.cluster in names
           and ("*" in forbidden.get(a.cluster, ()) or a.type in forbidden.get(a.cluster, ()))]
    return sorted(out, key=lambda a: (a.cluster, a.seen_ms))


def _is_explained(a: SeenAlert, causes: Mapping[str, str], explained: Mapping[str, Sequence[str]]) -> bool:
    return causes.get(a.alert_id) in explained.get(a.cluster, ())


def unexpected_alerts(alerts: Iterable[SeenAlert], forbidden: Mapping[str, Sequence[str]],
                      runs: Iterable[str], causes: Mapping[str, str] | None = None,
                      explained: Mapping[str, Sequence[str]] | None = None) -> list[SeenAlert]:
    """Alerts of a type that a run forbids ("*": every type) on that run's cluster: the false alarms. An alert
    whose incident's cause (`causes`: alert id -> cause) is one the run lists in `explained` is not one: it is a
    true finding outside the scenario's incident, put down to a cause the run allows (:func:`explained_alerts`)."""
    return [a for a in _forbidden(alerts, forbidden, runs) if not _is_explained(a, causes or {}, explained or {})]


def explained_alerts(alerts: Iterable[SeenAlert], forbidden: Mapping[str, Sequence[str]], runs: Iterable[str],
                     causes: Mapping[str, str], explained: Mapping[str, Sequence[str]]) -> list[SeenAlert]:
    """The forbidden-type alerts whose incident's cause the run allows (e.g. a control request slow in the
    handler of a saturated broker on a run whose control plane keeps it out of the request queue)."""
    return [a for a in _forbidden(alerts, forbidden, runs) if _is_explained(a, causes, explained)]


@dataclass(frozen=True)
class ProcessFailure:
    """Something of the demo's own machinery that failed while it ran: the API or the pipeline exiting, or one of
    the pipeline's queries failing (restarted from its checkpoint, its batches meanwhile unprocessed)."""

    process: str  # "api" | "pipeline"
    what: str
    error: str


# The pipeline's restart warning (jobs.run.runner.QUERY_RESTART) as a pattern: family, error, restart number.
_RESTART = re.compile(re.escape(QUERY_RESTART).replace("%s", "(.*?)").replace("%d", r"(\d+)") + "$")
# A line of a Python traceback's last frame or a logged error: what a dead child's log is summarised by.
_ERROR_LINE = re.compile(r"^(?:[\w.]+(?:Error|Exception|Exit|Interrupt)\b|.* (?:ERROR|CRITICAL) )")
# A reported error is cut to this many characters: a Java exception's message can be pages long.
ERROR_CHARS = 300


def query_restarts(log_lines: Iterable[str]) -> list[ProcessFailure]:
    """The pipeline's query failures in its log (one per restart), in log order."""
    out = []
    for line in log_lines:
        m = _RESTART.search(line.rstrip("\n"))
        if m:
            family, error, n = m.groups()
            out.append(ProcessFailure("pipeline", f"{family} query failed (restart {n})", error[:ERROR_CHARS]))
    return out


def last_error(log_lines: Sequence[str]) -> str:
    """What a dead child's log says last about why: its last error line, else its last line ("" when empty)."""
    lines = [line.rstrip() for line in log_lines if line.strip()]
    errors = [line for line in lines if _ERROR_LINE.match(line)]
    return (errors or lines or [""])[-1][:ERROR_CHARS]


def _cell(v: object) -> str:
    return "-" if v is None else str(v)


def _columns(header: tuple[str, ...], body: Sequence[tuple[str, ...]]) -> list[str]:
    """A plain-text table: the header, a rule of dashes, the body, columns padded to their widest cell."""
    widths = [max(len(r[c]) for r in (header, *body)) for c in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in (header, *body)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _cause_cell(got: str | None, expected: str | None) -> str:
    if got is None:
        return "-" if expected is None else f"- (expected {expected})"
    return got if expected is None or got == expected else f"{got} (expected {expected})"


def render_table(detections: Sequence[Detection], false_alarms: Sequence[SeenAlert],
                 engines: Mapping[str, str] | None = None, failures: Sequence[ProcessFailure] = (),
                 causes: Mapping[str, str] | None = None, explained: Sequence[SeenAlert] = ()) -> str:
    """The incident-to-alert table printed at the end of the demo (plain text, fixed-width columns); ``engines``
    names what ran each run's brokers (run -> engine; a run not named ran on the reference broker); ``causes``
    the cause of the incident each alert belongs to (alert id -> cause, GET /incidents); ``explained`` the alerts
    of a forbidden type whose cause the run allows. The footer counts the catches and false alarms, lists the
    explained alerts with their cause and names every failure of the demo's own processes."""
    header = ("run (cluster)", "engine", "incident", "expected alert", "broker", "caught by", "severity", "delay s",
              "from visible s", "incident cause")
    cause = causes or {}
    body: list[tuple[str, ...]] = []
    for d in detections:
        i, a = d.incident, d.alert
        body.append((i.run, (engines or {}).get(i.run, "reference"), i.event, i.alert_type,
                     _cell(i.broker_id) if i.broker_id is not None else "any",
                     "NOT DETECTED" if a is None else f"{a.type} broker {_cell(a.broker_id)}",
                     _cell(a.severity) if a else "-", f"{d.delay_s:.1f}" if d.delay_s is not None else "-",
                     f"{d.visible_delay_s:.1f}" if d.visible_delay_s is not None else "-",
                     _cause_cell(cause.get(a.alert_id) if a else None, i.expected_cause)))
    lines = _columns(header, body)
    caught = sum(1 for d in detections if d.alert is not None)
    lines.append("")
    lines.append(f"{caught} of {len(detections)} injected incidents caught; "
                 f"{len(false_alarms)} alert(s) where none was expected")
    stated = [d for d in detections if d.incident.expected_cause is not None]
    if stated:
        right = sum(1 for d in stated if d.alert is not None
                    and cause.get(d.alert.alert_id) == d.incident.expected_cause)
        lines.append(f"{right} of {len(stated)} incidents that state their cause put down to it")
    for a in false_alarms:
        why = f" [incident: {cause[a.alert_id]}]" if a.alert_id in cause else ""
        lines.append(f"  unexpected: {a.cluster} {a.type} broker {_cell(a.broker_id)}{why}: {_cell(a.summary)}")
    if explained:
        lines.append(f"{len(explained)} alert(s) outside the scenarios' incidents, each put down to a cause its run "
                     "allows:")
    for a in explained:
        lines.append(f"  explained: {a.cluster} {a.type} broker {_cell(a.broker_id)} [incident: "
                     f"{cause.get(a.alert_id)}]: {_cell(a.summary)}")
    if failures:
        lines.append(f"the demo did not run cleanly: {len(failures)} failure(s) of its own processes")
    for f in failures:
        lines.append(f"  {f.process}: {f.what}: {f.error or '(no error in its log)'}")
    return "\n".join(lines)


# The rolling-restart table's columns: header -> the scenario's roll-finished field.
ROLL_COLUMNS = (("restarts", "restarts"), ("roll s", "roll_s"), ("waited for roll-check s", "gate_wait_s"),
                ("under min ISR s", "under_min_isr_s_total"), ("leaderless s", "leaderless_s_total"),
                ("most offline", "max_offline_partitions"), ("produce errors", "failed"),
                ("longest stall s", "longest_stall_s"), ("latency p99 ms", "latency_p99_ms"),
                ("latency max ms", "latency_max_ms"), ("lost", "lost"))


def render_rolls(reports: Mapping[str, Mapping[str, Any]], engines: Mapping[str, str],
                 alerts: Iterable[SeenAlert]) -> str:
    """The rolling restarts side by side (run -> its roll-finished event): what the clients saw during each roll,
    and the ROLL_TOO_FAST alerts each raised. Empty when no roll was played."""
    if not reports:
        return ""
    too_fast: dict[str, int] = {}
    for a in alerts:
        if a.type == "ROLL_TOO_FAST":
            too_fast[a.cluster] = too_fast.get(a.cluster, 0) + 1
    header = ("rolling restart", "engine", *(h for h, _ in ROLL_COLUMNS), "ROLL_TOO_FAST")
    body = [(run, engines.get(run, "reference"), *(_cell(r.get(k)) for _, k in ROLL_COLUMNS),
             str(too_fast.get(run, 0))) for run, r in reports.items()]
    lines = _columns(header, body)
    return "\n".join(lines)


# What every incident must say (Incident of the API): the cause, what it cost, against what, what to do.
EXPLAINED_FIELDS = ("cause", "impact", "baseline", "action")


def render_incidents(incidents: Sequence[Mapping[str, Any]], alerts: Iterable[SeenAlert],
                     runs: Sequence[str]) -> str:
    """The demo's incidents (GET /incidents) of its runs, one line each (run, broker, cause, alerts, severity,
    which of EXPLAINED_FIELDS are empty), and a footer: how many of the runs' alerts belong to an incident with
    every one of EXPLAINED_FIELDS filled."""
    mine = [i for i in incidents if i.get("cluster") in runs]
    header = ("run (cluster)", "broker", "incident cause", "alerts", "severity", "alert types", "missing")
    body = [(str(i["cluster"]), _cell(i.get("broker_id")), _cell(i.get("cause")), _cell(i.get("alerts")),
             _cell(i.get("severity")), ",".join(i.get("alert_types") or []),
             ",".join(f for f in EXPLAINED_FIELDS if not i.get(f)) or "-")
            for i in sorted(mine, key=lambda i: (runs.index(i["cluster"]), str(i.get("started_at"))))]
    lines = _columns(header, body)
    full = {aid for i in mine if all(i.get(f) for f in EXPLAINED_FIELDS) for aid in i.get("alert_ids") or []}
    theirs = [a for a in alerts if a.cluster in runs]
    explained = sum(1 for a in theirs if a.alert_id in full)
    lines.append("")
    lines.append(f"{len(mine)} incident(s) group {len(theirs)} alert(s); {explained} of {len(theirs)} belong to an "
                 "incident whose cause, impact, baseline and action are filled")
    return "\n".join(lines)
