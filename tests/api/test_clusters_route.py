"""GET /clusters: each cluster's last input (bronze file statistics, then its newest day) and its open alerts."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from schemas.tables import RAW_LOGS, RAW_METRICS
from tests.api.conftest import AUTH, ClientFactory
from tests.api.lake import T0, write


def _raw(cluster: str, broker: int, kind: str, at_min: int, n: int, kind_column: str = "log_kind"
         ) -> list[dict[str, Any]]:
    at = T0 + timedelta(minutes=at_min)
    return [{"cluster": cluster, "broker_id": broker, kind_column: kind, "line": f"line {i}", "line_bytes": 6,
             "source": f"kafka-{broker}.{cluster}:/var/log/kafka/server.log", "source_offset": i, "ingest_ts": at,
             "batch_id": 0, "date": at.date()} for i in range(n)]


def test_clusters_list_what_each_sent_and_when_with_open_alerts(make_client: ClientFactory, lake: Path) -> None:
    # prod-eu sent yesterday and today (the newest day only is queried), prod-us only yesterday, c1 has alerts
    write(lake, RAW_LOGS, _raw("prod-eu", 1, "state-change", -24 * 60, 5) + _raw("prod-us", 7, "server", -24 * 60, 2))
    write(lake, RAW_LOGS, _raw("prod-eu", 2, "state-change", 0, 3) + _raw("prod-eu", 3, "request", 5, 4))
    write(lake, RAW_METRICS, _raw("prod-eu", 2, "prometheus", 6, 10, "metric_format"))
    client: TestClient = make_client(lake=lake)
    body = client.get("/clusters", headers=AUTH).json()
    by = {c["cluster"]: c for c in body["data"]}
    assert sorted(by) == ["c1", "prod-eu", "prod-us"]
    eu = by["prod-eu"]
    assert eu["logs"]["records"] == 12
    assert eu["logs"]["last_read"] == "2026-11-20T12:05:00Z"
    assert eu["logs"]["last_day"] == "2026-11-20"
    assert eu["logs"]["last_day_kinds"] == {"state-change": 3, "request": 4}
    assert eu["logs"]["last_day_brokers"] == [2, 3]
    assert eu["metrics"]["last_day_kinds"] == {"prometheus": 10}
    assert (eu["open_alerts"], by["c1"]["open_alerts"]) == (0, 30)
    assert by["c1"]["open_alert_types"] == {"DELAYED_LEADER_AND_ISR": 30}
    assert by["c1"]["logs"] is None
    us = by["prod-us"]
    assert (us["logs"]["last_day"], us["logs"]["last_day_brokers"], us["metrics"]) == ("2026-11-19", [7], None)
    assert body["unavailable"] == []


def test_a_lake_without_bronze_tables_lists_the_alerts_clusters_and_names_the_tables(
        make_client: ClientFactory, lake: Path) -> None:
    body = make_client(lake=lake).get("/clusters", headers=AUTH).json()
    assert [(c["cluster"], c["logs"], c["open_alerts"]) for c in body["data"]] == [("c1", None, 30)]
    assert body["unavailable"] == ["raw_logs", "raw_metrics"]
