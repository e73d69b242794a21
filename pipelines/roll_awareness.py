"""Roll awareness: whether an alert is what a rolling restart in progress causes (recorded as `expected: rolling
restart`, not paged) or what a bad roll does (paged at once). Pure: the caller reads the restarts and declarations.

A **roll** of a cluster is found two ways:

* **seen**: the brokers' and controllers' own stop lines (state_change_events rows of
  :data:`pipelines.detection.roll_detectors.STOP_EVENTS`: a controlled shutdown's first line, a SIGTERM). Stops of one
  cluster less than ROLL_GAP_S apart are one roll; its **pace** is the median time between them (how long one
  restart took to be judged done by whoever rolls), or MIN_RECOVERY_S for a single restart;
* **declared**: a `roll_steps` roll (`planewatch roll`, or a script's POST /clusters/{cluster}/rolls): from its plan
  step to its `rolled` or `stopped` step (an end never written: DECLARED_MAX_S after its start); its pace is the
  median time between its `restarted` steps (none written: between its cluster's stop lines within it).

An alert of :data:`ROLL_SYMPTOMS` whose start falls inside a roll (LEAD_S before its first restart to its recovery
bound past its last, :meth:`Roll.covers`) is **expected** while it lasts at most the roll's recovery bound
(RECOVERY_FACTOR x pace, at least MIN_RECOVERY_S); lasting longer, it is a restart not recovered at the cluster's own
pace and pages. Every other type pages whatever a roll does: ROLL_TOO_FAST, unclean and ELR elections, an
unstable quorum, a timed-out heartbeat are what a bad roll does.
"""

from __future__ import annotations

import datetime as dt
import itertools
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from schemas.alerts import AlertType

__all__ = ["DECLARED_MAX_S", "EXPECTED", "LEAD_S", "MIN_RECOVERY_S", "RECOVERY_FACTOR", "ROLL_GAP_S",
           "ROLL_SYMPTOMS", "Declared", "Expectation", "Restart", "Roll", "expectation", "find_rolls"]

#: the `expected` mark of an alert a roll in progress explains
EXPECTED = "rolling restart"

_A = AlertType
#: what a healthy roll causes for a while: leadership moving off and back (slow or unfinished LeaderAndIsr, a late
#: UpdateMetadata fan-out, a StopReplica of the controlled shutdown, a request carrying the previous process's
#: epoch), a broker fenced after its granted shutdown (Kafka 4.4 logs a session-timeout fencing ~10 s after it),
#: gauges warming up on the restarted node (metadata apply lag, idle ratios, LeaderAndIsr TotalTimeMs), the
#: controller's queue busy with the moves.
ROLL_SYMPTOMS: frozenset[AlertType] = frozenset({
    _A.DELAYED_LEADER_AND_ISR, _A.LEADER_AND_ISR_NOT_COMPLETED, _A.DELAYED_UPDATE_METADATA, _A.DELAYED_STOP_REPLICA,
    _A.STALE_BROKER_EPOCH, _A.BROKER_FENCED, _A.METADATA_APPLY_LAG, _A.LEADER_AND_ISR_TOTAL_TIME_HIGH,
    _A.NETWORK_PROCESSOR_SATURATED, _A.REQUEST_HANDLER_SATURATED, _A.CONTROLLER_EVENT_QUEUE_DELAY,
})

# Two stops of one cluster further apart than this are two rolls: Strimzi's roller waits up to its operation
# timeout (5 minutes) per broker for it to be ready, a gated roll by hand a few minutes; one restart and its
# recovery fit in 15 minutes on every roll measured here (25-185 s per node, docs/benchmarks.md).
ROLL_GAP_S = 900.0
# A symptom may start a little before its stop line is written (a StopReplica or UpdateMetadata of the shutdown is
# timed from the controller's send): an alert started this long before the roll's first stop belongs to it.
LEAD_S = 30.0
# A restart is given at least this long to recover (JVM start, log recovery, replicas catching up; measured 25-120 s
# per broker on Kafka 3.9.1 and 4.4.0 here, under produce load).
MIN_RECOVERY_S = 180.0
# A symptom lasting more than this many times the roll's pace is not recovering at the cluster's own pace.
RECOVERY_FACTOR = 2.0
# A declared roll that never wrote its end (the script rolling died) is over this long after it started.
DECLARED_MAX_S = 4 * 3600.0


@dataclass(frozen=True)
class Restart:
    """A node leaving on purpose: its stop line (cluster, node, when)."""

    cluster: str
    node: int | None
    at: dt.datetime


@dataclass(frozen=True)
class Declared:
    """A roll the roller declared (roll_steps): its id, start, end (None: not written yet) and restart times."""

    cluster: str
    roll_id: str
    started: dt.datetime
    ended: dt.datetime | None
    restarts: tuple[dt.datetime, ...] = ()
    nodes: tuple[int, ...] = ()


@dataclass(frozen=True)
class Roll:
    """One roll of a cluster: when it started, its last restart, its end when declared, its nodes and pace."""

    cluster: str
    started: dt.datetime
    last_restart: dt.datetime
    nodes: tuple[int, ...]
    pace_s: float
    declared: str | None = None  # the roll_steps roll_id of a declared roll
    ended: dt.datetime | None = None
    open_ended: bool = False  # declared and no end written

    @property
    def recovery_s(self) -> float:
        """How long a symptom of this roll may last: RECOVERY_FACTOR x its pace, at least MIN_RECOVERY_S."""
        return max(MIN_RECOVERY_S, RECOVERY_FACTOR * self.pace_s)

    def covers(self, t: dt.datetime) -> bool:
        """Whether something starting at `t` happened during this roll (LEAD_S before its start to its recovery
        bound past its last restart or declared end; an open-ended declaration to DECLARED_MAX_S)."""
        if t < self.started - dt.timedelta(seconds=LEAD_S):
            return False
        if self.open_ended:
            return t <= self.started + dt.timedelta(seconds=DECLARED_MAX_S)
        last = max(self.last_restart, self.ended or self.last_restart)
        return t <= last + dt.timedelta(seconds=self.recovery_s)

    def describe(self) -> str:
        nodes = ", ".join(str(n) for n in self.nodes) or "no node yet"
        how = f"declared roll {self.declared}" if self.declared else "roll seen from stop lines"
        return (f"{how} of {self.cluster} since {self.started:%H:%M:%S}Z (nodes {nodes}; pace {self.pace_s:.0f} s, "
                f"symptoms expected for up to {self.recovery_s:.0f} s)")


@dataclass(frozen=True)
class Expectation:
    """An alert judged against the rolls: `expected` (recorded, not paged) or paged, and why."""

    expected: bool
    reason: str
    roll: Roll


def _pace(times: Sequence[dt.datetime]) -> float:
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    return statistics.median(gaps) if gaps else MIN_RECOVERY_S


def _seen(restarts: Iterable[Restart]) -> list[Roll]:
    by_cluster: dict[str, list[Restart]] = {}
    for r in sorted(restarts, key=lambda r: (r.cluster, r.at)):
        by_cluster.setdefault(r.cluster, []).append(r)
    out: list[Roll] = []
    for cluster, rs in by_cluster.items():
        group: list[Restart] = []
        for r in rs:
            if group and (r.at - group[-1].at).total_seconds() > ROLL_GAP_S:
                out.append(_roll_of(cluster, group))
                group = []
            group.append(r)
        out.append(_roll_of(cluster, group))
    return out


def _roll_of(cluster: str, group: Sequence[Restart]) -> Roll:
    times = [r.at for r in group]
    nodes = tuple(sorted({r.node for r in group if r.node is not None}))
    return Roll(cluster, times[0], times[-1], nodes, _pace(times))


def _declared(d: Declared, restarts: Sequence[Restart]) -> Roll:
    times = sorted(d.restarts)
    if not times:  # a script that declared its roll and wrote no restart: its cluster's stop lines within it
        until = d.ended or d.started + dt.timedelta(seconds=DECLARED_MAX_S)
        times = sorted(r.at for r in restarts if r.cluster == d.cluster and d.started <= r.at <= until)
    return Roll(d.cluster, d.started, times[-1] if times else d.started, tuple(sorted(set(d.nodes))),
                _pace(times), declared=d.roll_id, ended=d.ended, open_ended=d.ended is None)


def find_rolls(restarts: Iterable[Restart], declared: Iterable[Declared] = ()) -> list[Roll]:
    """The rolls the stop lines show and the roll_steps declare (each kind on its own; an alert is judged by the
    first roll that covers it, declared first)."""
    restarts = list(restarts)
    return [*(_declared(d, restarts) for d in declared), *_seen(restarts)]


def _utc(t: Any) -> dt.datetime | None:
    if not isinstance(t, dt.datetime):
        return None
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t


def expectation(alert: Mapping[str, Any], rolls: Sequence[Roll], now: dt.datetime) -> Expectation | None:
    """How a roll bears on an alerts-table row (type, cluster, started_at, resolved_at) as of `now`: None when no roll
    of its cluster covers its start; else expected (a symptom within the roll's recovery bound) or paged, with why."""
    started = _utc(alert.get("started_at"))
    if started is None:
        return None
    roll = next((r for r in rolls if r.cluster == alert.get("cluster") and r.covers(started)), None)
    if roll is None:
        return None
    if alert.get("type") not in ROLL_SYMPTOMS:
        return Expectation(False, f"paged during the {roll.describe()}: {alert.get('type')} is what a bad roll does",
                           roll)
    lasted = ((_utc(alert.get("resolved_at")) or now) - started).total_seconds()
    if lasted > roll.recovery_s:
        return Expectation(False, f"not recovered within {roll.recovery_s:.0f} s ({RECOVERY_FACTOR:g} x the roll's "
                           f"pace; lasted {lasted:.0f} s) during the {roll.describe()}", roll)
    return Expectation(True, f"{EXPECTED}: {roll.describe()}", roll)
