"""BROKER_REGISTRATION: KIP-1131's per-broker controller gauges (Kafka 4.1+) in the roll-safety verdict, from a real
Apache Kafka 4.4.0 controller scrape (the API's SQL over a Delta lake: tests/api/test_roll_safety_route.py)."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pyarrow as pa
import pytest

from pipelines.roll_safety import Reason, RollThresholds, roll_verdict, with_subject
from schemas.roll_safety import CheckStatus, RollCheck, RollVerdict
from tests.pipelines.parsing.parse_helpers import parse_all, raw_metric
from tests.pipelines.parsing.test_parse_metrics import KRAFT_SCRAPES
from tests.pipelines.test_roll_safety import BROKERS, CONTROLLER, NO_ALERTS, NO_REQUESTS, NOW, healthy, latest

TS = pl.Datetime("us", "UTC")
ACTIVE, FENCED, SHUTTING_DOWN = 30.0, 10.0, 20.0


def per_broker(signal: str, values: dict[int, float], node: int = CONTROLLER, age_s: float = 5.0) -> pl.DataFrame:
    """Samples of a per-broker controller gauge exported by `node`, as the lake holds them (labels as a map)."""
    rows = [{"broker_id": node, "signal": signal, "attribute": "Value", "labels": [{"key": "broker", "value": str(b)}],
             "value": v, "ts": NOW - dt.timedelta(seconds=age_s)} for b, v in values.items()]
    return pl.DataFrame(rows, schema={"broker_id": pl.Int32, "signal": pl.String, "attribute": pl.String,
                                      "labels": pl.List(pl.Struct({"key": pl.String, "value": pl.String})),
                                      "value": pl.Float64, "ts": TS})


def judged(*extra: pl.DataFrame, th: RollThresholds | None = None) -> tuple[list[Reason], RollVerdict]:
    base = latest(healthy("kraft")).with_columns(labels=pl.lit(None, dtype=pl.List(
        pl.Struct({"key": pl.String, "value": pl.String}))))
    frame = with_subject(pl.concat([base, *extra], how="diagonal_relaxed"))
    v = roll_verdict("c1", frame, NO_REQUESTS, NO_ALERTS, NOW, th or RollThresholds())
    return [r for r in v.reasons if r.check == RollCheck.BROKER_REGISTRATION], v.verdict


def test_the_fenced_broker_of_a_real_4_4_controller_scrape_is_named() -> None:
    """Apache Kafka 4.4.0's controller while broker 3 was fenced (its heartbeat at the 9 s session timeout): the
    check names broker 3 FENCED and waits; the heartbeat of a fenced broker is not a second reason."""
    lines = (KRAFT_SCRAPES / "controller-100.prom").read_text().splitlines()
    routed = parse_all([raw_metric(line, i, "prometheus", CONTROLLER) for i, line in enumerate(lines)], "metrics")
    rows = [{"broker_id": CONTROLLER, "signal": r["signal"], "attribute": r["attribute"],
             "labels": [{"key": k, "value": v} for k, v in r["labels"].items()], "value": r["value"],
             "ts": NOW - dt.timedelta(seconds=3)}
            for route, r in routed if route == "sample"
            and r["signal"] in ("BrokerRegistrationState", "TimeSinceLastHeartbeatReceivedMs")]
    assert len(rows) == 6
    scraped = pl.DataFrame(rows, schema={"broker_id": pl.Int32, "signal": pl.String, "attribute": pl.String,
                                         "labels": pl.List(pl.Struct({"key": pl.String, "value": pl.String})),
                                         "value": pl.Float64, "ts": TS})
    reasons, verdict = judged(scraped)
    assert verdict == RollVerdict.wait
    assert [(r.status, r.broker_id, r.value) for r in reasons] == [(CheckStatus.wait, 3, FENCED)]
    assert "broker 3 is FENCED on the controller" in reasons[0].text


def test_every_broker_active_with_heartbeats_on_time_is_ok() -> None:
    reasons, verdict = judged(per_broker("BrokerRegistrationState", dict.fromkeys(BROKERS, ACTIVE)),
                              per_broker("TimeSinceLastHeartbeatReceivedMs", {1: 13.0, 2: 1613.0, 3: 400.0}))
    assert verdict == RollVerdict.safe
    assert [(r.status, r.value) for r in reasons] == [(CheckStatus.ok, 3.0)]


@pytest.mark.parametrize(("state", "heartbeat", "said"), [
    (SHUTTING_DOWN, 100.0, "broker 2 is CONTROLLED_SHUTDOWN"),
    (-1.0, 100.0, "broker 2 is UNREGISTERED"),
    (ACTIVE, 6000.0, "broker 2: its last heartbeat reached the active controller 6000 ms"),
])
def test_a_broker_not_active_or_late_to_heartbeat_says_wait(state: float, heartbeat: float, said: str) -> None:
    reasons, verdict = judged(per_broker("BrokerRegistrationState", {1: ACTIVE, 2: state, 3: ACTIVE}),
                              per_broker("TimeSinceLastHeartbeatReceivedMs", {1: 10.0, 2: heartbeat, 3: 10.0}))
    assert verdict == RollVerdict.wait
    assert [(r.status, r.broker_id) for r in reasons] == [(CheckStatus.wait, 2)]
    assert said in reasons[0].text


def test_the_heartbeat_threshold_is_the_callers() -> None:
    late = per_broker("TimeSinceLastHeartbeatReceivedMs", {1: 6000.0})
    states = per_broker("BrokerRegistrationState", {1: ACTIVE})
    assert judged(states, late, th=RollThresholds(max_heartbeat_age_ms=9000.0))[1] == RollVerdict.safe


def test_the_newest_sample_per_broker_stands_whichever_controller_exported_it() -> None:
    """The former active controller's last value (broker 3 fenced, 20 s ago) is superseded by the new one's."""
    reasons, _ = judged(per_broker("BrokerRegistrationState", {3: FENCED}, node=101, age_s=20.0),
                        per_broker("BrokerRegistrationState", dict.fromkeys(BROKERS, ACTIVE), age_s=2.0))
    assert [r.status for r in reasons] == [CheckStatus.ok]


def test_not_exported_is_skipped_and_zookeeper_mode_skips_it() -> None:
    reasons, verdict = judged()
    assert verdict == RollVerdict.safe
    assert [r.status for r in reasons] == [CheckStatus.skipped]
    zk = roll_verdict("c1", latest(healthy("zookeeper")), NO_REQUESTS, NO_ALERTS, NOW)
    assert {r.status for r in zk.reasons if r.check == RollCheck.BROKER_REGISTRATION} == {CheckStatus.skipped}


def test_a_label_named_broker_on_another_signal_is_no_subject() -> None:
    """An operator's relabelling may put `broker` on every series: only the per-broker gauges read it."""
    frame = with_subject(per_broker("UnderReplicatedPartitions", {7: 0.0}))
    assert frame.get_column("subject").to_list() == [None]


def test_the_lakes_map_of_labels_gives_the_subject() -> None:
    """metric_samples.labels is an Arrow map in the lake (polars reads it as Map): the broker is read from it."""
    rows = pa.table({"signal": ["BrokerRegistrationState", "TimeSinceLastHeartbeatReceivedMs", "LeaderCount"],
                     "labels": pa.array([[("broker", "3")], [("broker", "12"), ("x", "y")], []],
                                        type=pa.map_(pa.string(), pa.string()))})
    frame = pl.from_arrow(rows)
    assert isinstance(frame, pl.DataFrame)
    assert with_subject(frame).get_column("subject").to_list() == [3, 12, None]
