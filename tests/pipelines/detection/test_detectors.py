"""Every detector fires on its incident and stays quiet on healthy input of the same shape (Spark, batch).

Each scenario is its own cluster (`<case>-fire` / `<case>-quiet`), so all detectors run over three small
DataFrames and the candidates are collected ONCE for the module (the suite must stay fast).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pipelines.detection.candidates import ControlRequests, LogRows
from pipelines.detection.config import DetectionConfig
from pipelines.detection.kraft_detectors import ELECTION_COLUMNS, detect_broker_fenced
from pipelines.detection.latency_detectors import detect_delayed_leader_and_isr, state_change_spans, time_split
from pipelines.detection.metric_detectors import metric_windows
from pipelines.detection.registry import latency_candidates, log_candidates, metric_candidates
from pipelines.detection.roll_detectors import detect_roll_too_fast
from schemas.alerts import AlertType
from schemas.tables import CONTROL_REQUEST_LATENCY, METRIC_SAMPLES, REQUEST_EVENTS, STATE_CHANGE_EVENTS

pytestmark = pytest.mark.spark

T0 = datetime(2021, 3, 2, 8, 0, 0, tzinfo=UTC)
CFG = DetectionConfig.from_mapping({"clusters": {"rqs-override": {"queued_max_requests": 100}}})


def t(sec: float) -> datetime:
    return T0 + timedelta(seconds=sec)


def row(table, **kw):
    unknown = set(kw) - set(table.names)
    assert not unknown, unknown
    return tuple(kw.get(n) for n in table.names)


def lat(cluster, request="LeaderAndIsr", status="completed", e2e=40.0, lock=1.0, proc=30.0, cq=None, flags=None,
        broker=2, key=None):
    return row(CONTROL_REQUEST_LATENCY, cluster=cluster, broker_id=broker, controller_id=1, controller_epoch=9,
               correlation_id=17, request=request, sent_ts=t(1), handling_ts=t(1.006),
               finished_ts=t(1.006 + (proc or e2e) / 1000) if status == "completed" else None, end_to_end_ms=e2e,
               queue_ms=6.0, processing_ms=proc if status == "completed" else None, lock_wait_ms=lock,
               partitions=960, status=status, pairing="order", request_key=key or f"{cluster}-{request}-{status}",
               flags=flags, controller_queue_ms=cq)


def sc(cluster, sec, message, broker=2, event=None, **cols):
    """A state_change_events row as silver holds it (the event name and columns the parser gives the message)."""
    return row(STATE_CHANGE_EVENTS, cluster=cluster, broker_id=broker, ts=t(sec), level="INFO", event=event,
               message=message, source="f", source_offset=0, **cols)


def map_lock(cluster, sec, waited):
    """The reference broker's partitionMapLock line (no correlation id: it is the request being handled)."""
    return sc(cluster, sec, f"LeaderAndIsr waited {waited} ms for partitionMapLock of ReplicaFetcherThread-0-1 "
                            "(planewatch)", event="lock_wait", lock_wait_ms=waited)


def req(cluster, api, listener, queue_ms, error=0, broker=2):
    return row(REQUEST_EVENTS, cluster=cluster, broker_id=broker, ts=t(2), api_name=api, correlation_id=5,
               listener=listener, request_queue_time_ms=queue_ms, total_time_ms=queue_ms + 1, error_code=error,
               source="f", source_offset=0)


def ms(cluster, signal, values, attribute="Value", listener=None, broker=2, step=10.0, sources=None):
    return [row(METRIC_SAMPLES, cluster=cluster, broker_id=broker, ts=t(i * step), signal=signal,
                attribute=attribute, listener=listener, value=float(v), source=sources[i] if sources else "f",
                source_offset=i)
            for i, v in enumerate(values)]


def leader_and_isr(cluster, signal, quantiles, counts, broker=2):
    """RequestMetrics samples of `request=LeaderAndIsr`: the 99th percentile and the Count of `signal`."""
    return [row(METRIC_SAMPLES, cluster=cluster, broker_id=broker, ts=t(i * 10.0), signal=signal, attribute=attr,
                request="LeaderAndIsr", value=float(v), source="f", source_offset=i)
            for attr, values in (("99thPercentile", quantiles), ("Count", counts)) for i, v in enumerate(values)]


FETCH = "[UnifiedLog partition=t-{i}, dir=/d] Incremented log start offset to {i} due to leader offset increment"


LATENCY = [
    lat("dl-fire", e2e=13973.0, lock=6.0, proc=13967.0),
    lat("dl-quiet", e2e=40.0),
    lat("nc-fire", status="never_completed", e2e=None, lock=None),
    lat("nc-quiet", status="never_completed", e2e=None, lock=None, flags="broker_restart"),
    lat("nc-quiet", key="ok"),
    lat("nc-quiet", status="never_completed", e2e=None, lock=None, key="controller-died"),
    # pairing stopped tracking it at its state bound: outcome unknown, no alert (latency_detectors)
    lat("nc-quiet", status="evicted", e2e=None, lock=None, key="evicted"),
    lat("um-fire", request="UpdateMetadata", e2e=9000.0, lock=None, proc=None),
    lat("um-quiet", request="UpdateMetadata", e2e=13940.0, cq=13927.0, lock=None, proc=None),
    lat("lock-fire", lock=4000.0, e2e=4100.0, proc=100.0),
    lat("lockf-fire", lock=10.0, e2e=4000.0, proc=3900.0),
    lat("lock-quiet", lock=6.0, e2e=4000.0, proc=3900.0),
    lat("lockm-fire", lock=2.0, e2e=1700.0, proc=1600.0),
    lat("lockm-quiet", lock=2.0, e2e=1700.0, proc=1600.0),
    # reported by pairing while still running (in_flight_alerted): its age so far; then never completed
    lat("dlf-fire", status="in_flight", e2e=6000.0, lock=None, flags="in_flight_alerted"),
    lat("dlf-quiet", status="in_flight", e2e=None, lock=None),
    lat("dln-fire", status="never_completed", e2e=None, lock=None, flags="in_flight_alerted"),
    lat("umf-fire", request="UpdateMetadata", status="in_flight", e2e=35000.0, cq=1000.0, lock=None,
        flags="in_flight_alerted"),
    # the same two, but their controller (epoch 9) was replaced 0.2 s after the send (a stopping cluster's controller
    # resigning): not stuck on the broker, so no alert
    lat("umfo-quiet", request="UpdateMetadata", status="in_flight", e2e=35000.0, cq=1000.0, lock=None,
        flags="in_flight_alerted"),
    lat("dlno-quiet", status="never_completed", e2e=None, lock=None, flags="in_flight_alerted"),
    lat("sr-fire", request="StopReplica", e2e=9000.0, lock=None, proc=None),
    lat("sr-quiet", request="StopReplica", e2e=40.0, lock=None, proc=None),
]


FETCH_EVENT = "log_start_offset_incremented"
CHANGES = [sc("lockf-fire", 1.5 + i * 0.1, FETCH.format(i=i), event=FETCH_EVENT) for i in range(20)]
CHANGES += [sc("lock-quiet", 1.5 + i * 0.1, FETCH.format(i=i), event=FETCH_EVENT) for i in range(2)]
# handling 1.006 s .. finished 2.606 s: two fetchers' waits inside (900 + 700 ms); outside or small: quiet
CHANGES += [map_lock("lockm-fire", 1.5, 900), map_lock("lockm-fire", 2.4, 700)]
CHANGES += [map_lock("lockm-quiet", 0.5, 900), map_lock("lockm-quiet", 1.5, 300), map_lock("lockm-quiet", 3.0, 900)]
# the controller (epoch 9) of nc-quiet's third request died: epoch 10 elected 3 s after the send; nc-fire's
# election happened long after its timeout, and an election of the same epoch proves nothing
CHANGES += [
    sc("nc-quiet", 4, "3 successfully elected as the controller. Epoch incremented to 10 and epoch zk version "
                      "is now 10", broker=3, event="controller_elected", controller_epoch=10),
    sc("nc-fire", 500, "3 successfully elected as the controller. Epoch incremented to 10 and epoch zk version "
                       "is now 10", broker=3, event="controller_elected", controller_epoch=10),
    sc("nc-fire", 4, "1 successfully elected as the controller. Epoch incremented to 9 and epoch zk version "
                     "is now 9", broker=1, event="controller_elected", controller_epoch=9),
]
CHANGES += [sc(c, 1.2, "3 successfully elected as the controller. Epoch incremented to 10 and epoch zk version is "
                      "now 10", broker=3, event="controller_elected", controller_epoch=10) for c in ("umfo-quiet",
                                                                                                     "dlno-quiet")]
CHANGES += [
    sc("stale-fire", 3, "Received LeaderAndIsr request with broker epoch 25 smaller than the current broker epoch 31",
       event="stale_broker_epoch", request="LeaderAndIsr", broker_epoch=25, current_broker_epoch=31),
    # one rejected LeaderAndIsr: its log line and its request-log entry, each shipped twice
    *[sc("staledup-fire", 3, "Received LeaderAndIsr request with broker epoch 25 smaller than the current broker epoch "
         "31", event="stale_broker_epoch", request="LeaderAndIsr", broker_epoch=25, current_broker_epoch=31)] * 2,
    sc("stale-quiet", 3, "Handling LeaderAndIsr request correlationId 17 from controller 1 for 960 partitions",
       event="leader_and_isr_handling", request="LeaderAndIsr", correlation_id=17, controller_id=1, partitions=960),
]
# KRaft (Apache Kafka 4.4's lines): the active controller (node 100) fenced broker 3 for a session timeout, then
# unfenced it; a controlled shutdown fences through a registration change and logs no such line; heartbeats timed
# out in the controller's queue, against a broker that only could not send one
_FENCE = "Fencing broker 3 at epoch 87 because its session has timed out."
_GRANTED = ("The request from broker 3 to shut down has been granted since the lowest active offset 113 is now greater "
            "than the broker's controlled shutdown offset 111.")
_UNFENCE = ("The request from broker 3 to unfence has been granted because it has caught up with the offset of its "
            "register broker record 33.")
_EXPIRED = "processExpiredBrokerHeartbeat: controller event queue overloaded. Timed out heartbeat from broker 2."


def _elected(epoch: int) -> str:
    return f"Becoming the active controller at epoch {epoch}, next write offset {1000 + epoch}."

CHANGES += [
    sc("fence-fire", 5, _FENCE, broker=100, event="kraft_broker_fenced", target_broker_id=3, controller_id=100),
    sc("fence-fire", 30, _UNFENCE, broker=100, event="kraft_broker_unfenced", target_broker_id=3, controller_id=100),
    # Kafka 4.4: a broker that shut down cleanly (a roll) is fenced again by its session ~10 s later: no incident
    sc("fenceecho-quiet", 0, _GRANTED, broker=100, event="kraft_shutdown_granted", target_broker_id=3,
       controller_id=100),
    sc("fenceecho-quiet", 10, _FENCE, broker=100, event="kraft_broker_fenced", target_broker_id=3, controller_id=100),
    sc("fence-quiet", 5, "Replayed BrokerRegistrationChangeRecord modifying the registration for broker 3: "
       "BrokerRegistrationChangeRecord(brokerId=3, brokerEpoch=33, fenced=1, inControlledShutdown=0, logDirs=[])",
       broker=100, controller_id=100),
    sc("fence-quiet", 30, _UNFENCE, broker=100, event="kraft_broker_unfenced", target_broker_id=3, controller_id=100),
    *[sc("hbt-fire", 5 + i, _EXPIRED, broker=100, event="kraft_heartbeat_expired", target_broker_id=2,
         controller_id=100) for i in range(3)],
    sc("hbt-quiet", 5, "Unable to send a heartbeat because the RPC got timed out before it could be sent.",
       event="kraft_heartbeat_not_sent"),
    # the quorum: three elections in a minute (a flapping leadership); two (a start, then a controller restarted in a
    # roll); three spread over 25 minutes
    *[sc("quorum-fire", sec, _elected(epoch), broker=node, event="kraft_active_controller", controller_id=node,
         controller_epoch=epoch) for sec, node, epoch in ((5, 100, 5), (20, 101, 6), (40, 102, 8))],
    *[sc("quorum-quiet", sec, _elected(epoch), broker=node, event="kraft_active_controller", controller_id=node,
         controller_epoch=epoch) for sec, node, epoch in ((5, 100, 1), (300, 101, 2))],
    *[sc("quorumslow-quiet", sec, _elected(epoch), broker=node, event="kraft_active_controller", controller_id=node,
         controller_epoch=epoch) for sec, node, epoch in ((5, 100, 1), (700, 101, 2), (1500, 102, 3))],
]
REQUESTS = [
    req("qbd-fire", "LeaderAndIsr", "PLAINTEXT", 2500.0),
    req("qbd-quiet", "LeaderAndIsr", "CONTROLLER", 2500.0),
    req("qbd-quiet", "Produce", "PLAINTEXT", 3000.0),
    req("stale-fire", "UpdateMetadata", "CONTROLLER", 0.1, error=77),
    req("stale-quiet", "UpdateMetadata", "CONTROLLER", 0.1, error=0),
    *[req("staledup-fire", "LeaderAndIsr", "CONTROLLER", 0.1, error=77)] * 2,
]


@pytest.fixture(scope="module")
def found(spark):
    latency = LATENCY
    changes, requests = CHANGES, REQUESTS
    samples = [
        *ms("cpq-fire", "ControlPlaneRequestQueueSize", [18, 19, 20]),
        *ms("cpq-quiet", "ControlPlaneRequestQueueSize", [1, 20, 1]),
        *ms("rqs-fire", "RequestQueueSize", [480, 500]),
        *ms("rqs-override", "RequestQueueSize", [90, 95]),
        *ms("rqs-quiet", "RequestQueueSize", [480, 20]),
        # +Inf from a broken exporter (quality rules off): no "at least inf of 500 requests"
        *ms("rqsinf-quiet", "RequestQueueSize", [float("inf")] * 3),
        *ms("cpqinf-quiet", "ControlPlaneRequestQueueSize", [float("inf")] * 3),
        *ms("qbdm-fire", "RequestQueueSize", [490, 495]),
        *ms("qbdm-quiet", "RequestQueueSize", [490, 495]),
        *ms("qbdm-quiet", "ControlPlaneRequestQueueSize", [0, 0]),
        *ms("acc-fire", "AcceptorBlockedPercent", [0.4, 0.5], "OneMinuteRate", "PLAINTEXT"),
        *ms("accc-fire", "AcceptorBlockedPercent", [0, 10e9], "Count", "PLAINTEXT", step=20.0),
        *ms("acc-quiet", "AcceptorBlockedPercent", [0.0, 0.01], "OneMinuteRate", "PLAINTEXT"),
        *ms("acc-quiet", "AcceptorBlockedPercent", [0.9, 0.9], "MeanRate", "PLAINTEXT"),
        *ms("net-fire", "NetworkProcessorAvgIdlePercent", [0.05, 0.08]),
        *ms("netp-fire", "NetworkProcessorAvgIdlePercent", [5, 8]),
        *ms("net-quiet", "NetworkProcessorAvgIdlePercent", [0.8, 0.82]),
        *ms("net-quiet", "ControlPlaneNetworkProcessorAvgIdlePercent", [float("nan"), float("nan")]),
        *ms("rh-fire", "RequestHandlerAvgIdlePercent", [0.1, 0.15], "OneMinuteRate"),
        *ms("rhcp-fire", "ControlPlaneRequestHandlerAvgIdlePercent", [0.02, 0.03], "OneMinuteRate"),
        *ms("rh-quiet", "RequestHandlerAvgIdlePercent", [0.7, 0.75], "OneMinuteRate"),
        # a broker that just started: the meter has not ticked yet (OneMinuteRate 0) but Count says 80 % idle
        *ms("rhyoung-quiet", "RequestHandlerAvgIdlePercent", [0.0, 0.0], "OneMinuteRate", step=2.0),
        *ms("rhyoung-quiet", "RequestHandlerAvgIdlePercent", [0, 1.6e9], "Count", step=2.0),
        # a broker bounced inside the window: each incarnation's first sample has an unmarked meter (all 0)
        *ms("rhbounce-quiet", "RequestHandlerAvgIdlePercent", [0.0, 0.0], "OneMinuteRate", step=5.0),
        *ms("rhbounce-quiet", "RequestHandlerAvgIdlePercent", [0.0, 0.0], "Count", step=5.0),
        # the broker restarted inside the window: its Count restarted from 0 (a fraction over it means nothing)
        *ms("rhrestart-quiet", "RequestHandlerAvgIdlePercent", [0, 9.7e9, 0.5e9, 4.8e9], "Count", step=7.0),
        # the exact window fraction (Count: 5 % idle) wins over a lagging OneMinuteRate
        *ms("rhcount-fire", "RequestHandlerAvgIdlePercent", [0.9, 0.8], "OneMinuteRate"),
        *ms("rhcount-fire", "RequestHandlerAvgIdlePercent", [1e9, 1.5e9], "Count"),
        # killed and restarted between two samples: old file 4.38e9, new file 0 (dropped) then 4.80e9
        *ms("rhfile-quiet", "RequestHandlerAvgIdlePercent", [4.378e9, 0, 4.805e9], "Count", step=3.9,
            sources=["metrics-1.jsonl", "metrics-2.jsonl", "metrics-2.jsonl"]),
        # a restarted broker's first sample (Count 0: not marked yet) is no baseline
        *ms("rhfirst-quiet", "ControlPlaneRequestHandlerAvgIdlePercent", [0, 40.9e6], "Count", step=3.5),
        # a broker's start-up burst: two samples 5 s apart at 8% idle (its ratio covers only the seconds since it
        # started) is not sustained (min_span_s)
        *ms("netyoung-quiet", "NetworkProcessorAvgIdlePercent", [0.082, 0.083], step=5.0),
        *ms("rhyoung2-quiet", "RequestHandlerAvgIdlePercent", [0.12, 0.12], "OneMinuteRate", step=5.0),
        # a connection storm on a broker that lived 17 s: two samples 5 s apart, 30% of the time blocked (Count);
        # an incident signal fires however short (min_span_s is for the idle-ratio capacity rules)
        *ms("accyoung-fire", "AcceptorBlockedPercent", [0, 1.5e9], "Count", "PLAINTEXT", step=5.0),
        *ms("mal-fire", "MetadataApplyLagMs", [8000, 9000], broker=3),
        *ms("mal-quiet", "MetadataApplyLagMs", [10, 20], broker=3),
        # Apache Kafka 4.4.0 with its controller quorum paused 15 s: the lag read at scrape time, then applied again
        *ms("malspike-fire", "MetadataApplyLagMs", [2133, 13723, 271], broker=3),
        # the bulk of the controller's events wait seconds: its queue time's median
        *ms("ceq-fire", "EventQueueTimeMs", [1500, 2000], "50thPercentile", broker=1),
        *ms("ceq-quiet", "EventQueueTimeMs", [3, 5], "50thPercentile", broker=1),
        # Apache Kafka 3.9.1, the new controller of a healthy roll: one failover event of 1,520 ms is its reservoir's
        # 99th percentile for the next 59 events while their median is 5 ms
        *ms("ceqstale-quiet", "EventQueueTimeMs", [1520, 1520], "99thPercentile", broker=1),
        *ms("ceqstale-quiet", "EventQueueTimeMs", [6.5, 5.0], "50thPercentile", broker=1),
        # the active controller (node 100) counted one unclean election between two scrapes; two ELR elections
        *ms("ule-fire", "UncleanLeaderElectionsPerSec", [4, 5, 5], "Count", broker=100),
        *ms("ule-quiet", "UncleanLeaderElectionsPerSec", [4, 4, 4], "Count", broker=100),
        *ms("elr-fire", "ElectionFromEligibleLeaderReplicasPerSec", [0, 0, 2], "Count", broker=100),
        *ms("elr-quiet", "ElectionFromEligibleLeaderReplicasPerSec", [7, 0, 0], "Count", broker=100),  # a restart
        # RequestMetrics of LeaderAndIsr: a request completes (Count 3 -> 4) and the 99th percentile rises to 14 s
        *leader_and_isr("lait-fire", "TotalTimeMs", [40, 13973], [3, 4]),
        *leader_and_isr("lait-quiet", "TotalTimeMs", [40, 45], [3, 4]),
    ]
    lat_df = spark.createDataFrame(latency, CONTROL_REQUEST_LATENCY.to_spark())
    roll = _roll_inputs(samples)
    sc_df = spark.createDataFrame(changes, STATE_CHANGE_EVENTS.to_spark())
    req_df = spark.createDataFrame(requests, REQUEST_EVENTS.to_spark())
    ms_df = spark.createDataFrame(samples, METRIC_SAMPLES.to_spark())
    return (latency_candidates(lat_df.toArrow(), sc_df.toArrow(), CFG)
            + log_candidates(sc_df.toArrow(), req_df.toArrow(), CFG)
            + metric_candidates(metric_windows(ms_df.toArrow(), CFG), CFG)
            + detect_roll_too_fast(*roll, CFG))


# A ZooKeeper-mode cluster of three brokers, broker 1 the controller, scraped at 0, 10 and 20 s; broker 2 begins a
# controlled shutdown at 25 s. In roll-fire broker 3's replicas are not back in the ISR yet (broker 1 leads 4
# partitions without it: the last broker restarted too early); roll-quiet is the same roll, recovered.
_ROLL_HEALTHY = {"UnderReplicatedPartitions": 0, "UnderMinIsrPartitionCount": 0, "ActiveControllerCount": 0}


def _roll_rows(cluster: str, urp_on_1: int) -> list[tuple]:
    values = {(b, signal): v for b in (1, 2, 3) for signal, v in _ROLL_HEALTHY.items()}
    values[(1, "ActiveControllerCount")] = 1
    values[(1, "UnderReplicatedPartitions")] = urp_on_1
    rows = []
    for (b, signal), v in values.items():
        rows += ms(cluster, signal, [v] * 3, broker=b)
    rows += ms(cluster, "OfflinePartitionsCount", [0] * 3, broker=1)
    return rows


def _roll_inputs(samples: list[tuple]) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    rows = [*_roll_rows("roll-fire", 4), *_roll_rows("roll-quiet", 0)]
    samples.extend(rows)
    frame = pl.from_arrow(pa.Table.from_pylist([dict(zip(METRIC_SAMPLES.names, r, strict=True)) for r in rows],
                                               METRIC_SAMPLES.to_arrow()))
    stopped = _roll_rows("rollstop-quiet", 4)  # the same unhealthy cluster, stopped whole: not a roll
    rows += stopped
    samples.extend(stopped)
    stop = "Starting controlled shutdown"
    shutdowns = pl.DataFrame([{"cluster": c, "broker_id": 2, "ts": t(25), "message": stop}
                              for c in ("roll-fire", "roll-quiet")]
                             + [{"cluster": "rollstop-quiet", "broker_id": b, "ts": t(25 + b / 10), "message": stop}
                                for b in (1, 2, 3)],
                             schema={"cluster": pl.String, "broker_id": pl.Int32, "ts": pl.Datetime("us", "UTC"),
                                     "message": pl.String})
    ts = pl.Datetime("us", "UTC")
    requests = pl.DataFrame(schema={"cluster": pl.String, "broker_id": pl.Int32, "request": pl.String,
                                    "sent_ts": ts, "finished_ts": ts, "status": pl.String})
    alerts = pl.DataFrame(schema={"cluster": pl.String, "type": pl.String, "broker_id": pl.Int32,
                                  "started_at": ts, "resolved_at": ts})
    assert isinstance(frame, pl.DataFrame)
    return shutdowns, frame, requests, alerts


def of(found, cluster, type_):
    return [c for c in found if c["cluster"] == cluster and c["type"] == type_]


CASES = [
    ("DELAYED_LEADER_AND_ISR", "dl", 2),
    ("LEADER_AND_ISR_NOT_COMPLETED", "nc", 2),
    ("DELAYED_UPDATE_METADATA", "um", 2),
    ("DELAYED_LEADER_AND_ISR", "dlf", 2),
    ("DELAYED_LEADER_AND_ISR", "dln", 2),
    ("DELAYED_UPDATE_METADATA", "umf", 2),
    ("DELAYED_STOP_REPLICA", "sr", 2),
    ("LOCK_CONTENTION", "lock", 2),
    ("LOCK_CONTENTION", "lockf", 2),
    ("LOCK_CONTENTION", "lockm", 2),
    ("CONTROL_REQUEST_QUEUED_BEHIND_DATA", "qbd", 2),
    ("CONTROL_REQUEST_QUEUE_DELAY", "qbdm", 2),
    ("LEADER_AND_ISR_TOTAL_TIME_HIGH", "lait", 2),
    ("STALE_BROKER_EPOCH", "stale", 2),
    ("STALE_BROKER_EPOCH", "staledup", 2),
    ("CONTROL_PLANE_QUEUE_BACKLOG", "cpq", 2),
    ("REQUEST_QUEUE_SATURATED", "rqs", 2),
    ("REQUEST_QUEUE_SATURATED", "rqs-override", 2),
    ("ACCEPTOR_BLOCKED", "acc", 2),
    ("ACCEPTOR_BLOCKED", "accc", 2),
    ("ACCEPTOR_BLOCKED", "accyoung", 2),
    ("NETWORK_PROCESSOR_SATURATED", "net", 2),
    ("NETWORK_PROCESSOR_SATURATED", "netp", 2),
    ("REQUEST_HANDLER_SATURATED", "rh", 2),
    ("REQUEST_HANDLER_SATURATED", "rhcp", 2),
    ("REQUEST_HANDLER_SATURATED", "rhcount", 2),
    ("METADATA_APPLY_LAG", "mal", 3),
    ("METADATA_APPLY_LAG", "malspike", 3),
    ("CONTROLLER_EVENT_QUEUE_DELAY", "ceq", 1),
    ("BROKER_FENCED", "fence", 3),
    ("BROKER_HEARTBEAT_TIMEOUT", "hbt", 2),
    ("QUORUM_UNSTABLE", "quorum", None),
    ("UNCLEAN_LEADER_ELECTION", "ule", 100),
    ("LEADER_ELECTED_FROM_ELR", "elr", 100),
    ("ROLL_TOO_FAST", "roll", 2),
]


@pytest.mark.parametrize(("type_", "case", "broker"), CASES)
def test_detector_fires(found, type_, case, broker):
    cluster = case if case == "rqs-override" else f"{case}-fire"
    hits = of(found, cluster, type_)
    assert hits, f"{type_} did not fire for {cluster}"
    assert {h["broker_id"] for h in hits} == {broker}
    for h in hits:
        assert h["severity"] in ("warning", "critical")
        assert h["summary"]
        assert isinstance(h["evidence"], dict)


FIRE_ONLY = ("dln", "umf", "rqs-override", "lockf", "accc", "accyoung", "netp", "rhcp", "rhcount", "malspike")
QUIET_ONLY = {("REQUEST_HANDLER_SATURATED", c) for c in ("rhyoung", "rhbounce", "rhrestart", "rhfirst", "rhfile",
                                                          "rhyoung2")} | {("NETWORK_PROCESSOR_SATURATED", "netyoung")} \
    | {("REQUEST_QUEUE_SATURATED", "rqsinf"), ("CONTROL_PLANE_QUEUE_BACKLOG", "cpqinf")} \
    | {("DELAYED_UPDATE_METADATA", "umfo"), ("DELAYED_LEADER_AND_ISR", "dlno")} \
    | {("QUORUM_UNSTABLE", "quorumslow"), ("ROLL_TOO_FAST", "rollstop"), ("BROKER_FENCED", "fenceecho")} \
    | {("CONTROLLER_EVENT_QUEUE_DELAY", "ceqstale")}
QUIET = sorted({(ty, c) for ty, c, _ in CASES if c not in FIRE_ONLY} | QUIET_ONLY)


@pytest.mark.parametrize(("type_", "case"), QUIET)
def test_detector_quiet_on_healthy_input(found, type_, case):
    assert of(found, f"{case}-quiet", type_) == []


def test_every_alert_type_has_a_detector_case():

    assert {c[0] for c in CASES} == set(AlertType)


def test_a_fenced_broker_is_named_with_its_controller_and_unfencing(found):
    (hit,) = of(found, "fence-fire", "BROKER_FENCED")
    assert hit["summary"].startswith("Broker 3 was fenced by the active controller (node 100): no heartbeat")
    assert "it was unfenced again since" in hit["summary"]
    assert hit["evidence"]["controller"] == 100


def test_delayed_leader_and_isr_summary_is_actionable(found):
    (hit,) = of(found, "dl-fire", "DELAYED_LEADER_AND_ISR")
    assert hit["summary"] == ("LeaderAndIsr correlationId 17 from controller 1 took 13973 ms on broker 2: 6 ms from "
                              "the controller's send to the broker's Handling line (6 ms of it waiting for a lock), "
                              "13967 ms from Handling to its end")
    assert hit["value"] == 13973.0
    assert hit["severity"] == "warning"


def test_a_slow_handler_behind_a_working_control_plane_says_so():
    """Apache Kafka 3.9 with control.plane.listener.name: the request log shows 56 ms queued, 9.85 s in the handler
    (a topic creation on a saturated machine): the alert says where the time went, and that the queue was short."""
    r = {**dict(zip(CONTROL_REQUEST_LATENCY.names, lat("kip291", e2e=9913.0, proc=9860.0, lock=None), strict=True)),
         "broker_queue_ms": 56.0, "local_ms": 9854.0, "remote_ms": 0.0, "response_queue_ms": 0.1,
         "response_send_ms": 0.2, "served_ms": 9911.0, "listener": "CONTROLLER",
         "witnesses": "controller_log,broker_log,request_log"}
    table = pa.Table.from_pylist([r], schema=CONTROL_REQUEST_LATENCY.to_arrow())
    (hit,) = detect_delayed_leader_and_isr(ControlRequests.of(pl.DataFrame(pl.from_arrow(table))), DetectionConfig())
    assert hit["summary"] == ("LeaderAndIsr correlationId 17 from controller 1 took 9913 ms on broker 2: 56 ms in the "
                              "broker's request queue (listener CONTROLLER), 9854 ms in the handler")
    assert hit["evidence"]["local_ms"] == 9854.0


def test_delayed_leader_and_isr_leaves_out_the_wait_behind_the_previous_request():
    """A LeaderAndIsr queued 9.5 s at the controller behind the broker's previous request, 130 ms at the broker: the
    previous request's alert has the 9.5 s; this one is under the threshold."""
    rows = [dict(zip(CONTROL_REQUEST_LATENCY.names, lat("behind", e2e=9623.0, proc=124.0, cq=9493.0), strict=True)),
            dict(zip(CONTROL_REQUEST_LATENCY.names, lat("alone", e2e=9623.0, proc=9617.0), strict=True))]
    frame = pl.DataFrame(pl.from_arrow(pa.Table.from_pylist(rows, schema=CONTROL_REQUEST_LATENCY.to_arrow())))
    got = detect_delayed_leader_and_isr(ControlRequests.of(frame), DetectionConfig())
    assert [h["cluster"] for h in got] == ["alone"]
    # its time, split, counts the wait at the controller once: 9493 + 6 + 124 = the 9623 ms from its Sending line
    behind = {**rows[0], "queue_ms": 9499.0}
    assert time_split(behind) == ("9493 ms queued at the controller behind the broker's previous request, 6 ms from "
                                  "the controller's send to the broker's Handling line (1 ms of it waiting for a "
                                  "lock), 124 ms from Handling to its end")


def test_lock_contention_counts_partition_map_lock_waits_inside_the_request(found):
    (hit,) = of(found, "lockm-fire", "LOCK_CONTENTION")
    assert hit["value"] == 1602.0  # 2 ms replicaStateChangeLock + 900 + 700 ms partitionMapLock
    assert "1600 ms for the replica fetchers' partitionMapLock" in hit["summary"]


def test_meter_semantics(found):
    (count_based,) = of(found, "accc-fire", "ACCEPTOR_BLOCKED")
    assert count_based["value"] == pytest.approx(0.5)  # 10e9 ns blocked over 20 s
    (percent,) = of(found, "netp-fire", "NETWORK_PROCESSOR_SATURATED")
    assert percent["value"] == pytest.approx(0.065)  # 5 and 8 on a 0..100 scale
    assert percent["severity"] == "critical"
    (exact,) = of(found, "rhcount-fire", "REQUEST_HANDLER_SATURATED")
    assert exact["value"] == pytest.approx(0.05)  # 0.5e9 ns idle over 10 s, not the stale OneMinuteRate
    (cp,) = of(found, "rhcp-fire", "REQUEST_HANDLER_SATURATED")
    assert cp["listener"] == "control-plane"


# What each firing must produce: {(severity, value, threshold)} over its candidates (sliding windows holding different
# samples are different observations). Values in the rule's unit: ms, fractions 0..1, requests, rejections.
QUALITY = {
    ("DELAYED_LEADER_AND_ISR", "dl"): {("warning", 13973.0, 5000.0)},  # send -> finish
    ("DELAYED_LEADER_AND_ISR", "dlf"): {("warning", 6000.0, 5000.0)},  # still running after 6 s
    ("DELAYED_LEADER_AND_ISR", "dln"): {("critical", 120000.0, 5000.0)},  # reported, then the 120 s timeout
    ("LEADER_AND_ISR_NOT_COMPLETED", "nc"): {("critical", 120000.0, 120000.0)},
    ("DELAYED_UPDATE_METADATA", "um"): {("warning", 9000.0, 5000.0)},
    ("DELAYED_UPDATE_METADATA", "umf"): {("critical", 34000.0, 5000.0)},  # 35 s running, 1 s of it queued
    ("DELAYED_STOP_REPLICA", "sr"): {("warning", 9000.0, 5000.0)},
    ("LOCK_CONTENTION", "lock"): {("warning", 4000.0, 1000.0)},
    ("LOCK_CONTENTION", "lockf"): {("warning", 3900.0, 1000.0)},  # fetcher-driven: the handling time
    ("LOCK_CONTENTION", "lockm"): {("warning", 1602.0, 1000.0)},
    ("CONTROL_REQUEST_QUEUED_BEHIND_DATA", "qbd"): {("critical", 2500.0, 100.0)},
    ("CONTROL_REQUEST_QUEUE_DELAY", "qbdm"): {("warning", 490.0, 400.0)},  # 80 % of 500
    ("LEADER_AND_ISR_TOTAL_TIME_HIGH", "lait"): {("warning", 13973.0, 5000.0)},  # its 99th percentile
    ("STALE_BROKER_EPOCH", "stale"): {("warning", 2.0, 1.0)},  # a LeaderAndIsr (its log line), an UpdateMetadata (77)
    ("STALE_BROKER_EPOCH", "staledup"): {("warning", 1.0, 1.0)},  # one rejection, two witnesses, each shipped twice
    # 18, 19, 20 of 20 (level 10): every window's lowest sample of its run, 18/20 and 19/20 >= 90 %
    ("CONTROL_PLANE_QUEUE_BACKLOG", "cpq"): {("critical", 18.0, 10.0), ("critical", 19.0, 10.0)},
    ("REQUEST_QUEUE_SATURATED", "rqs"): {("critical", 480.0, 400.0)},  # 480/500 = 96 %
    ("REQUEST_QUEUE_SATURATED", "rqs-override"): {("warning", 90.0, 80.0)},  # queued.max.requests 100 there
    ("ACCEPTOR_BLOCKED", "acc"): {("critical", 0.45, 0.05)},
    ("ACCEPTOR_BLOCKED", "accc"): {("critical", 0.5, 0.05)},  # 10e9 ns blocked over 20 s
    ("ACCEPTOR_BLOCKED", "accyoung"): {("critical", 0.3, 0.05)},  # 1.5e9 ns over 5 s
    ("NETWORK_PROCESSOR_SATURATED", "net"): {("critical", 0.065, 0.3)},
    ("NETWORK_PROCESSOR_SATURATED", "netp"): {("critical", 0.065, 0.3)},
    ("REQUEST_HANDLER_SATURATED", "rh"): {("warning", 0.125, 0.3)},
    ("REQUEST_HANDLER_SATURATED", "rhcp"): {("critical", 0.025, 0.3)},
    ("REQUEST_HANDLER_SATURATED", "rhcount"): {("critical", 0.05, 0.3)},
    ("METADATA_APPLY_LAG", "mal"): {("warning", 9000.0, 5000.0)},
    ("METADATA_APPLY_LAG", "malspike"): {("warning", 13723.0, 5000.0)},
    ("CONTROLLER_EVENT_QUEUE_DELAY", "ceq"): {("warning", 1750.0, 1000.0)},
    ("BROKER_FENCED", "fence"): {("critical", 1.0, 1.0)},
    ("ROLL_TOO_FAST", "roll"): {("warning", 1.0, 1.0)},
    ("BROKER_HEARTBEAT_TIMEOUT", "hbt"): {("warning", 3.0, 1.0)},
    ("QUORUM_UNSTABLE", "quorum"): {("warning", 3.0, 3.0)},  # three elections in 35 s
    ("UNCLEAN_LEADER_ELECTION", "ule"): {("critical", 1.0, 1.0)},
    ("LEADER_ELECTED_FROM_ELR", "elr"): {("warning", 2.0, 1.0)},
}


@pytest.mark.parametrize(("type_", "case"), sorted(QUALITY))
def test_detector_fires_with_its_severity_value_and_threshold(found, type_, case):
    cluster = case if case == "rqs-override" else f"{case}-fire"
    got = {(h["severity"], round(h["value"], 6), h["threshold"]) for h in of(found, cluster, type_)}
    assert got == QUALITY[(type_, case)]


def test_every_firing_case_has_its_quality_asserted():
    assert {(ty, c) for ty, c, _ in CASES} == set(QUALITY)


def test_the_state_change_spans_hold_every_line_the_latency_rules_read():
    """The pairing reads only `state_change_spans` of state_change_events (a day is millions of lines): over the
    lines inside them the latency rules find exactly what they find over all of them."""
    latency = pa.Table.from_pylist([dict(zip(CONTROL_REQUEST_LATENCY.names, r, strict=True)) for r in LATENCY],
                                   schema=CONTROL_REQUEST_LATENCY.to_arrow())
    changes = pa.Table.from_pylist([dict(zip(STATE_CHANGE_EVENTS.names, r, strict=True)) for r in CHANGES],
                                   schema=STATE_CHANGE_EVENTS.to_arrow())
    spans = state_change_spans(latency, CFG)
    stamp = pa.timestamp("us", "UTC")
    inside = functools.reduce(pc.or_, [
        pc.and_(pc.equal(changes["cluster"], c), pc.and_(pc.greater_equal(changes["ts"], pa.scalar(lo, stamp)),
                                                         pc.less_equal(changes["ts"], pa.scalar(hi, stamp))))
        for c, lo, hi in spans])
    kept = changes.filter(inside)
    assert 0 < kept.num_rows < changes.num_rows  # the election 500 s after nc-fire's send lies outside
    assert latency_candidates(latency, kept, CFG) == latency_candidates(latency, changes, CFG)
    nc = next(s for s in spans if s[0] == "nc-fire")
    assert (nc[1], nc[2]) == (t(1), t(1) + timedelta(seconds=CFG.never_completed_timeout_s))


def test_quorum_elections_before_the_batch_count_once_each():
    """Two elections read back from state_change_events (one of them the batch's own, committed) and the batch's
    two: three elections within the window, one alert for the cluster."""
    batch = [sc("c", sec, _elected(e), broker=n, event="kraft_active_controller", controller_id=n,
                controller_epoch=e) for sec, n, e in ((400, 101, 7), (410, 102, 8))]
    earlier = [sc("c", 100, _elected(6), broker=100, event="kraft_active_controller", controller_id=100,
                  controller_epoch=6), batch[0]]
    frame = functools.partial(pa.Table.from_pylist, schema=STATE_CHANGE_EVENTS.to_arrow())
    rows = [dict(zip(STATE_CHANGE_EVENTS.names, r, strict=True)) for r in batch]
    before = [dict(zip(STATE_CHANGE_EVENTS.names, r, strict=True)) for r in earlier]
    got = log_candidates(frame(rows), None, CFG, frame(before).select(ELECTION_COLUMNS))
    (alert,) = [c for c in got if c["type"] == "QUORUM_UNSTABLE"]
    assert (alert["value"], alert["severity"], alert["broker_id"]) == (3.0, "warning", None)
    assert any("node 102 at epoch 8" in e for e in alert["evidence"]["elections"])
    assert log_candidates(frame(rows), None, CFG, None) == []  # the batch alone: two elections
    # an election that arrives after later ones (its log shipped late) counts with them
    late = [sc("d", 200, _elected(5), broker=100, event="kraft_active_controller", controller_id=100,
               controller_epoch=5)]
    later = [sc("d", sec, _elected(e), broker=n, event="kraft_active_controller", controller_id=n,
                controller_epoch=e) for sec, n, e in ((100, 101, 4), (300, 102, 6))]
    got = log_candidates(frame([dict(zip(STATE_CHANGE_EVENTS.names, r, strict=True)) for r in late]), None, CFG,
                         frame([dict(zip(STATE_CHANGE_EVENTS.names, r, strict=True))
                                for r in later]).select(ELECTION_COLUMNS))
    assert [c["value"] for c in got if c["type"] == "QUORUM_UNSTABLE"] == [3.0]


def test_a_roll_too_fast_names_what_was_not_ok_just_before_the_shutdown(found):
    (hit,) = of(found, "roll-fire", "ROLL_TOO_FAST")
    assert hit["summary"].startswith("Broker 2 began a controlled shutdown while the cluster was not safe to roll "
                                     "(verdict wait just before): wait UNDER_REPLICATED: broker 1: 4 under-replicated")
    assert hit["evidence"]["verdict"] == "wait"



def test_a_shutdown_echo_read_back_from_before_the_batch_is_no_fencing():
    """The granted shutdown reached an earlier micro-batch than its echo: the rule gets it read back."""
    fence = pl.DataFrame([dict(zip(STATE_CHANGE_EVENTS.names, sc("echo", 10, _FENCE, broker=100,
                                                                 event="kraft_broker_fenced", target_broker_id=3,
                                                                 controller_id=100), strict=True))])
    granted = pl.DataFrame({"cluster": ["echo"], "ts": [t(0)], "target_broker_id": [3]})
    no_requests = pl.DataFrame(schema=pl.from_arrow(REQUEST_EVENTS.to_arrow().empty_table()).schema)
    assert detect_broker_fenced(LogRows(fence, no_requests, granted=granted), CFG) == []
    late = granted.with_columns(ts=pl.lit(t(-60)))
    # a minute before: a fencing of its own
    assert len(detect_broker_fenced(LogRows(fence, no_requests, granted=late), CFG)) == 1
