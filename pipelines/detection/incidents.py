"""Incidents: the alerts of one broker (or of a cluster) in one time span, put down to one cause.

Pure: alert rows in (`alerts` columns), incident rows out (`incidents` columns but `updated_at`); no Spark, no Delta.
The alert writer (jobs.detect.alerts) calls :func:`group_incidents` over the recent alerts of the clusters a batch
touched and merges the result, so alerts and incidents are written by one path.

* **Grouping.** An alert is live over [started_at, end], `end` its resolved_at, or last_seen_at plus the
  hysteresis (`resolve_after`) while it is open. The alerts of one (cluster, broker_id) whose live spans overlap,
  directly or through others, are one incident: one saturated broker that raises five alerts at once pages once.
  Alerts about no broker (QUORUM_UNSTABLE) make the cluster's own incidents.
* **Identity.** `incident_id` hashes (cluster, broker_id, the first alert's started_at); a group holding alerts of
  an incident seen before keeps that incident's id (its earliest member's), so an alert that arrives late with an
  earlier start, or one that bridges two incidents, changes no id an operator or an Alertmanager already has.
* **Cause.** The first rule of :data:`CAUSE_RULES` that the member alerts satisfy (most specific first: an
  unclean election or a fencing explains the slow requests around it; a blocked acceptor explains the saturated
  network threads). A slow control request is told apart by its own breakdown (its alert's evidence, from
  control_request_latency): the broker's request queue (queued behind data) or the handler (slow handler);
  without a request log it stays "slow, cause not witnessed", and says which log would tell.
* **Text.** `summary` = the cause's headline and the numbers of the alert that shows it; `action` = what to
  change, with the Kafka documentation's link; `impact` = what the member alerts say partitions and clients went
  through (pipelines.detection.impact: a clause per alert type, the cause's first); `baseline` = the cause alert's
  measured baseline (its broker's own history, its peers) and how many incidents of the same cause the broker and
  its peers had in the history window before it (`History`); `evidence` = which alert chose the cause and why.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pipelines.detection.impact import impact, latest
from pipelines.detection.lifecycle import SEVERITY_RANK
from schemas.alerts import AlertStatus, AlertType, IncidentCause

__all__ = ["CAUSE_RULES", "CauseRule", "History", "group_incidents", "incident_id", "live_end"]

_T, _C = AlertType, IncidentCause
_DOCS = "https://kafka.apache.org/documentation/"
_DELAYED = (_T.DELAYED_LEADER_AND_ISR, _T.DELAYED_UPDATE_METADATA, _T.DELAYED_STOP_REPLICA)


@dataclass(frozen=True)
class CauseRule:
    """A cause, the member alert that shows it (`shows`: an alert of the incident, in its order), its headline and
    what to do."""

    cause: IncidentCause
    shows: Callable[[Mapping[str, Any]], bool]
    headline: str
    action: str


def _of(*types: AlertType) -> Callable[[Mapping[str, Any]], bool]:
    names = {t.value for t in types}
    return lambda a: a["type"] in names


def _num(v: Any) -> float | None:
    return None if v is None else float(v)


def _split(a: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """A DELAYED_* alert's request (its evidence's latest firing): ms before its handler took it (the broker's
    request queue) and ms in the handler. From the broker's request log when it has one; else inferred from the
    state-change lines (2.7+): the send-to-Handling span less the wait at the controller and the lock wait is the
    queue (and the network), Handling-to-end plus the lock wait the handler (see `_witness`)."""
    if a["type"] not in {t.value for t in _DELAYED}:
        return None, None
    last = latest(a)
    queued, local = _num(last.get("broker_queue_ms")), _num(last.get("local_ms"))
    if queued is not None or local is not None:
        return queued, local
    span, handling = _num(last.get("queue_ms")), _num(last.get("processing_ms"))
    if span is None or handling is None:
        return None, None
    lock = _num(last.get("lock_wait_ms")) or 0.0
    return max(0.0, span - (_num(last.get("controller_queue_ms")) or 0.0) - lock), handling + lock


def _witness(a: Mapping[str, Any]) -> str:
    """What timed a DELAYED_* alert's split: the request log, or the state-change lines (inferred)."""
    last = latest(a)
    return "request_log" if last.get("broker_queue_ms") is not None or last.get("local_ms") is not None \
        else "state_change_lines (inferred)"


def _cluster_wide_lag(a: Mapping[str, Any]) -> bool:
    """A METADATA_APPLY_LAG alert whose peers lagged as much at the same time (its baseline's peers' median at or
    above its threshold): the metadata stopped at its source, the controller quorum, not in this broker."""
    if a["type"] != _T.METADATA_APPLY_LAG.value:
        return False
    peers = _num((latest(a).get("baseline") or {}).get("peers_median"))
    return peers is not None and a.get("threshold") is not None and peers >= float(a["threshold"])


def _queued_request(a: Mapping[str, Any]) -> bool:
    queued, local = _split(a)
    return queued is not None and queued > (local or 0.0)


def _slow_handler(a: Mapping[str, Any]) -> bool:
    queued, local = _split(a)
    return local is not None and local >= (queued or 0.0)


CAUSE_RULES: tuple[CauseRule, ...] = (
    CauseRule(_C.UNCLEAN_LEADER_ELECTION, _of(_T.UNCLEAN_LEADER_ELECTION),
              "a leader was elected from outside the ISR: acknowledged messages may be lost",
              f"Find the partitions in the controller's log; keep unclean.leader.election.enable off where data "
              f"matters ({_DOCS}#topicconfigs_unclean.leader.election.enable)"),
    CauseRule(_C.CONTROLLER_OVERLOADED, _of(_T.BROKER_HEARTBEAT_TIMEOUT),
              "the controller's overloaded event queue timed out the broker's heartbeats (KAFKA-15019)",
              f"Find what fills the controller's event queue (large reassignments, topic creations); give "
              f"controllers dedicated hosts ({_DOCS}#kraft)"),
    CauseRule(_C.CONTROLLER_STALLED, _cluster_wide_lag,
              "the controller quorum stopped publishing metadata: every broker's metadata fell behind at once (not "
              "this broker's doing; a fencing meanwhile fenced a live broker)",
              f"The brokers are not at fault: check the active controller (its GC log and CPU, its event queue, "
              f"its quorum's commit latency) and give controllers hosts of their own ({_DOCS}#kraft_monitoring)"),
    CauseRule(_C.BROKER_FENCED, _of(_T.BROKER_FENCED),
              "the active controller fenced the broker: no heartbeat of it arrived within its session",
              f"Check the broker was alive (GC log, CPU) and the controller's event queue; the session is "
              f"broker.session.timeout.ms ({_DOCS}#brokerconfigs_broker.session.timeout.ms)"),
    CauseRule(_C.QUORUM_UNSTABLE, _of(_T.QUORUM_UNSTABLE),
              "the controller quorum keeps electing new active controllers",
              f"Give controllers unloaded hosts; check their GC pauses and controller.quorum.fetch.timeout.ms "
              f"({_DOCS}#brokerconfigs_controller.quorum.fetch.timeout.ms)"),
    CauseRule(_C.CONNECTION_STORM, _of(_T.ACCEPTOR_BLOCKED),
              "new connections arrived faster than the broker accepts them (the acceptor blocked, KIP-402)",
              f"Find the clients reconnecting; bound them with max.connections.per.ip and max.connections "
              f"({_DOCS}#brokerconfigs_max.connections.per.ip)"),
    CauseRule(_C.QUEUED_BEHIND_DATA, lambda a: _of(_T.CONTROL_REQUEST_QUEUED_BEHIND_DATA,
                                                   _T.CONTROL_REQUEST_QUEUE_DELAY)(a) or _queued_request(a),
              "control requests waited in the request queue behind data requests",
              f"Give control requests their own listener and handler with control.plane.listener.name (KIP-291), "
              f"or find what fills the queue ({_DOCS}#brokerconfigs_control.plane.listener.name)"),
    CauseRule(_C.LOCK_CONTENTION, _of(_T.LOCK_CONTENTION),
              "the request handler waited for a lock (replicaStateChangeLock or the fetchers' partitionMapLock)",
              "See what held the lock at that time in server.log (fetchers truncating or checkpointing: "
              "KAFKA-6974, https://issues.apache.org/jira/browse/KAFKA-6974)"),
    CauseRule(_C.SLOW_HANDLER, _slow_handler,
              "the control request reached its handler quickly and the handler was slow",
              f"The control plane works; look at what the handler did (partitions' logs created or deleted: disk "
              f"latency of log.dirs; GC pauses in kafkaServer-gc.log) ({_DOCS}#brokerconfigs_num.io.threads)"),
    CauseRule(_C.QUEUED_BEHIND_DATA, _of(_T.REQUEST_QUEUE_SATURATED, _T.CONTROL_PLANE_QUEUE_BACKLOG),
              "the broker's request queue was full: control requests queue behind what fills it",
              f"Find the slow requests or add num.io.threads; separate the control plane with "
              f"control.plane.listener.name ({_DOCS}#brokerconfigs_queued.max.requests)"),
    # a broker stopped before the cluster recovered: what the roll does to a loaded broker and controller (busy
    # threads, a long controller queue, metadata late) follows from it; the mechanisms above still win
    CauseRule(_C.ROLL_TOO_FAST, _of(_T.ROLL_TOO_FAST),
              "the broker was stopped before the cluster had recovered from the previous change (a roll too fast)",
              "Gate each restart on the roll-safety verdict (planewatch roll-check, GET /clusters/{cluster}/"
              "roll-safety): wait until every replica is back in its ISR and leadership is back on the preferred "
              f"replicas ({_DOCS}#basic_ops_restarting)"),
    CauseRule(_C.BROKER_SATURATED, _of(_T.REQUEST_HANDLER_SATURATED, _T.NETWORK_PROCESSOR_SATURATED),
              "the broker's request handler or network threads had almost no idle time",
              f"Find the load (RequestMetrics by request type) or add threads: num.io.threads, num.network.threads "
              f"({_DOCS}#brokerconfigs_num.network.threads)"),
    CauseRule(_C.CONTROLLER_OVERLOADED, _of(_T.CONTROLLER_EVENT_QUEUE_DELAY),
              "the controller's events waited in its queue",
              f"Find what fills the controller's event queue (large reassignments, topic creations); give "
              f"controllers dedicated hosts ({_DOCS}#kraft)"),
    CauseRule(_C.METADATA_LAG, _of(_T.METADATA_APPLY_LAG),
              "the broker applied the metadata log late and served stale leadership meanwhile",
              f"Check the broker's CPU and GC and the controller quorum's commit latency ({_DOCS}#kraft_monitoring)"),
    CauseRule(_C.ELR_ELECTION, _of(_T.LEADER_ELECTED_FROM_ELR),
              "leaders were elected from eligible leader replicas: partitions had fallen below min.insync.replicas",
              f"Find why their replicas left the ISR before the next failure finds the ELR empty "
              f"({_DOCS}#topicconfigs_min.insync.replicas)"),
    CauseRule(_C.STALE_BROKER_EPOCH, _of(_T.STALE_BROKER_EPOCH),
              "the broker rejected control requests carrying a stale broker epoch (a restart raced the controller)",
              "The controller resends them after it learns the new epoch (KIP-380); if it keeps happening, look at "
              "the broker's ZooKeeper session"),
    CauseRule(_C.SLOW_CONTROL_REQUEST, lambda _a: True,
              "a control request was slow or did not complete, and no witness says where its time went",
              "Turn on the broker's request log (kafka.request.logger at DEBUG) to see its queue and handler times, "
              "and check the broker's GC log and disk latency"),
)


def incident_id(cluster: str, broker_id: int | None, started_at: datetime) -> str:
    """The id of a new incident: its cluster, broker and first alert's start (UTC, microseconds; a naive time is
    taken as UTC)."""
    at = started_at if started_at.tzinfo else started_at.replace(tzinfo=UTC)
    raw = f"{cluster}|{broker_id}|{at.astimezone(UTC).isoformat(timespec='microseconds')}"
    return hashlib.sha1(raw.encode()).hexdigest()[:20]


def live_end(a: Mapping[str, Any], resolve_after: timedelta) -> datetime:
    """Until when an alert (or an incident) is live: its resolved_at, else its last sighting plus the hysteresis."""
    if a["status"] == AlertStatus.resolved.value and a.get("resolved_at") is not None:
        end: datetime = a["resolved_at"]
        return end
    last: datetime = a.get("last_seen_at") or a["started_at"]
    return last + resolve_after


def _spans(alerts: Sequence[Mapping[str, Any]], resolve_after: timedelta) -> list[list[Mapping[str, Any]]]:
    """The alerts of one (cluster, broker) in groups whose live spans overlap (in start order)."""
    groups: list[list[Mapping[str, Any]]] = []
    group_end: datetime | None = None
    for a in sorted(alerts, key=lambda a: (a["started_at"], a["alert_id"])):
        if group_end is None or a["started_at"] > group_end:
            groups.append([])
            group_end = None
        groups[-1].append(a)
        end = live_end(a, resolve_after)
        group_end = end if group_end is None else max(group_end, end)
    return groups


def _worst(alerts: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    return max(alerts, key=lambda a: (SEVERITY_RANK.get(a["severity"] or "", 0), a["value"] or 0.0))


# Causes that are the consequence of others rather than an alternative to them: saturated handler or network
# threads go with a queue that fills, a handler that is slow, a storm of connections. Members showing them do not
# "point elsewhere".
_SYMPTOMS = frozenset({IncidentCause.BROKER_SATURATED})


def _cause(members: Sequence[Mapping[str, Any]]) -> tuple[CauseRule, Mapping[str, Any], list[tuple[str, str]]]:
    """The first rule a member shows and that member (the worst of them: severity, then value); and the other
    causes members show (cause, alert id), the catch-all and mere symptoms (_SYMPTOMS) left out: witnesses that
    point elsewhere."""
    shown = [(rule, [a for a in members if rule.shows(a)]) for rule in CAUSE_RULES[:-1]]
    shown = [(rule, alerts) for rule, alerts in shown if alerts]
    if not shown:
        return CAUSE_RULES[-1], _worst(members), []
    rule, alerts = shown[0]
    chosen = _worst(alerts)
    others: dict[str, str] = {}
    for r, al in shown[1:]:
        # an alert read again by a later rule is no other witness (a lag its peers shared is not also its own)
        al = [a for a in al if a["alert_id"] != chosen["alert_id"]]
        if al and r.cause != rule.cause and r.cause not in _SYMPTOMS and r.cause.value not in others:
            others[r.cause.value] = _worst(al)["alert_id"]
    return rule, chosen, list(others.items())


@dataclass(frozen=True)
class History:
    """Earlier incidents (`incident_id`, `cluster`, `broker_id`, `cause`, `started_at`) over `window` before the
    incidents being grouped: the frequency half of each incident's baseline."""

    incidents: Sequence[Mapping[str, Any]] = ()
    window: timedelta = timedelta(hours=24)


def _measured(shown_by: Mapping[str, Any], members: Sequence[Mapping[str, Any]]) -> str | None:
    """The measured baseline of the alert that shows the cause, else of the first member with one (its evidence's
    `baseline.text`: pipelines.detection.baselines and metric_baselines), naming the alert type when it is not the
    cause's."""
    for a in (shown_by, *members):
        text = (latest(a).get("baseline") or {}).get("text")
        if text:
            return text if a is shown_by else f"{a['type']}: {text}"
    return None


def _baseline(cause: IncidentCause, shown_by: Mapping[str, Any], members: Sequence[Mapping[str, Any]], cluster: str,
              broker: int | None, started: datetime, history: History) -> str:
    """How the incident compares: its measure against the broker's own history and its peers (when its alerts
    measured one), and how many incidents of the same cause this broker and its peers had in the history window."""
    earlier = [h for h in history.incidents if h["cluster"] == cluster and h["cause"] == cause.value
               and started - history.window <= h["started_at"] < started]
    hours = round(history.window.total_seconds() / 3600)
    if broker is None:
        n = sum(1 for h in earlier if h["broker_id"] is None)
        frequency = f"the cluster's earlier {cause.value} incidents in the previous {hours} h: {n}"
    else:
        own = sum(1 for h in earlier if h["broker_id"] == broker)
        peers = len({h["broker_id"] for h in earlier if h["broker_id"] not in (broker, None)})
        frequency = (f"broker {broker}'s earlier {cause.value} incidents in the previous {hours} h: {own}; peers "
                     f"with one: {peers}")
    measured = _measured(shown_by, members)
    return f"{measured}; {frequency}" if measured else frequency


def _incident(cluster: str, broker: int | None, members: Sequence[Mapping[str, Any]], iid: str,
              history: History) -> dict[str, Any]:
    rule, shown_by, others = _cause(members)
    first = members[0]
    open_ = [a for a in members if a["status"] == AlertStatus.open.value]
    types = sorted({a["type"] for a in members})
    summary = f"{rule.headline}. {shown_by['summary']}"
    more = len(members) - 1
    if more:
        summary += f" (+{more} more alert{'s' if more != 1 else ''}: {', '.join(types)})"
    if others:
        summary += "; other witnesses point to " + ", ".join(sorted({c for c, _ in others}))
    evidence: dict[str, Any] = {"cause_alert": shown_by["alert_id"], "cause_alert_type": shown_by["type"]}
    if shown_by["type"] in {t.value for t in _DELAYED}:
        evidence["split_from"] = _witness(shown_by)
    if others:
        evidence["other_causes"] = [{"cause": c, "alert": aid} for c, aid in others]
    return {
        "incident_id": iid,
        "cluster": cluster,
        "broker_id": broker,
        "cause": rule.cause.value,
        "severity": max((a["severity"] for a in members), key=lambda s: SEVERITY_RANK.get(s or "", 0)),
        "status": AlertStatus.open.value if open_ else AlertStatus.resolved.value,
        "started_at": first["started_at"],
        "last_seen_at": max(a.get("last_seen_at") or a["started_at"] for a in members),
        "resolved_at": None if open_ else max(a["resolved_at"] for a in members if a.get("resolved_at")),
        "summary": summary,
        "action": rule.action,
        "impact": impact(members, shown_by["type"]),
        "baseline": _baseline(rule.cause, shown_by, members, cluster, broker, first["started_at"], history),
        "alert_types": ",".join(types),
        "alert_ids": ",".join(a["alert_id"] for a in members),
        "alerts": len(members),
        "evidence": json.dumps(evidence, separators=(",", ":")),
    }


def group_incidents(alerts: Iterable[Mapping[str, Any]], resolve_after: timedelta,
                    previous: Mapping[str, str] | None = None, history: History | None = None
                    ) -> list[dict[str, Any]]:
    """The incidents of `alerts` (rows of the `alerts` table), one per (cluster, broker) and overlapping span;
    `previous`: alert id -> the incident it belonged to before (its id is kept, see the module doc); `history`:
    earlier incidents, counted in each one's baseline."""
    by_key: dict[tuple[str, int | None], list[Mapping[str, Any]]] = {}
    for a in alerts:
        if a.get("started_at") is None:
            continue
        by_key.setdefault((a["cluster"], a["broker_id"]), []).append(a)
    out: list[dict[str, Any]] = []
    used: set[str] = set()
    for (cluster, broker), rows in sorted(by_key.items(), key=lambda kv: (kv[0][0], kv[0][1] is None, kv[0][1])):
        for members in _spans(rows, resolve_after):
            # the id of the earliest member's earlier incident, unless a group before took it (one id, one group)
            known = [previous[a["alert_id"]] for a in members if previous and a["alert_id"] in previous]
            iid = next((i for i in known if i not in used), None) or incident_id(cluster, broker,
                                                                                members[0]["started_at"])
            if iid in used:  # a split incident's second part: its own id, never another group's
                iid = incident_id(cluster, broker, members[0]["started_at"] + timedelta(microseconds=len(used)))
            used.add(iid)
            out.append(_incident(cluster, broker, members, iid, history or History()))
    return out
