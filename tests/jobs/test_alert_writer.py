"""The alert writers share the `alerts` table and each touches only the alert types schemas.alerts gives it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from jobs.alert_writer import AlertWriter
from pipelines.detection.config import DetectionConfig
from schemas.alerts import AlertType, DetectQuery
from schemas.tables import ALERTS
from tests.api.lake import T0, alert, write
from tests.lake import lake_rows, pipeline_settings

CFG = DetectionConfig()


def test_a_writer_resolves_only_its_own_types_on_the_same_broker_and_listener(tmp_path: Path) -> None:
    """The request log's and the metrics' witness of the same queue on the same broker and listener are two alert
    types: the metric writer's event time resolves its own alert and leaves the log writer's open."""
    settings = pipeline_settings(tmp_path, once=False)
    lake = Path(settings.lake)
    log_form = alert(1, type=AlertType.CONTROL_REQUEST_QUEUED_BEHIND_DATA.value, listener="data-plane")
    metric_form = alert(2, type=AlertType.CONTROL_REQUEST_QUEUE_DELAY.value, listener="data-plane",
                        broker_id=log_form["broker_id"])
    write(lake, ALERTS, [log_form, metric_form])
    metrics = AlertWriter(settings, DetectQuery.METRIC, "test-metric-alerts", CFG)
    logs = AlertWriter(settings, DetectQuery.LOG, "test-log-alerts", CFG)
    assert [a["alert_id"] for a in metrics.open_alerts()] == [metric_form["alert_id"]]
    assert [a["alert_id"] for a in logs.open_alerts()] == [log_form["alert_id"]]

    assert metrics.write([], T0 + dt.timedelta(days=1), 0) == 1
    status = {r["alert_id"]: r["status"] for r in lake_rows(lake, ALERTS.name)}
    assert status == {log_form["alert_id"]: "open", metric_form["alert_id"]: "resolved"}
    assert [a["alert_id"] for a in logs.open_alerts()] == [log_form["alert_id"]]
