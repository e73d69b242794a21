"""Incidents from alerts (pure): one broker's overlapping alerts are one incident, put down to one cause by the most
specific alert; a slow control request's own breakdown tells a queue from a slow handler."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from pipelines.detection.impact import IMPACTS
from pipelines.detection.incidents import History, group_incidents
from schemas.alerts import AlertType, IncidentCause

T0 = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
RESOLVE_AFTER = timedelta(seconds=300)


def alert(type_: str, broker: int | None = 2, start_s: float = 0.0, seen_s: float = 30.0, status: str = "open",
          severity: str = "warning", value: float = 1.0, cluster: str = "c1", **evidence: Any) -> dict[str, Any]:
    started, seen = T0 + timedelta(seconds=start_s), T0 + timedelta(seconds=seen_s)
    return {"alert_id": f"{type_}-{broker}-{start_s}", "type": type_, "severity": severity, "status": status,
            "cluster": cluster, "broker_id": broker, "listener": None, "started_at": started, "last_seen_at": seen,
            "resolved_at": seen + RESOLVE_AFTER if status == "resolved" else None,
            "summary": f"{type_} on broker {broker}", "evidence": json.dumps({"firings": 1, "latest": evidence}),
            "value": value,
            "threshold": 1.0, "updated_at": seen}


def test_one_saturated_broker_pages_once_as_control_requests_queued_behind_data() -> None:
    alerts = [alert("REQUEST_QUEUE_SATURATED", value=480.0),
              alert("REQUEST_HANDLER_SATURATED", start_s=5),
              alert("NETWORK_PROCESSOR_SATURATED", start_s=8),
              alert("CONTROL_REQUEST_QUEUED_BEHIND_DATA", start_s=20, severity="critical", value=48_000.0),
              alert("DELAYED_LEADER_AND_ISR", start_s=40, seen_s=50, value=48_900.0, partitions=6)]
    (inc,) = group_incidents(alerts, RESOLVE_AFTER)
    assert inc["impact"] == ("control requests waited up to 48.0 s in the broker's request queue: its leadership and "
                             "metadata changes came that much late; leadership changes waited up to 48.9 s (6 "
                             "partitions in 1 request); the request queue held at least 480 requests: every client "
                             "request to the broker (produce, fetch, metadata) waited behind them, and its network "
                             "threads stopped reading new ones while it was full")
    assert "other_causes" not in json.loads(inc["evidence"])  # saturated threads are what fills a queue, no other cause
    assert inc["cause"] == IncidentCause.QUEUED_BEHIND_DATA
    assert (inc["alerts"], inc["severity"], inc["status"], inc["started_at"]) == (5, "critical", "open", T0)
    assert inc["summary"].startswith("control requests waited in the request queue behind data requests. "
                                     "CONTROL_REQUEST_QUEUED_BEHIND_DATA on broker 2 (+4 more alerts: ")
    assert "control.plane.listener.name" in inc["action"]
    assert json.loads(inc["evidence"])["cause_alert_type"] == "CONTROL_REQUEST_QUEUED_BEHIND_DATA"


def test_a_slow_handler_behind_a_working_control_plane_is_its_own_cause() -> None:
    slow = alert("DELAYED_LEADER_AND_ISR", broker_queue_ms=56.0, local_ms=9854.0, listener="CONTROLLER")
    (inc,) = group_incidents([slow], RESOLVE_AFTER)
    assert inc["cause"] == IncidentCause.SLOW_HANDLER
    queued = alert("DELAYED_LEADER_AND_ISR", broker_queue_ms=48_000.0, local_ms=900.0)
    assert group_incidents([queued], RESOLVE_AFTER)[0]["cause"] == IncidentCause.QUEUED_BEHIND_DATA
    unsplit = alert("DELAYED_LEADER_AND_ISR", end_to_end_ms=9000.0)  # in flight: no Handling line, no request log
    (inc,) = group_incidents([unsplit], RESOLVE_AFTER)
    assert inc["cause"] == IncidentCause.SLOW_CONTROL_REQUEST
    assert "kafka.request.logger" in inc["action"]


def _cause_and_witness(*alerts: dict[str, Any]) -> tuple[str, str | None, list[str]]:
    (inc,) = group_incidents(list(alerts), RESOLVE_AFTER)
    ev = json.loads(inc["evidence"])
    return inc["cause"], ev.get("split_from"), [o["cause"] for o in ev.get("other_causes", [])]


def test_causes_from_each_witness_and_era_and_disagreeing_witnesses_said() -> None:
    # state-change lines only (2.7+, the distribution's log levels): the spans, the lock wait from `elapsed`
    logs_queue = alert("DELAYED_LEADER_AND_ISR", queue_ms=9_000.0, processing_ms=40.0, lock_wait_ms=6.0)
    assert _cause_and_witness(logs_queue) == ("QUEUED_BEHIND_DATA", "state_change_lines (inferred)", [])
    logs_handler = alert("DELAYED_LEADER_AND_ISR", queue_ms=60.0, processing_ms=9_800.0, lock_wait_ms=6.0)
    assert _cause_and_witness(logs_handler) == ("SLOW_HANDLER", "state_change_lines (inferred)", [])
    # the wait behind the broker's previous request (at the controller) is no queue of this broker's
    behind = alert("DELAYED_LEADER_AND_ISR", queue_ms=9_100.0, controller_queue_ms=9_000.0, processing_ms=5_000.0)
    assert _cause_and_witness(behind)[0] == "SLOW_HANDLER"
    # the request log only (2.6: no Finished line)
    log_only = alert("DELAYED_LEADER_AND_ISR", broker_queue_ms=7_900.0, local_ms=30.0)
    assert _cause_and_witness(log_only) == ("QUEUED_BEHIND_DATA", "request_log", [])
    # metrics only (no logs shipped): the queue saturated and RequestMetrics' LeaderAndIsr time high
    metrics = (alert("REQUEST_QUEUE_SATURATED"), alert("LEADER_AND_ISR_TOTAL_TIME_HIGH", start_s=5))
    assert _cause_and_witness(*metrics) == ("QUEUED_BEHIND_DATA", None, [])
    # all of them, disagreeing: the request's own log says the handler, the metrics a full queue: the cause is the
    # request's own witness, and the incident says the others point elsewhere
    handler = alert("DELAYED_LEADER_AND_ISR", start_s=10, broker_queue_ms=56.0, local_ms=9_854.0)
    assert _cause_and_witness(handler, *metrics) == ("SLOW_HANDLER", "request_log", ["QUEUED_BEHIND_DATA"])
    (inc,) = group_incidents([handler, *metrics], RESOLVE_AFTER)
    assert inc["summary"].endswith("; other witnesses point to QUEUED_BEHIND_DATA")


def test_a_connection_storm_explains_the_saturated_network_threads() -> None:
    alerts = [alert("NETWORK_PROCESSOR_SATURATED", value=0.05),
              alert("ACCEPTOR_BLOCKED", start_s=3, severity="critical", value=0.7)]
    (inc,) = group_incidents(alerts, RESOLVE_AFTER)
    assert (inc["cause"], inc["alerts"]) == (IncidentCause.CONNECTION_STORM, 2)
    assert inc["impact"] == ("the acceptor was blocked up to 70% of the time: new connections waited to be accepted "
                             "(clients' connection attempts timed out and retried); the network threads were as "
                             "little as 5.0% idle: the requests and responses of the broker's clients waited to be "
                             "read and written")
    assert group_incidents([alert("REQUEST_HANDLER_SATURATED", value=0.02)], RESOLVE_AFTER)[0]["impact"] == (
        "the request handlers were as little as 2.0% idle: client requests to the broker waited for a free handler "
        "(produce and fetch latency rose)")


def test_a_roll_too_fast_explains_the_load_it_put_on_the_broker_but_not_a_mechanism() -> None:
    """A broker stopped too early on a loaded cluster: its busy network threads and the controller's long queue
    follow from the roll (the cause is the roll; the controller's queue is said as another witness, busy threads are a
    mere symptom); a connection storm or a queue of control requests behind data is a mechanism of its own and stays
    the cause."""
    roll = alert("ROLL_TOO_FAST", start_s=2, reasons=["wait UNDER_REPLICATED: 3"])
    busy = (alert("NETWORK_PROCESSOR_SATURATED", value=0.05), alert("CONTROLLER_EVENT_QUEUE_DELAY", start_s=4))
    assert _cause_and_witness(roll, *busy) == ("ROLL_TOO_FAST", None, ["CONTROLLER_OVERLOADED"])
    storm = alert("ACCEPTOR_BLOCKED", start_s=3, severity="critical", value=0.7)
    assert _cause_and_witness(roll, storm)[0] == "CONNECTION_STORM"
    queued = alert("CONTROL_REQUEST_QUEUED_BEHIND_DATA", start_s=1, value=500.0)
    assert _cause_and_witness(roll, queued)[0] == "QUEUED_BEHIND_DATA"


def test_spans_brokers_and_the_cluster_make_separate_incidents_and_a_bridge_joins_two() -> None:
    first = alert("REQUEST_HANDLER_SATURATED", status="resolved", seen_s=60)  # live until 60 + 300 s
    later = alert("REQUEST_HANDLER_SATURATED", start_s=1000, seen_s=1030)
    other = alert("REQUEST_HANDLER_SATURATED", broker=3)
    quorum = alert("QUORUM_UNSTABLE", broker=None)
    got = group_incidents([first, later, other, quorum], RESOLVE_AFTER)
    assert [(i["broker_id"], i["alerts"], i["status"]) for i in got] == [
        (2, 1, "resolved"), (2, 1, "open"), (3, 1, "open"), (None, 1, "open")]
    assert got[0]["resolved_at"] == T0 + timedelta(seconds=360)
    bridge = alert("NETWORK_PROCESSOR_SATURATED", start_s=300, seen_s=800)
    joined = group_incidents([first, later, bridge], RESOLVE_AFTER)
    assert [i["alerts"] for i in joined] == [3]
    assert joined[0]["incident_id"] == got[0]["incident_id"]  # alerts joining later keep the incident's id


def test_a_fencing_explains_the_slow_requests_around_it() -> None:
    alerts = [alert("DELAYED_LEADER_AND_ISR", broker_queue_ms=10.0, local_ms=12_000.0),
              alert("BROKER_FENCED", start_s=2, severity="critical")]
    assert group_incidents(alerts, RESOLVE_AFTER)[0]["cause"] == IncidentCause.BROKER_FENCED


def test_a_fencing_after_heartbeats_timed_out_in_the_controllers_queue_is_the_controllers_overload() -> None:
    (inc,) = group_incidents([alert("BROKER_HEARTBEAT_TIMEOUT"), alert("BROKER_FENCED", start_s=9)], RESOLVE_AFTER)
    assert inc["cause"] == IncidentCause.CONTROLLER_OVERLOADED
    assert [o["cause"] for o in json.loads(inc["evidence"])["other_causes"]] == ["BROKER_FENCED"]
    assert inc["impact"] == ("the controller did not answer the broker's heartbeats in time: the broker risked being "
                             "fenced and its partitions moving away; the broker's partitions moved away while it was "
                             "fenced: their leaders changed and clients were sent elsewhere")


def test_the_queue_length_form_of_the_queue_delay_is_no_wait_in_seconds() -> None:
    queue = alert("CONTROL_REQUEST_QUEUE_DELAY", value=480.0, cp_series=0, vmin=480.0)  # RequestQueueSize >= 480
    assert group_incidents([queue], RESOLVE_AFTER)[0]["impact"] == (
        "the request queue every control request shares held at least 480 requests: leadership and metadata "
        "changes on this broker queued behind them")


def test_every_alert_type_says_what_it_cost() -> None:
    """Every incident gets an impact: each alert type has its clause."""
    assert {t for t, _ in IMPACTS} == set(AlertType)
    for t in AlertType:
        (inc,) = group_incidents([alert(t.value, value=0.5, partitions=3, reasons=["unsafe UNDER_MIN_ISR: 2"])],
                                 RESOLVE_AFTER)
        assert inc["impact"], t


def test_the_baseline_counts_the_causes_earlier_incidents_and_quotes_the_measure() -> None:
    fenced = alert("BROKER_FENCED", severity="critical")
    earlier = [{"incident_id": f"i{n}", "cluster": "c1", "broker_id": b, "cause": "BROKER_FENCED",
                "started_at": T0 - timedelta(hours=h)} for n, (b, h) in enumerate([(2, 3), (2, 20), (3, 1), (2, 30)])]
    (inc,) = group_incidents([fenced], RESOLVE_AFTER, history=History(earlier, timedelta(hours=24)))
    assert inc["baseline"] == "broker 2's earlier BROKER_FENCED incidents in the previous 24 h: 2; peers with one: 1"
    text = "its own p10 over the previous 60 min 97.0% (55 one-minute values)"
    busy = alert("REQUEST_HANDLER_SATURATED", value=0.02, baseline={"text": text})
    (inc,) = group_incidents([busy], RESOLVE_AFTER)
    assert inc["baseline"] == (f"{text}; broker 2's earlier BROKER_SATURATED incidents in the previous 24 h: 0; "
                               "peers with one: 0")
    (cluster,) = group_incidents([alert("QUORUM_UNSTABLE", broker=None)], RESOLVE_AFTER)
    assert cluster["baseline"] == "the cluster's earlier QUORUM_UNSTABLE incidents in the previous 24 h: 0"


def test_the_impact_leads_with_the_alert_that_shows_the_cause() -> None:
    """A broker stopped while control requests queued: the queue is the cause, its clause comes first."""
    alerts = [alert("CONTROL_REQUEST_QUEUED_BEHIND_DATA", severity="critical", value=4_300.0),
              alert("ROLL_TOO_FAST", start_s=5, reasons=["wait UNDER_REPLICATED: 3", "wait PREFERRED_LEADERS: 2",
                                                        "wait NODES_FRESH: 1"])]
    (inc,) = group_incidents(alerts, RESOLVE_AFTER)
    assert inc["cause"] == IncidentCause.QUEUED_BEHIND_DATA
    assert inc["impact"].startswith("control requests waited up to 4.3 s in the broker's request queue")
    assert "(wait UNDER_REPLICATED: 3; wait PREFERRED_LEADERS: 2)" in inc["impact"]


def test_a_lag_every_broker_shares_is_the_controllers_and_explains_a_fencing() -> None:
    """The controller quorum paused: every broker's metadata falls behind together, and the controller, back, fences
    a broker whose heartbeats it did not answer. The broker was alive (its lag was scraped): the cause is upstream."""
    shared = alert("METADATA_APPLY_LAG", value=17_709.0, baseline={"peers_median": 17_647.5, "peers": 2})
    shared["threshold"] = 5_000.0
    (inc,) = group_incidents([shared, alert("BROKER_FENCED", start_s=5, severity="critical")], RESOLVE_AFTER)
    assert inc["cause"] == IncidentCause.CONTROLLER_STALLED
    assert "The brokers are not at fault" in inc["action"]
    assert "METADATA_LAG" not in inc["summary"]  # the same lag is no other witness
    assert [o["cause"] for o in json.loads(inc["evidence"])["other_causes"]] == ["BROKER_FENCED"]
    alone = alert("METADATA_APPLY_LAG", value=69_000.0, baseline={"peers_median": 300.0, "peers": 2})
    alone["threshold"] = 5_000.0  # one starved broker behind, its peers current: its own lag
    assert group_incidents([alone], RESOLVE_AFTER)[0]["cause"] == IncidentCause.METADATA_LAG
