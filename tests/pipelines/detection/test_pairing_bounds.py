"""Pairing's state bounds never lose a request (pure, no Spark): a day's backfill in one batch gives every request its
row with its real latency; what a bound must evict is emitted with status `evicted` and counted."""

from __future__ import annotations

import json
import random

from pipelines.detection.pairing import (
    BOUND_SLACK,
    MAX_OPEN_RECORDS,
    MAX_PENDING_SENDS,
    MAX_SEEN,
    SETTLE_AT,
    SETTLE_EVERY,
    Event,
    PairingParams,
    PairingState,
    latency_row,
    step,
)

P = PairingParams(timeout_ms=120_000, max_skew_ms=5_000)
DAY_START = 1_614_672_000_000  # 2021-03-02 08:00:00 UTC
EVERY_MS = 30_000  # one control request to the broker every 30 s: 2,880 a day
REQUESTS = 24 * 3600 * 1000 // EVERY_MS
SLOW = 1_000  # this request takes 20 s on the broker: the alert the backfill must still raise
RESTARTED = 2_000  # the broker restarts while handling this one: it never finishes


def rows(out: list[dict]) -> list[dict]:
    return [latency_row(r, P.max_skew_ms) for r in out]


def backfill() -> tuple[list[Event], dict[int, dict]]:
    """A day of one (controller, broker) key as INFO logs (2.7+) give it, and the row each request must get, by
    correlation id: LeaderAndIsr (Handling/Finished) and UpdateMetadata (the cache line) in turn."""
    events: list[Event] = []
    expected: dict[int, dict] = {}
    for i in range(REQUESTS):
        sent = DAY_START + i * EVERY_MS
        hand = sent + 3 + i % 5
        work = 20_000 if i == SLOW else 10 + i % 97
        if i % 2 == 0:
            events += [Event("send", sent, "LeaderAndIsr", None, 9, 4),
                       Event("handling", hand, "LeaderAndIsr", i, 9, 4)]
            if i == RESTARTED:
                expected[i] = {"status": "never_completed", "sent_ts": sent, "end_to_end_ms": None,
                               "flags": "broker_restart"}
                continue
            events.append(Event("finished", hand + work, "LeaderAndIsr", i, 9, 4, elapsed_ms=work + 1))
            expected[i] = {"status": "completed", "sent_ts": sent, "end_to_end_ms": float(hand + work - sent),
                           "flags": None}
        else:
            events += [Event("send", sent, "UpdateMetadata", None, 9, 4),
                       Event("applied", hand + work, "UpdateMetadata", i, 9, 4)]
            expected[i] = {"status": "completed", "sent_ts": sent, "end_to_end_ms": float(hand + work - sent),
                           "flags": None}
    random.Random(15).shuffle(events)  # a batch holds the controller's and the broker's files in any order
    return events, expected


def test_a_days_backfill_in_one_batch_keeps_every_request_with_its_latency():
    events, expected = backfill()
    st = PairingState()
    out = rows(step(st, events, 0, P))  # watermark 0: a first batch (or a batch query) expires nothing
    got = {r["correlation_id"]: r for r in out}
    assert len(out) == len(got) == REQUESTS  # one row per request, none lost, none twice
    assert {c: {k: r[k] for k in ("status", "sent_ts", "end_to_end_ms", "flags")} for c, r in got.items()} == expected
    assert got[SLOW]["end_to_end_ms"] > 20_000  # DELAYED_LEADER_AND_ISR's evidence is there
    assert st.evicted == 0  # everything was resolved inside the batch: nothing open had to be evicted
    assert len(st.records) <= MAX_OPEN_RECORDS
    assert len(st.sends) <= MAX_PENDING_SENDS
    assert len(st.seen) <= MAX_SEEN
    # the watermark passes the day: what is left expires without a row twice, and the key's state empties
    assert step(st, [], DAY_START + REQUESTS * EVERY_MS + 2 * P.timeout_ms, P) == []
    assert (st.records, st.sends) == ([], [])


def test_sends_without_broker_lines_are_evicted_flagged_and_the_head_keeps_its_send():
    # the controller's log of a day arrives before the broker's (or the broker is stuck with the controller still
    # queueing): the sends pile up beyond the bound
    n = MAX_PENDING_SENDS + 100
    sends = [Event("send", DAY_START + i * EVERY_MS, "LeaderAndIsr", None, 9, 4) for i in range(n)]
    st = PairingState()
    out = rows(step(st, sends, 0, P))
    assert [r["status"] for r in out] == ["evicted"] * (n - MAX_PENDING_SENDS)
    assert st.evicted == n - MAX_PENDING_SENDS
    pending = [s["ts"] for s in st.sends]
    assert sorted([r["sent_ts"] for r in out] + pending) == [e.ts for e in sends]  # each send exactly once
    assert DAY_START in pending  # the oldest, the one the broker works on, is never the one evicted
    # the broker finally handles it: it pairs with its own send (its latency is real, not shifted)
    done = rows(step(st, [Event("handling", DAY_START + 9_000, "LeaderAndIsr", 0, 9, 4),
                          Event("finished", DAY_START + 9_500, "LeaderAndIsr", 0, 9, 4, elapsed_ms=501)], 0, P))
    assert [(r["sent_ts"], r["status"], r["end_to_end_ms"]) for r in done] == [(DAY_START, "completed", 9_500.0)]


def test_an_open_record_beyond_the_bound_is_evicted_flagged_and_counted():
    # every record open: Handling lines of one millisecond (none closes another) and no Finished
    st = PairingState()
    extra = 6
    evs = [Event("handling", DAY_START, "LeaderAndIsr", c, 9, 1) for c in range(MAX_OPEN_RECORDS + extra)]
    out = rows(step(st, evs, 0, P))
    evicted = [r for r in out if r["status"] == "evicted"]
    # the first record beyond the bound makes room for BOUND_SLACK more; correlation id 0 is kept
    assert [r["correlation_id"] for r in evicted] == list(range(1, BOUND_SLACK + 2))
    assert st.evicted == BOUND_SLACK + 1
    assert len(st.records) == MAX_OPEN_RECORDS - BOUND_SLACK + extra - 1


def test_state_written_with_the_old_eviction_count_name_loads():
    blob = json.dumps({"sends": [], "records": [], "seen": {}, "dropped": 3})
    assert PairingState.from_json(blob).evicted == 3


def test_a_reassignment_queueing_a_thousand_requests_to_one_broker_keeps_every_timing():
    """The controller logs a Sending line when it queues a request: a reassignment of 1,000 partitions queues 1,000
    LeaderAndIsr to the broker at once, which handles them one at a time (50 ms each). Every request keeps its send,
    and its queue time at the controller grows along the queue; nothing is evicted."""
    n, took = 1_000, 50
    events = [Event("send", DAY_START + i, "LeaderAndIsr", None, 9, 4) for i in range(n)]
    for i in range(n):
        start = DAY_START + 1_000 + i * took
        events += [Event("handling", start, "LeaderAndIsr", i, 9, 4),
                   Event("finished", start + took - 1, "LeaderAndIsr", i, 9, 4, elapsed_ms=took - 1)]
    st = PairingState()
    out = {r["correlation_id"]: r for r in rows(step(st, events, 0, P))}
    assert st.evicted == 0
    assert len(out) == n
    assert {r["status"] for r in out.values()} == {"completed"}
    assert [out[i]["sent_ts"] for i in range(n)] == [DAY_START + i for i in range(n)]
    last = out[n - 1]
    assert last["end_to_end_ms"] == float(1_000 + n * took - 1 - (n - 1))  # queued behind 999 others


def test_a_burst_with_the_request_log_keeps_one_row_per_request_with_its_breakdown():
    """Thousands of requests of one key in one batch, each followed 2 ms later by its request-log line: the finished
    ones leave the state as the fold goes (SETTLE_AT), after their request-log line, so every request is one row,
    timed by its lines and carrying the broker's breakdown."""
    events: list[Event] = []
    n = 3_000
    for i in range(n):
        sent = DAY_START + i * 20
        events += [Event("send", sent, "LeaderAndIsr", None, 9, 4),
                   Event("handling", sent + 2, "LeaderAndIsr", i, 9, 4),
                   Event("finished", sent + 9, "LeaderAndIsr", i, 9, 4, elapsed_ms=8),
                   Event("served", sent + 11, "LeaderAndIsr", i, 9, 4, elapsed_ms=10)]
    st = PairingState()
    out = rows(step(st, events, 0, P))
    assert sorted(r["correlation_id"] for r in out) == list(range(n))
    assert {(r["status"], r["end_to_end_ms"], r["served_ms"]) for r in out} == {("completed", 9.0, 10.0)}
    assert len(st.records) < SETTLE_AT + SETTLE_EVERY  # what the batch's end keeps, not the whole burst
