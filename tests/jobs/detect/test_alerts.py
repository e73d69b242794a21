"""The alert writers share the `alerts` table and each touches only the alert types schemas.alerts gives it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from jobs.detect.alerts import AlertWriter
from pipelines.detection.config import DetectionConfig
from pipelines.detection.incidents import group_incidents
from schemas.alerts import AlertType, DetectQuery
from schemas.tables import ALERTS, INCIDENTS
from tests.api.lake import T0, alert, write
from tests.lake_helpers import lake_rows, pipeline_settings

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


def _writers(tmp_path: Path) -> tuple[Path, AlertWriter, AlertWriter]:
    """A lake and the metric and log families' alert writers over it."""
    settings = pipeline_settings(tmp_path, once=False)
    return (Path(settings.lake), AlertWriter(settings, DetectQuery.METRIC, "test-metric-alerts", CFG),
            AlertWriter(settings, DetectQuery.LOG, "test-log-alerts", CFG))


def _candidate(type_: AlertType, ts: dt.datetime, **evidence: float) -> dict[str, object]:
    return {"type": type_.value, "severity": "warning", "cluster": "c1", "broker_id": 2, "listener": None, "ts": ts,
            "value": 1.0, "threshold": 1.0, "summary": f"{type_.value} on broker 2",
            "evidence": evidence}


def test_the_writers_alerts_of_one_broker_become_one_incident_that_resolves_with_them(tmp_path: Path) -> None:
    """A metric alert and a latency alert on the same broker, written by their two writers, are one incident (its
    cause from the slow request's breakdown); when both resolve, so does the incident."""
    lake, metrics, latency = _writers(tmp_path)
    t = dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)
    assert metrics.write([_candidate(AlertType.REQUEST_HANDLER_SATURATED, t)], t, 0) == 1
    slow = _candidate(AlertType.DELAYED_LEADER_AND_ISR, t + dt.timedelta(seconds=20), broker_queue_ms=56.0,
                      local_ms=9854.0)
    assert latency.write([slow], t + dt.timedelta(seconds=20), 0) == 1
    (inc,) = lake_rows(lake, INCIDENTS.name)
    assert (inc["cause"], inc["alerts"], inc["status"]) == ("SLOW_HANDLER", 2, "open")
    assert inc["alert_types"] == "DELAYED_LEADER_AND_ISR,REQUEST_HANDLER_SATURATED"

    later = t + dt.timedelta(days=1)
    metrics.write([], later, 1)
    latency.write([], later, 1)
    (inc,) = lake_rows(lake, INCIDENTS.name)
    assert (inc["status"], inc["alerts"]) == ("resolved", 2)
    assert latency.write([], later, 2) == 0  # nothing open: nothing written
    assert lake_rows(lake, INCIDENTS.name) == [inc]  # and the incident unchanged


def test_an_earlier_alert_arriving_late_joins_the_incident_which_keeps_its_id(tmp_path: Path) -> None:
    lake, metrics, latency = _writers(tmp_path)
    t = dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)
    metrics.write([_candidate(AlertType.REQUEST_QUEUE_SATURATED, t + dt.timedelta(seconds=60))], t, 0)
    (first,) = lake_rows(lake, INCIDENTS.name)
    # the pairing's alert of a request that started a minute earlier (its lines came late)
    latency.write([_candidate(AlertType.DELAYED_LEADER_AND_ISR, t, broker_queue_ms=9000.0, local_ms=3.0)], t, 0)
    (inc,) = lake_rows(lake, INCIDENTS.name)
    assert inc["incident_id"] == first["incident_id"]  # the id an Alertmanager already groups by
    assert (inc["alerts"], inc["cause"], inc["started_at"]) == (2, "QUEUED_BEHIND_DATA", t)


def test_incidents_of_alerts_days_old_group_as_live_ones_and_other_clusters_stay(tmp_path: Path) -> None:
    """A backfill's alerts (event time days behind the clock) resolve into their incident, not out of it; a write
    for one cluster leaves the other clusters' incidents alone."""
    lake, metrics, _ = _writers(tmp_path)
    t = dt.datetime(2024, 3, 1, 9, 0, tzinfo=dt.UTC)
    metrics.write([_candidate(AlertType.REQUEST_QUEUE_SATURATED, t)], t, 0)
    other = {**_candidate(AlertType.ACCEPTOR_BLOCKED, t), "cluster": "c2"}
    metrics.write([other], t, 1)
    metrics.write([], {"c1": t + dt.timedelta(hours=1)}, 2, clusters={"c1"})  # c1's alert resolves
    got = {r["cluster"]: (r["status"], r["alerts"]) for r in lake_rows(lake, INCIDENTS.name)}
    assert got == {"c1": ("resolved", 1), "c2": ("open", 1)}


def test_an_alert_that_bridges_two_incidents_merges_them_into_the_first(tmp_path: Path) -> None:
    lake, metrics, latency = _writers(tmp_path)
    t = dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)
    metrics.write([_candidate(AlertType.REQUEST_QUEUE_SATURATED, t)], t, 0)
    metrics.write([], t + dt.timedelta(minutes=6), 1)  # resolves at t + 5 min
    metrics.write([_candidate(AlertType.REQUEST_HANDLER_SATURATED, t + dt.timedelta(minutes=20))],
                  t + dt.timedelta(minutes=20), 2)
    first, second = sorted(lake_rows(lake, INCIDENTS.name), key=lambda r: r["started_at"])
    # slow requests from minute 3 to minute 19, each within the hysteresis of the last: one alert spanning both
    for batch, minute in enumerate(range(3, 20, 4)):
        at = t + dt.timedelta(minutes=minute)
        latency.write([_candidate(AlertType.DELAYED_LEADER_AND_ISR, at)], at, batch)
    (merged,) = lake_rows(lake, INCIDENTS.name)
    assert merged["incident_id"] == first["incident_id"] != second["incident_id"]
    assert merged["alerts"] == 3


def test_incremental_regrouping_matches_grouping_everything_after_every_write(tmp_path: Path) -> None:
    """Writes touching two brokers at once, long and short alerts, resolutions, an alert arriving late with an
    earlier start: after every write, each alert is in exactly one incident, and the incidents hold the same
    groups as grouping every alert from scratch."""
    lake, metrics, latency = _writers(tmp_path)
    t = dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)

    def at(minute: float) -> dt.datetime:
        return t + dt.timedelta(minutes=minute)

    def both(type_: AlertType, minute: float, brokers: tuple[int, ...] = (2, 3)) -> list[dict[str, object]]:
        return [{**_candidate(type_, at(minute)), "broker_id": b} for b in brokers]

    steps = [
        (metrics, both(AlertType.REQUEST_QUEUE_SATURATED, 0), at(0)),
        (metrics, both(AlertType.REQUEST_QUEUE_SATURATED, 4, (3,)), at(4)),  # broker 3's goes on
        (metrics, both(AlertType.REQUEST_QUEUE_SATURATED, 8, (3,)), at(8)),  # broker 2's resolves (at 5)
        (metrics, both(AlertType.REQUEST_HANDLER_SATURATED, 30), at(30)),  # broker 3's first resolves; new ones
        (latency, both(AlertType.DELAYED_LEADER_AND_ISR, 27, (2,)), at(27)),  # late, earlier than broker 2's
        (latency, both(AlertType.DELAYED_LEADER_AND_ISR, 31, (2, 3)), at(31)),
        (metrics, [], at(60)),
        (latency, [], at(60)),
    ]
    for batch, (writer, cands, watermark) in enumerate(steps):
        writer.write(cands, watermark, batch)
        alerts = lake_rows(lake, ALERTS.name)
        incidents = lake_rows(lake, INCIDENTS.name)
        members = [aid for i in incidents for aid in i["alert_ids"].split(",")]
        assert sorted(members) == sorted(a["alert_id"] for a in alerts), batch  # each alert once
        want = {frozenset(i["alert_ids"].split(",")) for i in group_incidents(alerts, dt.timedelta(seconds=300))}
        assert {frozenset(i["alert_ids"].split(",")) for i in incidents} == want, batch
