"""The roll-safety verdict (pure): each check on a ZooKeeper-mode and a KRaft cluster, stale and missing data."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import polars as pl
import pytest

from pipelines.roll_safety import RollThresholds, Verdict, roll_verdict
from schemas.roll_safety import EXIT_CODES, CheckStatus, RollCheck, RollVerdict

NOW = dt.datetime(2026, 11, 28, 16, 0, 0, tzinfo=dt.UTC)
TS = pl.Datetime("us", "UTC")
BROKERS = (1, 2, 3)
CONTROLLER = 100


def healthy(mode: str) -> dict[tuple[int, str], float]:
    """(node, signal) -> value of a healthy cluster: ZooKeeper mode (broker 1 the controller) or KRaft (node 100)."""
    out: dict[tuple[int, str], float] = {}
    for b in BROKERS:
        out[(b, "UnderReplicatedPartitions")] = 0
        out[(b, "UnderMinIsrPartitionCount")] = 0
    if mode == "zookeeper":
        for b in BROKERS:
            out[(b, "ActiveControllerCount")] = 1 if b == 1 else 0
        out[(1, "OfflinePartitionsCount")] = 0
        out[(1, "PreferredReplicaImbalanceCount")] = 0
        out[(1, "EventQueueTimeMs")] = 3
    else:
        for n in (*BROKERS, CONTROLLER):
            out[(n, "RaftCurrentLeader")] = CONTROLLER
        for b in BROKERS:
            out[(b, "MetadataApplyLagMs")] = 120
        out[(CONTROLLER, "LastAppliedRecordLagMs")] = 80
        out[(CONTROLLER, "ActiveControllerCount")] = 1
        out[(CONTROLLER, "OfflinePartitionsCount")] = 0
        out[(CONTROLLER, "FencedBrokerCount")] = 0
        out[(CONTROLLER, "PreferredReplicaImbalanceCount")] = 0
        out[(CONTROLLER, "EventQueueTimeMs")] = 3
    return out


def latest(values: Mapping[tuple[int, str], float], ages: Mapping[int, float] | None = None) -> pl.DataFrame:
    rows = [{"broker_id": n, "signal": s, "attribute": "50thPercentile" if s == "EventQueueTimeMs" else "Value",
             "value": float(v), "ts": NOW - dt.timedelta(seconds=(ages or {}).get(n, 5.0))}
            for (n, s), v in values.items()]
    return pl.DataFrame(rows, schema={"broker_id": pl.Int32, "signal": pl.String, "attribute": pl.String,
                                      "value": pl.Float64, "ts": TS})


NO_REQUESTS = pl.DataFrame(schema={"broker_id": pl.Int32, "request": pl.String, "sent_ts": TS, "finished_ts": TS,
                                   "status": pl.String})
NO_ALERTS = pl.DataFrame(schema={"type": pl.String, "broker_id": pl.Int32, "started_at": TS, "resolved_at": TS})


def verdict(values: Mapping[tuple[int, str], float], *, ages: Mapping[int, float] | None = None,
            in_flight: pl.DataFrame = NO_REQUESTS, alerts: pl.DataFrame = NO_ALERTS,
            th: RollThresholds | None = None) -> Verdict:
    return roll_verdict("c1", latest(values, ages), in_flight, alerts, NOW, th or RollThresholds())


def statuses(v: Verdict, check: RollCheck) -> set[CheckStatus]:
    return {r.status for r in v.reasons if r.check == check}


@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_a_healthy_cluster_is_safe(mode: str) -> None:
    v = verdict(healthy(mode))
    assert v.verdict == RollVerdict.safe, [r.text for r in v.reasons if r.status != CheckStatus.ok]
    assert v.mode == mode
    assert EXIT_CODES[v.verdict] == 0
    assert all(r.status in (CheckStatus.ok, CheckStatus.skipped) for r in v.reasons)
    if mode == "zookeeper":
        assert statuses(v, RollCheck.QUORUM_LEADER) == {CheckStatus.skipped}


# (mode, node, signal, value) -> the check it trips and the verdict
CASES = [
    ("zookeeper", 1, "OfflinePartitionsCount", 2, RollCheck.OFFLINE_PARTITIONS, RollVerdict.unsafe),
    ("kraft", CONTROLLER, "OfflinePartitionsCount", 2, RollCheck.OFFLINE_PARTITIONS, RollVerdict.unsafe),
    ("zookeeper", 2, "UnderMinIsrPartitionCount", 1, RollCheck.UNDER_MIN_ISR, RollVerdict.unsafe),
    ("kraft", 3, "UnderMinIsrPartitionCount", 4, RollCheck.UNDER_MIN_ISR, RollVerdict.unsafe),
    ("zookeeper", 3, "UnderReplicatedPartitions", 6, RollCheck.UNDER_REPLICATED, RollVerdict.wait),
    ("kraft", 1, "UnderReplicatedPartitions", 6, RollCheck.UNDER_REPLICATED, RollVerdict.wait),
    ("zookeeper", 2, "ActiveControllerCount", 1, RollCheck.ACTIVE_CONTROLLER, RollVerdict.unsafe),  # two
    ("zookeeper", 1, "ActiveControllerCount", 0, RollCheck.ACTIVE_CONTROLLER, RollVerdict.unsafe),  # none
    ("kraft", CONTROLLER, "ActiveControllerCount", 0, RollCheck.ACTIVE_CONTROLLER, RollVerdict.unsafe),
    ("kraft", 2, "RaftCurrentLeader", -1, RollCheck.QUORUM_LEADER, RollVerdict.wait),
    ("kraft", CONTROLLER, "FencedBrokerCount", 1, RollCheck.FENCED_BROKERS, RollVerdict.wait),
    ("kraft", 2, "MetadataApplyLagMs", 9000, RollCheck.METADATA_LAG, RollVerdict.wait),
    ("kraft", CONTROLLER, "LastAppliedRecordLagMs", 9000, RollCheck.METADATA_LAG, RollVerdict.wait),
    ("zookeeper", 1, "EventQueueTimeMs", 2500, RollCheck.CONTROLLER_EVENT_QUEUE, RollVerdict.wait),
    ("kraft", CONTROLLER, "EventQueueTimeMs", 2500, RollCheck.CONTROLLER_EVENT_QUEUE, RollVerdict.wait),
    ("zookeeper", 1, "PreferredReplicaImbalanceCount", 3, RollCheck.PREFERRED_LEADERS, RollVerdict.wait),
    ("kraft", CONTROLLER, "PreferredReplicaImbalanceCount", 3, RollCheck.PREFERRED_LEADERS, RollVerdict.wait),
]


@pytest.mark.parametrize(("mode", "node", "signal", "value", "check", "expected"), CASES)
def test_each_check_names_its_signal_value_threshold_and_age(mode: str, node: int, signal: str, value: float,
                                                             check: RollCheck, expected: RollVerdict) -> None:
    values = healthy(mode)
    values[(node, signal)] = value
    v = verdict(values)
    assert v.verdict == expected
    (bad,) = [r for r in v.reasons if r.check == check and r.status.value == expected.value]
    assert bad.value is not None
    assert bad.age_s == pytest.approx(5.0)
    if check is not RollCheck.ACTIVE_CONTROLLER and check is not RollCheck.QUORUM_LEADER:
        assert bad.signal == signal or check is RollCheck.METADATA_LAG
        assert bad.broker_id == node
        assert bad.threshold is not None
    assert EXIT_CODES[v.verdict] == 1


@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_a_stale_node_makes_the_verdict_unknown_never_safe(mode: str) -> None:
    v = verdict(healthy(mode), ages={3: 400.0})
    assert v.verdict == RollVerdict.unknown
    (stale,) = [r for r in v.reasons if r.status == CheckStatus.unknown]
    assert stale.check == RollCheck.NODES_FRESH
    assert stale.broker_id == 3
    assert EXIT_CODES[v.verdict] == 2
    assert verdict(healthy(mode), ages={3: 400.0}, th=RollThresholds(stale_after_s=600)).verdict == RollVerdict.safe


@pytest.mark.parametrize(("mode", "signal"), [("zookeeper", "UnderMinIsrPartitionCount"),
                                              ("zookeeper", "ActiveControllerCount"),
                                              ("kraft", "OfflinePartitionsCount"),
                                              ("kraft", "FencedBrokerCount"),
                                              ("kraft", "MetadataApplyLagMs")])
def test_a_required_signal_missing_is_unknown(mode: str, signal: str) -> None:
    values = {k: v for k, v in healthy(mode).items() if k[1] != signal and not (
        signal == "MetadataApplyLagMs" and k[1] == "LastAppliedRecordLagMs")}
    assert verdict(values).verdict == RollVerdict.unknown


def test_no_data_at_all_is_unknown() -> None:
    v = verdict({})
    assert v.verdict == RollVerdict.unknown
    assert v.mode == "unknown"


def test_an_optional_signal_missing_is_skipped() -> None:
    values = {k: v for k, v in healthy("zookeeper").items() if k[1] != "PreferredReplicaImbalanceCount"}
    v = verdict(values)
    assert v.verdict == RollVerdict.safe
    assert statuses(v, RollCheck.PREFERRED_LEADERS) == {CheckStatus.skipped}


@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_control_requests_in_flight_or_alerted_say_wait(mode: str) -> None:
    in_flight = pl.DataFrame([{"broker_id": 2, "request": "LeaderAndIsr", "sent_ts": NOW - dt.timedelta(seconds=12)},
                              {"broker_id": 3, "request": "LeaderAndIsr", "sent_ts": NOW - dt.timedelta(seconds=30),
                               "finished_ts": NOW - dt.timedelta(seconds=20)}],  # finished: not in flight
                             schema=NO_REQUESTS.schema)
    v = verdict(healthy(mode), in_flight=in_flight)
    assert v.verdict == RollVerdict.wait
    (r,) = [r for r in v.reasons if r.check == RollCheck.CONTROL_REQUESTS]
    assert "LeaderAndIsr to broker 2 has been in flight for 12 s" in r.text
    alerts = pl.DataFrame([{"type": "DELAYED_LEADER_AND_ISR", "broker_id": 1, "started_at": NOW}],
                          schema=NO_ALERTS.schema)
    assert verdict(healthy(mode), alerts=alerts).verdict == RollVerdict.wait
    resolved = alerts.with_columns(resolved_at=pl.lit(NOW - dt.timedelta(seconds=1)).cast(TS),
                                   started_at=pl.lit(NOW - dt.timedelta(seconds=60)).cast(TS))
    assert verdict(healthy(mode), alerts=resolved).verdict == RollVerdict.safe


@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_an_update_metadata_answered_without_a_line_is_not_in_flight(mode: str) -> None:
    """A broker's start brings an UpdateMetadata for 0 partitions that the broker does not log at Kafka's shipped
    levels; the pairing completes it, without a finish time, once a later request to the broker is handled. It was
    never a request to wait on (a healthy roll on 3.9.1 said ROLL_TOO_FAST over one "in flight for 145 s")."""
    silent = pl.DataFrame([{"broker_id": 2, "request": "UpdateMetadata", "sent_ts": NOW - dt.timedelta(seconds=145),
                            "status": "completed"}], schema=NO_REQUESTS.schema)
    assert verdict(healthy(mode), in_flight=silent).verdict == RollVerdict.safe
    pending = silent.with_columns(status=pl.lit("in_flight"))
    assert verdict(healthy(mode), in_flight=pending).verdict == RollVerdict.wait


def test_a_verdict_in_the_past_reads_the_inputs_as_they_stood() -> None:
    """ROLL_TOO_FAST judges the moment a shutdown began: later samples, finishes and resolutions do not count."""
    values = healthy("kraft")
    values[(1, "UnderReplicatedPartitions")] = 5
    v = roll_verdict("c1", pl.concat([latest(values, {1: 30.0}), latest(healthy("kraft"), {1: 2.0})]),
                     NO_REQUESTS, NO_ALERTS, NOW - dt.timedelta(seconds=10))
    assert v.verdict == RollVerdict.wait


def test_unsafe_outranks_wait_and_unknown() -> None:
    values = healthy("kraft")
    values[(1, "UnderReplicatedPartitions")] = 3
    values[(CONTROLLER, "OfflinePartitionsCount")] = 1
    assert verdict(values, ages={2: 500.0}).verdict == RollVerdict.unsafe
    values[(CONTROLLER, "OfflinePartitionsCount")] = 0
    assert verdict(values, ages={2: 500.0}).verdict == RollVerdict.wait


def test_the_thresholds_decide() -> None:
    values = healthy("kraft")
    values[(1, "UnderReplicatedPartitions")] = 2
    assert verdict(values, th=RollThresholds(max_under_replicated=2)).verdict == RollVerdict.safe


def test_data_from_before_the_last_change_is_unknown() -> None:
    """A roll script passes the time its last restart returned: samples scraped before it say nothing of the
    cluster since (the lake lags the cluster by a scrape and a micro-batch)."""
    values = healthy("kraft")
    restarted = NOW - dt.timedelta(seconds=3)
    v = roll_verdict("c1", latest(values), NO_REQUESTS, NO_ALERTS, NOW, RollThresholds(), since=restarted)
    assert v.verdict == RollVerdict.unknown
    assert all(r.check == RollCheck.NODES_FRESH for r in v.reasons if r.status == CheckStatus.unknown)
    assert "no sample since" in next(r.text for r in v.reasons if r.status == CheckStatus.unknown)
    earlier = NOW - dt.timedelta(seconds=10)
    assert roll_verdict("c1", latest(values), NO_REQUESTS, NO_ALERTS, NOW, RollThresholds(),
                        since=earlier).verdict == RollVerdict.safe


def test_a_controller_that_moved_between_scrapes_is_one_controller() -> None:
    """ZooKeeper mode: broker 1 (the controller) restarted; its last sample before that still claims the role,
    broker 2's newer one claims it now."""
    values = healthy("zookeeper")
    values[(2, "ActiveControllerCount")] = 1
    claims = latest(values, {1: 40.0})
    v = roll_verdict("c1", claims, NO_REQUESTS, NO_ALERTS, NOW)
    (r,) = [r for r in v.reasons if r.check == RollCheck.ACTIVE_CONTROLLER]
    assert r.status == CheckStatus.ok
    assert r.broker_id == 2


def test_requests_a_roll_does_not_wait_for() -> None:
    """A StopReplica (no finish to wait for), a request given up on (its own alert says so), and one sent to an
    incarnation of the broker that has since restarted are not in flight."""
    values = healthy("zookeeper")
    values[(2, "ProcessStartTimeSeconds")] = (NOW - dt.timedelta(seconds=20)).timestamp()
    sent = NOW - dt.timedelta(seconds=30)
    rows = [{"broker_id": 1, "request": "StopReplica", "sent_ts": sent, "status": "in_flight"},
            {"broker_id": 1, "request": "LeaderAndIsr", "sent_ts": sent, "status": "never_completed"},
            {"broker_id": 2, "request": "LeaderAndIsr", "sent_ts": sent, "status": "in_flight"}]
    requests = pl.DataFrame(rows, schema=NO_REQUESTS.schema)
    assert verdict(values, in_flight=requests).verdict == RollVerdict.safe
    restarted_earlier = {**values, (2, "ProcessStartTimeSeconds"): (NOW - dt.timedelta(seconds=60)).timestamp()}
    v = verdict(restarted_earlier, in_flight=requests)
    assert v.verdict == RollVerdict.wait
    (r,) = [r for r in v.reasons if r.check == RollCheck.CONTROL_REQUESTS]
    assert r.broker_id == 2


def test_a_restarted_nodes_samples_from_its_previous_process_do_not_count() -> None:
    """Apache Kafka 3.9.1, Strimzi's namings: broker 1, the controller, restarted 3 s ago; the controller moved to
    broker 2; broker 1's new process has not exported ActiveControllerCount yet, and its newest value (1, 8 s old) is
    its previous process's. It is not a second active controller; once its new process says 0, nothing changes."""
    values = healthy("zookeeper") | {(2, "ActiveControllerCount"): 1}
    rows = latest(values, {1: 8.0, 2: 2.0, 3: 2.0})
    start = pl.DataFrame([{"broker_id": 1, "signal": "ProcessStartTimeSeconds", "attribute": "Value",
                           "value": (NOW - dt.timedelta(seconds=3)).timestamp(), "ts": NOW - dt.timedelta(seconds=1)}],
                         schema=rows.schema)
    assert roll_verdict("c1", rows, NO_REQUESTS, NO_ALERTS, NOW).verdict == RollVerdict.unsafe  # 2 controllers
    v = roll_verdict("c1", pl.concat([rows, start]), NO_REQUESTS, NO_ALERTS, NOW)
    assert statuses(v, RollCheck.ACTIVE_CONTROLLER) == {CheckStatus.ok}
    # its previous process's under-replicated count is not a reading of the cluster either
    assert statuses(v, RollCheck.UNDER_REPLICATED) == {CheckStatus.ok}
