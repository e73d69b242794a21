"""Pairing end to end on a LeaderAndIsr held behind a backlog: log files -> the log family's query (--once, the
pairing state in pairing_state between runs) -> alerts.

Run 1: a healthy LeaderAndIsr, then one the controller sends at 60 s that the broker does not start (it sits in the
broker's request queue); metric samples every second up to 93 s keep event time moving (as heartbeats they count
20 s back, and the watermark trails them by its 5 s delay: 68 s). The alert is raised while it is stuck, in event
time within seconds of 60 s + the 5 s warning level, with status in_flight in its evidence.
Run 2: the broker handles and finishes it at 100 s: the SAME alert (same id) is updated with the final latency.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from schemas.tables import METRIC_SAMPLES
from tests.streaming.test_detect_stream import append, run_logs, settings_for, table, write_log

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.slow]

T0 = dt.datetime(2024, 5, 10, 9, 0, tzinfo=dt.UTC)


def line(sec: float, msg: str) -> str:
    stamp = (T0 + dt.timedelta(seconds=sec)).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    return f"[{stamp}] INFO {msg} (state.change.logger)"


SEND = ("[Controller id=1 epoch=4] Sending LeaderAndIsr request to broker 3 with 1 become-leader and 0 "
        "become-follower partitions")


def test_stuck_leader_and_isr_alerts_while_in_flight_and_its_finish_updates_that_alert(spark, tmp_path):
    lake = tmp_path / "lake"
    settings = settings_for(tmp_path, watermark_delay_s=5, in_flight_alerts=True)
    root = tmp_path / "input"
    write_log(root, "stuck", 1, [line(0.000, SEND)])
    write_log(root, "stuck", 3, [
        line(0.004, "[Broker id=3] Handling LeaderAndIsr request correlationId 7 from controller 1 for 1 partitions"),
        line(0.020, "[Broker id=3] Finished LeaderAndIsr request in 16ms correlationId 7 from controller 1 for 1 "
                    "partitions"),
    ])
    write_log(root, "stuck", 1, [line(60.000, SEND)])
    beats = [{"cluster": "stuck", "broker_id": 3, "signal": "RequestQueueSize", "attribute": "Value",
              "value": 500.0, "ts": T0 + dt.timedelta(seconds=s)} for s in range(0, 94)]
    append(lake, METRIC_SAMPLES, beats)
    run_logs(spark, settings)

    (alert,) = [a for a in table(lake, "alerts") if a["type"] == "DELAYED_LEADER_AND_ISR"]
    assert (alert["cluster"], alert["broker_id"], alert["status"], alert["severity"]) == ("stuck", 3, "open",
                                                                                        "warning")
    assert alert["threshold"] == 5000.0
    assert json.loads(alert["evidence"])["latest"]["status"] == "in_flight"
    crossed = T0 + dt.timedelta(seconds=65)
    assert crossed < alert["started_at"] <= crossed + dt.timedelta(seconds=5)  # event time, while it is stuck
    assert 5000.0 < alert["value"] <= 10000.0

    done = [
        line(100.000, "[Broker id=3] Handling LeaderAndIsr request correlationId 8 from controller 1 for 1 partitions"),
        line(100.050, "[Broker id=3] Finished LeaderAndIsr request in 50ms correlationId 8 from controller 1 for 1 "
                      "partitions"),
    ]
    write_log(root, "stuck", 3, done)
    run_logs(spark, settings)

    (updated,) = [a for a in table(lake, "alerts") if a["type"] == "DELAYED_LEADER_AND_ISR"]
    assert updated["alert_id"] == alert["alert_id"]
    assert (updated["severity"], updated["value"]) == ("critical", 40050.0)
    assert json.loads(updated["evidence"])["latest"]["status"] == "completed"
    rows = [r for r in table(lake, "control_request_latency") if r["correlation_id"] == 8]
    assert [(r["status"], r["end_to_end_ms"], r["flags"]) for r in rows] == [("completed", 40050.0,
                                                                              "in_flight_alerted")]


def test_a_quiet_log_source_still_reports_the_stuck_request_while_metrics_come_in(spark, tmp_path):
    """Live (not --once): after the stuck request's lines no log line comes, and the log query's idle batches
    (sources.files.idle_batch_s) move its event time on the metric samples that keep arriving: the request is
    reported in flight with no further log line."""
    from jobs.ingest.queries import start_ingest_queries
    from tests.lake_helpers import pipeline_settings
    from tests.polling import wait_until

    lake = tmp_path / "lake"
    root = tmp_path / "input"
    settings = pipeline_settings(tmp_path, once=False, files=root, trigger={"interval": "1 second"},
                                 sources={"files": {"path": str(root), "idle_batch_s": 1}},
                                 detection={"watermark_delay_s": 5, "in_flight_alerts": True})
    now = dt.datetime.now(dt.UTC)

    def at(ago_s: float, msg: str) -> str:
        return f"[{(now - dt.timedelta(seconds=ago_s)).strftime('%Y-%m-%d %H:%M:%S,%f')[:-3]}] INFO {msg} " \
               "(state.change.logger)"

    # broker 3 answers one LeaderAndIsr (so a missing finish means something), then the next one gets stuck
    write_log(root, "live", 1, [at(3.0, SEND)])
    write_log(root, "live", 3, [
        at(2.99, "[Broker id=3] Handling LeaderAndIsr request correlationId 7 from controller 1 for 1 partitions"),
        at(2.98, "[Broker id=3] Finished LeaderAndIsr request in 10ms correlationId 7 from controller 1 for 1 "
                 "partitions")])
    write_log(root, "live", 1, [at(1.0, SEND)])
    queries = start_ingest_queries(spark, settings, "logs")
    try:
        wait_until(lambda: (lake / "pairing_state" / "_delta_log").is_dir() and table(lake, "pairing_state"), 120,
                   "the send's pairing state committed")
        seen: list[float] = []

        def stuck_reported() -> bool:
            # a sample of broker 3 every 2 s of wall time, as a metric family would commit it
            t = dt.datetime.now(dt.UTC)
            if not seen or t.timestamp() - seen[-1] >= 2:
                append(lake, METRIC_SAMPLES, [{"cluster": "live", "broker_id": 3, "signal": "RequestQueueSize",
                                               "attribute": "Value", "value": 500.0, "ts": t}])
                seen.append(t.timestamp())
            for q in queries:
                assert q.exception() is None, q.exception()
            return (lake / "alerts" / "_delta_log").is_dir() and any(
                a["type"] == "DELAYED_LEADER_AND_ISR" for a in table(lake, "alerts"))

        wait_until(stuck_reported, 120, "DELAYED_LEADER_AND_ISR in flight", interval=0.5)
    finally:
        for q in queries:
            q.stop()
    (alert,) = [a for a in table(lake, "alerts") if a["type"] == "DELAYED_LEADER_AND_ISR"]
    assert json.loads(alert["evidence"])["latest"]["status"] == "in_flight"
