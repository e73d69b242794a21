"""A control request still running is reported when event time passes its start plus its alert's levels, and the
later rows of the same request (finished, never completed) carry the report on (pure pairing, no Spark)."""

from __future__ import annotations

from pipelines.detection.in_flight import IN_FLIGHT_FLAG
from pipelines.detection.pairing import Event, PairingParams, PairingState, latency_row, step

LEVELS = {"LeaderAndIsr": (5_000, 30_000), "UpdateMetadata": (5_000, 30_000), "StopReplica": (5_000, 30_000)}
P = PairingParams(timeout_ms=120_000, max_skew_ms=5_000, in_flight_ms=LEVELS)
LAI, UM, SR = "LeaderAndIsr", "UpdateMetadata", "StopReplica"


def rows(out):
    return [latency_row(r, P.max_skew_ms) for r in out]


def warmed(request: str = LAI) -> PairingState:
    """A key whose logs have shown a completed request of this type (so a missing finish means something)."""
    st = PairingState()
    evs = [Event("send", 0, request, None, 3, 4), Event("handling", 5, request, 1, None, 4)]
    evs.append(Event("applied", 9, request, 1, None, 4) if request == UM else
               Event("response", 9, request, 1) if request == SR else
               Event("finished", 9, request, 1, None, 4, elapsed_ms=4))
    step(st, evs, 0, P)
    step(st, [], 6_000, P)  # the first request leaves the state
    assert st.completes == [request]
    return st


def test_leader_and_isr_behind_a_backlog_is_reported_in_flight_and_updated_when_it_finishes():
    st = warmed()
    assert step(st, [Event("send", 100_000, LAI, None, 3, 960)], 90_000, P) == []
    assert st.next_deadline(P) == 105_001  # warning level crossed in event time
    assert step(st, [Event("heartbeat", 110_000)], 105_000, P) == []
    (warn,) = rows(step(st, [Event("heartbeat", 115_000)], 105_001, P))
    assert (warn["status"], warn["end_to_end_ms"], warn["sent_ts"]) == ("in_flight", 5_001.0, 100_000)
    assert warn["flags"] == IN_FLIGHT_FLAG
    assert st.next_deadline(P) == 130_001  # then the critical level
    assert step(st, [Event("heartbeat", 120_000)], 110_000, P) == []  # reported once per level
    (crit,) = rows(step(st, [], 130_500, P))
    assert (crit["status"], crit["end_to_end_ms"], crit["anchor"]) == ("in_flight", 30_500.0, warn["anchor"])
    done = rows(step(st, [Event("handling", 140_000, LAI, 2, None, 960),
                          Event("finished", 140_100, LAI, 2, None, 960, elapsed_ms=100)], 131_000, P))
    assert [(r["status"], r["anchor"], r["end_to_end_ms"], r["flags"]) for r in done] == [
        ("completed", warn["anchor"], 40_100.0, IN_FLIGHT_FLAG)]


def test_a_stuck_handling_is_reported_then_declared_never_completed_with_the_report():
    st = warmed()
    step(st, [Event("send", 100_000, LAI, None, 3, 1), Event("handling", 100_010, LAI, 2, None, 1)], 90_000, P)
    (warn,) = rows(step(st, [], 106_000, P))
    assert (warn["status"], warn["handling_ts"], warn["end_to_end_ms"]) == ("in_flight", 100_010, 6_000.0)
    step(st, [], 131_000, P)
    (dead,) = rows(step(st, [], 221_000, P))
    assert (dead["status"], dead["anchor"], dead["flags"]) == ("never_completed", warn["anchor"], IN_FLIGHT_FLAG)


def test_watermark_jumping_past_both_levels_and_the_timeout_gives_one_row():
    st = warmed(UM)
    step(st, [Event("send", 100_000, UM, None, 3, 7)], 90_000, P)
    out = rows(step(st, [], 300_000, P))
    assert [(r["status"], r["flags"]) for r in out] == [("never_completed", IN_FLIGHT_FLAG)]


def test_update_metadata_queued_behind_a_running_leader_and_isr_starts_its_clock_when_that_finishes():
    st = warmed(LAI)
    step(st, [Event("applied", 10, UM, 2, None, 4)], 0, P)  # this key's UpdateMetadatas complete visibly too
    step(st, [Event("send", 100_000, LAI, None, 3, 9), Event("handling", 100_005, LAI, 3, None, 9),
              Event("send", 100_050, UM, None, 3, 9)], 90_000, P)
    (lai,) = rows(step(st, [], 106_000, P))  # only the head request runs; the UpdateMetadata waits behind it
    assert lai["request"] == LAI
    out = rows(step(st, [Event("finished", 110_000, LAI, 3, None, 9, elapsed_ms=9_995)], 106_500, P))
    assert [r["status"] for r in out] == ["completed"]
    assert st.next_deadline(P) == 115_001  # the UpdateMetadata's own clock started at 110_000
    (um,) = rows(step(st, [], 115_002, P))
    assert (um["request"], um["status"], um["end_to_end_ms"], um["controller_queue_ms"]) == (
        UM, "in_flight", 14_952.0, 9_950.0)


def test_stop_replica_is_reported_only_where_its_completion_is_logged():
    # 2.6+ brokers log no finish for StopReplica: without the controller's response lines nothing is judged
    st = PairingState()
    step(st, [Event("send", 100_000, SR, None, 3, 2), Event("handling", 100_010, SR, 4, None, 2)], 90_000, P)
    assert rows(step(st, [], 200_000, P)) == []
    st = warmed(SR)
    step(st, [Event("send", 100_000, SR, None, 3, 2), Event("handling", 100_010, SR, 4, None, 2)], 90_000, P)
    (warn,) = rows(step(st, [], 106_000, P))
    assert (warn["request"], warn["status"], warn["flags"]) == (SR, "in_flight", IN_FLIGHT_FLAG)
    (done,) = rows(step(st, [Event("response", 107_000, SR, 4)], 106_100, P))
    assert (done["status"], done["anchor"], done["end_to_end_ms"]) == ("completed", warn["anchor"], 7_000.0)


def test_a_stop_replica_never_logged_finished_does_not_hide_the_leader_and_isr_behind_it():
    st = warmed(LAI)  # LeaderAndIsr finishes are logged, StopReplica ones are not (2.6+ INFO)
    step(st, [Event("send", 100_000, SR, None, 3, 1), Event("handling", 100_005, SR, 8, None, 1),
              Event("send", 100_020, LAI, None, 3, 1)], 90_000, P)
    (lai,) = rows(step(st, [], 105_100, P))
    assert (lai["request"], lai["status"], lai["end_to_end_ms"]) == (LAI, "in_flight", 5_080.0)


def test_no_levels_no_reports():
    st = warmed()
    plain = PairingParams(timeout_ms=120_000, max_skew_ms=5_000)
    step(st, [Event("send", 100_000, LAI, None, 3, 1)], 90_000, plain)
    assert [r["status"] for r in rows(step(st, [], 200_000, plain))] == []
    assert [r["status"] for r in rows(step(st, [], 220_001, plain))] == ["never_completed"]


# ---- bad input: no false report, no lost pairing, no crash
def test_lines_shipped_twice_report_once():
    st = warmed()
    send = Event("send", 100_000, LAI, None, 3, 1)
    step(st, [send, send], 90_000, P)
    assert len(rows(step(st, [send], 106_000, P))) == 1
    assert rows(step(st, [send, send], 107_000, P)) == []
    (done,) = rows(step(st, [Event("handling", 108_000, LAI, 2, None, 1),
                             Event("finished", 108_010, LAI, 2, None, 1, elapsed_ms=10)] * 2, 107_500, P))
    assert (done["status"], done["end_to_end_ms"]) == ("completed", 8_010.0)
    assert st.duplicates == 4


def test_out_of_order_lines_within_the_watermark_pair_and_do_not_report():
    st = warmed()
    # the finish and handling arrive first, the controller's Sending line a batch later (still within the watermark)
    out = rows(step(st, [Event("finished", 100_900, LAI, 2, None, 1, elapsed_ms=890),
                         Event("handling", 100_010, LAI, 2, None, 1)], 90_000, P))
    assert [r["status"] for r in out] == ["completed"]
    (late,) = rows(step(st, [Event("send", 100_000, LAI, None, 3, 1)], 96_000, P))
    assert (late["status"], late["sent_ts"], late["end_to_end_ms"], late["flags"]) == (
        "completed", 100_000, 900.0, None)
    assert rows(step(st, [], 200_000, P)) == []


def test_clock_skew_of_a_few_seconds_pairs_without_a_report():
    st = warmed()
    # the broker's clock runs 3 s behind the controller's: it handles the request "before" it was sent
    out = rows(step(st, [Event("send", 100_000, LAI, None, 3, 1), Event("handling", 97_010, LAI, 2, None, 1),
                         Event("finished", 97_050, LAI, 2, None, 1, elapsed_ms=40)], 90_000, P))
    assert [(r["status"], r["queue_ms"], r["end_to_end_ms"]) for r in out] == [("completed", 0.0, 40.0)]
    assert "clock_skew" in out[0]["flags"]
    assert rows(step(st, [], 200_000, P)) == []


def test_controller_failover_mid_request_pairs_with_the_new_epoch_and_excuses_the_old():
    st = warmed()
    evs = [Event("send", 100_000, LAI, None, 3, 1),   # epoch 3 controller sends, then dies
           Event("send", 101_000, LAI, None, 4, 1),   # the new controller (epoch 4) sends again
           Event("handling", 101_010, LAI, 7, 4, 1),
           Event("finished", 101_100, LAI, 7, 4, 1, elapsed_ms=90)]
    out = rows(step(st, evs, 90_000, P))
    got = sorted((r["controller_epoch"], r["status"], r["flags"]) for r in out)
    assert got == [(3, "never_completed", "controller_failover"), (4, "completed", None)]
    assert rows(step(st, [], 300_000, P)) == []
