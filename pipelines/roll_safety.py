"""The roll-safety verdict of one cluster at one moment (pure: rows in, verdict out).

Inputs, all of the cluster and as of `now` (the API and `planewatch roll-check` read them from the lake:
:mod:`api.roll_safety`):

* ``latest``: samples of :data:`ROLL_SIGNALS` (columns broker_id, signal, attribute, value, ts, and `subject`
  where the per-broker controller gauges are read: the broker such a gauge is about, :func:`with_subject`; the
  newest per node, signal, attribute and subject is enough). A node is every broker or controller scraped within
  the membership window; one whose newest sample is older than `stale_after_s` makes the verdict ``unknown`` (a
  stopped broker is not a healthy one).
* ``requests``: control_request_latency rows sent within `in_flight_window_s` before `now` (columns broker_id,
  request, sent_ts, finished_ts, status): the LeaderAndIsr and UpdateMetadata not finished by `now`, not given up
  on, and sent to the broker's current incarnation (its process start, when exported, before the send) were in
  flight (:func:`in_flight_at`).
* ``alerts``: alerts of :data:`CONTROL_REQUEST_ALERTS` started by `now` (columns type, broker_id, started_at,
  resolved_at): those not resolved by `now` were open (:func:`open_at`).

`now` may lie in the past (ROLL_TOO_FAST judges the moment a broker began its shutdown): every input is read as
it stood then.

Each check (:class:`schemas.roll_safety.RollCheck`) gives a :class:`Reason` with its signal, value, threshold and the
age of its data; the verdict is the worst of them (:data:`schemas.roll_safety.SEVERITY_ORDER`). Missing data of a
required check is ``unknown``, never ``ok``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import polars as pl
import pyarrow as pa

from schemas.alerts import AlertType
from schemas.roll_safety import SEVERITY_ORDER, CheckStatus, RollCheck, RollVerdict
from schemas.signals import (
    BROKER_ACTIVE,
    BROKER_REGISTRATION_STATES,
    EVENT_QUEUE_ATTRIBUTE,
    PER_BROKER_SIGNALS,
    START_SIGNALS,
    SUBJECT_LABEL,
    Signal,
)

__all__ = ["CONTROL_REQUEST_ALERTS", "DEFAULT_THRESHOLDS", "ROLL_SIGNALS", "Reason", "RollThresholds",
           "Verdict", "in_flight_at", "open_at", "roll_verdict", "utc_frame", "with_subject", "worst"]

_S = Signal
ROLL_SIGNALS: tuple[str, ...] = tuple(s.value for s in (
    _S.OfflinePartitionsCount, _S.UnderMinIsrPartitionCount, _S.UnderReplicatedPartitions, _S.ActiveControllerCount,
    _S.RaftCurrentLeader, _S.FencedBrokerCount, _S.MetadataApplyLagMs, _S.LastAppliedRecordLagMs,
    _S.EventQueueTimeMs, _S.PreferredReplicaImbalanceCount, _S.BrokerRegistrationState,
    _S.TimeSinceLastHeartbeatReceivedMs)) + tuple(START_SIGNALS)
# Which start a node's incarnation is told by, first choice first.
_START_RANK = {name: i for i, name in enumerate(START_SIGNALS)}
# Attributes a gauge's value comes under (jmx_exporter: Value; a JSON reporter may leave it empty). The event queue
# histogram is read at its median (schemas.signals.EVENT_QUEUE_ATTRIBUTE says why).
_GAUGE_ATTRIBUTES = ("Value", "")
# Control requests a roll waits for: the ones that move leadership and metadata (a StopReplica to a broker being
# restarted has no finish to wait for: the broker it went to is gone).
_WAITED_REQUESTS = ("LeaderAndIsr", "UpdateMetadata")
# Pairing statuses that are not "in flight": given up on (LEADER_AND_ISR_NOT_COMPLETED says so) or dropped.
_NOT_IN_FLIGHT = ("never_completed", "evicted")
# A request completed without a finish time was answered without a line of its own: an UpdateMetadata for 0
# partitions (a broker's start brings one; the broker logs nothing for it at Kafka's shipped levels), known done once
# a later request to that broker was handled. It takes milliseconds: never in flight for a roll to wait on. (Counted
# as in flight until its window passed, it made a healthy roll on Apache Kafka 3.9.1 say ROLL_TOO_FAST: "a
# UpdateMetadata to broker 2 has been in flight for 145 s".)
_COMPLETED = "completed"
# Open alerts that say a control request is slow or stuck: a roll now adds its own requests behind them.
CONTROL_REQUEST_ALERTS: tuple[str, ...] = tuple(t.value for t in (
    AlertType.DELAYED_LEADER_AND_ISR, AlertType.LEADER_AND_ISR_NOT_COMPLETED, AlertType.DELAYED_UPDATE_METADATA,
    AlertType.DELAYED_STOP_REPLICA, AlertType.CONTROL_REQUEST_QUEUED_BEHIND_DATA, AlertType.CONTROL_REQUEST_QUEUE_DELAY,
    AlertType.CONTROL_PLANE_QUEUE_BACKLOG, AlertType.LOCK_CONTENTION))


@dataclass(frozen=True)
class RollThresholds:
    """What the checks compare with (each a query parameter of GET /clusters/{cluster}/roll-safety and a flag of
    `planewatch roll-check`)."""

    # A node scraped within this window belongs to the cluster (a broker stopped for a roll is still one).
    # 15 minutes: longer than any broker's restart, so a broker that does not come back keeps the verdict unknown.
    membership_s: float = 900.0
    # A node whose newest sample is older than this is stale: 3 scrapes at the Prometheus Operator's 30 s.
    stale_after_s: float = 90.0
    # Under-replicated partitions tolerated (0: every replica back in its ISR, as Strimzi's rolls wait for).
    max_under_replicated: int = 0
    # KRaft: applied metadata this far behind (ms) is still caught up. The active controller appends a no-op
    # record every 500 ms (metadata.max.idle.interval.ms), so a healthy node stays within a second or two.
    max_metadata_lag_ms: float = 5000.0
    # The active controller's event queue time (median, ms): above it the controller is busy with earlier work.
    max_event_queue_ms: float = 1000.0
    # Partitions not led by their preferred replica tolerated: leadership returns with the preferred-leader
    # election (auto.leader.rebalance.enable, every leader.imbalance.check.interval.seconds: 300 s by default).
    max_preferred_imbalance: int = 0
    # A control request counts as in flight if sent within this long and not finished (older ones are the
    # pairing's never_completed: LEADER_AND_ISR_NOT_COMPLETED says so).
    in_flight_window_s: float = 300.0
    # KRaft 4.1+: a broker's heartbeat last heard this long ago (ms, TimeSinceLastHeartbeatReceivedMs) is late:
    # half of Kafka's default broker.session.timeout.ms (9 s), more than two of its heartbeats (every 2 s,
    # broker.heartbeat.interval.ms) missed in a row; the controller fences it at the full timeout.
    max_heartbeat_age_ms: float = 4500.0


DEFAULT_THRESHOLDS = RollThresholds()
# Two nodes claiming the active controller in samples further apart than this are one move (the older claim is
# superseded), not two controllers: one scrape interval of the reference setup and its jitter.
CLAIM_SKEW_S = 10.0


@dataclass(frozen=True)
class Reason:
    """One check's outcome."""

    check: RollCheck
    status: CheckStatus
    text: str
    signal: str | None = None
    value: float | None = None
    threshold: float | None = None
    broker_id: int | None = None
    age_s: float | None = None  # how old the data behind it is
    partitions: tuple[str, ...] = ()  # the partitions it is about (the Admin API's checks), sorted


@dataclass(frozen=True)
class Verdict:
    """The roll-safety verdict of one cluster at `as_of`."""

    cluster: str
    verdict: RollVerdict
    as_of: dt.datetime
    mode: str  # kraft | zookeeper | unknown
    nodes: list[int]
    reasons: list[Reason] = field(default_factory=list)
    broker_id: int | None = None  # the broker the caller asked about


def utc_frame(table: pa.Table) -> pl.DataFrame:
    """An Arrow table of lake rows as the inputs above take them: every timestamp column in UTC, microseconds."""
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame.with_columns(pl.col(c).dt.convert_time_zone("UTC").dt.cast_time_unit("us")
                              for c, typ in frame.schema.items() if isinstance(typ, pl.Datetime))


def worst(statuses: Iterable[CheckStatus]) -> RollVerdict:
    """The verdict a set of check outcomes gives: the worst of them (SEVERITY_ORDER); safe when all are ok or
    skipped."""
    found = {RollVerdict(s.value) if s.value in RollVerdict.__members__ else RollVerdict.safe for s in statuses}
    return next((v for v in SEVERITY_ORDER if v in found), RollVerdict.safe)


def with_subject(samples: pl.DataFrame) -> pl.DataFrame:
    """`samples` with `subject`: the broker a per-broker controller gauge (PER_BROKER_SIGNALS) is about, from its
    `labels` (SUBJECT_LABEL); null for every other signal, and when `samples` has no labels."""
    if "labels" not in samples.columns:
        return samples.with_columns(subject=pl.lit(None, dtype=pl.Int32))
    pairs = pl.col("labels").cast(pl.List(pl.Struct({"key": pl.String, "value": pl.String})))  # the lake's map
    label = (pairs.list.eval(pl.element().filter(pl.element().struct.field("key") == SUBJECT_LABEL)
                                        .struct.field("value")).list.first())
    subject = pl.when(pl.col("signal").is_in(list(PER_BROKER_SIGNALS))).then(label.cast(pl.Int32, strict=False))
    return samples.with_columns(subject=subject).drop("labels")


def _newest_starts(rows: pl.DataFrame) -> pl.DataFrame:
    """Each node's start (`_started`, s since the epoch) from its newest START_SIGNALS rows: jmx_exporter's process
    start, else Kafka's app-info start-time-ms."""
    to_s = pl.col("signal").replace_strict(START_SIGNALS, default=None, return_dtype=pl.Float64)
    return (rows.filter(pl.col("signal").is_in(list(START_SIGNALS)))
            .with_columns(_rank=pl.col("signal").replace_strict(_START_RANK, default=len(_START_RANK)))
            .sort("_rank").unique("broker_id", keep="first")
            .select("broker_id", _started=pl.col("value") * to_s))


def _current_incarnation(rows: pl.DataFrame, starts: pl.DataFrame) -> pl.DataFrame:
    """`rows` without the samples a node's previous process took: those older than its newest start (`starts`,
    _newest_starts). A broker just restarted may not export a gauge again for a scrape or two, and its previous
    process's value would stand for it: on Apache Kafka 3.9.1 with Strimzi's namings, the old controller's
    ActiveControllerCount 1 beside its successor's (a false "2 active controllers" and ROLL_TOO_FAST in a healthy
    roll)."""
    if starts.is_empty():
        return rows
    sampled_s = pl.col("ts").dt.epoch("us").cast(pl.Float64) / 1e6
    return (rows.join(starts, on="broker_id", how="left")
            .filter(pl.col("_started").is_null() | (sampled_s >= pl.col("_started"))
                    | pl.col("signal").is_in(list(START_SIGNALS)))
            .drop("_started"))


class _Latest:
    """The newest value per (node, signal) of the gauges the checks read, with the data's age."""

    def __init__(self, latest: pl.DataFrame, now: dt.datetime) -> None:
        self.now = now
        attr = pl.col("attribute").fill_null("")
        keep = ((pl.col("signal") == _S.EventQueueTimeMs.value) & (attr == EVENT_QUEUE_ATTRIBUTE)) | (
            (pl.col("signal") != _S.EventQueueTimeMs.value) & attr.is_in(_GAUGE_ATTRIBUTES))
        if "subject" not in latest.columns:
            latest = latest.with_columns(subject=pl.lit(None, dtype=pl.Int32))
        rows = (latest.filter(keep & pl.col("value").is_not_null() & pl.col("ts").is_not_null())
                .sort("ts").unique(["broker_id", "signal", "subject"], keep="last"))
        starts = _newest_starts(rows)
        self.starts = {int(b): float(v) for b, v in starts.iter_rows()}  # node -> its process start, epoch s
        self.rows = _current_incarnation(rows, starts)

    def of(self, signal: Signal) -> list[tuple[int, float, float]]:
        """(node, value, age s) of `signal`, per node that reports it."""
        rows = self.rows.filter(pl.col("signal") == signal.value).sort("broker_id")
        return [(int(r["broker_id"]), float(r["value"]), self.age(r["ts"])) for r in rows.iter_rows(named=True)]

    def about(self, signal: Signal) -> list[tuple[int, float, float]]:
        """(broker it is about, value, age s) of a per-broker controller gauge: per broker, the newest sample any
        controller exported (the active one's: a node that lost the controller stops exporting the heartbeat
        gauges)."""
        rows = (self.rows.filter((pl.col("signal") == signal.value) & pl.col("subject").is_not_null())
                .sort("ts").unique("subject", keep="last").sort("subject"))
        return [(int(r["subject"]), float(r["value"]), self.age(r["ts"])) for r in rows.iter_rows(named=True)]

    def age(self, ts: dt.datetime) -> float:
        return max(0.0, (self.now - ts).total_seconds())


def _missing(check: RollCheck, signal: Signal) -> Reason:
    return Reason(check, CheckStatus.unknown, f"no {signal.value} sample: nothing vouches for it", signal.value)


def _count_check(latest: _Latest, check: RollCheck, signal: Signal, limit: float, bad: CheckStatus,
                 what: str) -> list[Reason]:
    """Nodes whose `signal` exceeds `limit` are `bad`; one ok reason with the total otherwise."""
    vals = latest.of(signal)
    if not vals:
        return [_missing(check, signal)]
    over = [(b, v, a) for b, v, a in vals if v > limit]
    if over:
        return [Reason(check, bad, f"broker {b}: {v:g} {what} (at most {limit:g})", signal.value, v, limit, b, a)
                for b, v, a in over]
    return [Reason(check, CheckStatus.ok, f"{sum(v for _, v, _ in vals):g} {what} on {len(vals)} node(s)",
                   signal.value, sum(v for _, v, _ in vals), limit, None, max(a for _, _, a in vals))]


def _fresh(latest: _Latest, nodes: list[int], th: RollThresholds, since: dt.datetime | None) -> list[Reason]:
    newest = latest.rows.group_by("broker_id").agg(pl.col("ts").max())
    ages = {int(r["broker_id"]): latest.age(r["ts"]) for r in newest.iter_rows(named=True)}
    stale = [(n, ages[n]) for n in nodes if ages[n] > th.stale_after_s]
    if stale:
        return [Reason(RollCheck.NODES_FRESH, CheckStatus.unknown,
                       f"node {n}: last scraped {a:.0f} s ago (stale after {th.stale_after_s:g} s): down, paused or "
                       "unreachable", None, a, th.stale_after_s, n, a) for n, a in stale]
    if since is not None:
        limit = max(0.0, (latest.now - since).total_seconds())
        old = [(n, ages[n]) for n in nodes if ages[n] > limit]
        if old:
            return [Reason(RollCheck.NODES_FRESH, CheckStatus.unknown,
                           f"node {n}: no sample since {since:%H:%M:%S} UTC (the last change): its newest is "
                           f"{a:.0f} s old", None, a, limit, n, a) for n, a in old]
    return [Reason(RollCheck.NODES_FRESH, CheckStatus.ok, f"{len(nodes)} node(s) scraped within "
                   f"{th.stale_after_s:g} s", None, float(len(nodes)), th.stale_after_s, None,
                   max(ages.values(), default=0.0))]


def _controller(latest: _Latest) -> list[Reason]:
    vals = latest.of(_S.ActiveControllerCount)
    if not vals:
        return [_missing(RollCheck.ACTIVE_CONTROLLER, _S.ActiveControllerCount)]
    # a claim older than another node's newer one is superseded: the controller moved between their scrapes
    newest_claim = min((a for _, v, a in vals if v >= 1), default=None)
    if newest_claim is not None:
        vals = [(b, v, a) for b, v, a in vals if v < 1 or a <= newest_claim + CLAIM_SKEW_S]
    total = sum(v for _, v, _ in vals)
    active = [b for b, v, _ in vals if v >= 1]
    age = max(a for _, _, a in vals)
    if total == 1:
        return [Reason(RollCheck.ACTIVE_CONTROLLER, CheckStatus.ok, f"node {active[0]} is the active controller",
                       _S.ActiveControllerCount.value, total, 1, active[0], age)]
    return [Reason(RollCheck.ACTIVE_CONTROLLER, CheckStatus.unsafe,
                   f"{total:g} active controllers (nodes {active or 'none'}): exactly one must be",
                   _S.ActiveControllerCount.value, total, 1, None, age)]


def _quorum(latest: _Latest) -> list[Reason]:
    vals = latest.of(_S.RaftCurrentLeader)
    leaders = {int(v) for _, v, _ in vals}
    age = max(a for _, _, a in vals)
    if len(leaders) == 1 and min(leaders) >= 0:
        return [Reason(RollCheck.QUORUM_LEADER, CheckStatus.ok, f"every node follows quorum leader {min(leaders)}",
                       _S.RaftCurrentLeader.value, float(min(leaders)), None, None, age)]
    split = ", ".join(f"node {b}: {int(v)}" for b, v, _ in vals)
    return [Reason(RollCheck.QUORUM_LEADER, CheckStatus.wait,
                   f"the nodes do not agree on a quorum leader ({split}; -1: none): an election is under way",
                   _S.RaftCurrentLeader.value, float(len(leaders)), 1, None, age)]


def _metadata_lag(latest: _Latest, th: RollThresholds) -> list[Reason]:
    vals = latest.of(_S.MetadataApplyLagMs) + latest.of(_S.LastAppliedRecordLagMs)
    if not vals:
        return [_missing(RollCheck.METADATA_LAG, _S.MetadataApplyLagMs)]
    over = [(b, v, a) for b, v, a in vals if v > th.max_metadata_lag_ms]
    if over:
        return [Reason(RollCheck.METADATA_LAG, CheckStatus.wait, f"node {b} applies metadata {v:.0f} ms behind "
                       f"(at most {th.max_metadata_lag_ms:g} ms)", _S.MetadataApplyLagMs.value, v,
                       th.max_metadata_lag_ms, b, a) for b, v, a in over]
    worst = max(v for _, v, _ in vals)
    return [Reason(RollCheck.METADATA_LAG, CheckStatus.ok, f"every node's metadata within {worst:.0f} ms",
                   _S.MetadataApplyLagMs.value, worst, th.max_metadata_lag_ms, None, max(a for _, _, a in vals))]


def _registration(latest: _Latest, th: RollThresholds) -> list[Reason]:
    """KRaft 4.1+ (KIP-1131): every broker registered on the controller is ACTIVE (not fenced, not in controlled
    shutdown), and the active controller heard each one's heartbeat within max_heartbeat_age_ms. Skipped where the
    gauges are not exported (Kafka before 4.1, an exporter that drops them)."""
    states = latest.about(_S.BrokerRegistrationState)
    if not states:
        return [Reason(RollCheck.BROKER_REGISTRATION, CheckStatus.skipped,
                       f"{_S.BrokerRegistrationState.value} is not exported (Kafka 4.1+, KIP-1131)",
                       _S.BrokerRegistrationState.value)]
    out = [Reason(RollCheck.BROKER_REGISTRATION, CheckStatus.wait, f"broker {b} is "
                  f"{BROKER_REGISTRATION_STATES.get(int(v), f'in state {v:g}')} on the controller "
                  f"({_S.BrokerRegistrationState.value} {v:g}; {BROKER_ACTIVE}: active)",
                  _S.BrokerRegistrationState.value, v, BROKER_ACTIVE, b, a)
           for b, v, a in states if int(v) != BROKER_ACTIVE]
    active = {b for b, v, _ in states if int(v) == BROKER_ACTIVE}
    out += [Reason(RollCheck.BROKER_REGISTRATION, CheckStatus.wait, f"broker {b}: its last heartbeat reached the "
                   f"active controller {v:.0f} ms before the scrape (at most {th.max_heartbeat_age_ms:g} ms): it may "
                   "be fenced next", _S.TimeSinceLastHeartbeatReceivedMs.value, v, th.max_heartbeat_age_ms, b, a)
            for b, v, a in latest.about(_S.TimeSinceLastHeartbeatReceivedMs)
            if b in active and v > th.max_heartbeat_age_ms]
    return out or [Reason(RollCheck.BROKER_REGISTRATION, CheckStatus.ok, f"{len(states)} broker(s) active on the "
                          "controller, heartbeats on time", _S.BrokerRegistrationState.value, float(len(states)),
                          BROKER_ACTIVE, None, max(a for _, _, a in states))]


def _optional(latest: _Latest, check: RollCheck, signal: Signal, limit: float, what: str) -> list[Reason]:
    if not latest.of(signal):
        return [Reason(check, CheckStatus.skipped, f"{signal.value} is not exported", signal.value)]
    return _count_check(latest, check, signal, limit, CheckStatus.wait, what)


def in_flight_at(requests: pl.DataFrame, now: dt.datetime, th: RollThresholds,
                 started: dict[int, float] | None = None) -> pl.DataFrame:
    """The LeaderAndIsr and UpdateMetadata in flight at `now`: sent within in_flight_window_s before it, not finished by
    it nor given up on nor answered without a line (a silent UpdateMetadata), and sent after their broker's
    current incarnation started (`started`: node -> process start, epoch s; a request to an incarnation that died
    is void)."""
    since = now - dt.timedelta(seconds=th.in_flight_window_s)
    status = pl.col("status").fill_null("")
    rows = requests.filter(pl.col("sent_ts").is_between(since, now) & pl.col("request").is_in(_WAITED_REQUESTS)
                           & ~status.is_in(_NOT_IN_FLIGHT)
                           & (pl.col("finished_ts").is_null() | (pl.col("finished_ts") > now))
                           & ~((status == _COMPLETED) & pl.col("finished_ts").is_null()))
    if not started:
        return rows
    incarnation = pl.col("broker_id").replace_strict(started, default=None, return_dtype=pl.Float64)
    sent_s = pl.col("sent_ts").dt.epoch("us").cast(pl.Float64) / 1e6
    return rows.filter((incarnation.is_null() | (sent_s >= incarnation)).fill_null(True))


def open_at(alerts: pl.DataFrame, now: dt.datetime) -> pl.DataFrame:
    """The alerts of CONTROL_REQUEST_ALERTS open at `now`."""
    return alerts.filter(pl.col("type").is_in(CONTROL_REQUEST_ALERTS) & (pl.col("started_at") <= now)
                         & (pl.col("resolved_at").is_null() | (pl.col("resolved_at") > now)))


def _control_requests(in_flight: pl.DataFrame, open_alerts: pl.DataFrame, now: dt.datetime) -> list[Reason]:
    out = []
    for r in in_flight.sort("sent_ts").iter_rows(named=True):
        age = max(0.0, (now - r["sent_ts"]).total_seconds())
        out.append(Reason(RollCheck.CONTROL_REQUESTS, CheckStatus.wait, f"a {r['request']} to broker "
                          f"{r['broker_id']} has been in flight for {age:.0f} s", "control_request_latency", age,
                          None, r["broker_id"], age))
    for r in open_alerts.sort("started_at").iter_rows(named=True):
        out.append(Reason(RollCheck.CONTROL_REQUESTS, CheckStatus.wait, f"open alert {r['type']} on broker "
                          f"{r['broker_id']}", "alerts", None, None, r["broker_id"]))
    return out or [Reason(RollCheck.CONTROL_REQUESTS, CheckStatus.ok, "no control request in flight or alerted",
                          "control_request_latency")]


def roll_verdict(cluster: str, latest: pl.DataFrame, requests: pl.DataFrame, alerts: pl.DataFrame,
                 now: dt.datetime, th: RollThresholds = DEFAULT_THRESHOLDS, broker_id: int | None = None,
                 since: dt.datetime | None = None, described: Sequence[Reason] = ()) -> Verdict:
    """The verdict of `cluster` at `now` from its inputs (module docstring). `since`: the last change the caller
    made (a restart): every node must have been scraped after it, or the verdict is unknown (data from before the
    change says nothing of the cluster after it). `described`: the reasons the cluster's own description gave
    (pipelines.restart_probe.admin_reasons), weighed with the rest."""
    members_from = now - dt.timedelta(seconds=th.membership_s)
    lat = _Latest(latest.filter(pl.col("ts").is_between(members_from, now)), now)
    nodes = sorted(int(b) for b in lat.rows.get_column("broker_id").unique().to_list())
    if not nodes:
        reason = Reason(RollCheck.NODES_FRESH, CheckStatus.unknown, f"no metric sample of cluster {cluster!r} in "
                        f"the last {th.membership_s:g} s")
        return Verdict(cluster, RollVerdict.unknown, now, "unknown", [], [reason, *described], broker_id)
    kraft = bool(lat.of(_S.RaftCurrentLeader))
    reasons = [
        *_fresh(lat, nodes, th, since),
        *_count_check(lat, RollCheck.OFFLINE_PARTITIONS, _S.OfflinePartitionsCount, 0, CheckStatus.unsafe,
                      "offline partition(s)"),
        *_count_check(lat, RollCheck.UNDER_MIN_ISR, _S.UnderMinIsrPartitionCount, 0, CheckStatus.unsafe,
                      "partition(s) under min.insync.replicas"),
        *_count_check(lat, RollCheck.UNDER_REPLICATED, _S.UnderReplicatedPartitions, th.max_under_replicated,
                      CheckStatus.wait, "under-replicated partition(s)"),
        *_controller(lat),
        *_optional(lat, RollCheck.CONTROLLER_EVENT_QUEUE, _S.EventQueueTimeMs, th.max_event_queue_ms,
                   "ms median wait in the controller's event queue"),
        *_optional(lat, RollCheck.PREFERRED_LEADERS, _S.PreferredReplicaImbalanceCount, th.max_preferred_imbalance,
                   "partition(s) not led by their preferred replica"),
        *_control_requests(in_flight_at(requests, now, th, lat.starts),
                           open_at(alerts, now), now),
    ]
    if kraft:
        reasons += [*_quorum(lat),
                    *_count_check(lat, RollCheck.FENCED_BROKERS, _S.FencedBrokerCount, 0, CheckStatus.wait,
                                  "fenced broker(s)"),
                    *_registration(lat, th),
                    *_metadata_lag(lat, th)]
    else:
        reasons += [Reason(c, CheckStatus.skipped, "KRaft only: the cluster runs in ZooKeeper mode")
                    for c in (RollCheck.QUORUM_LEADER, RollCheck.FENCED_BROKERS, RollCheck.BROKER_REGISTRATION,
                              RollCheck.METADATA_LAG)]
    reasons += described
    return Verdict(cluster, worst(r.status for r in reasons), now, "kraft" if kraft else "zookeeper", nodes,
                   reasons, broker_id)
