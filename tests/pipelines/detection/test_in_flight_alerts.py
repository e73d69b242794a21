"""From pairing to the alerts table's rows (Spark batch detectors + the pure lifecycle): a control request stuck
behind a backlog raises its alert while in flight, and its finish updates THAT alert (same alert_id); a short
metric condition straddling a tumbling-window boundary fires on the sliding windows."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from pipelines.detection.config import DetectionConfig, DetectionConfigError
from pipelines.detection.lifecycle import Candidate, apply_lifecycle
from pipelines.detection.metric_detectors import metric_windows
from pipelines.detection.pairing import Event, PairingState, step
from pipelines.detection.pairing_groups import _rows, pairing_params
from pipelines.detection.registry import latency_candidates, metric_candidates
from schemas.tables import CONTROL_REQUEST_LATENCY, METRIC_SAMPLES, STATE_CHANGE_EVENTS

pytestmark = pytest.mark.spark

CFG = DetectionConfig(in_flight_alerts=True)
P = pairing_params(CFG)
T0 = datetime(2024, 5, 10, 9, 0, tzinfo=UTC)
BASE = int(T0.timestamp() * 1000)
NOW = datetime(2030, 1, 1, tzinfo=UTC)


def at(ms: int) -> datetime:
    return T0 + timedelta(milliseconds=ms)


def latency_frame(spark, changed):
    out = []
    for r in _rows("c", 1, 2, changed, P):
        r = {**r, "sent_ts": r.pop("sent_ms"), "handling_ts": r.pop("handling_ms"),
             "finished_ts": r.pop("finished_ms")}
        for k in ("sent_ts", "handling_ts", "finished_ts"):
            r[k] = None if r[k] is None else datetime.fromtimestamp(r[k] / 1000, UTC)
        out.append(tuple(r.get(n) for n in CONTROL_REQUEST_LATENCY.names))
    return spark.createDataFrame(out, CONTROL_REQUEST_LATENCY.to_spark())


def alerts_after(spark, open_alerts, changed, watermark_ms):
    lat = latency_frame(spark, changed)
    none = STATE_CHANGE_EVENTS.to_arrow().empty_table()
    rows = latency_candidates(lat.toArrow(), none, CFG)  # as the job runs them, on the collected rows
    cands = [Candidate.from_row(r) for r in rows]
    return apply_lifecycle(open_alerts, cands, at(watermark_ms - BASE), timedelta(seconds=CFG.resolve_after_s), NOW)


@pytest.mark.parametrize(("request_name", "alert_type", "finish"), [
    ("LeaderAndIsr", "DELAYED_LEADER_AND_ISR", "finished"),
    ("UpdateMetadata", "DELAYED_UPDATE_METADATA", "applied"),
    ("StopReplica", "DELAYED_STOP_REPLICA", "response"),
])
def test_stuck_request_alerts_in_flight_and_its_finish_updates_the_same_alert(spark, request_name, alert_type,
                                                                              finish):
    st = PairingState()

    def ev(kind, ms, corr=None, **kw):
        return Event(kind, BASE + ms, request_name, corr, kw.pop("epoch", None), kw.pop("partitions", 4), **kw)

    done = {"finished": lambda ms, c: ev("finished", ms, c, elapsed_ms=5),
            "applied": lambda ms, c: ev("applied", ms, c),
            "response": lambda ms, c: ev("response", ms, c, partitions=None)}[finish]
    # a healthy request first: this key's logs show this request type's completions
    step(st, [ev("send", 0, epoch=3), ev("handling", 4, 1), done(9, 1)], BASE, P)
    # then one sent at 60 s sits in the broker's queue behind a backlog; heartbeats move event time on
    assert step(st, [ev("send", 60_000, epoch=3)], BASE + 50_000, P) == []
    assert step(st, [], BASE + 64_999, P) == []  # not yet past 60 s + the 5 s warning level
    alerts = alerts_after(spark, [], step(st, [], BASE + 65_500, P), BASE + 65_500)
    (a,) = alerts
    assert (a["type"], a["status"], a["severity"], a["value"], a["threshold"]) == (
        alert_type, "open", "warning", 5_500.0, 5_000.0)
    assert a["started_at"] == at(65_500)  # raised in event time half a second after crossing the level
    assert json.loads(a["evidence"])["latest"]["status"] == "in_flight"
    # it finishes at 100 s: the same alert is updated (value, severity, evidence)
    finished = step(st, [ev("handling", 99_000, 2), done(100_000, 2)], BASE + 66_000, P)
    (b,) = alerts_after(spark, [a], finished, BASE + 90_000)
    assert (b["alert_id"], b["status"], b["severity"], b["value"]) == (a["alert_id"], "open", "critical", 40_000.0)
    assert json.loads(b["evidence"])["latest"]["status"] == "completed"
    assert json.loads(b["evidence"])["firings"] == 2


def test_never_completed_after_the_in_flight_alert_updates_it(spark):
    st = PairingState()
    lai = "LeaderAndIsr"
    step(st, [Event("send", BASE, lai, None, 3, 1), Event("handling", BASE + 3, lai, 1, None, 1),
              Event("finished", BASE + 9, lai, 1, None, 1, elapsed_ms=6)], BASE, P)
    step(st, [Event("send", BASE + 60_000, lai, None, 3, 1),
              Event("handling", BASE + 60_010, lai, 2, None, 1)], BASE + 50_000, P)
    (a,) = alerts_after(spark, [], step(st, [], BASE + 66_000, P), BASE + 66_000)
    changed = step(st, [], BASE + 200_000, P)
    assert [r["status"] for r in changed] == ["never_completed"]
    rows = alerts_after(spark, [a], changed, BASE + 200_000)
    same = [r for r in rows if r["alert_id"] == a["alert_id"]]
    assert [(r["severity"], r["value"]) for r in same] == [("critical", 120_000.0)]
    assert {r["type"] for r in rows} == {"DELAYED_LEADER_AND_ISR", "LEADER_AND_ISR_NOT_COMPLETED"}


def test_a_short_condition_straddling_a_tumbling_window_boundary_fires(spark):
    """RequestQueueSize at 490 of 500 and the acceptor blocked 20 % for two samples of a 5 s scrape (25 and 30 s):
    both straddle the 30 s boundary of tumbling 30 s windows, where each half sat
    with healthy samples; a sliding window holds each whole."""
    def sample(signal, sec, value, attribute="Value"):
        return tuple({"cluster": "s", "broker_id": 1, "ts": T0 + timedelta(seconds=sec), "signal": signal,
                      "attribute": attribute, "value": float(value), "source": "f",
                      "source_offset": sec}.get(n) for n in METRIC_SAMPLES.names)

    rows = [sample("RequestQueueSize", s, 490 if 25 <= s <= 30 else 3) for s in range(0, 65, 5)]
    rows += [sample("AcceptorBlockedPercent", s, 0.2 if 25 <= s <= 30 else 0.0, "OneMinuteRate")
             for s in range(0, 65, 5)]
    df = spark.createDataFrame(rows, METRIC_SAMPLES.to_spark())
    found = metric_candidates(metric_windows(df.toArrow(), CFG), CFG)
    rqs = {(c["severity"], c["value"], c["threshold"]) for c in found if c["type"] == "REQUEST_QUEUE_SATURATED"}
    assert rqs == {("critical", 490.0, 400.0)}
    acc = {(c["severity"], round(c["value"], 4)) for c in found if c["type"] == "ACCEPTOR_BLOCKED"}
    assert acc == {("warning", round(0.4 / 6, 4))}  # the 30 s windows holding both blocked samples
    tumbling = DetectionConfig.from_mapping({"metric_window_slide_s": 30})
    assert [c for c in metric_candidates(metric_windows(df.toArrow(), tumbling), tumbling)
            if c["type"] in ("REQUEST_QUEUE_SATURATED", "ACCEPTOR_BLOCKED")] == []


def test_one_scrape_shipped_twice_is_not_a_sustained_condition(spark):
    rows = [tuple({"cluster": "dup", "broker_id": 1, "ts": T0, "signal": signal, "attribute": attribute,
                   "value": value, "source": source, "source_offset": 0}.get(n) for n in METRIC_SAMPLES.names)
            for signal, attribute, value in (("RequestQueueSize", "Value", 499.0),
                                             ("AcceptorBlockedPercent", "OneMinuteRate", 0.9))
            for source in ("a.prom", "b.prom")]
    df = spark.createDataFrame(rows, METRIC_SAMPLES.to_spark())
    assert metric_candidates(metric_windows(df.toArrow(), CFG), CFG) == []


def test_in_flight_alerts_are_on_by_default_and_switched_off_by_the_config():
    assert pairing_params(DetectionConfig()).in_flight_ms["LeaderAndIsr"] == (5000, 30000)
    off = DetectionConfig.from_mapping({"in_flight_alerts": False})
    assert pairing_params(off).in_flight_ms == {}
    with pytest.raises(DetectionConfigError, match="in_flight_alerts must be true or false"):
        DetectionConfig.from_mapping({"in_flight_alerts": "yes"})
