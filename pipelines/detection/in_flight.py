"""In-flight milestones of pairing: a control request still running is reported when event time passes its start
plus the warning (then the critical) level of its request's alert, while it is stuck, not only when it finishes.

Theory of operation
-------------------
The controller keeps one request in flight per broker, so on a pairing key only the OLDEST open request (a pending
send, or a record handled but not finished) is running; the others wait at the controller behind it. Its clock
starts at its own start (send, else handling), or when the key's previous request finished if that was later (it
left the controller only then). When the watermark passes that start plus a level of
:attr:`pairing.PairingParams.in_flight_ms`, the request is emitted as an `in_flight` row with `as_of` (the
watermark: every line up to it has arrived, and none finished the request) and the flag ``in_flight_alerted``,
which it keeps through its later updates (finished, or never completed), so the detectors update the alert the
in-flight row raised. Heartbeats keep the watermark moving on a quiet broker.

The watermark is one event time over every cluster the pipeline reads, so it alone does not say that THIS broker
was still there, working for THIS controller: a stopped cluster's open requests would look stuck while other
clusters move event time on, and a failed-over controller's unanswered sends while the broker serves its successor.
A :class:`BrokerView` (what the broker's own rows say, across controllers) bounds the in-flight clock: event time
counts only up to the broker's latest sign of life (`alive_until`: its metric samples and log lines), and a request
from an older controller epoch than one the broker has since handled is not in flight (its controller is gone).

A missing finish only means something where finishes are logged: 2.6 brokers log no `Finished LeaderAndIsr` line,
2.6+ brokers none for StopReplica, and a broker whose logs are not shipped logs nothing. So a request type is judged
on a key only once the key has shown a completion of that type (a broker Finished/applied line or the controller's
TRACE response line): :attr:`pairing.PairingState.completes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from schemas.events import LatencyStatus

__all__ = ["IN_FLIGHT_FLAG", "BrokerView", "InFlightParams", "KeyState", "mark", "next_milestone", "pending_rows"]

# the control_request_latency status (schemas.events.LatencyStatus) as the plain string the state holds
_IN_FLIGHT = LatencyStatus.IN_FLIGHT.value


# The flag of a request that was reported while in flight (kept on its later rows).
IN_FLIGHT_FLAG = "in_flight_alerted"


@dataclass(frozen=True)
class BrokerView:
    """What one broker's own rows show, whichever controller they concern (epoch milliseconds, event time)."""

    # the latest event time of the broker's own metric samples and log lines (None: it showed none yet)
    alive_until: int | None = None
    # the newest controller epoch of a request the broker handled (None: none seen)
    epoch: int | None = None

    def seen(self, ts: int | None = None, epoch: int | None = None) -> BrokerView:
        """This view moved on by a row of the broker at `ts` (handling a request of controller epoch `epoch`)."""
        alive = self.alive_until if ts is None or (self.alive_until is not None and self.alive_until >= ts) else ts
        newest = self.epoch if epoch is None or (self.epoch is not None and self.epoch >= epoch) else epoch
        return BrokerView(alive, newest)

    def now(self, watermark: int) -> int | None:
        """Event time as far as this broker vouches for it: the watermark, capped by its latest sign of life."""
        return None if self.alive_until is None else min(watermark, self.alive_until)

    def superseded(self, item: dict[str, Any]) -> bool:
        """Whether `item` came from an older controller epoch than one the broker has since handled."""
        e = item.get("epoch")
        return e is not None and self.epoch is not None and int(e) < self.epoch


class KeyState(Protocol):
    """What this module reads of a key's state (:class:`pairing.PairingState` is one)."""

    @property
    def sends(self) -> list[dict[str, Any]]: ...
    @property
    def records(self) -> list[dict[str, Any]]: ...
    @property
    def completes(self) -> list[str]: ...
    @property
    def last_done(self) -> int | None: ...


class InFlightParams(Protocol):
    """What this module reads of the operator's parameters (:class:`pairing.PairingParams` is one)."""

    @property
    def in_flight_ms(self) -> Mapping[str, tuple[int, int]]: ...


def _start(item: dict[str, Any]) -> int:
    """Start of an open item: a pending send's time, a record's send (else handling, else received) time."""
    if "ts" in item:
        return int(item["ts"])
    for k in ("sent_ts", "handling_ts", "received_ts"):
        if item.get(k) is not None:
            return int(item[k])
    return int(item["resp_ts"] or 0)


def _head(st: KeyState) -> dict[str, Any] | None:
    """The oldest open request of the key: the one the broker is (or should be) working on. Requests of a type whose
    completion the key's logs do not show are left out: their end is unknown, so they must not hide the request
    behind them for the whole timeout (a 2.6+ StopReplica is handled, never logged finished); nor is one a later
    Handling showed ended (`ended_by`), whose request-log line may still be on its way."""
    items = [r for r in st.records if r["finished_ts"] is None and r["status"] == _IN_FLIGHT
             and r.get("ended_by") is None]
    items += [s for s in st.sends if not s.get("silent")]
    items = [i for i in items if i["request"] in st.completes]
    return min(items, key=_start) if items else None


def _clock(st: KeyState, item: dict[str, Any]) -> int:
    """When the head's own time started: its start, or the previous request's finish if later."""
    start = _start(item)
    return max(start, st.last_done) if st.last_done is not None else start


def _levels(p: InFlightParams, item: dict[str, Any]) -> tuple[int, ...]:
    return tuple(p.in_flight_ms.get(item["request"], ()))


def next_milestone(st: KeyState, p: InFlightParams) -> int | None:
    """Event time at which the head request passes its next level (None: nothing to report)."""
    head = _head(st)
    if head is None:
        return None
    levels = _levels(p, head)
    reached = int(head.get("alerted", 0))
    if reached >= len(levels):
        return None
    return _clock(st, head) + levels[reached] + 1


def mark(st: KeyState, p: InFlightParams, watermark: int, broker: BrokerView | None = None) -> None:
    """Mark the head request dirty with `as_of`/`clock`/the flag when event time passed its next level: the
    watermark, capped by the broker's view when one is given (see the module doc)."""
    head = _head(st)
    if head is None:
        return
    now: int | None = watermark
    if broker is not None:
        if broker.superseded(head):
            return
        now = broker.now(watermark)
    if now is None:
        return
    clock = _clock(st, head)
    reached = sum(1 for level in _levels(p, head) if clock + level < now)
    if reached <= int(head.get("alerted", 0)):
        return
    head["alerted"], head["as_of"], head["clock"], head["dirty"] = reached, now, clock, True
    flags = head.setdefault("flags", [])
    if IN_FLIGHT_FLAG not in flags:
        flags.append(IN_FLIGHT_FLAG)


def pending_rows(st: KeyState, new_record: Any) -> list[dict[str, Any]]:
    """In-flight rows of pending sends marked by :func:`mark` (records are emitted by pairing's own loop); `first`
    when the send had no row before (pairing's module doc)."""
    out = []
    for s in st.sends:
        if s.get("dirty"):
            s["dirty"] = False
            r = new_record(s)
            r.update(sent_ts=s["ts"], status=_IN_FLIGHT, flags=list(s["flags"]), alerted=s["alerted"],
                     as_of=s["as_of"], clock=s["clock"], first=not s.get("emitted", True))
            s["emitted"] = True
            out.append(r)
    return out
