"""The detect job end to end on a LeaderAndIsr held behind a backlog: silver Delta tables -> jobs/detect.py
(streaming, --once, state in the checkpoint between runs) -> alerts.

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

from schemas.tables import METRIC_SAMPLES, STATE_CHANGE_EVENTS
from tests.streaming.test_detect_stream import append, log_rows, run_detect, settings_for, table

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
    first = [
        line(0.000, SEND),
        line(0.004, "[Broker id=3] Handling LeaderAndIsr request correlationId 7 from controller 1 for 1 partitions"),
        line(0.020, "[Broker id=3] Finished LeaderAndIsr request in 16ms correlationId 7 from controller 1 for 1 "
                    "partitions"),
        line(60.000, SEND),
    ]
    append(lake, STATE_CHANGE_EVENTS, log_rows("stuck", 1, first))
    beats = [{"cluster": "stuck", "broker_id": 3, "signal": "RequestQueueSize", "attribute": "Value",
              "value": 500.0, "ts": T0 + dt.timedelta(seconds=s)} for s in range(0, 94)]
    append(lake, METRIC_SAMPLES, beats)
    run_detect(spark, settings)

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
    append(lake, STATE_CHANGE_EVENTS, log_rows("stuck", 3, done))
    run_detect(spark, settings)

    (updated,) = [a for a in table(lake, "alerts") if a["type"] == "DELAYED_LEADER_AND_ISR"]
    assert updated["alert_id"] == alert["alert_id"]
    assert (updated["severity"], updated["value"]) == ("critical", 40050.0)
    assert json.loads(updated["evidence"])["latest"]["status"] == "completed"
    rows = [r for r in table(lake, "control_request_latency") if r["correlation_id"] == 8]
    assert [(r["status"], r["end_to_end_ms"], r["flags"]) for r in rows] == [("completed", 40050.0,
                                                                              "in_flight_alerted")]
