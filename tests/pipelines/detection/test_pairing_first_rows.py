"""Pairing's `first` rows (pure logic): a row marked first is the first of its request, and a request's first row is
marked so; the job appends those rows instead of merging them (jobs.detect.pairing.LogPairing), so one wrongly marked
first would duplicate a request in control_request_latency, and one wrongly not marked costs a MERGE."""

from __future__ import annotations

import random

from pipelines.detection.pairing import Event, PairingParams, PairingState, latency_row, step

P = PairingParams(timeout_ms=20_000, max_skew_ms=2_000,
                  in_flight_ms={"LeaderAndIsr": (3_000, 8_000), "UpdateMetadata": (3_000, 8_000)})
# Random histories: how many, how many events each, how many batches they are cut into.
HISTORIES = 400
EVENTS_PER_HISTORY = 40
REQUESTS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica")
# The event-time watermark trails the highest event time seen by this much (detection.watermark_delay_s).
WATERMARK_DELAY_MS = 1_500


def _history(rng: random.Random) -> list[Event]:
    """One (controller, broker) key's lines: requests sent, handled, finished (or not), some lines late,
    duplicated, or answered only by the request log; now and then the broker gone."""
    events: list[Event] = []
    t = 1_000
    for corr in range(1, EVENTS_PER_HISTORY // 4 + 1):
        req = rng.choice(REQUESTS)
        t += rng.randint(0, 4_000)
        parts = rng.choice([0, 1, 5])
        send = Event("send", t, req, None, rng.choice([3, 3, 3, 4]), parts)
        hand = Event("handling", t + rng.randint(-500, 200), req, corr, None, parts)
        took = rng.choice([5, 50, 4_000, 9_000, 30_000])
        end = rng.choice(["finished", "finished", "served", "none", "applied", "response"])
        events += [e for e in (send, hand) if rng.random() < 0.9]
        if end == "finished":
            events.append(Event("finished", t + took, req, corr, None, parts, elapsed_ms=took - 3))
        elif end == "served":
            events.append(Event("served", t + took, req, corr, None, parts, elapsed_ms=took))
        elif end == "applied":
            events.append(Event("applied", t + took, req, corr, None, parts))
        elif end == "response":
            events.append(Event("response", t + took, req, corr))
        if rng.random() < 0.1:
            events.append(Event("lock_wait", t + 2, req, corr, lock_wait_ms=rng.randint(1, 900)))
        if rng.random() < 0.1:
            events.append(rng.choice(events))  # a line shipped twice
        if rng.random() < 0.03:
            events.append(Event("gone", t + took + 1))
    return events


def test_first_rows_are_exactly_each_requests_first():
    rng = random.Random(20261128)
    firsts = rows = 0
    for _ in range(HISTORIES):
        events = _history(rng)
        rng.shuffle(events)  # lines arrive in any order within the watermark's delay
        events.sort(key=lambda e: e.ts + rng.randint(0, WATERMARK_DELAY_MS))
        cuts = sorted(rng.sample(range(1, len(events)), k=min(6, len(events) - 1)))
        state, emitted = PairingState(), set()
        watermark, highest = 0, 0
        for lo, hi in zip([0, *cuts], [*cuts, len(events)], strict=True):
            # as Spark runs the operator: the watermark is the earlier batches' highest event time minus the delay,
            # and a line older than it is dropped before the operator sees it
            batch = [e for e in events[lo:hi] if e.ts >= watermark]
            for r in step(state, batch, watermark, P):
                row = latency_row(r, P.max_skew_ms)
                key = (row["request"], row["anchor"])
                assert row["first_row"] == (key not in emitted), (row, sorted(emitted))
                emitted.add(key)
                firsts += row["first_row"]
                rows += 1
            state = PairingState.from_json(state.to_json())  # across batches the state is its JSON
            highest = max([highest, *(e.ts for e in events[lo:hi])])
            watermark = max(watermark, highest - WATERMARK_DELAY_MS)
        for r in step(state, [], 10**12, P):  # the end of time: everything still open resolves
            row = latency_row(r, P.max_skew_ms)
            key = (row["request"], row["anchor"])
            assert row["first_row"] == (key not in emitted), row
            emitted.add(key)
            rows += 1
    assert 0 < firsts < rows  # both kinds were seen


def test_state_from_before_the_flag_counts_as_emitted():
    """A record in state written before `emitted` existed may have had a row: its next row is merged."""
    st = PairingState()
    step(st, [Event("send", 1_000, "LeaderAndIsr", None, 3, 1), Event("handling", 1_010, "LeaderAndIsr", 7, None, 1)],
         0, P)
    raw = st.to_json().replace('"emitted":false,', "").replace(',"emitted":false', "")
    assert '"emitted"' not in raw
    old = PairingState.from_json(raw)
    (r,) = step(old, [Event("finished", 2_000, "LeaderAndIsr", 7, None, 1, elapsed_ms=900)], 0, P)
    assert latency_row(r, P.max_skew_ms)["first_row"] is False
