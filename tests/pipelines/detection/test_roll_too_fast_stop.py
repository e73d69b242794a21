"""ROLL_TOO_FAST and a cluster stopped whole after one of its brokers was already down (pure polars): the brokers
still running stopping together is no roll; one of them stopping alone is."""

from __future__ import annotations

import datetime as dt

import polars as pl

from pipelines.detection.config import DetectionConfig
from pipelines.detection.roll_detectors import detect_roll_too_fast

T0 = dt.datetime(2026, 11, 28, 19, 0, tzinfo=dt.UTC)
TS = pl.Datetime("us", "UTC")
STOP = "Starting controlled shutdown"
NO_REQUESTS = pl.DataFrame(schema={"cluster": pl.String, "broker_id": pl.Int32, "request": pl.String,
                                   "sent_ts": TS, "finished_ts": TS, "status": pl.String})
NO_ALERTS = pl.DataFrame(schema={"cluster": pl.String, "type": pl.String, "broker_id": pl.Int32,
                                 "started_at": TS, "resolved_at": TS})


def samples(killed_after_s: float = 10.0, last_s: float = 60.0, step_s: float = 5.0) -> pl.DataFrame:
    """Three brokers scraped every `step_s`; broker 3 killed after `killed_after_s` (its replicas under-replicated on
    broker 1 since), broker 1 the controller."""
    rows = []
    t = 0.0
    while t <= last_s:
        for b in (1, 2, 3):
            if b == 3 and t > killed_after_s:
                continue
            urp = 3.0 if b == 1 and t > killed_after_s else 0.0
            for signal, v in (("UnderReplicatedPartitions", urp), ("UnderMinIsrPartitionCount", 0.0),
                              ("ActiveControllerCount", 1.0 if b == 1 else 0.0), ("OfflinePartitionsCount", 0.0)):
                rows.append({"cluster": "c", "broker_id": b, "ts": T0 + dt.timedelta(seconds=t), "signal": signal,
                             "attribute": "Value", "value": v})
        t += step_s
    return pl.DataFrame(rows, schema={"cluster": pl.String, "broker_id": pl.Int32, "ts": TS, "signal": pl.String,
                                      "attribute": pl.String, "value": pl.Float64})


def shutdowns(*at: tuple[int, float]) -> pl.DataFrame:
    return pl.DataFrame([{"cluster": "c", "broker_id": b, "ts": T0 + dt.timedelta(seconds=s), "message": STOP}
                         for b, s in at], schema={"cluster": pl.String, "broker_id": pl.Int32, "ts": TS,
                                                  "message": pl.String})


def judge(stops: pl.DataFrame) -> list[dict[str, object]]:
    return detect_roll_too_fast(stops, samples(), NO_REQUESTS, NO_ALERTS, DetectionConfig())


ISR_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "cluster": pl.String, "broker_id": pl.Int32, "ts": TS, "event": pl.String, "topic": pl.String,
    "partition": pl.Int32, "message": pl.String}


def running(urp: float) -> pl.DataFrame:
    """All three brokers running; broker 1 counts `urp` under-replicated partitions since t=10 s."""
    return samples(killed_after_s=1000.0).with_columns(
        value=pl.when((pl.col("broker_id") == 1) & (pl.col("signal") == "UnderReplicatedPartitions")
                      & (pl.col("ts") > T0 + dt.timedelta(seconds=10))).then(urp).otherwise(pl.col("value")))


def judged_after_broker_3(urp: float, isr: pl.DataFrame) -> list[dict[str, object]]:
    """Broker 3 stopped at t=8 s and came back; broker 2 begins its shutdown at t=62 s; `isr`: the leaders' lines."""
    stops = pl.DataFrame([{"cluster": "c", "broker_id": 3, "ts": T0 + dt.timedelta(seconds=8)}],
                         schema={"cluster": pl.String, "broker_id": pl.Int32, "ts": TS})
    return detect_roll_too_fast(shutdowns((2, 62.0)), running(urp), NO_REQUESTS, NO_ALERTS, DetectionConfig(),
                                stops=stops, isr=isr)


def test_the_rest_of_a_cluster_stopped_together_after_a_broker_was_killed_is_no_roll() -> None:
    assert judge(shutdowns((1, 62.0), (2, 62.1))) == []


def test_the_rest_stopped_together_soon_after_a_broker_stopped_with_a_line_is_no_roll() -> None:
    """A scenario SIGTERMed broker 3 (its lines say so) and, 14 s later, brokers 1 and 2 together: broker 3's last
    scrape is still within the silence bound, but its own stop line says it is gone: the cluster stopped whole."""
    stopped = samples(killed_after_s=48.0)  # broker 3's last scrape at t=45 s, its stop at t=48 s
    stops = pl.concat([shutdowns((3, 48.0)), shutdowns((1, 62.0), (2, 62.01))])
    assert detect_roll_too_fast(shutdowns((1, 62.0), (2, 62.01)), stopped, NO_REQUESTS, NO_ALERTS,
                                DetectionConfig(), stops=stops.drop("message")) == []
    # without broker 3's line, its silence is too short to tell: judged as a roll
    assert detect_roll_too_fast(shutdowns((1, 62.0), (2, 62.01)), stopped, NO_REQUESTS, NO_ALERTS,
                                DetectionConfig(), stops=shutdowns((1, 62.0), (2, 62.01)).drop("message")) != []


def test_one_running_broker_stopping_alone_while_replicas_are_missing_is_too_fast() -> None:
    [c] = judge(shutdowns((2, 62.0)))
    assert (c["type"], c["broker_id"]) == ("ROLL_TOO_FAST", 2)
    assert "UNDER_REPLICATED" in str(c["summary"])


def test_a_broker_that_logs_only_its_sigterm_is_judged_and_one_stops_two_lines_are_one_shutdown() -> None:
    """Apache Kafka 4.4.0 in a timer roll: brokers 1 and 2 logged only `Terminating process due to signal SIGTERM`
    (no `Beginning controlled shutdown.`), broker 3 both, 15 ms apart: each stop is one shutdown, judged."""
    sigterm = "Terminating process due to signal SIGTERM"
    only = pl.DataFrame([{"cluster": "c", "broker_id": 2, "ts": T0 + dt.timedelta(seconds=62), "message": sigterm}],
                        schema={"cluster": pl.String, "broker_id": pl.Int32, "ts": TS, "message": pl.String})
    [c] = judge(only)
    assert (c["type"], c["broker_id"]) == ("ROLL_TOO_FAST", 2)
    both = pl.concat([only, shutdowns((2, 62.015))])
    assert len(judge(both)) == 1
    # a controller's SIGTERM (its log names no broker) is no broker's shutdown
    assert judge(only.with_columns(broker_id=pl.lit(None, pl.Int32))) == []


def test_brokers_sigtermed_together_stop_the_cluster_though_one_alone_logged_its_controlled_shutdown() -> None:
    """Apache Kafka 4.4.0, a KRaft cluster stopped: all three brokers log `Terminating process due to signal
    SIGTERM` within 0.2 s, only one `Beginning controlled shutdown.`: the SIGTERMs say the others stop too."""
    whole = samples(killed_after_s=100.0)  # all three running, broker 1 reporting under-replicated partitions
    whole = whole.with_columns(pl.when((pl.col("broker_id") == 1) & (pl.col("signal") == "UnderReplicatedPartitions"))
                               .then(2.0).otherwise(pl.col("value")).alias("value"))
    one = shutdowns((3, 62.0))
    sigterms = pl.DataFrame([{"cluster": "c", "broker_id": b, "ts": T0 + dt.timedelta(seconds=61.98 + b / 10)}
                             for b in (1, 2, 3)], schema={"cluster": pl.String, "broker_id": pl.Int32, "ts": TS})
    assert detect_roll_too_fast(one, whole, NO_REQUESTS, NO_ALERTS, DetectionConfig(), stops=sigterms) == []
    assert detect_roll_too_fast(one, whole, NO_REQUESTS, NO_ALERTS, DetectionConfig()) != []  # without them: a roll


def test_a_healthy_roll_gated_on_under_replication_raises_nothing() -> None:
    """A roll gated as Strimzi gates it (under-replicated partitions back to 0) on Apache Kafka 3.9.1 with Kafka's
    shipped log4j levels: leadership still away from the preferred replicas, and the UpdateMetadata for 0 partitions
    a broker's start brings (answered without a line of its own), are no roll too fast."""
    healthy = samples(killed_after_s=1000.0)  # every broker running, nothing under-replicated
    imbalance = healthy.filter(pl.col("broker_id") == 1).unique("ts").with_columns(
        signal=pl.lit("PreferredReplicaImbalanceCount"), value=pl.lit(21.0))
    requests = pl.DataFrame([{"cluster": "c", "broker_id": 2, "request": "UpdateMetadata",
                              "sent_ts": T0 + dt.timedelta(seconds=-85), "finished_ts": None,
                              "status": "completed"}],
                            schema={"cluster": pl.String, "broker_id": pl.Int32, "request": pl.String,
                                    "sent_ts": TS, "finished_ts": TS, "status": pl.String})
    got = detect_roll_too_fast(shutdowns((3, 60.0)), pl.concat([healthy, imbalance]), requests, NO_ALERTS,
                               DetectionConfig())
    assert got == []
    stuck = requests.with_columns(status=pl.lit("in_flight"))  # a request really in flight still is one
    (c,) = detect_roll_too_fast(shutdowns((3, 60.0)), healthy, stuck, NO_ALERTS, DetectionConfig())
    assert "CONTROL_REQUESTS" in str(c["summary"])


def test_a_planewatch_roll_gate_that_said_safe_just_before_vouches_for_the_shutdown() -> None:
    """The last scrape before broker 2's shutdown still shows broker 3's replicas catching up (3 under-replicated on
    broker 1); `planewatch roll`'s gate read the cluster itself 2 s before the shutdown and said safe: the fresher
    witness wins. A gate about another node, a gate that said wait, or one too long before vouch for nothing."""

    def gate(node: int, verdict: str, before_s: float) -> pl.DataFrame:
        return pl.DataFrame([{"cluster": "c", "node": node, "verdict": verdict,
                              "at": T0 + dt.timedelta(seconds=62.0 - before_s)}],
                            schema={"cluster": pl.String, "node": pl.Int32, "verdict": pl.String, "at": TS})

    def judged(gates: pl.DataFrame | None) -> list[dict[str, object]]:
        return detect_roll_too_fast(shutdowns((2, 62.0)), samples(), NO_REQUESTS, NO_ALERTS, DetectionConfig(),
                                    gates=gates)

    assert len(judged(None)) == 1
    assert judged(gate(2, "safe", 2.0)) == []
    assert len(judged(gate(1, "safe", 2.0))) == 1
    assert len(judged(gate(2, "wait", 2.0))) == 1
    assert len(judged(gate(2, "safe", 600.0))) == 1


def test_the_leaders_isr_lines_after_their_last_scrape_count_the_partitions_back_in_sync() -> None:
    """Broker 3 was stopped (t=8 s) and restarted; broker 1's last scrape (t=60 s) counts 3 partitions
    under-replicated; it logs `ISR updated to 1,2,3` for all three at t=61 s, and broker 2 begins its controlled
    shutdown at t=62 s (a roll gated on the Admin API's ISRs, as Strimzi gates): not too fast. Two of three back, a
    line without broker 3, or lines older than the scrape leave it too fast."""
    def isr(*lines: tuple[float, int, str], leader: int = 1) -> pl.DataFrame:
        return pl.DataFrame([{"cluster": "c", "broker_id": leader, "ts": T0 + dt.timedelta(seconds=at),
                              "event": "isr_updated", "topic": "roll", "partition": p,
                              "message": f"ISR updated to {members}  and version updated to 9"}
                             for at, p, members in lines], schema=ISR_SCHEMA)

    def judged(lines: pl.DataFrame) -> list[dict[str, object]]:
        return judged_after_broker_3(3.0, lines)

    assert len(judged(isr())) == 1  # the scrape alone: too fast
    assert judged(isr((61.0, 0, "1,2,3"), (61.0, 1, "1,3,2"), (61.1, 2, "1,2,3"))) == []
    assert len(judged(isr((61.0, 0, "1,2,3"), (61.0, 1, "1,3,2")))) == 1
    assert len(judged(isr((61.0, 0, "1,2"), (61.0, 1, "1,2"), (61.1, 2, "1,2")))) == 1
    assert len(judged(isr((59.0, 0, "1,2,3"), (59.0, 1, "1,3,2"), (59.1, 2, "1,2,3")))) == 1
    # leadership moved: another leader logs them back after broker 1's last scrape
    assert judged(isr((61.0, 0, "2,1,3"), (61.0, 1, "2,3,1"), (61.1, 2, "2,1,3"), leader=2)) == []
    # a partition's latest line is what counts: back in, then out again
    assert len(judged(isr((61.0, 0, "1,2,3"), (61.0, 1, "1,3,2"), (61.1, 2, "1,2,3"), (61.5, 2, "1,2")))) == 1


def test_the_controllers_unfence_lines_after_its_last_scrape_count_the_brokers_unfenced() -> None:
    """KRaft: the active controller's last scrape (t=60 s) counts broker 3 fenced (it restarted); its controller.log
    grants broker 3's unfencing at t=61 s; broker 2 begins its controlled shutdown at t=62 s: not too fast. Without
    the line, too fast."""
    rows = []
    for t in range(0, 61, 5):
        at = T0 + dt.timedelta(seconds=t)
        for b in (1, 2, 3, 100):
            rows.append({"cluster": "c", "broker_id": b, "ts": at, "signal": "RaftCurrentLeader", "attribute": "Value",
                         "value": 100.0})
            if b != 100:
                for sig in ("UnderReplicatedPartitions", "UnderMinIsrPartitionCount"):
                    rows.append({"cluster": "c", "broker_id": b, "ts": at, "signal": sig, "attribute": "Value",
                                 "value": 0.0})
        for sig, v in (("ActiveControllerCount", 1.0), ("OfflinePartitionsCount", 0.0),
                       ("FencedBrokerCount", 1.0 if t >= 30 else 0.0)):
            rows.append({"cluster": "c", "broker_id": 100, "ts": at, "signal": sig, "attribute": "Value", "value": v})
    kraft = pl.DataFrame(rows, schema={"cluster": pl.String, "broker_id": pl.Int32, "ts": TS, "signal": pl.String,
                                       "attribute": pl.String, "value": pl.Float64})
    stops = pl.DataFrame([{"cluster": "c", "broker_id": 3, "ts": T0 + dt.timedelta(seconds=28)}],
                         schema={"cluster": pl.String, "broker_id": pl.Int32, "ts": TS})
    grant = pl.DataFrame([{"cluster": "c", "broker_id": 100, "ts": T0 + dt.timedelta(seconds=61),
                           "event": "kraft_broker_unfenced", "topic": None, "partition": None,
                           "target_broker_id": 3, "message": "The request from broker 3 to unfence has been granted"}],
                         schema={"cluster": pl.String, "broker_id": pl.Int32, "ts": TS, "event": pl.String,
                                 "topic": pl.String, "partition": pl.Int32, "target_broker_id": pl.Int32,
                                 "message": pl.String})

    def judged(lines: pl.DataFrame) -> list[dict[str, object]]:
        return detect_roll_too_fast(shutdowns((2, 62.0)), kraft, NO_REQUESTS, NO_ALERTS, DetectionConfig(), stops=stops,
                                    isr=lines)

    (c,) = judged(grant.clear())
    assert "FENCED_BROKERS" in str(c["summary"])
    assert judged(grant) == []

    # Kafka 4.1+ (KIP-1131): the controller's per-broker registration state says broker 3 FENCED up to its last
    # scrape; the same grant line after it makes broker 3 active
    states = pl.DataFrame([{"cluster": "c", "broker_id": 100, "ts": T0 + dt.timedelta(seconds=t),
                            "signal": "BrokerRegistrationState", "attribute": "Value", "subject": b,
                            "value": 10.0 if b == 3 and t >= 30 else 30.0}
                           for t in range(0, 61, 5) for b in (1, 2, 3)],
                          schema={"cluster": pl.String, "broker_id": pl.Int32, "ts": TS, "signal": pl.String,
                                  "attribute": pl.String, "subject": pl.Int32, "value": pl.Float64})
    kraft = pl.concat([kraft, states], how="diagonal_relaxed")
    (c,) = judged(grant.clear())
    assert "broker 3 is FENCED on the controller" in str(c["summary"])
    assert judged(grant) == []


def test_kraft_leaders_that_apply_the_isr_from_the_metadata_log_witness_it_too() -> None:
    """Kafka 4.4.0, a roll gated as Strimzi gates it: the restarted broker's ISR expansion reached its leaders
    through the metadata log before the AlterPartition answer, so they logged `Skipped the become-leader state
    change ... ISR [1,2,3]` (state-change.log) and no `ISR updated to` (seen: 4 of 5 partitions; a false
    ROLL_TOO_FAST before these lines counted). A new leader's `starts at leader epoch ... ISR [..]` counts too."""
    skipped = ("Skipped the become-leader state change for roll-{p} with topic id Some(OJwNLNfWS2u7qTa8C7fguw), "
               "partition registration PartitionRegistration(replicas=[1, 2, 3], directories=[a, b, c], "
               "isr=[{spaced}], removingReplicas=[], addingReplicas=[], elr=[], lastKnownElr=[], leader=1, "
               "leaderRecoveryState=RECOVERED, leaderEpoch=0, partitionEpoch=2) and isNew=false since it is already "
               "the leader with leader epoch 0. Current high watermark 2779, ISR [{isr}], adding replicas [] and "
               "removing replicas [].")
    started = ("Leader roll-{p} with topic id Some(OJwNLNfWS2u7qTa8C7fguw) starts at leader epoch 1 from offset 2860 "
               "with partition epoch 3, high watermark 2860, ISR [{isr}], adding replicas [] and removing replicas [] "
               ". Previous leader Some(2) and previous leader epoch was 0.")

    def lines(*rows: tuple[str, int, str]) -> pl.DataFrame:
        return pl.DataFrame([{"cluster": "c", "broker_id": 1, "ts": T0 + dt.timedelta(seconds=61), "event": event,
                              "topic": "roll", "partition": p,
                              "message": (skipped if event == "kraft_leader_unchanged" else started).format(
                                  p=p, isr=isr, spaced=isr.replace(",", ", "))}
                             for event, p, isr in rows], schema=ISR_SCHEMA)

    def judged(isr: pl.DataFrame) -> list[dict[str, object]]:
        return judged_after_broker_3(2.0, isr)

    assert len(judged(lines())) == 1
    assert judged(lines(("kraft_leader_unchanged", 3, "1,2,3"), ("leader_started", 0, "1,3"))) == []
    assert len(judged(lines(("kraft_leader_unchanged", 3, "1,2"), ("leader_started", 0, "1,3")))) == 1
