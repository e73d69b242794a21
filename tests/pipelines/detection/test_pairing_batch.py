# ruff: noqa: E501  (verbatim Kafka log lines)
"""Pairing a log batch's rows: silver rows of real Kafka log texts (as the pipeline's parser makes them) -> pairing
events -> groups stepped from no state (on the driver, and on Spark's executors through the same group function) ->
control_request_latency rows. TRACE 2.2-2.5 logs pair by correlation id (the controller's `Received response` line),
2.7+ INFO logs by order; UpdateMetadata to a broker set fans out per broker."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from pipelines.detection.config import DetectionConfig
from pipelines.detection.events import pairing_events, touched_brokers
from pipelines.detection.pairing_groups import (
    GROUP_OUTPUT,
    LATENCY_COLUMNS,
    bucket_of,
    group_function,
    latency_table,
    pairing_params,
    step_groups,
)
from schemas.tables import REQUEST_EVENTS, STATE_CHANGE_EVENTS

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def _arrow(rows: list[tuple], table) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(table.names, r, strict=True)) for r in rows], table.to_arrow())


def pair(sc: list[tuple], rq: list[tuple] | None = None, cfg: DetectionConfig | None = None) -> pa.Table:
    """The rows' control_request_latency rows, paired on the driver from no state with no watermark (a batch)."""
    events = pairing_events(_arrow(sc, STATE_CHANGE_EVENTS), _arrow(rq or [], REQUEST_EVENTS))
    rows, _ = step_groups(events, {}, {}, pairing_params(cfg or DetectionConfig()))
    return latency_table(rows, NOW)


def pair_on_spark(spark: Any, sc: list[tuple], cfg: DetectionConfig | None = None) -> pa.Table:
    """The same through Spark: one applyInPandas over (cluster, bucket) groups calling the group function."""
    from pyspark.sql import functions as F

    events = pairing_events(_arrow(sc, STATE_CHANGE_EVENTS), _arrow([], REQUEST_EVENTS))
    frame = spark.createDataFrame(events).where(F.col("broker_id") >= 0)
    frame = frame.withColumn("bucket", F.pmod("broker_id", F.lit(64)))
    out = pa.table(frame.groupBy("cluster", "bucket").applyInPandas(
        group_function(pairing_params(cfg or DetectionConfig()), {}), GROUP_OUTPUT).toArrow())
    rows = out.filter(pa.compute.invert(pa.compute.fill_null(out["is_state"], False))).select(list(LATENCY_COLUMNS))
    return latency_table(rows, NOW)

TRACE = """\
[2019-06-12 10:15:02,114] TRACE [Controller id=1 epoch=7] Sending become-follower LeaderAndIsr request PartitionState(controllerEpoch=7, leader=2, leaderEpoch=12, isr=2,3, zkVersion=31, replicas=1,2,3, isNew=false) to broker 1 for partition orders-4 (state.change.logger)
[2019-06-12 10:15:02,131] TRACE [Broker id=1] Received LeaderAndIsr request PartitionState(controllerEpoch=7, leader=2, leaderEpoch=12, isr=2,3, zkVersion=31, replicas=1,2,3, isNew=false) correlation id 44 from controller 1 epoch 7 for partition orders-4 (state.change.logger)
[2019-06-12 10:15:02,132] TRACE [Broker id=1] Handling LeaderAndIsr request correlationId 44 from controller 1 epoch 7 starting the become-follower transition for partition orders-4 with leader 2 (state.change.logger)
[2019-06-12 10:15:02,133] TRACE [Broker id=1] Handling LeaderAndIsr request correlationId 44 from controller 1 epoch 7 starting the become-follower transition for partition orders-5 with leader 2 (state.change.logger)
[2019-06-12 10:15:09,870] TRACE [Broker id=1] Stopped fetchers as part of become-follower request from controller 1 epoch 7 with correlation id 44 for partition orders-4 with leader 2 (state.change.logger)
[2019-06-12 10:15:09,880] TRACE [Controller id=1 epoch=7] Received response {error_code=0,partitions=[{topic=orders,partition=4,error_code=0}]} for request LEADER_AND_ISR with correlation id 44 sent to broker 10.0.0.1:9094 (id: 1 rack: null) (state.change.logger)
"""
INFO = """\
[2021-03-02 08:00:01,004] INFO [Controller id=1 epoch=9] Sending LeaderAndIsr request to broker 2 with 120 become-leader and 840 become-follower partitions (state.change.logger)
[2021-03-02 08:00:01,050] INFO [Controller id=1 epoch=9] Sending UpdateMetadata request to brokers HashSet(1, 2) for 963 partitions (state.change.logger)
[2021-03-02 08:00:01,061] INFO [Broker id=1] Add 963 partitions and deleted 0 partitions from metadata cache in response to UpdateMetadata request sent by controller 1 epoch 9 with correlation id 17 (state.change.logger)
[2021-03-02 08:00:01,010] INFO [Broker id=2] Handling LeaderAndIsr request correlationId 17 from controller 1 for 960 partitions (state.change.logger)
[2021-03-02 08:00:14,977] INFO [Broker id=2] Finished LeaderAndIsr request in 13973ms correlationId 17 from controller 1 for 960 partitions (state.change.logger)
[2021-03-02 08:00:14,990] INFO [Broker id=2] Add 963 partitions and deleted 0 partitions from metadata cache in response to UpdateMetadata request sent by controller 1 epoch 9 with correlation id 18 (state.change.logger)
"""


def silver(cluster: str, text: str) -> list[tuple]:
    """The lines as the ingest job leaves them in state_change_events: through the pipeline's own parser."""
    import pyarrow as pa

    from pipelines.parsing.engine import route_records
    from schemas.tables import RAW_LOGS

    raw = [{"cluster": cluster, "broker_id": None, "log_kind": "state-change", "line": line,
            "line_bytes": len(line), "source": "t", "source_offset": i, "date": dt.date(2024, 1, 1)}
           for i, line in enumerate(text.splitlines())]
    rows = []
    for route, r in route_records(pa.Table.from_pylist(raw, RAW_LOGS.to_arrow()), "logs"):
        assert route == "state_change", (route, r)
        rows.append(tuple(r.get(n) for n in STATE_CHANGE_EVENTS.names))
    return rows


def test_trace_and_info_logs_pair():
    out = {(r["cluster"], r["broker_id"], r["request"]): r
           for r in pair(silver("trace", TRACE) + silver("info", INFO)).to_pylist()}
    assert set(out) == {("trace", 1, "LeaderAndIsr"), ("info", 2, "LeaderAndIsr"), ("info", 1, "UpdateMetadata"),
                        ("info", 2, "UpdateMetadata")}
    t = out[("trace", 1, "LeaderAndIsr")]
    assert t["correlation_id"] == 44
    assert t["pairing"] == "correlation_id"
    assert t["status"] == "completed"  # no Finished line before 2.7: the controller's response completes it
    assert t["controller_epoch"] == 7
    assert t["queue_ms"] == 18.0  # 02,114 -> 02,132 (first Handling line)
    assert t["end_to_end_ms"] == 7766.0  # 02,114 -> 09,880 (response)
    assert t["lock_wait_ms"] == 1.0  # 02,131 (Received, before the lock) -> 02,132 (Handling, inside it)
    i = out[("info", 2, "LeaderAndIsr")]
    assert (i["pairing"], i["end_to_end_ms"], i["lock_wait_ms"], i["queue_ms"]) == ("order", 13973.0, 6.0, 6.0)
    assert out[("info", 1, "UpdateMetadata")]["end_to_end_ms"] == 11.0
    assert out[("info", 2, "UpdateMetadata")]["controller_queue_ms"] == 13927.0


# The reference controller at TRACE (fetcher-lock run): per-partition lines + the INFO summary are ONE request; then
# controller.log deletes the broker, which drops the UpdateMetadata still queued for it.
REFERENCE = """\
[2026-11-22 08:06:36,932] TRACE [Controller id=3 epoch=1] Sending become-leader LeaderAndIsr request LeaderAndIsrPartitionState(topicName='lock', partitionIndex=0, controllerEpoch=1, leader=1, leaderEpoch=0, isr=[1, 2, 3], zkVersion=0, replicas=[1, 2, 3], addingReplicas=[], removingReplicas=[], isNew=true) to broker 1 for partition lock-0 (state.change.logger)
[2026-11-22 08:06:36,932] TRACE [Controller id=3 epoch=1] Sending become-follower LeaderAndIsr request LeaderAndIsrPartitionState(topicName='lock', partitionIndex=1, controllerEpoch=1, leader=2, leaderEpoch=0, isr=[2, 3, 1], zkVersion=0, replicas=[2, 3, 1], addingReplicas=[], removingReplicas=[], isNew=true) to broker 1 for partition lock-1 (state.change.logger)
[2026-11-22 08:06:36,932] INFO [Controller id=3 epoch=1] Sending LeaderAndIsr request to broker 1 with 1 become-leader and 1 become-follower partitions (state.change.logger)
[2026-11-22 08:06:36,960] INFO [Broker id=1] Handling LeaderAndIsr request correlationId 1 from controller 3 for 2 partitions (state.change.logger)
[2026-11-22 08:06:37,036] INFO [Broker id=1] Finished LeaderAndIsr request in 76ms correlationId 1 from controller 3 for 2 partitions (state.change.logger)
[2026-11-22 08:06:45,738] TRACE [Controller id=3 epoch=1] Sending become-leader LeaderAndIsr request LeaderAndIsrPartitionState(topicName='lock', partitionIndex=0, controllerEpoch=1, leader=1, leaderEpoch=1, isr=[1, 2], zkVersion=1, replicas=[1, 2, 3], addingReplicas=[], removingReplicas=[], isNew=false) to broker 1 for partition lock-0 (state.change.logger)
[2026-11-22 08:06:45,738] TRACE [Controller id=3 epoch=1] Sending become-leader LeaderAndIsr request LeaderAndIsrPartitionState(topicName='lock', partitionIndex=1, controllerEpoch=1, leader=1, leaderEpoch=1, isr=[1, 2], zkVersion=1, replicas=[2, 3, 1], addingReplicas=[], removingReplicas=[], isNew=false) to broker 1 for partition lock-1 (state.change.logger)
[2026-11-22 08:06:45,738] INFO [Controller id=3 epoch=1] Sending LeaderAndIsr request to broker 1 with 2 become-leader and 0 become-follower partitions (state.change.logger)
[2026-11-22 08:06:45,740] INFO [Broker id=1] Handling LeaderAndIsr request correlationId 3 from controller 3 for 2 partitions (state.change.logger)
[2026-11-22 08:06:45,748] INFO [Broker id=1] Finished LeaderAndIsr request in 8ms correlationId 3 from controller 3 for 2 partitions (state.change.logger)
[2026-11-22 08:06:46,000] INFO [Controller id=3 epoch=1] Sending UpdateMetadata request to brokers HashSet(1) for 2 partitions (state.change.logger)
[2026-11-22 08:06:47,000] INFO [Controller id=3] Newly added brokers: , deleted brokers: 1, bounced brokers: , all live brokers: 2 (kafka.controller.KafkaController)
"""


@pytest.mark.spark
def test_the_executors_pair_as_the_driver_does(spark):
    rows = silver("trace", TRACE) + silver("info", INFO) + silver("ref", REFERENCE)
    key = ["cluster", "broker_id", "request", "request_key"]
    here = pair(rows).drop_columns(["updated_at"]).sort_by([(k, "ascending") for k in key])
    there = pair_on_spark(spark, rows).drop_columns(["updated_at"]).sort_by([(k, "ascending") for k in key])
    assert here.num_rows == 7
    assert there.to_pylist() == here.to_pylist()
    assert bucket_of(70) == 6
    assert bucket_of(-1) == -1


def test_reference_trace_burst_is_one_request_and_a_deleted_broker_drops_its_sends():
    out = sorted(pair(silver("ref", REFERENCE)).to_pylist(), key=lambda r: (r["request"], r["sent_ts"]))
    got = [(r["request"], r["correlation_id"], r["queue_ms"], r["partitions"], r["status"], r["flags"]) for r in out]
    assert got == [
        ("LeaderAndIsr", 1, 28.0, 2, "completed", None),
        ("LeaderAndIsr", 3, 2.0, 2, "completed", None),
        ("UpdateMetadata", None, None, 2, "never_completed", "broker_gone"),
    ]


def _stamp(ms: int) -> str:
    t = dt.datetime(2021, 3, 2, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def backfill_day(brokers: tuple[int, ...], unshipped: int, slow: tuple[int, int]) -> str:
    """A day of 2.7+ INFO state-change logs: a LeaderAndIsr to each broker every 30 s, each taking 20 ms but `slow`
    (broker, correlation id), which takes 20 s; broker `unshipped`'s own log is missing (controller lines only)."""
    lines = []
    for b in (*brokers, unshipped):
        for i in range(BACKFILL_REQUESTS):
            sent = i * 30_000 + b
            work = 20_000 if (b, i) == slow else 20
            lines.append(f"[{_stamp(sent)}] INFO [Controller id=1 epoch=9] Sending LeaderAndIsr request to broker {b} "
                         "with 1 become-leader and 0 become-follower partitions (state.change.logger)")
            if b == unshipped:
                continue
            lines.append(f"[{_stamp(sent + 5)}] INFO [Broker id={b}] Handling LeaderAndIsr request correlationId {i} "
                         "from controller 1 for 1 partitions (state.change.logger)")
            lines.append(f"[{_stamp(sent + 5 + work)}] INFO [Broker id={b}] Finished LeaderAndIsr request in "
                         f"{work + 1}ms correlationId {i} from controller 1 for 1 partitions (state.change.logger)")
    return "\n".join(lines)


BACKFILL_REQUESTS = 2_880  # one every 30 s for a day, per broker


def test_a_days_backfill_in_one_batch_gives_every_request_its_row_and_its_alert():
    from pipelines.detection.pairing import MAX_PENDING_SENDS
    from pipelines.detection.registry import latency_candidates

    latency = pair(silver("bf", backfill_day((2,), 4, slow=(2, 1_000))))
    got = latency.to_pylist()
    shipped = [r for r in got if r["broker_id"] == 2]
    assert sorted(r["correlation_id"] for r in shipped) == list(range(BACKFILL_REQUESTS))
    assert {(r["status"], r["pairing"], r["queue_ms"]) for r in shipped} == {("completed", "order", 5.0)}
    assert {r["correlation_id"]: r["end_to_end_ms"] for r in shipped if r["end_to_end_ms"] > 25} == {1_000: 20_005.0}
    # the broker whose log is missing: beyond the bound its sends are emitted `evicted` (the newest 64 wait)
    unshipped = [r for r in got if r["broker_id"] == 4]
    assert len(unshipped) == BACKFILL_REQUESTS - MAX_PENDING_SENDS
    assert {r["status"] for r in unshipped} == {"evicted"}
    # the slow request raises its alert; evicted requests (outcome unknown) raise none
    empty = STATE_CHANGE_EVENTS.to_arrow().empty_table()
    alerts = [(c["type"], c["broker_id"]) for c in latency_candidates(latency, empty, DetectionConfig())]
    assert alerts == [("DELAYED_LEADER_AND_ISR", 2)]


ERA_2_6 = """\
[2020-09-01 08:00:00,990] INFO [Controller id=1 epoch=9] Sending LeaderAndIsr request to broker 2 with 120 become-leader and 840 become-follower partitions (state.change.logger)
[2020-09-01 08:00:01,010] INFO [Broker id=2] Handling LeaderAndIsr request correlationId 17 from controller 1 for 960 partitions (state.change.logger)
[2020-09-01 08:00:19,990] INFO [Controller id=1 epoch=9] Sending LeaderAndIsr request to broker 2 with 1 become-leader and 0 become-follower partitions (state.change.logger)
[2020-09-01 08:00:20,000] INFO [Broker id=2] Handling LeaderAndIsr request correlationId 18 from controller 1 for 1 partitions (state.change.logger)
"""
REQUEST_LOG_2_6 = """\
[2020-09-01 08:00:14,977] DEBUG Completed request:RequestHeader(apiKey=LEADER_AND_ISR, apiVersion=4, clientId=1, correlationId=17) -- {controller_id=1,controller_epoch=9,broker_epoch=25,topic_states=[]},response:{error_code=0,partition_errors=[]} from connection 127.0.0.1:9093-127.0.0.1:51432-3;totalTime:13980.2,requestQueueTime:0.061,localTime:13979.7,remoteTime:0.0,throttleTime:0.0,responseQueueTime:0.09,sendTime:0.311,securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,listener:CONTROLLER (kafka.request.logger)
[2020-09-01 08:00:20,012] DEBUG Completed request:RequestHeader(apiKey=LEADER_AND_ISR, apiVersion=4, clientId=1, correlationId=18) -- {controller_id=1,controller_epoch=9,broker_epoch=25,topic_states=[]},response:{error_code=0,partition_errors=[]} from connection 127.0.0.1:9093-127.0.0.1:51432-3;totalTime:22.4,requestQueueTime:0.05,localTime:12.0,remoteTime:0.0,throttleTime:0.0,responseQueueTime:0.09,sendTime:0.2,securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,listener:CONTROLLER (kafka.request.logger)
"""


def test_kafka_2_6_requests_end_where_the_request_log_says():
    from pipelines.parsing.engine import route_records
    from schemas.tables import RAW_LOGS, REQUEST_EVENTS

    raw = [{"cluster": "k26", "broker_id": 2, "log_kind": "request", "line": line, "line_bytes": len(line),
            "source": "r", "source_offset": i, "date": dt.date(2024, 1, 1)}
           for i, line in enumerate(REQUEST_LOG_2_6.splitlines())]
    requests = [tuple(r.get(n) for n in REQUEST_EVENTS.names)
                for _, r in route_records(pa.Table.from_pylist(raw, RAW_LOGS.to_arrow()), "logs")]
    out = {r["correlation_id"]: r for r in pair(silver("k26", ERA_2_6), requests).to_pylist()}
    assert set(out) == {17, 18}
    for corr, (e2e, status) in {17: (13987.0, "completed"), 18: (22.0, "completed")}.items():
        assert (out[corr]["end_to_end_ms"], out[corr]["status"], out[corr]["flags"]) == (e2e, status, None)
    # the broker's own breakdown: KIP-291's listener worked (61 us queued), the handler took the time
    r = out[17]
    assert (r["listener"], r["broker_queue_ms"], r["local_ms"], r["remote_ms"]) == ("CONTROLLER", 0.061, 13979.7, 0.0)
    assert (r["response_queue_ms"], r["response_send_ms"], r["served_ms"]) == (0.09, 0.311, 13980.0)
    assert r["witnesses"] == "controller_log,broker_log,request_log"


def test_a_kafka_2_4_lock_wait_is_timed_and_raises_lock_contention():
    """Kafka 2.4 at its default TRACE: LeaderAndIsr 51 waited 4.2 s for replicaStateChangeLock behind an
    UpdateMetadata; its Received lines (before the lock) and first Handling line (inside it) time the wait."""
    import polars as pl

    from pipelines.detection.candidates import ControlRequests
    from pipelines.detection.latency_detectors import detect_lock_contention
    from tests.pipelines.detection.test_pairing_eras import LOCK_24

    rows = silver("k24", "\n".join(LOCK_24))
    latency = pair(rows)
    out = {r["correlation_id"]: r for r in latency.to_pylist()}
    assert (out[51]["lock_wait_ms"], out[51]["processing_ms"]) == (4212.0, 68.0)
    assert out[50]["request"] == "UpdateMetadata"  # 2.4's generated UpdateMetadataPartitionState lines pair too
    requests = ControlRequests(pl.DataFrame(pl.from_arrow(latency)),
                               pl.DataFrame(pl.from_arrow(_arrow(rows, STATE_CHANGE_EVENTS))))
    alerts = detect_lock_contention(requests, DetectionConfig())
    assert [(a["type"], a["broker_id"], a["value"]) for a in alerts] == [("LOCK_CONTENTION", 3, 4212.0)]


def test_the_group_function_leaves_out_and_counts_late_events_and_keeps_each_groups_state():
    """One pandas call over several groups (a task's set): a late event is counted, not paired; every group's state
    row comes back, a group with only a state row included."""
    events = pairing_events(_arrow(silver("info", INFO), STATE_CHANGE_EVENTS), _arrow([], REQUEST_EVENTS))
    pdf = events.to_pandas()
    pdf["bucket"] = pdf["broker_id"].map(bucket_of)
    pdf = pdf[pdf["bucket"] >= 0]
    first_ms = int(pdf["ts"].min().timestamp() * 1000)
    late_count = int(((pdf["ts"] == pdf["ts"].min()) & (pdf["kind"] != "heartbeat")).sum())
    idle = dict.fromkeys(pdf.columns) | {"cluster": "idle", "broker_id": 7, "bucket": 7, "kind": "state",
                                             "controller_id": -1, "detail": '{"keys":{},"brokers":{}}'}
    pdf = pd.concat([pdf, pd.DataFrame([idle])], ignore_index=True)
    fn = group_function(pairing_params(DetectionConfig()), {}, {"info": first_ms + 1})
    out = fn((0,), pdf)
    states = out[out["is_state"]]
    assert sorted(zip(states["cluster"], states["bucket"], strict=True)) == sorted(
        {("info", b) for b in pdf.loc[pdf["cluster"] == "info", "bucket"]} | {("idle", 7)})
    assert int(states["late"].sum()) == late_count >= 1


def test_the_brokers_a_batch_touches_cover_every_group_its_events_go_to():
    """What the driver reads of a batch the executors pair (events.touched_brokers) names every group the batch's
    pairing events fall in: the brokers whose logs hold the lines and the brokers the controller's lines target."""
    sc = _arrow(silver("trace", TRACE) + silver("info", INFO) + silver("ref", REFERENCE), STATE_CHANGE_EVENTS)
    rq = _arrow([], REQUEST_EVENTS)
    events = pairing_events(sc, rq)
    touched = touched_brokers(sc.select(["cluster", "broker_id", "target_broker_id", "target_brokers"]),
                              rq.select(["cluster", "broker_id"]))
    named = {(c, bucket_of(b)) for c, b in touched.iter_rows() if b >= 0}
    paired = {(c, bucket_of(b)) for c, b in zip(events["cluster"].to_pylist(), events["broker_id"].to_pylist(),
                                                strict=True) if b >= 0}
    assert paired <= named
    assert paired
