"""Pairing per Kafka era (FACTS.md section 1): each era's lines give control_request_latency rows with the right
start, finish and elapsed time, and no never_completed row for a request that did complete (pure, no Spark)."""

from __future__ import annotations

from pipelines.detection.pairing import Event, PairingParams, PairingState, latency_row, step
from tests.pipelines.parsing.parse_helpers import parse_line, raw_log

P = PairingParams(timeout_ms=120_000, max_skew_ms=5_000, in_flight_ms={"LeaderAndIsr": (5_000, 30_000)})

# Kafka 2.2-2.5 (state.change.logger at TRACE): FACTS.md 1.3/1.5 formats, one request (correlation id 44) for two
# partitions, then an UpdateMetadata (45) cached per partition. No summary `Finished` line exists in this era.
TRACE_ERA = [
    "[2019-06-12 10:15:02,132] TRACE [Broker id=1] Handling LeaderAndIsr request correlationId 44 from controller 1 "
    "epoch 7 starting the become-follower transition for partition orders-4 with leader 2 (state.change.logger)",
    "[2019-06-12 10:15:02,133] TRACE [Broker id=1] Handling LeaderAndIsr request correlationId 44 from controller 1 "
    "epoch 7 starting the become-leader transition for partition orders-5 (state.change.logger)",
    "[2019-06-12 10:15:05,410] TRACE [Broker id=1] Completed LeaderAndIsr request correlationId 44 from controller 1 "
    "epoch 7 for the become-leader transition for partition orders-5 (state.change.logger)",
    "[2019-06-12 10:15:09,870] TRACE [Broker id=1] Completed LeaderAndIsr request correlationId 44 from controller 1 "
    "epoch 7 for the become-follower transition for partition orders-4 with leader 2 (state.change.logger)",
    "[2019-06-12 10:15:09,902] TRACE [Broker id=1] Cached leader info PartitionState(controllerEpoch=7, leader=2, "
    "leaderEpoch=12, isr=[2, 3], zkVersion=31, replicas=[1, 2, 3], offlineReplicas=[]) for partition orders-4 in "
    "response to UpdateMetadata request sent by controller 1 epoch 7 with correlation id 45 (state.change.logger)",
    "[2019-06-12 10:15:09,903] TRACE [Broker id=1] Cached leader info PartitionState(controllerEpoch=7, leader=1, "
    "leaderEpoch=9, isr=[1, 3], zkVersion=20, replicas=[1, 3], offlineReplicas=[]) for partition orders-5 in "
    "response to UpdateMetadata request sent by controller 1 epoch 7 with correlation id 45 (state.change.logger)",
]
# the pairing kind of each event (pipelines.detection.events.classify)
KIND = {"become_leader_started": "handling", "become_follower_started": "handling",
        "become_leader_completed": "part_done", "become_follower_completed": "part_done",
        "leader_info_cached": "part_done", "leader_and_isr_handling": "handling",
        "leader_and_isr_finished": "finished", "leader_and_isr_partition_received": "received"}


def events(lines: list[str]) -> list[Event]:
    out = []
    for i, line in enumerate(lines):
        route, row = parse_line(raw_log(line, i))
        assert route == "state_change", line
        kind = KIND[row["event"]]
        detail = f"{row['topic']}-{row['partition']}" if kind == "received" else None  # as events.pairing_events
        out.append(Event(kind, int(row["ts"].timestamp() * 1000), row["request"], row["correlation_id"],
                         row["controller_epoch"], row["partitions"], row["elapsed_ms"], detail=detail))
    return out


def final(rows: list[dict]) -> dict[tuple[str, int], dict]:
    """The last row of each request (later rows replace earlier ones under the same key)."""
    return {(r["request"], r["correlation_id"]): r for r in rows}


def test_trace_era_request_spans_first_line_to_last_partition_completion():
    evs = events(TRACE_ERA)
    st = PairingState()
    first = [latency_row(r, P.max_skew_ms) for r in step(st, evs[:3], 0, P)]
    rest = [latency_row(r, P.max_skew_ms) for r in step(st, evs[3:], 0, P)]
    # ... and long after, with heartbeats: nothing turns never_completed
    late = [latency_row(r, P.max_skew_ms) for r in step(st, [], evs[-1].ts + 10 * P.timeout_ms, P)]
    rows = final(first + rest + late)
    lai = rows[("LeaderAndIsr", 44)]
    assert (lai["status"], lai["handling_ts"], lai["finished_ts"]) == ("completed", evs[0].ts, evs[3].ts)
    assert lai["processing_ms"] == 7738.0  # 10:15:02,132 -> 10:15:09,870
    um = rows[("UpdateMetadata", 45)]
    assert (um["status"], um["handling_ts"], um["finished_ts"]) == ("completed", evs[4].ts, evs[5].ts)
    assert all(r["status"] != "never_completed" for r in first + rest + late)
    assert "LeaderAndIsr" in st.completes  # the in-flight guard judges this key's LeaderAndIsr from now on
    assert st.records == []


# Kafka 2.4 (TRACE, the generated PartitionState): LeaderAndIsr 51 arrives while the handler of UpdateMetadata 50
# holds replicaStateChangeLock for four seconds. Its Received lines are logged before the lock, its Handling lines
# inside it (ReplicaManager.becomeLeaderOrFollower, 2.2-2.5).
LOCK_24 = [
    "[2020-01-20 11:00:00,050] TRACE [Broker id=3] Cached leader info UpdateMetadataPartitionState(topicName='pay', "
    "partitionIndex=0, controllerEpoch=4, leader=3, leaderEpoch=6, isr=[3, 1], zkVersion=8, replicas=[3, 1], "
    "offlineReplicas=[]) for partition pay-0 in response to UpdateMetadata request sent by controller 1 epoch 4 "
    "with correlation id 50 (state.change.logger)",
    "[2020-01-20 11:00:00,100] TRACE [Broker id=3] Received LeaderAndIsr request LeaderAndIsrPartitionState("
    "topicName='pay', partitionIndex=0, controllerEpoch=4, leader=1, leaderEpoch=7, isr=[1], zkVersion=9, "
    "replicas=[3, 1], addingReplicas=[], removingReplicas=[], isNew=false) correlation id 51 from controller 1 "
    "epoch 4 (state.change.logger)",
    "[2020-01-20 11:00:00,100] TRACE [Broker id=3] Received LeaderAndIsr request LeaderAndIsrPartitionState("
    "topicName='pay', partitionIndex=1, controllerEpoch=4, leader=1, leaderEpoch=3, isr=[1], zkVersion=4, "
    "replicas=[1, 3], addingReplicas=[], removingReplicas=[], isNew=false) correlation id 51 from controller 1 "
    "epoch 4 (state.change.logger)",
    "[2020-01-20 11:00:04,300] TRACE [Broker id=3] Cached leader info UpdateMetadataPartitionState(topicName='pay', "
    "partitionIndex=1, controllerEpoch=4, leader=1, leaderEpoch=3, isr=[1, 3], zkVersion=4, replicas=[1, 3], "
    "offlineReplicas=[]) for partition pay-1 in response to UpdateMetadata request sent by controller 1 epoch 4 "
    "with correlation id 50 (state.change.logger)",
    "[2020-01-20 11:00:04,312] TRACE [Broker id=3] Handling LeaderAndIsr request correlationId 51 from controller 1 "
    "epoch 4 starting the become-follower transition for partition pay-0 with leader 1 (state.change.logger)",
    "[2020-01-20 11:00:04,380] TRACE [Broker id=3] Completed LeaderAndIsr request correlationId 51 from controller 1 "
    "epoch 4 for the become-follower transition for partition pay-0 with leader 1 (state.change.logger)",
]


def test_2_4_lock_wait_is_the_gap_from_the_received_lines_to_the_first_handling_line():
    evs = events(LOCK_24)
    st = PairingState()
    rows = [latency_row(r, P.max_skew_ms) for r in step(st, evs[:3], evs[2].ts, P)]
    assert [r for r in rows if r["request"] == "LeaderAndIsr"] == []  # received, waiting for the lock: no row yet
    assert st.records[-1]["received_ts"] == evs[2].ts
    rows += [latency_row(r, P.max_skew_ms) for r in step(st, evs[3:], evs[-1].ts + 10 * P.timeout_ms, P)]
    lai = final(rows)[("LeaderAndIsr", 51)]
    assert lai["lock_wait_ms"] == 4212.0  # 00,100 (the last Received line) -> 04,312 (the first Handling line)
    assert lai["processing_ms"] == 68.0  # inside the lock: 04,312 -> 04,380
    assert lai["status"] == "completed"
    assert st.duplicates == 0  # two partitions' Received lines in one millisecond are two lines, not a duplicate


def test_2_6_received_lines_follow_the_handling_line_and_give_no_lock_wait():
    lines = [
        "[2020-09-01 08:00:01,000] INFO [Broker id=2] Handling LeaderAndIsr request correlationId 17 from controller "
        "1 for 1 partitions (state.change.logger)",
        "[2020-09-01 08:00:01,000] TRACE [Broker id=2] Received LeaderAndIsr request LeaderAndIsrPartitionState("
        "topicName='t', partitionIndex=0, controllerEpoch=9, leader=2, leaderEpoch=4, isr=[2], zkVersion=4, "
        "replicas=[2], addingReplicas=[], removingReplicas=[], isNew=false) correlation id 17 from controller 1 "
        "epoch 9 (state.change.logger)",
        "[2020-09-01 08:00:01,001] TRACE [Broker id=2] Received LeaderAndIsr request LeaderAndIsrPartitionState("
        "topicName='t', partitionIndex=1, controllerEpoch=9, leader=2, leaderEpoch=4, isr=[2], zkVersion=4, "
        "replicas=[2], addingReplicas=[], removingReplicas=[], isNew=false) correlation id 17 from controller 1 "
        "epoch 9 (state.change.logger)",
    ]
    evs = events(lines)
    st = PairingState()
    step(st, evs, evs[-1].ts, P)
    rec = st.records[-1]
    assert rec.get("received_ts") in (None, evs[0].ts)  # none later than the Handling line counts
    assert latency_row(rec, P.max_skew_ms)["lock_wait_ms"] is None  # the lock was taken before any Received line


# Kafka 2.7+: the INFO Handling and Finished lines of one request (Finished carries the elapsed time).
FINISHED_ERA = [
    "[2021-03-02 08:00:01,010] INFO [Broker id=2] Handling LeaderAndIsr request correlationId 17 from controller 1 "
    "for 960 partitions (state.change.logger)",
    "[2021-03-02 08:00:14,977] INFO [Broker id=2] Finished LeaderAndIsr request in 13973ms correlationId 17 from "
    "controller 1 for 960 partitions (state.change.logger)",
]


def test_finished_era_elapsed_and_span():
    evs = events(FINISHED_ERA)
    rows = final([latency_row(r, P.max_skew_ms) for r in step(PairingState(), evs, 0, P)])
    r = rows[("LeaderAndIsr", 17)]
    assert (r["status"], r["handling_ts"], r["finished_ts"], r["end_to_end_ms"]) == (
        "completed", evs[0].ts, evs[1].ts, 13973.0)
    assert r["lock_wait_ms"] == 6.0


# Kafka 2.6 (INFO summaries, no `Finished` line): the broker's request log (kafka-request.log, text in 2.6) is the
# witness of the end. Two LeaderAndIsr requests (17, 18) to broker 2, each after its controller Sending line.
HANDLING_26 = ("[2020-09-01 08:00:{}] INFO [Broker id=2] Handling LeaderAndIsr request correlationId {} from "
               "controller 1 for 960 partitions (state.change.logger)")
REQUEST_LOG_26 = (
    "[2020-09-01 08:00:{}] DEBUG Completed request:RequestHeader(apiKey=LEADER_AND_ISR, apiVersion=4, clientId=1, "
    "correlationId={}) -- {{controller_id=1,controller_epoch=9,broker_epoch=25,topic_states=[]}},response:"
    "{{error_code=0,partition_errors=[]}} from connection 127.0.0.1:9093-127.0.0.1:51432-3;totalTime:{},"
    "requestQueueTime:0.061,localTime:{},remoteTime:0.0,throttleTime:0.0,responseQueueTime:0.09,sendTime:0.311,"
    "securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,listener:CONTROLLER (kafka.request.logger)"
)


def served(line: str) -> Event:
    """A request-log line as the pairing event events.pairing_events makes of its request_events row."""
    route, row = parse_line(raw_log(line, 0, "request"))
    assert route == "request", line
    return Event("served", int(row["ts"].timestamp() * 1000), row["api_name"], row["correlation_id"],
                 row["controller_epoch"], None, round(row["total_time_ms"]))


def send(ts: int) -> Event:
    return Event("send", ts, "LeaderAndIsr", None, 9, 960)


def test_2_6_request_log_gives_the_end_even_after_the_next_request_started():
    h17, h18 = events([HANDLING_26.format("01,010", 17), HANDLING_26.format("20,000", 18)])
    done17 = served(REQUEST_LOG_26.format("14,977", 17, "13980.2", "13979.7"))
    st = PairingState()
    # the state-change log is read ahead of the request log: the next request starts before 17's answer is seen
    first = [latency_row(r, P.max_skew_ms) for r in step(st, [send(h17.ts - 20), h17, send(h18.ts - 10), h18], 0, P)]
    second = [latency_row(r, P.max_skew_ms) for r in step(st, [done17], h18.ts, P)]
    r17 = final(first + second)[("LeaderAndIsr", 17)]
    assert (r17["status"], r17["sent_ts"], r17["handling_ts"], r17["finished_ts"]) == (
        "completed", h17.ts - 20, h17.ts, done17.ts)
    assert (r17["end_to_end_ms"], r17["processing_ms"], r17["flags"]) == (13987.0, 13967.0, None)
    assert all(r["status"] != "never_completed" for r in first + second)
    # 17's answer makes the key judge LeaderAndIsr in flight; 18 is the open one
    assert "LeaderAndIsr" in st.completes
    assert "LeaderAndIsr" not in st.finish_logged


def test_2_6_without_a_request_log_a_request_the_next_one_followed_is_completed_not_never_completed():
    h17, h18 = events([HANDLING_26.format("01,010", 17), HANDLING_26.format("20,000", 18)])
    st = PairingState()
    rows = [latency_row(r, P.max_skew_ms) for r in step(st, [send(h17.ts - 20), h17, send(h18.ts - 10), h18], 0, P)]
    rows += [latency_row(r, P.max_skew_ms) for r in step(st, [], h18.ts + 2 * P.timeout_ms, P)]
    got = final(rows)
    r17 = got[("LeaderAndIsr", 17)]
    assert (r17["status"], r17["finished_ts"], r17["end_to_end_ms"], r17["flags"]) == (
        "completed", None, None, "end_not_logged")
    # the last request on the key: nothing shows it ended
    assert got[("LeaderAndIsr", 18)]["status"] == "never_completed"


def test_a_finish_line_keeps_its_time_when_the_request_log_also_answers():
    evs = events(FINISHED_ERA)
    answer = served(REQUEST_LOG_26.format("14,979", 17, "13980.2", "13979.7").replace("2020-09-01", "2021-03-02"))
    rows = final([latency_row(r, P.max_skew_ms) for r in step(PairingState(), [*evs, answer], 0, P)])
    r = rows[("LeaderAndIsr", 17)]
    assert (r["finished_ts"], r["end_to_end_ms"], r["lock_wait_ms"]) == (evs[1].ts, 13973.0, 6.0)


def test_a_request_taken_for_dropped_by_a_restart_is_completed_by_its_request_log_line():
    # a 2.7+ key (its Finished lines logged): a new Handling while 12 is open reads as a broker restart, until the
    # request log shows 12 was answered
    st = PairingState()
    base = [Event("send", 1_000, "LeaderAndIsr", None, 9, 8), Event("handling", 1_005, "LeaderAndIsr", 11, 9, 8),
            Event("finished", 1_050, "LeaderAndIsr", 11, 9, 8, elapsed_ms=45),
            Event("send", 2_000, "LeaderAndIsr", None, 9, 8), Event("handling", 2_005, "LeaderAndIsr", 12, 9, 8),
            Event("handling", 9_000, "LeaderAndIsr", 0, 9, 8)]
    first = [latency_row(r, P.max_skew_ms) for r in step(st, base, 9_000, P)]
    assert final(first)[("LeaderAndIsr", 12)]["flags"] == "broker_restart"
    # the request log, read later, shows 12 answered just before the next request started
    answer = Event("served", 8_990, "LeaderAndIsr", 12, 9, None, 6990)
    later = [latency_row(r, P.max_skew_ms) for r in step(st, [answer], 9_000, P)]
    r12 = final(first + later)[("LeaderAndIsr", 12)]
    assert (r12["status"], r12["finished_ts"], r12["flags"]) == ("completed", 8_990, None)
    assert len({r["anchor"] for r in first + later if r["correlation_id"] == 12}) == 1  # one request, one row key


def test_a_request_log_line_a_batch_later_updates_its_request_and_takes_no_later_send():
    """2.7+: LeaderAndIsr 17 finishes in one batch while the next request's send is already queued; its request-log
    line comes in the next batch (another file). On a key whose broker writes a request log, the finished request
    waits for that line, which updates its row with the breakdown; the next request keeps its own send."""
    st = PairingState(request_log=True)
    t = 1_614_672_000_000  # 2021-03-02 08:00:00 UTC
    first = [Event("send", t, "LeaderAndIsr", None, 9, 1), Event("handling", t + 10, "LeaderAndIsr", 17, None, 1),
             Event("finished", t + 500, "LeaderAndIsr", 17, None, 1, 490),
             Event("send", t + 600, "LeaderAndIsr", None, 9, 1)]
    rows = [latency_row(r, P.max_skew_ms) for r in step(st, first, t + 700, P)]
    served = Event("served", t + 501, "LeaderAndIsr", 17, 9, None, 491,
                   detail='{"broker_queue_ms":480.0,"local_ms":9.0,"listener":"PLAINTEXT"}')
    rows += [latency_row(r, P.max_skew_ms) for r in step(st, [served], t + 800, P)]
    mine = [r for r in rows if r["correlation_id"] == 17]
    assert [(r["first_row"], r["broker_queue_ms"]) for r in mine] == [(True, None), (False, 480.0)]
    assert mine[-1]["witnesses"] == "controller_log,broker_log,request_log,lock_inferred"
    assert [s["ts"] for s in st.sends] == [t + 600]  # the next request's send is still its own


def test_the_brokers_partition_count_wins_over_a_burst_of_the_controllers_sending_lines():
    """Apache Kafka 3.9.1 at TRACE, a topic of 150 partitions created: whatever order the controller's
    per-partition Sending lines and the broker's per-partition lines (one partition each) come in, the broker's
    Handling and Finished summaries say 150, and 150 is the request's count."""
    t0 = 1_764_358_183_905
    evs = [Event("send", t0, "LeaderAndIsr", None, 1, 1, detail="created-under-load-33"),
           Event("handling", t0 + 70, "LeaderAndIsr", 9, 1, 1),
           Event("handling", t0 + 71, "LeaderAndIsr", 9, 1, 150),
           Event("finished", t0 + 7_666, "LeaderAndIsr", 9, 1, 150, 7_595)]
    rows = final([latency_row(r, P.max_skew_ms) for r in step(PairingState(), evs, 0, P)])
    assert rows[("LeaderAndIsr", 9)]["partitions"] == 150
