"""Pairing of control requests, pure logic (no Spark): by correlation id, by order, failover, restart, duplicates."""

from __future__ import annotations

import itertools
import random
from datetime import datetime

from pipelines.detection.pairing import (
    MAX_PENDING_SENDS,
    Event,
    PairingParams,
    PairingState,
    latency_row,
    step,
)

P = PairingParams(timeout_ms=60_000, max_skew_ms=5_000)


def ms(text: str) -> int:
    """'08:00:01,004' on 2021-03-02 -> epoch ms."""
    hms, milli = text.split(",")
    dt = datetime.fromisoformat(f"2021-03-02T{hms}+00:00")
    return int(dt.timestamp() * 1000) + int(milli)


def rows(out):
    return [latency_row(r, P.max_skew_ms) for r in out]


def test_fixture_info_lines_pair_by_order_with_lock_wait():
    st = PairingState()
    evs = [
        Event("send", ms("08:00:01,004"), "LeaderAndIsr", None, 9, 960),
        Event("handling", ms("08:00:01,010"), "LeaderAndIsr", 17, None, 960),
        Event("finished", ms("08:00:14,977"), "LeaderAndIsr", 17, None, 960, elapsed_ms=13973),
    ]
    out = rows(step(st, evs, ms("08:00:00,000"), P))
    assert len(out) == 1
    r = out[0]
    assert r["status"] == "completed"
    assert r["pairing"] == "order"
    assert r["end_to_end_ms"] == 13973.0
    assert r["queue_ms"] == 6.0
    assert r["processing_ms"] == 13967.0
    assert r["lock_wait_ms"] == 6.0
    assert r["correlation_id"] == 17
    assert r["controller_epoch"] == 9
    assert st.sends == []
    assert st.records == []


def test_a_pair_straddling_two_batches_is_emitted_once_when_it_completes():
    """A request that started in one batch and finished in the next gets one row, its final one: a row per batch
    boundary would make the latency MERGE rewrite the file holding the earlier row."""
    st = PairingState()
    first = rows(step(st, [Event("send", 400, "LeaderAndIsr", None, 3, 5),
                           Event("handling", 1_010, "LeaderAndIsr", 40, None, 5)], 0, P))
    assert first == []
    second = rows(step(st, [Event("finished", 3_010, "LeaderAndIsr", 40, None, 5, elapsed_ms=2_500)], 0, P))
    assert [r["status"] for r in second] == ["completed"]
    assert second[0]["lock_wait_ms"] == 500.0
    assert second[0]["end_to_end_ms"] == 2_610.0
    assert second[0]["queue_ms"] == 610.0


def test_trace_controller_lines_pair_by_correlation_id():
    # TRACE: the controller's Received-response line names the correlation id of the oldest pending send
    st = PairingState()
    evs = [
        Event("send", 1_000, "LeaderAndIsr", None, 7, 1),
        Event("send", 1_000, "UpdateMetadata", None, 7, 1),
        Event("handling", 1_017, "LeaderAndIsr", 44, 7, 1),
        Event("finished", 8_870, "LeaderAndIsr", 44, 7, 1, elapsed_ms=7_860),
        Event("response", 8_900, "LeaderAndIsr", 44),
    ]
    out = rows(step(st, evs, 0, P))
    lai = [r for r in out if r["request"] == "LeaderAndIsr"]
    assert lai[-1]["pairing"] == "correlation_id"
    assert lai[-1]["sent_ts"] == 1_000
    assert lai[-1]["finished_ts"] == 8_870
    assert lai[-1]["lock_wait_ms"] == 7.0
    # the UpdateMetadata send is still pending, not mis-paired with the LeaderAndIsr
    assert [s["request"] for s in st.sends] == ["UpdateMetadata"]


def test_send_with_correlation_id_pairs_by_id_out_of_order():
    st = PairingState()
    evs = [
        Event("send", 1_000, "StopReplica", 5, 2, 3),
        Event("send", 1_100, "StopReplica", 6, 2, 3),
        Event("handling", 1_200, "StopReplica", 6, None, 3),
        Event("finished", 1_300, "StopReplica", 6, None, 3, elapsed_ms=100),
    ]
    out = rows(step(st, evs, 0, P))
    assert out[0]["correlation_id"] == 6
    assert out[0]["sent_ts"] == 1_100
    assert out[0]["pairing"] == "correlation_id"
    assert [s["corr"] for s in st.sends] == [5]


def test_late_sending_line_attaches_to_finished_request():
    st = PairingState()
    a = rows(step(st, [Event("handling", 2_000, "LeaderAndIsr", 9, None, 2),
                       Event("finished", 2_500, "LeaderAndIsr", 9, None, 2, elapsed_ms=510)], 0, P))
    assert a[0]["status"] == "completed"
    assert a[0]["sent_ts"] is None
    assert a[0]["end_to_end_ms"] == 510.0
    b = rows(step(st, [Event("send", 1_990, "LeaderAndIsr", None, 4, 2)], 1_000, P))
    assert b[0]["anchor"] == a[0]["anchor"]
    assert b[0]["sent_ts"] == 1_990
    assert b[0]["pairing"] == "order"
    assert b[0]["end_to_end_ms"] == 510.0  # 2_500 - 1_990 = 510


def test_never_completed_fires_when_heartbeats_advance_watermark():
    st = PairingState()
    out = rows(step(st, [Event("send", 10_000, "LeaderAndIsr", None, 1, 4)], 0, P))
    assert out == []
    assert st.next_deadline(P) == 70_001
    # a quiet cluster: only heartbeats; the watermark passes the deadline
    out = rows(step(st, [Event("heartbeat", 80_000)], 75_000, P))
    assert [(r["status"], r["sent_ts"]) for r in out] == [("never_completed", 10_000)]
    assert st.sends == []
    assert st.next_deadline(P) is None


def test_handling_without_finish_times_out():
    st = PairingState()
    step(st, [Event("send", 0, "LeaderAndIsr", None, 1, 4), Event("handling", 5, "LeaderAndIsr", 3, None, 4)], 0, P)
    out = rows(step(st, [], 60_010, P))
    assert [(r["status"], r["handling_ts"]) for r in out] == [("never_completed", 5)]


def test_controller_failover_new_epoch():
    st = PairingState()
    evs = [
        Event("send", 1_000, "LeaderAndIsr", None, 9, 10),   # lost in the failover
        Event("send", 3_000, "LeaderAndIsr", None, 10, 10),  # same controller id re-elected, epoch 10
        Event("handling", 3_010, "LeaderAndIsr", 0, None, 10),
        Event("finished", 3_100, "LeaderAndIsr", 0, None, 10, elapsed_ms=90),
    ]
    out = rows(step(st, evs, 0, P))
    by_status = {r["status"]: r for r in out}
    assert by_status["completed"]["controller_epoch"] == 10
    assert by_status["completed"]["sent_ts"] == 3_000
    assert by_status["never_completed"]["flags"] == "controller_failover"
    assert st.sends == []


def test_broker_restart_mid_request_hands_send_to_retry():
    st = PairingState()
    evs = [
        Event("send", 1_000, "LeaderAndIsr", None, 3, 8),
        Event("handling", 1_005, "LeaderAndIsr", 12, None, 8),
        # broker restarts; the controller reconnects and retries the same request with a new correlation id
        Event("handling", 9_000, "LeaderAndIsr", 0, None, 8),
        Event("finished", 9_050, "LeaderAndIsr", 0, None, 8, elapsed_ms=50),
    ]
    out = rows(step(st, evs, 0, P))
    dropped = [r for r in out if r["status"] == "never_completed"]
    done = [r for r in out if r["status"] == "completed"]
    assert len(dropped) == 1
    assert dropped[0]["flags"] == "broker_restart"
    assert dropped[0]["correlation_id"] == 12
    assert len(done) == 1
    assert done[0]["correlation_id"] == 0
    assert done[0]["sent_ts"] == 1_000


def test_duplicates_are_counted_once():
    st = PairingState()
    evs = [
        Event("send", 1_000, "LeaderAndIsr", None, 1, 2),
        Event("handling", 1_001, "LeaderAndIsr", 5, None, 2),
        Event("finished", 1_100, "LeaderAndIsr", 5, None, 2, elapsed_ms=99),
    ]
    out = rows(step(st, evs + evs, 0, P))
    assert len(out) == 1
    assert st.duplicates == 3
    # shipped again in a later batch: still nothing new
    assert step(st, evs, 0, P) == []
    assert st.duplicates == 6


def test_out_of_order_within_batch_and_clock_skew():
    st = PairingState()
    # the broker clock is 2 s behind the controller: handling appears before the send
    evs = [
        Event("finished", 1_400, "LeaderAndIsr", 3, None, 1, elapsed_ms=400),
        Event("handling", 1_000, "LeaderAndIsr", 3, None, 1),
        Event("send", 3_000, "LeaderAndIsr", None, 2, 1),
    ]
    out = rows(step(st, evs, 0, P))
    r = out[-1]
    assert r["sent_ts"] == 3_000
    assert r["queue_ms"] == 0.0
    assert "clock_skew" in r["flags"]
    assert r["end_to_end_ms"] == 400.0  # never below the broker's own elapsed time


def test_state_is_bounded_and_serialisable():
    st = PairingState()
    evs = [Event("send", i, "UpdateMetadata", None, 1, 1) for i in range(MAX_PENDING_SENDS + 10)]
    out = rows(step(st, evs, 0, P))
    assert len(st.sends) == MAX_PENDING_SENDS
    assert st.evicted == 10
    # the head (sent at 0) stays; the next ten are emitted `evicted`, not dropped
    assert [(r["sent_ts"], r["status"]) for r in out] == [(i, "evicted") for i in range(1, 11)]
    again = PairingState.from_json(st.to_json())
    assert again == st


def test_update_metadata_applied_line_completes():
    st = PairingState()
    evs = [Event("send", 1_050, "UpdateMetadata", None, 9, 963),
           Event("applied", 1_061, "UpdateMetadata", 17, None, 963)]
    r = rows(step(st, evs, 0, P))[0]
    assert r["status"] == "completed"
    assert r["end_to_end_ms"] == 11.0
    assert r["pairing"] == "order"


def test_update_metadata_queued_behind_slow_leader_and_isr():
    # the check fixture: UpdateMetadata to broker 2 is logged at 01,050 but waits for LeaderAndIsr 17 to finish
    st = PairingState()
    evs = [
        Event("send", ms("08:00:01,004"), "LeaderAndIsr", None, 9, 960),
        Event("send", ms("08:00:01,050"), "UpdateMetadata", None, 9, 963),
        Event("handling", ms("08:00:01,010"), "LeaderAndIsr", 17, None, 960),
        Event("finished", ms("08:00:14,977"), "LeaderAndIsr", 17, None, 960, elapsed_ms=13973),
        Event("applied", ms("08:00:14,990"), "UpdateMetadata", 18, None, 963),
    ]
    um = next(r for r in rows(step(st, evs, 0, P)) if r["request"] == "UpdateMetadata")
    assert um["end_to_end_ms"] == 13_940.0
    assert um["controller_queue_ms"] == 13_927.0  # so the broker itself took 13 ms


def test_trace_per_partition_sends_are_one_request():
    st = PairingState()
    evs = [Event("send", 1_000 + i, "LeaderAndIsr", None, 7, 1, detail=f"orders-{i}") for i in range(5)]
    evs += [Event("handling", 1_020, "LeaderAndIsr", 44, 7, None), Event("response", 3_000, "LeaderAndIsr", 44)]
    (r,) = rows(step(st, evs, 0, P))
    assert r["partitions"] == 5
    assert r["sent_ts"] == 1_000
    assert r["pairing"] == "correlation_id"
    assert r["end_to_end_ms"] == 2_000.0
    assert st.sends == []


def _trace_then_info(ts: int, n: int, epoch: int = 1) -> list[Event]:
    """What a TRACE controller (2.6+) logs for one LeaderAndIsr: n per-partition lines, then the INFO summary."""
    burst = [Event("send", ts, "LeaderAndIsr", None, epoch, 1, detail=f"lock-{i}") for i in range(n)]
    return [*burst, Event("send", ts, "LeaderAndIsr", None, epoch, n)]


def _broker_side(ts: int, corr: int, n: int, took: int, epoch: int = 1) -> list[Event]:
    return [Event("handling", ts, "LeaderAndIsr", corr, epoch, n),
            Event("finished", ts + took, "LeaderAndIsr", corr, epoch, n, elapsed_ms=took)]


def test_trace_burst_and_info_summary_are_one_request():
    # the reference controller at TRACE (fetcher-lock run): two requests to broker 1, 8.8 s apart; counting the
    # summary as a second send paired the second request with the first one's send (8808 ms of fake queue time)
    st = PairingState()
    evs = [*_trace_then_info(36_932, 24), *_broker_side(36_960, 1, 24, 76),
           *_trace_then_info(45_738, 24), *_broker_side(45_740, 3, 24, 8)]
    out = sorted(rows(step(st, evs, 0, P)), key=lambda r: r["correlation_id"])
    assert [(r["correlation_id"], r["sent_ts"], r["queue_ms"], r["partitions"]) for r in out] == [
        (1, 36_932, 28.0, 24), (3, 45_738, 2.0, 24)]
    assert st.sends == []


def test_trace_burst_and_summary_attach_late_and_next_summary_is_a_new_request():
    # broker lines first (an earlier micro-batch), the controller's lines later; then two summaries 25 ms apart
    # (two requests: a summary closes its burst)
    st = PairingState()
    step(st, [*_broker_side(36_960, 1, 24, 76), *_broker_side(45_740, 3, 24, 8)], 0, P)
    out = rows(step(st, [*_trace_then_info(36_932, 24), *_trace_then_info(45_738, 24)], 0, P))
    assert sorted((r["correlation_id"], r["sent_ts"]) for r in out) == [(1, 36_932), (3, 45_738)]
    st2 = PairingState()
    evs = [Event("send", 59_542, "LeaderAndIsr", None, 3, 24), Event("send", 59_567, "LeaderAndIsr", None, 3, 10),
           *_broker_side(59_570, 7, 24, 5, epoch=3), *_broker_side(59_580, 8, 10, 5, epoch=3)]
    got = sorted((r["correlation_id"], r["sent_ts"]) for r in rows(step(st2, evs, 0, P)))
    assert got == [(7, 59_542), (8, 59_567)]
    assert PairingState.from_json(st2.to_json()) == st2


def test_a_burst_folded_in_any_arrival_order_is_one_request_and_the_next_pairs_with_its_own_send():
    # a batch the executors pair reaches a group in Spark's shuffle order: a summary that came before its own
    # partition lines (the same millisecond) opened a phantom request, and every later request of the key was paired
    # with the send a round before it (the fleet's failover: 255 brokers alerting 60 s LeaderAndIsr every minute)
    first = _trace_then_info(10_000, 3)
    later = [*_broker_side(10_002, 0, 3, 30), *_trace_then_info(70_000, 3), *_broker_side(70_001, 2, 3, 20)]
    for order in itertools.permutations(first):
        st = PairingState()
        out = rows(step(st, [*order, *later], 0, P))
        got = sorted((r["correlation_id"], r["sent_ts"], r["partitions"]) for r in out)
        assert got == [(0, 10_000, 3), (2, 70_000, 3)], order
        assert st.sends == []


def test_bursts_of_several_request_types_in_one_millisecond_pair_in_any_arrival_order():
    # a reassignment's StopReplica and the LeaderAndIsr with its UpdateMetadata, all sent to the broker in the same
    # millisecond: another type's lines between a burst and its summary closed the burst early too
    def burst(request: str, n: int) -> list[Event]:
        lines = [Event("send", 10_000, request, None, 1, 1, detail=f"t-{i}") for i in range(n)]
        return [*lines, Event("send", 10_000, request, None, 1, n)]

    first = [*burst("LeaderAndIsr", 3), *burst("StopReplica", 2), Event("send", 10_000, "UpdateMetadata", None, 1, 5)]
    later = [*_broker_side(10_002, 0, 3, 30), *_trace_then_info(70_000, 3), *_broker_side(70_001, 2, 3, 20)]
    rng = random.Random(7)
    for _ in range(300):
        order = rng.sample(first, len(first))
        st = PairingState()
        out = [r for r in rows(step(st, [*order, *later], 0, P)) if r["request"] == "LeaderAndIsr"]
        assert sorted((r["correlation_id"], r["sent_ts"], r["partitions"]) for r in out) == [
            (0, 10_000, 3), (2, 70_000, 3)], order
        assert [s["request"] for s in st.sends] == ["StopReplica", "UpdateMetadata"]  # never answered here


def test_broker_gone_drops_its_queued_sends():
    # fetcher-lock run: UpdateMetadata queued for broker 3 while it was down; the controller deleted it, it came
    # back and handled corr 0 of the NEW connection: that one must pair with the send after the restart, not the
    # dropped one (which paired before: 7.9 s of fake delay, DELAYED_UPDATE_METADATA)
    st = PairingState()
    evs = [
        Event("send", 18_861, "UpdateMetadata", None, 1, 24),
        Event("send", 19_073, "UpdateMetadata", None, 1, 24),
        Event("gone", 23_000),
        Event("send", 26_700, "UpdateMetadata", None, 1, 24),
        Event("applied", 26_742, "UpdateMetadata", 0, 1, 24),
    ]
    out = rows(step(st, evs, 0, P))
    done = [r for r in out if r["status"] == "completed"]
    assert [(r["correlation_id"], r["sent_ts"], r["end_to_end_ms"]) for r in done] == [(0, 26_700, 42.0)]
    dropped = [r for r in out if r["status"] == "never_completed"]
    assert [(r["sent_ts"], r["flags"]) for r in dropped] == [(18_861, "broker_gone"), (19_073, "broker_gone")]
    assert st.sends == []


def test_update_metadata_for_zero_partitions_leaves_no_broker_line():
    # the produce-backlog run: broker 2 logged nothing for the 0-partition UpdateMetadata at cluster start, so every
    # later UpdateMetadata paired with the send before its own (9 s of fake delay, DELAYED_UPDATE_METADATA)
    st = PairingState()
    evs = [
        Event("send", 52_478, "UpdateMetadata", None, 1, 0),
        Event("send", 52_582, "UpdateMetadata", None, 1, 6),
        Event("applied", 52_619, "UpdateMetadata", 2, 1, 6),
        Event("send", 61_624, "UpdateMetadata", None, 1, 1),
        Event("applied", 61_634, "UpdateMetadata", 4, 1, 1),
    ]
    out = rows(step(st, evs, 0, P))
    got = sorted((r["sent_ts"], r["correlation_id"], r["end_to_end_ms"], r["status"], r["flags"]) for r in out)
    assert got == [(52_478, None, None, "completed", "no_broker_line"), (52_582, 2, 37.0, "completed", None),
                   (61_624, 4, 10.0, "completed", None)]
    assert st.sends == []
    # with the controller's TRACE response the silent send completes by correlation id
    st2 = PairingState()
    evs2 = [Event("send", 52_478, "UpdateMetadata", None, 1, 0), Event("response", 52_496, "UpdateMetadata", 0),
            Event("send", 52_582, "UpdateMetadata", None, 1, 6), Event("applied", 52_619, "UpdateMetadata", 2, 1, 6)]
    got2 = sorted((r["sent_ts"], r["correlation_id"], r["end_to_end_ms"]) for r in rows(step(st2, evs2, 0, P)))
    assert got2 == [(52_478, 0, 18.0), (52_582, 2, 37.0)]


def test_restarted_controller_correlation_ids_do_not_match_the_old_epoch():
    # controller-failover run: the old controller's 0-partition UpdateMetadata corr 1 was answered (TRACE response,
    # no broker line); the restarted controller (same id, epoch 2) starts again at corr 0, 1: its corr 1 must not
    # complete the old record (6 s of fake delay, DELAYED_UPDATE_METADATA)
    st = PairingState()
    evs = [
        Event("send", 35_158, "UpdateMetadata", None, 1, 0),
        Event("response", 35_170, "UpdateMetadata", 1, 1),
        Event("send", 41_330, "UpdateMetadata", None, 2, 3),
        Event("applied", 41_340, "UpdateMetadata", 1, 2, 3),
    ]
    out = {(r["controller_epoch"], r["correlation_id"]): r for r in rows(step(st, evs, 0, P))}
    assert out[(1, 1)]["end_to_end_ms"] == 12.0
    assert out[(1, 1)]["finished_ts"] is None
    assert (out[(2, 1)]["sent_ts"], out[(2, 1)]["end_to_end_ms"]) == (41_330, 10.0)


def test_bounced_broker_restarts_correlation_ids_under_the_same_epoch():
    # fetcher-lock run: corr 0 (0 partitions, answered by the TRACE response) before broker 3 bounced; the new
    # incarnation's connection starts at corr 0 again (same controller epoch): it must not complete the old record
    st = PairingState()
    evs = [
        Event("send", 15_998, "UpdateMetadata", None, 1, 0),
        Event("response", 16_010, "UpdateMetadata", 0, 1),
        Event("gone", 23_880),
        Event("send", 23_900, "UpdateMetadata", None, 1, 24),
        Event("applied", 23_908, "UpdateMetadata", 0, 1, 24),
    ]
    got = sorted((r["sent_ts"], r["end_to_end_ms"]) for r in rows(step(st, evs, 0, P)))
    assert got == [(15_998, 12.0), (23_900, 8.0)]


def _round(t: int, corr: int) -> list[Event]:
    """One LeaderAndIsr at INFO (2.7+): the controller's send, the broker's Handling and its finish 20 ms later."""
    return [Event("send", t, "LeaderAndIsr", None, 3, 4),
            Event("handling", t + 5, "LeaderAndIsr", corr, 3, 4),
            Event("finished", t + 25, "LeaderAndIsr", corr, 3, 4, elapsed_ms=20)]


def test_a_send_whose_broker_lines_were_lost_expires_instead_of_shifting_every_later_request():
    """A catch-up dropped a round's broker lines as late and kept its send: the next rounds, minutes later, came in
    one batch. Taken by order, the stale send would pair the next round's broker lines (a request minutes slow) and
    every later round one behind (a round's interval slow, on every round). The watermark would have expired it
    before the next round's time: it is reported never completed, and the rounds pair with their own sends."""
    t0 = ms("08:00:00,000")
    st = PairingState()
    step(st, [Event("send", t0, "LeaderAndIsr", None, 3, 4)], t0 - 10_000, P)  # its broker lines were lost
    later = [e for i in range(5) for e in _round(t0 + 300_000 + i * 60_000, 101 + i)]
    out = rows(step(st, later, t0 + 300_000 - 10_000, P))
    done = [r for r in out if r["status"] == "completed"]
    assert len(done) == 5
    assert max(r["end_to_end_ms"] for r in done) < 1_000, [r["end_to_end_ms"] for r in done]
    assert [r["status"] for r in out if r["sent_ts"] == t0] == ["never_completed"]


def test_a_send_is_stale_only_past_the_timeout_at_the_lines_watermark_and_the_batchs():
    """At the boundary: a broker line the timeout and the watermark delay after its send still pairs with it; one
    millisecond later the send had expired. A line read ahead of its request's other lines (the batch's watermark
    still behind) expires nothing, however late its own time."""
    t0 = ms("08:00:00,000")
    edge = t0 + P.timeout_ms + P.watermark_delay_ms

    def run(handled: int, watermark: int) -> list[tuple[str, int | None]]:
        evs = [Event("send", t0, "LeaderAndIsr", None, 3, 4), Event("handling", handled, "LeaderAndIsr", 7, 3, 4),
               Event("finished", handled + 20, "LeaderAndIsr", 7, 3, 4, elapsed_ms=20)]
        return [(r["status"], r["sent_ts"]) for r in rows(step(PairingState(), evs, watermark, P))]

    assert run(edge, edge - P.watermark_delay_ms) == [("completed", t0)]
    assert sorted(run(edge + 1, edge + 1 - P.watermark_delay_ms), key=str) == [("completed", None),
                                                                            ("never_completed", t0)]
    assert run(edge + 60_000, t0 - 10_000) == [("completed", t0)]


def test_a_request_log_line_read_ahead_of_a_slow_requests_state_change_lines_keeps_its_send():
    """Keyed shipping puts kafka-request.log and state-change.log in different partitions: the request log's
    `served` line of a request that took 134 s arrives a batch before its Handling and Finished lines. It arrived at
    the broker 1 s after its send: the send is not stale, and the request completes with it (its later lines add a
    row of their own, as before the stale rule)."""
    t0 = ms("08:00:00,000")
    st = PairingState()
    step(st, [Event("send", t0, "LeaderAndIsr", None, 3, 4)], t0 - 11_000, P)
    first = rows(step(st, [Event("served", t0 + 135_000, "LeaderAndIsr", 7, 3, 4, elapsed_ms=134_000)],
                      t0 - 11_000, P))
    later = rows(step(st, [Event("handling", t0 + 1_000, "LeaderAndIsr", 7, 3, 4),
                           Event("finished", t0 + 135_000, "LeaderAndIsr", 7, 3, 4, elapsed_ms=134_000)],
                      t0 + 125_000, P))
    assert "never_completed" not in [r["status"] for r in first + later]
    assert t0 in [r["sent_ts"] for r in first + later if r["status"] == "completed"]
