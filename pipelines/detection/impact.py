"""What an incident's alerts say partitions and clients went through (pure).

One clause per alert type among the members, worst first, each from the numbers its alerts carry (the value that
crossed the threshold, the partitions of a control request); an incident always gets one, since every alert type
says what its condition costs: a control request that waited is a leadership or metadata change that came late, a
saturated queue or thread pool is latency for every client of the broker, a fencing or an election moves partitions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from schemas.alerts import AlertType

__all__ = ["IMPACTS", "IMPACT_CLAUSES", "impact", "latest"]

# An impact reads as at most this many clauses, the worst first: a page is read in seconds, and the alerts behind
# the rest are the incident's symptoms.
IMPACT_CLAUSES = 3
# ROLL_TOO_FAST's clause quotes this many of the verdict's reasons (the alert's evidence has them all).
ROLL_REASONS = 2

_T = AlertType
Alert = Mapping[str, Any]


def latest(a: Alert) -> Mapping[str, Any]:
    """The evidence of an alert's latest firing (lifecycle._evidence), {} when unreadable."""
    try:
        found = json.loads(a.get("evidence") or "{}").get("latest")
    except (ValueError, AttributeError):
        return {}
    return found if isinstance(found, dict) else {}


def _top(alerts: Sequence[Alert]) -> float:
    return max(float(a["value"] or 0.0) for a in alerts)


def _low(alerts: Sequence[Alert]) -> float:
    return min(float(a["value"] or 0.0) for a in alerts)


def _parts(alerts: Sequence[Alert]) -> int:
    return sum(int(latest(a).get("partitions") or 0) for a in alerts)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _delayed_leader_and_isr(alerts: Sequence[Alert]) -> str:
    parts = _parts(alerts)
    out = f"leadership changes waited up to {_top(alerts) / 1000:.1f} s"
    return out + (f" ({_plural(parts, 'partition')} in {_plural(len(alerts), 'request')})" if parts else "")


def _not_completed(alerts: Sequence[Alert]) -> str:
    parts = _parts(alerts)
    return f"{len(alerts)} LeaderAndIsr never completed" + (f" ({_plural(parts, 'partition')})" if parts else "")


def _queued(alerts: Sequence[Alert]) -> str | None:
    # the request log's and RequestMetrics' forms measure ms; the metric form without them a queue length
    timed = [a for a in alerts if "cp_series" not in latest(a)]
    if timed:
        return (f"control requests waited up to {_top(timed) / 1000:.1f} s in the broker's request queue: its "
                "leadership and metadata changes came that much late")
    return None


def _queue_full_no_control_plane(alerts: Sequence[Alert]) -> str | None:
    full = [a for a in alerts if "cp_series" in latest(a)]
    if not full:
        return None
    return (f"the request queue every control request shares held at least {_top(full):.0f} requests: leadership and "
            "metadata changes on this broker queued behind them")


def _roll(alerts: Sequence[Alert]) -> str:
    reasons = [str(r) for a in alerts for r in (latest(a).get("reasons") or [])]
    why = f" ({'; '.join(reasons[:ROLL_REASONS])})" if reasons else ""
    return ("a broker was stopped before the cluster had recovered" + why + ": its partitions lost another replica "
            "while some were still catching up, so acks=all producers could be refused and partitions left leaderless")


# Per alert type, worst first: its clause from the incident's alerts of that type (None: it says nothing here).
IMPACTS: tuple[tuple[AlertType, Callable[[Sequence[Alert]], str | None]], ...] = (
    (_T.UNCLEAN_LEADER_ELECTION, lambda al: "acknowledged messages may be lost (an unclean leader election"
                                            f"{'s' if _top(al) > 1 else ''}: {_top(al):.0f})"),
    (_T.LEADER_AND_ISR_NOT_COMPLETED, _not_completed),
    (_T.BROKER_FENCED, lambda _al: "the broker's partitions moved away while it was fenced: their leaders changed and "
                                   "clients were sent elsewhere"),
    (_T.ROLL_TOO_FAST, _roll),
    (_T.QUORUM_UNSTABLE, lambda _al: "no metadata change went through while the quorum had no leader"),
    (_T.BROKER_HEARTBEAT_TIMEOUT, lambda _al: "the controller did not answer the broker's heartbeats in time: the "
                                              "broker risked being fenced and its partitions moving away"),
    (_T.LEADER_ELECTED_FROM_ELR, lambda al: f"{_plural(round(_top(al)), 'partition leader')} came from the eligible "
                                            "leader replicas: those partitions had been below min.insync.replicas "
                                            "(acks=all producers refused) and leaderless until then; nothing "
                                            "acknowledged was lost"),
    (_T.DELAYED_LEADER_AND_ISR, _delayed_leader_and_isr),
    (_T.LEADER_AND_ISR_TOTAL_TIME_HIGH, lambda al: f"LeaderAndIsr took up to {_top(al) / 1000:.1f} s in the broker: "
                                                   "its partitions waited that long for new leaders and followers"),
    (_T.CONTROL_REQUEST_QUEUED_BEHIND_DATA, _queued),
    (_T.CONTROL_REQUEST_QUEUE_DELAY, _queued),
    (_T.CONTROL_REQUEST_QUEUE_DELAY, _queue_full_no_control_plane),
    (_T.LOCK_CONTENTION, lambda al: f"a request handler waited up to {_top(al) / 1000:.1f} s for a lock: the "
                                    "control request it held, and its partitions' leadership, waited with it"),
    (_T.STALE_BROKER_EPOCH, lambda al: f"{_plural(len(al), 'control request')} carrying an old broker epoch "
                                       "were rejected: the broker's leadership changes waited until the controller "
                                       "resent them"),
    (_T.DELAYED_UPDATE_METADATA, lambda al: f"the broker's clients saw stale metadata for up to "
                                            f"{_top(al) / 1000:.1f} s"),
    (_T.METADATA_APPLY_LAG, lambda al: f"the broker's metadata ran up to {_top(al) / 1000:.1f} s behind the "
                                       "controller: it served old leaders, so clients were sent to them and retried"),
    (_T.DELAYED_STOP_REPLICA, lambda al: f"replicas were stopped up to {_top(al) / 1000:.1f} s late (partition "
                                         "moves and deletions finished that much later)"),
    (_T.CONTROLLER_EVENT_QUEUE_DELAY, lambda al: f"the controller's events waited {_top(al):,.0f} ms on average: "
                                                 "leader elections, ISR changes and topic creations across the "
                                                 "cluster came that much late"),
    (_T.CONTROL_PLANE_QUEUE_BACKLOG, lambda al: f"at least {_top(al):.0f} control requests waited on the control "
                                                "plane: leadership and metadata changes reached the broker late"),
    (_T.REQUEST_QUEUE_SATURATED, lambda al: f"the request queue held at least {_top(al):.0f} requests: every client "
                                            "request to the broker (produce, fetch, metadata) waited behind them, and "
                                            "its network threads stopped reading new ones while it was full"),
    (_T.ACCEPTOR_BLOCKED, lambda al: f"the acceptor was blocked up to {_top(al) * 100:.0f}% of the time: new "
                                     "connections waited to be accepted (clients' connection attempts timed out and "
                                     "retried)"),
    (_T.REQUEST_HANDLER_SATURATED, lambda al: f"the request handlers were as little as {_low(al) * 100:.1f}% "
                                              "idle: client requests to the broker waited for a free handler (produce "
                                              "and fetch latency rose)"),
    (_T.NETWORK_PROCESSOR_SATURATED, lambda al: f"the network threads were as little as {_low(al) * 100:.1f}% idle: "
                                                "the requests and responses of the broker's clients waited to be read "
                                                "and written"),
)


def impact(members: Sequence[Alert], first: str | None = None) -> str | None:
    """What the members say partitions and clients went through: the clauses of alert type `first` (the one that
    shows the incident's cause), then the others worst first (None: no member's type says)."""
    out: list[str] = []
    ordered = sorted(IMPACTS, key=lambda kv: kv[0].value != first)  # stable: IMPACTS' order after `first`
    for alert_type, clause in ordered:
        of_type = [a for a in members if a["type"] == alert_type.value]
        text = clause(of_type) if of_type else None
        if text and text not in out:
            out.append(text)
    return "; ".join(out[:IMPACT_CLAUSES]) or None
