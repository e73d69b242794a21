"""Pairing per Kafka era (FACTS.md section 1): each era's lines give control_request_latency rows with the right
start, finish and elapsed time, and no never_completed row for a request that did complete (pure, no Spark)."""

from __future__ import annotations

from pipelines.detection.pairing import Event, PairingParams, PairingState, latency_row, step
from tests.pipelines.parse_helpers import parse_line, raw_log

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
        "leader_and_isr_finished": "finished"}


def events(lines: list[str]) -> list[Event]:
    out = []
    for i, line in enumerate(lines):
        route, row = parse_line(raw_log(line, i))
        assert route == "state_change", line
        out.append(Event(KIND[row["event"]], int(row["ts"].timestamp() * 1000), row["request"],
                         row["correlation_id"], row["controller_epoch"], row["partitions"], row["elapsed_ms"]))
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


def test_finished_era_elapsed_and_span():
    lines = [
        "[2021-03-02 08:00:01,010] INFO [Broker id=2] Handling LeaderAndIsr request correlationId 17 from controller 1 "
        "for 960 partitions (state.change.logger)",
        "[2021-03-02 08:00:14,977] INFO [Broker id=2] Finished LeaderAndIsr request in 13973ms correlationId 17 from "
        "controller 1 for 960 partitions (state.change.logger)",
    ]
    evs = events(lines)
    rows = final([latency_row(r, P.max_skew_ms) for r in step(PairingState(), evs, 0, P)])
    r = rows[("LeaderAndIsr", 17)]
    assert (r["status"], r["handling_ts"], r["finished_ts"], r["end_to_end_ms"]) == (
        "completed", evs[0].ts, evs[1].ts, 13973.0)
    assert r["lock_wait_ms"] == 6.0
