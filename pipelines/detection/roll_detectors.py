"""ROLL_TOO_FAST: a broker began a controlled shutdown while the cluster was not safe to roll.

A log batch's SHUTDOWN_EVENTS rows (`[KafkaServer id=N] Starting controlled shutdown`, KRaft's
`[BrokerLifecycleManager id=N] Beginning controlled shutdown.`, or the broker's `Terminating process due to signal
SIGTERM`, the first of them per stop) are each judged by the roll-safety verdict
(:func:`pipelines.roll_safety.roll_verdict`, the one GET /clusters/{cluster}/roll-safety serves) as it stood just
before the line: ``wait`` raises a warning, ``unsafe`` a critical alert, each naming the checks that were not ok at
that moment (leadership away from the preferred replicas, NOT_JUDGED, does not count). ``unknown`` raises nothing
(nothing vouches either way), nor does ``safe``. A kill -9 logs no line and is not judged, nor is the stop of a
whole cluster (every broker still running, a broker killed or stopped before them left out, begins its shutdown or
gets its SIGTERM within CLUSTER_STOP_S; the other brokers' lines are read back from the lake when the shutdown is
judged).

The last scrape before a shutdown can be seconds older than the shutdown: a roll gated on the cluster itself (the
Admin API's ISRs, as Strimzi and `planewatch roll` gate) restarts the next broker moments after the previous one is
back in every ISR, and that scrape still counts its partitions under-replicated. The leaders log each ISR change
(`ISR updated to 3,2,1 ...`, INFO at Kafka's shipped levels) to the millisecond: after a leader's last scrape, the
distinct partitions whose ISR took the broker stopped last back count as recovered (:func:`_rejoined`), as each
broker the KRaft controller logged unfencing since its last scrape counts as unfenced (:func:`_unfenced`), and a
`planewatch roll` gate that said safe about the broker vouches for its shutdown (GATE_VOUCHES_S).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.detection.candidates import Evidence, candidate_rows, evidence, level, severity
from pipelines.roll_safety import DEFAULT_THRESHOLDS, RollThresholds, Verdict, roll_verdict, worst
from schemas.alerts import AlertType
from schemas.events import Event
from schemas.roll_safety import CheckStatus, RollCheck, RollVerdict
from schemas.signals import BROKER_ACTIVE, Signal

if TYPE_CHECKING:
    from pipelines.detection.config import DetectionConfig

__all__ = ["CLUSTER_STOP_S", "FRESHER_EVENTS", "GATE_VOUCHES_S", "ISR_EVENTS", "JUST_BEFORE", "NOT_JUDGED",
           "SAME_STOP_S", "SHUTDOWN_EVENTS", "STOP_EVENTS", "VERDICT_VALUE", "detect_roll_too_fast"]

Rows = list[dict[str, Any]]
# What starts a broker's shutdown: its controlled shutdown's first line, or its SIGTERM line: Apache Kafka 4.4.0
# often logs no `Beginning controlled shutdown.` (in a timer roll, brokers 1 and 2 logged only `Terminating process
# due to signal SIGTERM`, broker 3 both). The two lines of one stop (ms apart) are one shutdown (SAME_STOP_S).
SHUTDOWN_EVENTS = (Event.CONTROLLED_SHUTDOWN_STARTED, Event.PROCESS_SIGTERM)
# Lines of one broker's stop this close together are one shutdown (its SIGTERM, then its controlled shutdown's line).
SAME_STOP_S = 5.0
# What tells a broker is being stopped, for the whole-cluster check: its controlled shutdown, or its SIGTERM (Apache
# Kafka 4.4.0: of three brokers SIGTERMed together, only one logged `Beginning controlled shutdown.`).
STOP_EVENTS = (Event.CONTROLLED_SHUTDOWN_STARTED, Event.PROCESS_SIGTERM)
# The alert's value: how bad the verdict was (ROLL_TOO_FAST's warning and critical levels).
VERDICT_VALUE = {RollVerdict.wait: 1.0, RollVerdict.unsafe: 2.0}
# "Just before" the shutdown line: the samples a scrape took in the same millisecond belong to the shutdown.
JUST_BEFORE = dt.timedelta(milliseconds=1)
# Every broker of a cluster beginning its shutdown within this many seconds of each other is the cluster being
# stopped (all at once), not a roll: not judged. (Seen: a scenario's end stops three brokers within 0.1 s.)
CLUSTER_STOP_S = 5.0
# A broker silent for more than this many of its cluster's scrape intervals (and STOPPED_MIN_S) before a shutdown
# is not running any more (killed, or stopped before): the rest of the cluster stopping together is a whole stop.
# Three: one late or failed scrape is not a stop.
STOPPED_AFTER_SCRAPES = 3
STOPPED_MIN_S = 15.0
# Checks a shutdown is not judged by: leadership away from the preferred replicas is how every roll leaves a cluster
# until Kafka's preferred-leader election runs (auto.leader.rebalance.enable, every 300 s by default) or the tool
# that rolls runs one; a roll gate may wait for it (roll-check), but a roll that does not is no risk to page about.
# (A healthy roll gated as Strimzi gates it, on under-replication only, raised ROLL_TOO_FAST over "21 partitions not
# led by their preferred replica" on Apache Kafka 3.9.1.)
NOT_JUDGED = (RollCheck.PREFERRED_LEADERS,)
# The leaders' ISR lines (INFO at Kafka's shipped levels), and the list of the ISR they set: server.log's
# `[Partition roll-2 broker=3] ISR updated to 3,2,1 and version updated to 6` or `Expanding ISR from 3,1 to 3,1,2`;
# on KRaft, state-change.log's `Skipped the become-leader state change for roll-3 ... Current high watermark H, ISR
# [1,2,3], ...` (the ISR applied from the metadata log, which on 4.4.0 often arrives before the AlterPartition answer
# and leaves no `ISR updated` line) and a new leader's `... starts at leader epoch E ... ISR [1,3], ...`.
ISR_EVENTS = (Event.ISR_UPDATED, Event.ISR_EXPANDING, Event.KRAFT_LEADER_UNCHANGED, Event.LEADER_STARTED)
# KRaft: the active controller's unfence grants (controller.log, INFO), fresher than its FencedBrokerCount scrape.
_UNFENCED = Event.KRAFT_BROKER_UNFENCED.value
FRESHER_EVENTS = (*ISR_EVENTS, Event.KRAFT_BROKER_UNFENCED)
_ISR_LIST = r"(?:ISR updated to |Expanding ISR from [0-9,]* to |, ISR \[)([0-9,]+)"
# A `planewatch roll` gate that said safe about a broker vouches for that broker's shutdown this long after it: the
# restart command runs right after the gate (an ssh and a systemctl stop take seconds), with room for the clocks of
# the roll's host and the broker's. The gate read the cluster itself through the Admin API, partition by partition:
# the last scrape before the shutdown can be seconds older and still show the previous broker catching up (Apache
# Kafka 3.9.1, scrapes every 5 s: a gate's safe 2 s before broker 2's shutdown, and ROLL_TOO_FAST over "3
# under-replicated partitions" from the scrape before it).
GATE_VOUCHES_S = 60.0
# Reasons quoted in a summary (every one is in the evidence).
REASONS_QUOTED = 4


def _running(r: Mapping[str, Any], samples: pl.DataFrame, stops: pl.DataFrame) -> set[int]:
    """The brokers of `r`'s cluster still running just before `r` (those reporting UnderReplicatedPartitions): each
    whose newest sample is at most STOPPED_AFTER_SCRAPES of the cluster's scrape intervals (its median step) older
    than the newest of any broker, and not sampled last before a stop line of its own (`stops`) older than `r` by
    CLUSTER_STOP_S. A broker killed or stopped earlier has fallen silent or said so: a cluster stopped whole after it
    is still a cluster stopped whole (seen: a scenario SIGTERMed brokers 1 and 2 together 14 s after broker 3, whose
    last scrape was still within the silence bound)."""
    urp = (samples.filter((pl.col("cluster") == r["cluster"]) & (pl.col("ts") < r["ts"])
                          & (pl.col("signal") == Signal.UnderReplicatedPartitions.value))
           .select("broker_id", "ts").unique())
    if urp.is_empty():
        return set()
    last = urp.group_by("broker_id").agg(pl.col("ts").max())
    step = (urp.sort("broker_id", "ts").select(pl.col("ts").diff().over("broker_id").dt.total_seconds(
        fractional=True)).to_series().drop_nulls().median())
    gap = dt.timedelta(seconds=max(STOPPED_AFTER_SCRAPES * float(step or 0.0), STOPPED_MIN_S))  # type: ignore[arg-type]
    newest = last.get_column("ts").max()
    stopped = dict(stops.filter((pl.col("cluster") == r["cluster"]) & pl.col("broker_id").is_not_null()
                                & (pl.col("ts") < r["ts"] - dt.timedelta(seconds=CLUSTER_STOP_S)))
                   .group_by("broker_id").agg(pl.col("ts").max()).iter_rows())
    return {int(b) for b, t in last.iter_rows() if newest - t <= gap and not (b in stopped and t <= stopped[b])}


def _cluster_stop(r: Mapping[str, Any], stops: pl.DataFrame, samples: pl.DataFrame) -> bool:
    """Whether every broker of `r`'s cluster still running (:func:`_running`) was being stopped (`stops`: its
    controlled shutdown or its SIGTERM) within CLUSTER_STOP_S of `r`: the whole cluster stopped, not a roll."""
    brokers = _running(r, samples, stops)
    near = stops.filter((pl.col("cluster") == r["cluster"])
                        & (pl.col("ts") - r["ts"]).dt.total_seconds().abs().le(CLUSTER_STOP_S))
    return bool(brokers) and brokers <= set(near.get_column("broker_id").to_list())


def _back_in(lines: pl.DataFrame, back: int) -> set[tuple[str, int]]:
    """The partitions whose latest ISR line among `lines` has broker `back` in their ISR."""
    if lines.is_empty():
        return set()
    latest = lines.sort("ts").unique(["topic", "partition"], keep="last")
    members = latest.get_column("message").str.extract(_ISR_LIST, 1).str.split(",")
    has = latest.with_columns(_in=members.list.contains(str(back)).fill_null(False)).filter(pl.col("_in"))
    return {(str(t), int(p)) for t, p in has.select("topic", "partition").iter_rows()}


def _fresher(r: Mapping[str, Any], samples: pl.DataFrame, stops: pl.DataFrame | None,
             lines: pl.DataFrame | None) -> pl.DataFrame:
    """Samples the lines logged after the last scrapes before `r` stand for (module docstring): the leaders' ISR
    lines for UnderReplicatedPartitions (:func:`_rejoined`), the KRaft controller's unfence lines for
    FencedBrokerCount and BrokerRegistrationState (:func:`_unfenced`). Rows in the samples' columns; none when no
    line says more."""
    out = samples.clear()
    if lines is None or lines.is_empty():
        return out
    at = r["ts"] - JUST_BEFORE
    rows = [*_rejoined(r, samples, stops, lines, at), *_unfenced(r, samples, lines, at)]
    if not rows:
        return out
    columns = [c for c in out.columns if any(c in row for row in rows)]
    return pl.concat([out, pl.DataFrame([{c: row.get(c) for c in columns} for row in rows],
                                        schema=out.select(columns).schema)], how="diagonal_relaxed")


def _rejoined(r: Mapping[str, Any], samples: pl.DataFrame, stops: pl.DataFrame | None, lines: pl.DataFrame,
              at: dt.datetime) -> list[dict[str, Any]]:
    """UnderReplicatedPartitions as the leaders' own ISR lines tell it after their last scrape before `r`: each
    leader whose last sample counted N under-replicated partitions, and whose ISR lines since then and before `r`
    took the broker stopped last back into M distinct partitions' ISR, counts N - M; partitions another leader
    logged back after every such sample (leadership moves in a roll) count for what is left. At the newest line
    counted. The broker stopped last: the newest stop of another broker of the cluster before `r` (its controlled
    shutdown or SIGTERM); none known, no line counts."""
    if stops is None:
        return []
    earlier = stops.filter((pl.col("cluster") == r["cluster"]) & (pl.col("broker_id") != r["broker_id"])
                           & (pl.col("ts") < r["ts"] - dt.timedelta(seconds=CLUSTER_STOP_S)))
    urp = (samples.filter((pl.col("cluster") == r["cluster"]) & (pl.col("ts") < at)
                          & (pl.col("signal") == Signal.UnderReplicatedPartitions.value))
           .sort("ts").unique("broker_id", keep="last").filter(pl.col("value") > 0))
    if earlier.is_empty() or urp.is_empty():
        return []
    back = int(earlier.sort("ts").get_column("broker_id")[-1])
    isr = lines.filter((pl.col("cluster") == r["cluster"]) & pl.col("event").is_in([e.value for e in ISR_EVENTS])
                       & (pl.col("ts") <= at))
    sampled = {int(b): (float(v), ts) for b, v, ts in urp.select("broker_id", "value", "ts").iter_rows()}
    left: dict[int, float] = {}
    counted: set[tuple[str, int]] = set()
    for b, (value, ts) in sampled.items():
        mine = _back_in(isr.filter((pl.col("broker_id") == b) & (pl.col("ts") > ts)), back)
        counted |= mine
        left[b] = value - len(mine)
    short = [b for b, n in left.items() if n > 0]
    if short:
        spare = len(_back_in(isr.filter(pl.col("ts") > max(sampled[b][1] for b in short)), back) - counted)
        for b in short:
            take = min(spare, int(left[b]))
            left[b], spare = left[b] - take, spare - take
    newest = isr.filter(pl.col("ts") > urp.get_column("ts").min()).get_column("ts").max()
    return [{"cluster": r["cluster"], "broker_id": b, "ts": newest, "signal": Signal.UnderReplicatedPartitions.value,
             "attribute": "Value", "value": max(0.0, n)} for b, n in left.items()
            if newest is not None and n < sampled[b][0]]


def _unfenced(r: Mapping[str, Any], samples: pl.DataFrame, lines: pl.DataFrame, at: dt.datetime
              ) -> list[dict[str, Any]]:
    """KRaft: FencedBrokerCount as the active controller's own unfence lines tell it after its last scrape before
    `r` (`The request from broker N to unfence has been granted ...`): each distinct broker unfenced since counts
    one fenced broker less, at the last such line; and KIP-1131's BrokerRegistrationState of each broker so
    unfenced after its last sample is active (:func:`_registered`)."""
    if "target_broker_id" not in lines.columns:
        return []
    fenced = (samples.filter((pl.col("cluster") == r["cluster"]) & (pl.col("ts") < at)
                             & (pl.col("signal") == Signal.FencedBrokerCount.value))
              .sort("ts").unique("broker_id", keep="last").filter(pl.col("value") > 0))
    out = []
    for b, value, ts in fenced.select("broker_id", "value", "ts").iter_rows():
        grants = lines.filter((pl.col("cluster") == r["cluster"]) & (pl.col("event") == _UNFENCED)
                              & pl.col("ts").is_between(ts, at, closed="right"))
        n = grants.get_column("target_broker_id").drop_nulls().n_unique()
        if n:
            out.append({"cluster": r["cluster"], "broker_id": b, "ts": grants.get_column("ts").max(),
                        "signal": Signal.FencedBrokerCount.value, "attribute": "Value",
                        "value": max(0.0, float(value) - n)})
    return out + _registered(r, samples, lines, at)


def _registered(r: Mapping[str, Any], samples: pl.DataFrame, lines: pl.DataFrame, at: dt.datetime
                ) -> list[dict[str, Any]]:
    """KRaft 4.1+: each broker whose newest BrokerRegistrationState before `r` was not active, and whose unfencing
    the active controller logged after that sample, is active at the grant's line."""
    if "subject" not in samples.columns:
        return []
    states = (samples.filter((pl.col("cluster") == r["cluster"]) & (pl.col("ts") < at)
                             & (pl.col("signal") == Signal.BrokerRegistrationState.value)
                             & pl.col("subject").is_not_null())
              .sort("ts").unique("subject", keep="last").filter(pl.col("value") != BROKER_ACTIVE))
    out = []
    for node, b, ts in states.select("broker_id", "subject", "ts").iter_rows():
        grants = lines.filter((pl.col("cluster") == r["cluster"]) & (pl.col("event") == _UNFENCED)
                              & (pl.col("target_broker_id") == b) & pl.col("ts").is_between(ts, at, closed="right"))
        if not grants.is_empty():
            out.append({"cluster": r["cluster"], "broker_id": node, "subject": b, "ts": grants.get_column("ts").max(),
                        "signal": Signal.BrokerRegistrationState.value, "attribute": "Value",
                        "value": float(BROKER_ACTIVE)})
    return out


def _first_lines(shutdowns: pl.DataFrame) -> pl.DataFrame:
    """The first line of each broker's stop (SAME_STOP_S); lines without a broker (a KRaft controller's, ZooKeeper's
    SIGTERM) are no broker's shutdown."""
    rows = shutdowns.filter(pl.col("broker_id").is_not_null()).sort("ts")
    gap = pl.col("ts").diff().over("cluster", "broker_id").dt.total_seconds()
    return rows.filter(gap.is_null() | (gap > SAME_STOP_S))


def _judged(shutdowns: pl.DataFrame, samples: pl.DataFrame, requests: pl.DataFrame, alerts: pl.DataFrame,
            th: RollThresholds, stops: pl.DataFrame | None,
            isr: pl.DataFrame | None = None) -> list[tuple[dict[str, Any], Verdict]]:
    """Each shutdown row that is not part of a whole cluster's stop, with the verdict of its cluster just before it
    (every input of its cluster; under-replication as the leaders' ISR lines tell it since their last scrape,
    _fresher)."""
    out = []
    shutdowns = _first_lines(shutdowns)
    seen = shutdowns.select("cluster", "broker_id", "ts")
    every = seen if stops is None else pl.concat([seen, stops.select("cluster", "broker_id", "ts")],
                                                 how="vertical_relaxed")
    for r in shutdowns.sort("ts").iter_rows(named=True):
        if _cluster_stop(r, every, samples):
            continue
        of = pl.col("cluster") == r["cluster"]
        mine = pl.concat([samples.filter(of), _fresher(r, samples, stops, isr)], how="diagonal_relaxed")
        v = roll_verdict(r["cluster"], mine, requests.filter(of), alerts.filter(of), r["ts"] - JUST_BEFORE, th,
                         r["broker_id"])
        out.append((r, v))
    return out


def _vouched(r: Mapping[str, Any], gates: pl.DataFrame | None) -> bool:
    """Whether a `planewatch roll` gate said safe about `r`'s broker within GATE_VOUCHES_S before its shutdown."""
    if gates is None or gates.is_empty():
        return False
    lo = r["ts"] - dt.timedelta(seconds=GATE_VOUCHES_S)
    return not gates.filter((pl.col("cluster") == r["cluster"]) & (pl.col("node") == r["broker_id"])
                            & (pl.col("verdict") == "safe") & pl.col("at").is_between(lo, r["ts"])).is_empty()


def detect_roll_too_fast(shutdowns: pl.DataFrame, samples: pl.DataFrame, requests: pl.DataFrame,
                         alerts: pl.DataFrame, cfg: DetectionConfig, th: RollThresholds = DEFAULT_THRESHOLDS,
                         stops: pl.DataFrame | None = None, gates: pl.DataFrame | None = None,
                         isr: pl.DataFrame | None = None) -> Rows:
    """Candidates for the shutdowns whose verdict just before was wait or unsafe. `shutdowns`: state_change_events
    rows of SHUTDOWN_EVENTS (cluster, broker_id, ts, message); `stops`: rows of STOP_EVENTS around them (cluster,
    broker_id, ts: the other brokers being stopped, read back from the lake); `samples`, `requests`, `alerts`: the
    roll-safety inputs (pipelines.roll_safety) of those clusters, with a `cluster` column, reaching back the
    membership and in-flight windows before the first shutdown; `gates`: the roll_steps gates of `planewatch roll`
    (cluster, node, verdict, at): a shutdown its gate said safe about within GATE_VOUCHES_S is not judged (the
    gate read the cluster itself, partition by partition, fresher than the last scrape); `isr`: state_change_events
    rows of FRESHER_EVENTS (cluster, broker_id, ts, event, topic, partition, target_broker_id, message) over the
    membership window before the shutdowns, and `stops` reaching as far back: the leaders' ISR lines since their
    last scrape count the partitions the broker stopped last rejoined (_rejoined), the controller's unfence lines
    the brokers unfenced (_unfenced)."""
    t = AlertType.ROLL_TOO_FAST
    rows = []
    for r, v in _judged(shutdowns, samples, requests, alerts, th, stops, isr):
        if _vouched(r, gates):
            continue
        bad = [x for x in v.reasons if x.status not in (CheckStatus.ok, CheckStatus.skipped)
               and x.check not in NOT_JUDGED]
        verdict = worst(x.status for x in bad)
        if verdict not in VERDICT_VALUE:
            continue
        rows.append({"cluster": r["cluster"], "broker_id": r["broker_id"], "ts": r["ts"],
                     "value": VERDICT_VALUE[verdict], "verdict": verdict.value, "mode": v.mode,
                     "reasons": [f"{x.status.value} {x.check.value}: {x.text}" for x in bad],
                     "line": r["message"]})
    if not rows:
        return []
    frame = pl.DataFrame(rows).with_columns(
        severity=severity(cfg, t, pl.col("value")), threshold=level(cfg, t, "warning"),
        listener=pl.lit(None, dtype=pl.String))

    def describe(r: Mapping[str, Any]) -> tuple[str, Evidence]:
        quoted = "; ".join(r["reasons"][:REASONS_QUOTED])
        more = len(r["reasons"]) - REASONS_QUOTED
        summary = (f"Broker {r['broker_id']} began a controlled shutdown while the cluster was not safe to roll "
                   f"(verdict {r['verdict']} just before): {quoted}" + (f"; {more} more" if more > 0 else ""))
        return summary, evidence(r, ("verdict", "mode", "reasons", "line"))

    return candidate_rows(frame, t, describe)
