"""Pairing of control requests: controller send -> broker handling -> broker finish, one key at a time.

Theory of operation
-------------------
A key is (cluster, controller id, broker id). The controller keeps ONE request in flight per broker
(ControllerChannelManager's RequestSendThread), so on a key the requests form a queue: the k-th `Sending` line
pairs with the k-th request the broker handles. Lines that carry a correlation id pair by id instead:
broker lines always do (`Handling LeaderAndIsr request correlationId 17 from controller 1`), the controller's TRACE
`Received response ... with correlation id N` line gives a send its id, and the reference controller writes it on
the send line itself.

`PairingState` is all a key remembers between micro-batches, bounded:
  * `sends`    pending controller sends not yet matched (at most MAX_PENDING_SENDS);
  * `records`  requests seen on the broker side (or completed by the controller's response) that may still change:
               an open handling, or a finished request that a late `Sending` line may still attach to
               (kept while the watermark allows such a line to arrive; at most MAX_OPEN_RECORDS);
  * `seen`     content keys of recent events, so a line shipped twice is counted once (evicted by the watermark).

Bounds never lose a row. A batch's events are folded in event-time order, so in a backfill (a day of requests per
broker in one batch, where the watermark cannot expire anything) each request is paired and resolved long before
thousands more arrive; a key holding more than SETTLE_AT records lets its finished ones that no later line of the
batch can reach leave as the fold goes (`_Key.settle`: what the batch's end would do to them, done earlier), so a
burst costs each line a few steps, not one per request folded before it. When a bound is reached, resolved records
(completed, never completed) leave first, oldest first, emitted if they changed: a resolved record is kept only so a
late line can still refine it, and one that thousands of later requests have passed gets no such line. Only a
request still OPEN beyond the bound is evicted: it is emitted with status `evicted` (outcome unknown: planewatch
stopped tracking it, the broker did not fail it) and counted in `PairingState.evicted`. Pending sends overflow only
when the broker's lines are missing or far behind (its log not shipped yet, or the broker stuck with the controller
still queueing); the oldest pending send a broker line can answer is never the one evicted: it is the request the
broker is (or should be) working on, the one the in-flight and never-completed reports are about.

`step()` folds a batch of events into the state and returns the latency rows that changed. A request is
emitted as `completed` the moment its finish is seen (not at watermark expiry: with --once/availableNow the last
watermark never fires), `never_completed` when the event-time watermark passes its start + the timeout (heartbeats
keep the watermark moving on a quiet cluster). A request that started and did not finish in this batch is not
emitted yet: each row a request gets before its final one is an UPDATE of the latency table's MERGE, which rewrites
the file holding the earlier row.
Rows carry a stable `request_key`, so a later update (a late `Sending` line, the finish) replaces the earlier row.
A row is `first` when no earlier row of its request was emitted (its record or pending send says so: `emitted`,
carried from a send to the record that takes it under the same anchor), so the job appends it instead of merging
it: a MERGE reads every file of the day its keys may be in, an append none. State written before this flag existed
counts as emitted.
A request still running is also emitted `in_flight` when event time passes its start plus its alert's warning and
critical levels (:mod:`pipelines.detection.in_flight`), so a stuck request is reported while it is stuck.

Edge cases, each with a flag on the row:
  * controller failover on the same key (a new controller epoch): a broker request pairs with the newest epoch's
    send; older-epoch sends still pending then resolve `never_completed` with flag `controller_failover`.
  * broker restart mid-request: a new `Handling` while an older one on the key never finished means the broker
    dropped the older one (the controller retries after reconnecting); the older resolves `never_completed` with
    flag `broker_restart` and hands its send to the retry.
  * broker deleted or bounced (controller.log `Newly added brokers: .., deleted brokers: 3, bounced brokers: ..`):
    the controller dropped its queued requests; pending sends resolve `never_completed` with flag `broker_gone`.
  * an UpdateMetadata for 0 partitions leaves no broker line (Kafka logs `Add N partitions ...` only for partition
    states): broker lines skip it; it completes with its TRACE response, or (flag `no_broker_line`) when a later
    request on the key is handled.
  * clock skew: a negative send->handling time within MAX_CLOCK_SKEW is clamped to 0, flag `clock_skew`.
  * 2.2-2.5 brokers (TRACE per-partition lines, no `Finished`): per-partition `Handling`/`Completed ... transition
    for partition` and `Cached leader info` lines carry the correlation id; the request spans its first line to its
    last partition's completion (kind `part_done`, which also counts as a completion for in_flight.py). Their
    per-partition `Received LeaderAndIsr request ... correlation id C` lines (kind `received`) are logged BEFORE
    the handler takes replicaStateChangeLock and the `Handling ... transition` lines inside it, so the gap from the
    last Received line to the first Handling line is the request's lock wait (latency_row). From 2.6 on the
    Received lines follow the Handling line: the gap is not there, and no lock wait is taken from them.
"""

# Over 500 lines: one state machine and its theory of operation; its handlers share the key's state.
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from pipelines.detection import in_flight
from pipelines.detection.latency_rows import latency_row, request_key
from pipelines.detection.pairing_records import Event, broker_count, new_record, served_breakdown, start_of
from schemas.events import ControlRequest, LatencyStatus

__all__ = [
    "BOUND_SLACK",
    "KINDS",
    "MAX_OPEN_RECORDS",
    "MAX_PENDING_SENDS",
    "MAX_SEEN",
    "SETTLE_AT",
    "SETTLE_EVERY",
    "Event",
    "PairingParams",
    "PairingState",
    "latency_row",
    "request_key",
    "step",
]

# control_request_latency statuses (schemas.events.LatencyStatus) as the plain strings the state holds
_COMPLETED, _IN_FLIGHT, _NEVER, _EVICTED = (LatencyStatus.COMPLETED.value, LatencyStatus.IN_FLIGHT.value,
                                            LatencyStatus.NEVER_COMPLETED.value, LatencyStatus.EVICTED.value)


# Kinds of event the operator understands (events.py maps silver rows onto them).
KINDS = ("send", "received", "handling", "finished", "applied", "part_done", "response", "served", "lock_wait", "gone",
         "heartbeat")
# The kinds that show a request completed (PairingState.completes).
_DONE_KINDS = ("finished", "applied", "part_done", "response", "served")
# The kinds by which a broker's state-change log itself shows a request's end (PairingState.finish_logged).
_LOGGED_END_KINDS = ("finished", "applied", "part_done")
# Same-millisecond events of one request sort in this order.
_KIND_ORDER = {"send": 0, "received": 1, "handling": 2, "lock_wait": 3, "finished": 4, "applied": 4, "part_done": 4,
               "response": 5, "served": 5, "gone": 6, "heartbeat": 7}


def _fold_order(ev: Event) -> tuple[int, int, str, bool]:
    """The order a key's events are folded in: event time, then kind (:data:`_KIND_ORDER`), then request type, then
    a TRACE Sending burst's per-partition lines before its INFO summary. Kafka logs a burst's lines in that order,
    all in the same millisecond as a rule, and may send another request type to the broker in the same millisecond
    (a LeaderAndIsr and its UpdateMetadata, a StopReplica in a reassignment); but a batch the executors pair reaches
    a group in Spark's shuffle order, not the log's. A summary folded before its own partition lines, or with
    another request's lines between them, would close the burst early, and the rest would open a phantom request
    that every later request of the key is then paired one behind (each a round's interval late). Request types
    meet no other way: a broker line answers a send of its own type."""
    return ev.ts, _KIND_ORDER.get(ev.kind, 9), ev.request or "", ev.kind == "send" and ev.detail is None

# One request is in flight per (controller, broker), but the controller logs `Sending` when it QUEUES a request, and
# a partition reassignment or a controlled shutdown queues one per partition moved: a 30-partition reassignment on
# Apache Kafka 3.9.1 queued ~90 to one broker (the former bound of 64 evicted 14 of them). 2,048 holds a move of
# that many partitions onto one broker; a pending send costs ~0.3 KB of state (a full key ~0.6 MB), and sends the
# broker never answers (its log not shipped) leave at the timeout anyway. Beyond it a pending send is evicted:
# emitted with status `evicted` and counted, never dropped silently; the broker's own lines still time the request.
MAX_PENDING_SENDS = 2048
# Broker-side requests still open or awaiting a late Sending line; the same reasoning bounds them. Resolved ones
# leave first when it is reached (emitted), so only an open request is ever evicted.
MAX_OPEN_RECORDS = 2048
# Recent event content keys kept for duplicate suppression (evicted by the watermark first).
MAX_SEEN = 512
# A batch folding more records than this on one key (a backfill, a failover burst) settles its finished ones as it
# goes (`_Key.settle`), every SETTLE_EVERY events: the bounds and the per-line matching scan the records, so a key
# holding thousands of finished requests costs thousands of steps per line (measured: 115,515 lines of one broker
# in one batch took 62 s, ~1,800 lines/s, against the parse's 6 s).
SETTLE_AT = 256
SETTLE_EVERY = 64
# When the records bound is reached, records leave down to this many below it in one pass (one sort per this many
# new records instead of one per record): resolved ones first, then open ones (evicted, counted), the oldest kept.
BOUND_SLACK = 256
# Per-partition TRACE Sending lines of one request are logged in one burst by ControllerBrokerRequestBatch;
# lines to the same broker within this much time of the burst's first line are the same request.
PARTITION_BURST_MS = 1_000


@dataclass(frozen=True)
class PairingParams:
    """Time limits of the operator, in milliseconds."""

    timeout_ms: int = 120_000
    max_skew_ms: int = 5_000
    # how far event time runs ahead of the watermark (detection.watermark_delay_s): a send older than a broker line
    # by the timeout and this much had expired by the time that line's watermark came (`_take_send`)
    watermark_delay_ms: int = 10_000
    # request -> (warning, critical) age at which a request still running is reported (in_flight.py); none: never
    in_flight_ms: Mapping[str, tuple[int, int]] = field(default_factory=dict)


@dataclass
class PairingState:
    """What one key remembers between micro-batches (JSON-serialisable, see `to_json`)."""

    sends: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)
    # open requests evicted by MAX_PENDING_SENDS / MAX_OPEN_RECORDS (each emitted with status `evicted`)
    evicted: int = 0
    duplicates: int = 0
    # event time the latest request on this key finished: a send queued behind it left the controller only then
    last_done: int | None = None
    # the request the latest `Sending` line on this key belongs to (wherever it went: pending or attached), so the
    # other lines of the same request join it: {"anchor", "request", "epoch", "last_ts", "closed"}
    burst: dict[str, Any] | None = None
    # request types whose completion this key's logs show (a finish, applied or response line): only for these does
    # a missing finish mean the request is still running (in_flight.py)
    completes: list[str] = field(default_factory=list)
    # request types whose end this key's broker logs in its state-change log (a finish, applied or per-partition
    # completion line): for the others (2.6's LeaderAndIsr, 2.6+'s StopReplica) a next Handling does not mean the
    # broker dropped the previous request, only that it ended (the replicaStateChangeLock serialises them)
    finish_logged: list[str] = field(default_factory=list)
    # the key's broker writes a request log (a `served` line was seen): a finished request stays until its served
    # line (the broker's breakdown of its time) or the watermark's skew margin, so that line updates its row
    request_log: bool = False

    def to_json(self) -> str:
        # its fields are JSON values already: no deep copy (dataclasses.asdict) on the way out
        return json.dumps({f.name: getattr(self, f.name) for f in fields(self)}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> PairingState:
        if not text:
            return cls()
        raw = json.loads(text)
        # `dropped`: the name the eviction count had in state written before evicted requests were emitted
        evicted = int(raw.get("evicted", raw.get("dropped", 0)))
        return cls(raw["sends"], raw["records"], {k: int(v) for k, v in raw["seen"].items()}, evicted,
                   raw.get("duplicates", 0), raw.get("last_done"), raw.get("burst"), raw.get("completes", []),
                   raw.get("finish_logged", []), bool(raw.get("request_log", False)))

    def next_deadline(self, p: PairingParams) -> int | None:
        """Earliest event time at which something in the state expires (for the event-time timeout)."""
        times = [s["ts"] + p.timeout_ms + 1 for s in self.sends]
        for r in self.records:
            if r["finished_ts"] is None:
                times.append(start_of(r) + p.timeout_ms + 1)
            else:
                times.append(start_of(r) + p.max_skew_ms + 1)
        milestone = in_flight.next_milestone(self, p)
        if milestone is not None:
            times.append(milestone)
        return min(times) if times else None


class _Key:
    """Mutable working copy of one key's state during `step`."""

    def __init__(self, st: PairingState, p: PairingParams, watermark_ms: int | None = None) -> None:
        self.st: PairingState = st
        self.p: PairingParams = p
        # the batch's watermark: a send is stale (`_take_send`) only once it is past it too
        self.watermark_ms = watermark_ms
        self.out: list[dict[str, Any]] = []
        # records by correlation id, in the order of `st.records` (None: rebuilt by `_find` when next needed)
        self._by_corr: dict[int, list[dict[str, Any]]] | None = None

    def _add_record(self, r: dict[str, Any]) -> None:
        self.st.records.append(r)
        if self._by_corr is not None and r["corr"] is not None:
            self._by_corr.setdefault(r["corr"], []).append(r)

    def _set_records(self, records: list[dict[str, Any]]) -> None:
        self.st.records = records
        self._by_corr = None

    def _emit(self, r: dict[str, Any]) -> None:
        """Emit record `r` (a copy): `first` when no earlier row of its request was emitted (see the module doc)."""
        self.out.append({**r, "first": not r.get("emitted", True)})
        r["emitted"], r["dirty"] = True, False

    # --- matching ------------------------------------------------------------------------------------------
    def _take_send(self, request: str | None, corr: int | None, epoch: int | None, at: int,
                   broker_side: bool = True, skew_by: int | None = None) -> dict[str, Any] | None:
        """Remove and return the send a request at event time `at` answers, or None.

        A broker-side line never answers a silent send (an UpdateMetadata for 0 partitions: the broker logs nothing
        for it); silent sends older than the one a broker line takes were answered before it (one request in flight
        per broker) and resolve `completed` without a finish time."""
        sends = self.st.sends
        if corr is not None:
            for i, s in enumerate(sends):
                if s["corr"] == corr and s["request"] == request:
                    return sends.pop(i)
        latest = at + self.p.max_skew_ms if skew_by is None else skew_by
        # A send that both this batch's watermark and the watermark of this line's own time have carried past the
        # timeout never completed, whatever arrives now: taken by order, it would pair the next request's broker
        # lines with it (a send whose broker lines were lost, e.g. late, shifts every later request of the key one
        # behind, each a round's interval "slow"). The batch's watermark bounds it: a line read ahead of its
        # request's other lines (another file, another partition) expires nothing the batch would keep.
        # One pass over the pending sends (a key may hold thousands): the stale ones and the candidates.
        stale_before = None if not broker_side or self.watermark_ms is None else \
            min(min(at, latest) - self.p.watermark_delay_ms, self.watermark_ms) - self.p.timeout_ms
        stale: list[dict[str, Any]] = []
        cands: list[dict[str, Any]] = []
        for s in sends:
            if s["corr"] is not None or s["request"] != request:
                continue
            if stale_before is not None and s["ts"] < stale_before:
                stale.append(s)
            elif (s["ts"] <= latest and (epoch is None or s["epoch"] is None or s["epoch"] == epoch)
                  and not (broker_side and s.get("silent"))):
                cands.append(s)
        for s in stale:
            sends.remove(s)
            superseded = epoch is not None and s["epoch"] is not None and s["epoch"] < epoch
            self._expire_send(s, "controller_failover" if superseded else None)
        if not cands:
            return None
        top = max((s["epoch"] for s in cands if s["epoch"] is not None), default=None)
        chosen = min((s for s in cands if s["epoch"] == top), key=lambda s: s["ts"])
        sends.remove(chosen)
        if broker_side:
            for s in [s for s in sends if s.get("silent") and s["request"] == request and s["ts"] <= chosen["ts"]]:
                sends.remove(s)
                self._answered_silently(s)
        if top is not None:  # older controller epochs on this key were superseded by a failover
            for s in [s for s in sends if s["epoch"] is not None and s["epoch"] < top and s["ts"] <= chosen["ts"]]:
                sends.remove(s)
                self._expire_send(s, "controller_failover")
        return chosen

    def _attach_send(self, r: dict[str, Any], s: dict[str, Any], at: int) -> None:
        r["sent_ts"] = s["ts"]
        done = self.st.last_done
        # One request in flight per broker: a send logged while the previous request was still running waited at
        # the controller until that one finished (`Sending` INFO lines are logged when the request is queued).
        r["ctl_wait_ms"] = done - s["ts"] if done is not None and s["ts"] < done < at else None
        if r["epoch"] is None:
            r["epoch"] = s["epoch"]
        if r["partitions"] is None:
            r["partitions"] = s["partitions"]
        r["pairing"] = "correlation_id" if s["corr"] is not None else "order"
        if s.get("anchor") == r["anchor"]:  # the same request: a row the send got (in flight) is the record's too
            r["emitted"] = bool(r.get("emitted", True)) or bool(s.get("emitted", True))
        if s.get("alerted"):  # reported while pending: the record carries the report on
            r["alerted"] = max(int(r.get("alerted", 0)), int(s["alerted"]))
            r["flags"] = sorted({*r["flags"], in_flight.IN_FLIGHT_FLAG})
        r["dirty"] = True

    def _find(self, request: str | None, corr: int | None, epoch: int | None = None) -> dict[str, Any] | None:
        """The record of correlation id `corr`; a known controller epoch must agree (a restarted controller starts
        its correlation ids again under a new epoch)."""
        if corr is None:
            return None
        if self._by_corr is None:
            self._by_corr = {}
            for rec in self.st.records:
                if rec["corr"] is not None:
                    self._by_corr.setdefault(rec["corr"], []).append(rec)
        same: list[dict[str, Any]] = self._by_corr.get(corr, [])
        for r in reversed(same):  # the most recent one wins (ids restart after a controller failover)
            if (r["corr"] == corr and (request is None or r["request"] == request)
                    and (epoch is None or r["epoch"] is None or r["epoch"] == epoch)):
                found: dict[str, Any] = r
                return found
        return None

    # --- event handlers --------------------------------------------------------------------------------------
    def _same_request(self, ev: Event) -> dict[str, Any] | None:
        """The pending send or record that `ev`, a further line of the latest request's Sending burst, belongs to.

        A controller at TRACE logs one `Sending become-leader ... for partition p` line per partition and then
        (2.6+) the INFO summary `Sending LeaderAndIsr request to broker b with ...`: ONE request. A per-partition
        line continues an open burst; the summary closes it; anything after a closed burst is the next request.
        """
        b = self.st.burst
        if (b is None or b["closed"] or ev.correlation_id is not None or b["request"] != ev.request
                or b["epoch"] != ev.controller_epoch or not 0 <= ev.ts - b["last_ts"] <= PARTITION_BURST_MS):
            return None
        # one item holds an anchor; the burst's is nearly always among the newest
        lists: tuple[list[dict[str, Any]], ...] = (self.st.sends, self.st.records)
        for items in lists:
            for item in reversed(items):
                if item["anchor"] == b["anchor"]:
                    same: dict[str, Any] = item
                    return same
        return None

    def send(self, ev: Event) -> None:
        same = self._same_request(ev)
        if same is not None and self.st.burst is not None:
            self.st.burst["last_ts"] = ev.ts
            if ev.detail is not None:
                if "burst" in same:  # still pending: count the partition (an attached record has the broker's count)
                    same["partitions"] = (same["partitions"] or 0) + 1
            else:  # the INFO summary: its partition count is the request's
                self.st.burst["closed"] = True
                if "burst" in same and ev.partitions is not None:
                    same["partitions"] = ev.partitions
                elif same.get("partitions") is None:
                    same["partitions"], same["dirty"] = ev.partitions, True
            return
        anchor = f"s{ev.ts}:{ev.partitions}"
        self.st.burst = {"anchor": anchor, "request": ev.request, "epoch": ev.controller_epoch, "last_ts": ev.ts,
                         "closed": ev.detail is None}
        # A late Sending line (its broker side already seen): attach to the earliest unsent record it can answer.
        silent = ev.request == ControlRequest.UPDATE_METADATA and ev.partitions == 0 and ev.detail is None
        for r in self.st.records:
            if (not silent and r["sent_ts"] is None and r["request"] == ev.request
                    and r["status"] != _NEVER
                    and (ev.correlation_id is None or r["corr"] == ev.correlation_id)
                    and start_of(r) + self.p.max_skew_ms >= ev.ts):
                self._attach_send(r, {"ts": ev.ts, "epoch": ev.controller_epoch, "partitions": ev.partitions,
                                      "corr": ev.correlation_id}, start_of(r))
                self.st.burst["anchor"] = r["anchor"]
                return
        self.st.sends.append({"ts": ev.ts, "request": ev.request, "corr": ev.correlation_id,
                              "epoch": ev.controller_epoch, "partitions": ev.partitions,
                              "anchor": anchor, "burst": ev.detail is not None, "silent": silent,
                              "emitted": False})
        self._bound_sends()

    def _broker_record(self, ev: Event, send_by: int | None = None) -> dict[str, Any]:
        """The record of broker line `ev` (a new one, taking the send it answers, when none is open); `send_by`: the
        latest time its send can have been logged (else the line's time plus the clock skew)."""
        r = self._find(ev.request, ev.correlation_id, ev.controller_epoch)
        if r is not None and r["status"] != _NEVER:
            return r
        r = new_record(ev, f"b{ev.correlation_id}:{ev.ts}")
        s = self._take_send(ev.request, ev.correlation_id, ev.controller_epoch, ev.ts, skew_by=send_by)
        if s is not None:
            r["anchor"] = s["anchor"]
            self._attach_send(r, s, ev.ts)
        self._add_record(r)
        self._bound_records(r)
        return r

    # --- bounds --------------------------------------------------------------------------------------------
    def _bound_sends(self) -> None:
        """At most MAX_PENDING_SENDS pending sends: the oldest one other than the head (the oldest a broker line can
        answer) is evicted, emitted with status `evicted` and counted."""
        sends = self.st.sends
        while len(sends) > MAX_PENDING_SENDS:
            by_age = sorted(sends, key=lambda s: int(s["ts"]))
            head = next((s for s in by_age if not s.get("silent")), None)
            victim = next(s for s in by_age if s is not head)
            sends.remove(victim)
            self._resolve_send(victim, _EVICTED, None)
            self.st.evicted += 1

    def _bound_records(self, current: dict[str, Any]) -> None:
        """At most MAX_OPEN_RECORDS records (`current`, the one being built, stays): beyond it, records leave down to
        BOUND_SLACK below it, the oldest resolved ones first (emitted if they changed), then, when too few are
        resolved, the oldest open ones but one (the oldest is the one the broker works on), emitted with status
        `evicted` and counted."""
        recs = self.st.records
        if len(recs) <= MAX_OPEN_RECORDS:
            return
        others = sorted((r for r in recs if r is not current), key=start_of)
        over = len(recs) - (MAX_OPEN_RECORDS - BOUND_SLACK)
        leaving = [r for r in others if r["status"] != _IN_FLIGHT][:over]
        # still over: open records leave too, the oldest (the one the broker works on) excepted
        evict = [r for r in others if r["status"] == _IN_FLIGHT][1:1 + over - len(leaving)]
        gone = {id(r) for r in (*leaving, *evict)}
        self._set_records([r for r in recs if id(r) not in gone])
        for victim in sorted((*leaving, *evict), key=start_of):
            if victim["status"] == _IN_FLIGHT:
                victim["status"], victim["dirty"] = _EVICTED, True
                self.st.evicted += 1
            if victim["dirty"]:
                self._emit(victim)

    def handling(self, ev: Event) -> None:
        """The broker started a request. It handles one control request at a time, so an older request on this key
        still open either ended before this one (a broker whose state-change log shows no ends of that type, 2.6's
        LeaderAndIsr: marked `ended_by`, the request log's `served` line tells when) or was dropped by a broker
        restart (flag `broker_restart`): the controller retries it after reconnecting, and the retry, with no
        Sending line of its own, inherits the original send."""
        older = [old for old in self.st.records
                 if old["handling_ts"] is not None and old["finished_ts"] is None and old["status"] == _IN_FLIGHT
                 and old["handling_ts"] < ev.ts and old["corr"] != ev.correlation_id]
        r = self._broker_record(ev)
        retried: dict[str, Any] | None = None
        for old in older:
            # a new send of its own, or no sends known to tell a retry by: the older one ended
            if old["request"] not in self.st.finish_logged and (r["sent_ts"] is not None or old["sent_ts"] is None):
                old["ended_by"] = ev.ts
                continue
            old["status"], old["dirty"] = _NEVER, True
            old["flags"].append("broker_restart")
            if old["sent_ts"] is not None and old["request"] == ev.request:
                retried = {"ts": old["sent_ts"], "epoch": old["epoch"], "partitions": old["partitions"], "corr": None}
        if r["sent_ts"] is None and retried is not None:
            self._attach_send(r, retried, ev.ts)
        if r["handling_ts"] is None:
            r["handling_ts"], r["dirty"] = ev.ts, True
        broker_count(r, ev)

    def received(self, ev: Event) -> None:
        """A 2.2-2.5 broker's per-partition `Received LeaderAndIsr request` line, logged before the handler waits for
        replicaStateChangeLock: the latest one before the request's first Handling line marks where its lock wait
        began. A request waiting for the lock is open from here (in flight)."""
        r = self._broker_record(ev)
        if r["handling_ts"] is None and (r.get("received_ts") is None or ev.ts > r["received_ts"]):
            r["received_ts"] = ev.ts

    def finished(self, ev: Event) -> None:
        r = self._broker_record(ev)
        r["logged_end"] = True
        if r["finished_ts"] is None:
            r["finished_ts"], r["elapsed_ms"], r["status"], r["dirty"] = ev.ts, ev.elapsed_ms, _COMPLETED, True
        broker_count(r, ev)

    def applied(self, ev: Event) -> None:
        """UpdateMetadata applied to the broker's cache (one line at the end of the request)."""
        r = self._broker_record(ev)
        r["logged_end"] = True
        if r["finished_ts"] is None:
            r["finished_ts"], r["status"], r["dirty"] = ev.ts, _COMPLETED, True

    def part_done(self, ev: Event) -> None:
        """A 2.2-2.5 per-partition completion (`Completed LeaderAndIsr request correlationId C ... for the
        become-leader transition for partition p`, `Cached leader info ... with correlation id C`): these brokers log
        no summary finish, so the request spans its first line to its LAST partition's completion. Each such line
        moves the finish on (the row is updated under the same key); the record stays open for more of them
        (`parts`) until the watermark passes its latest one by the clock skew."""
        r = self._broker_record(ev)
        r["logged_end"] = True
        if r["handling_ts"] is None:  # an UpdateMetadata's first cached partition is its first line
            r["handling_ts"] = ev.ts
        if r["finished_ts"] is None or ev.ts > r["finished_ts"]:
            r["finished_ts"], r["status"], r["dirty"] = ev.ts, _COMPLETED, True
        r["parts"] = True

    def lock_wait(self, ev: Event) -> None:
        r = self._find(ev.request, ev.correlation_id, ev.controller_epoch)
        if r is not None:
            r["lock_wait_ms"], r["dirty"] = ev.lock_wait_ms, True

    def response(self, ev: Event) -> None:
        """Controller TRACE `Received response ... correlation id N`: gives the oldest unanswered send its id."""
        r = self._find(ev.request, ev.correlation_id, ev.controller_epoch)
        if r is None:
            s = self._take_send(ev.request, None, None, ev.ts, broker_side=False)
            r = new_record(ev, s["anchor"] if s else f"r{ev.correlation_id}:{ev.ts}")
            if s is not None:
                self._attach_send(r, s, ev.ts)
            self._add_record(r)
            self._bound_records(r)
        elif r["sent_ts"] is None:
            s = self._take_send(ev.request, None, None, ev.ts, broker_side=False)
            if s is not None:
                self._attach_send(r, s, ev.ts)
        r["pairing"] = "correlation_id"
        if r["resp_ts"] is None:
            r["resp_ts"], r["dirty"] = ev.ts, True
        if r["finished_ts"] is None:
            # the controller saw the answer (2.2-2.5 brokers log no Finished line); broker lines may still refine it
            r["status"] = _COMPLETED

    def served(self, ev: Event) -> None:
        """The broker's request log (`Completed request` in kafka-request.log, text or JSON) for a control request:
        the response went out at `ev.ts`, `ev.elapsed_ms` (totalTime) after the request arrived. The second witness of
        a request's end: it completes one whose era logs no finish (2.6's LeaderAndIsr, 2.6+'s StopReplica), one whose
        finish line is missing, or one taken for dropped by a broker restart; a finish line, when logged, keeps its
        own time."""
        self.st.request_log = True
        r = self._find(ev.request, ev.correlation_id, ev.controller_epoch)
        if r is None:
            # a send logged after the request reached the broker belongs to a later request, whatever the skew
            arrived = ev.ts - (ev.elapsed_ms or 0)
            r = self._broker_record(ev, send_by=arrived)
        if r.get("served_ms") is None:
            r["served_ms"] = ev.elapsed_ms
            r["breakdown"] = served_breakdown(ev.detail)
            r["dirty"] = True  # the broker's breakdown of the request's time is new to its row
        if r["finished_ts"] is None:
            r["finished_ts"], r["status"], r["dirty"] = ev.ts, _COMPLETED, True
            r["flags"] = [f for f in r["flags"] if f != "broker_restart"]
        if r["partitions"] is None:
            r["partitions"] = ev.partitions

    def gone(self, ev: Event) -> None:
        """The controller declared the broker deleted or bounced (controller.log): it dropped the broker's queued
        requests with its RequestSendThread. Sends still pending resolve `never_completed` (flag `broker_gone`), so
        they cannot pair with the requests of the broker's next incarnation; so does a handling left unfinished, and
        every earlier request leaves the state."""
        for s in [s for s in self.st.sends if s["ts"] <= ev.ts]:
            self.st.sends.remove(s)
            self._expire_send(s, "broker_gone")
        keep = []
        for r in self.st.records:
            if start_of(r) > ev.ts:
                keep.append(r)
                continue
            if r["finished_ts"] is None and r["status"] == _IN_FLIGHT:
                r["status"], r["dirty"] = _NEVER, True
                r["flags"].append("broker_gone")
            if r["dirty"]:
                self._emit(r)
        # the broker's next incarnation starts its correlation ids again on a new connection (same controller
        # epoch): nothing from before may match its lines
        self._set_records(keep)
        self.st.burst = None

    def _answered_silently(self, s: dict[str, Any]) -> None:
        r = {**new_record(Event("send", s["ts"], s["request"], s["corr"], s["epoch"], s["partitions"]), s["anchor"]),
             "sent_ts": s["ts"], "status": _COMPLETED, "emitted": s.get("emitted", True)}
        r["flags"].append("no_broker_line")
        self._emit(r)

    def _expire_send(self, s: dict[str, Any], flag: str | None) -> None:
        self._resolve_send(s, _NEVER, flag)

    def _resolve_send(self, s: dict[str, Any], status: str, flag: str | None) -> None:
        """Emit a pending send (already removed from the state) as a request row of `status`."""
        r = {**new_record(Event("send", s["ts"], s["request"], s["corr"], s["epoch"], s["partitions"]), s["anchor"]),
             "sent_ts": s["ts"], "status": status, "emitted": s.get("emitted", True)}
        if flag:
            r["flags"].append(flag)
        r["flags"] += s.get("flags", [])
        self._emit(r)

    def _finished_done(self, r: dict[str, Any], watermark: int) -> bool:
        """Whether finished record `r` may leave the state at `watermark`: a late Sending line may still attach
        while the watermark allows, and so may more per-partition completions or its request-log line."""
        done = r["sent_ts"] is not None or start_of(r) + self.p.max_skew_ms < watermark
        if r.get("parts"):  # more per-partition completions of the request may follow
            done = done and r["finished_ts"] + self.p.max_skew_ms < watermark
        if self.st.request_log and r.get("served_ms") is None:  # its request-log line may follow
            done = done and r["finished_ts"] + self.p.max_skew_ms < watermark
        return done

    def settle(self, at: int) -> None:
        """Inside a batch's fold, at event time `at` (no earlier than the lines still to fold): finished records that
        the batch's end would let leave, and that no later line of the batch can reach (finished longer than the
        clock skew before `at`), leave now, emitted if they changed. What the batch's end does to them, done
        earlier: a key folding a backfill keeps only what its next lines can still change."""
        keep = []
        for r in self.st.records:
            if (r["finished_ts"] is not None and r["finished_ts"] + self.p.max_skew_ms < at
                    and self._finished_done(r, at)):
                if r["dirty"]:
                    self._emit(r)
            else:
                keep.append(r)
        self._set_records(keep)

    def expire(self, watermark: int) -> None:
        for s in [s for s in self.st.sends if s["ts"] + self.p.timeout_ms < watermark]:
            self.st.sends.remove(s)
            self._expire_send(s, None)
        keep = []
        for r in self.st.records:
            if r["finished_ts"] is None and r["status"] == _IN_FLIGHT and start_of(r) + self.p.timeout_ms < watermark:
                if r.get("ended_by") is not None:
                    # it ended before the next request's Handling; no request log line told when
                    r["status"], r["dirty"] = _COMPLETED, True
                    r["flags"].append("end_not_logged")
                else:
                    r["status"], r["dirty"] = _NEVER, True
            if r["finished_ts"] is not None:
                done = self._finished_done(r, watermark)
            elif r["status"] == _COMPLETED:  # answered per the controller; broker lines may still refine it
                done = start_of(r) + self.p.timeout_ms < watermark
            else:  # one taken for dropped by a broker restart stays while its request-log line may still come
                done = r["status"] == _NEVER and (
                    "broker_restart" not in r["flags"] or start_of(r) + self.p.timeout_ms < watermark)
            # a request still running is emitted once it ends, or once reported in flight (in_flight.mark): a row
            # per batch boundary it straddles would make the latency MERGE update, and so rewrite, the file holding
            # its previous row, every batch (the soak: a compacted day's file rewritten every 2 s, 69 -> 966 ms)
            young = r["status"] == _IN_FLIGHT and in_flight.IN_FLIGHT_FLAG not in r["flags"]
            if r["dirty"] and not young:
                self._emit(r)
            if not done:
                keep.append(r)
        self._set_records(keep)


def step(state: PairingState, events: list[Event], watermark_ms: int, params: PairingParams,
         broker: in_flight.BrokerView | None = None) -> list[dict[str, Any]]:
    """Fold one micro-batch of one key's events into `state` (mutated) and return the changed requests.

    `broker` (what the key's broker showed across controllers, this batch included) bounds the in-flight reports
    (:func:`in_flight.mark`); without it the watermark alone decides.

    Each returned dict has the record fields (`anchor`, `request`, `corr`, `epoch`, `sent_ts`, `handling_ts`,
    `finished_ts`, `resp_ts`, `elapsed_ms`, `lock_wait_ms`, `partitions`, `pairing`, `flags`, `status`, and where
    known `received_ts`, `served_ms`, `breakdown`, `logged_end`); `latency_row` turns it into a
    control_request_latency row.
    """
    k = _Key(state, params, watermark_ms)
    floor = watermark_ms
    for key, ts in list(state.seen.items()):
        if ts < floor:
            del state.seen[key]
    for n, ev in enumerate(sorted(events, key=_fold_order)):
        if ev.kind == "heartbeat":
            continue
        if n % SETTLE_EVERY == 0 and len(state.records) > SETTLE_AT:
            k.settle(min(ev.ts, watermark_ms))
        # content, not source+offset: the same line shipped twice (two sources) is still one event
        content = f"{ev.kind}|{ev.ts}|{ev.request}|{ev.correlation_id}|{ev.elapsed_ms}|{ev.partitions}|{ev.detail}"
        if content in state.seen:
            state.duplicates += 1
            continue
        state.seen[content] = ev.ts
        getattr(k, ev.kind)(ev)
        if ev.kind in _LOGGED_END_KINDS and ev.request is not None and ev.request not in state.finish_logged:
            state.finish_logged.append(ev.request)
        if ev.kind in _DONE_KINDS:
            state.last_done = ev.ts if state.last_done is None else max(state.last_done, ev.ts)
            if ev.request is not None and ev.request not in state.completes:
                state.completes.append(ev.request)
    if len(state.seen) > MAX_SEEN:  # evict the oldest content keys first (one sort: a backfill brings thousands)
        for key in sorted(state.seen, key=state.seen.__getitem__)[:len(state.seen) - MAX_SEEN]:
            del state.seen[key]
    # before the timeout: a request the watermark carried past both is reported in flight and then never completed
    # in ONE row (one row per request and batch: the MERGE takes one source row per key)
    in_flight.mark(state, params, watermark_ms, broker)
    k.expire(watermark_ms)
    k.out += in_flight.pending_rows(state, lambda s: new_record(
        Event("send", s["ts"], s["request"], s["corr"], s["epoch"], s["partitions"]), s["anchor"]))
    return k.out
