"""GET /metrics (api.routes.metrics, api.metrics): behind the bearer token; requests counted per route template and
status; the lake's open incidents and alerts as gauges, read at most every LAKE_TTL_S; a table that cannot be read
is said so, not shown as zero. Real Delta tables, a TestClient; no Spark."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa

from api.metrics import LAKE_TTL_S, open_alerts
from tests.api.conftest import AUTH, ClientFactory
from tests.api.lake import ALERTS, INCIDENTS, T0, alert, incidents, write


def series(text: str, name: str) -> dict[str, float]:
    """The samples of metric `name` in a text exposition: its label set as written -> value."""
    out: dict[str, float] = {}
    for m in re.finditer(rf"^{name}(\{{.*\}})? (\S+)$", text, re.MULTILINE):
        out[m.group(1) or ""] = float(m.group(2))
    return out


def test_metrics_need_the_token_and_speak_the_text_format(make_client: ClientFactory, lake: Path) -> None:
    c = make_client(lake)
    assert c.get("/metrics").status_code == 401
    assert c.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    r = c.get("/metrics", headers=AUTH)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    assert "# TYPE planewatch_api_requests_total counter" in r.text


def test_requests_are_counted_by_route_template_and_status(make_client: ClientFactory, lake: Path) -> None:
    c = make_client(lake)
    assert c.get("/alerts/a00001", headers=AUTH).status_code == 200
    assert c.get("/alerts/a00002", headers=AUTH).status_code == 200
    assert c.get("/alerts/nope", headers=AUTH).status_code == 404
    assert c.get("/alerts").status_code == 401
    assert c.get("/no/such/path/1").status_code == 404
    assert c.get("/no/such/path/2").status_code == 404
    text = c.get("/metrics", headers=AUTH).text
    assert series(text, "planewatch_api_requests_total") == {
        '{method="GET",route="/alerts/{alert_id}",status="200"}': 2.0,
        '{method="GET",route="/alerts/{alert_id}",status="404"}': 1.0,
        '{method="GET",route="/alerts",status="401"}': 1.0,
        '{method="GET",route="unmatched",status="404"}': 2.0,
    }
    count = series(text, "planewatch_api_request_duration_seconds_count")
    assert count['{method="GET",route="/alerts/{alert_id}",status="200"}'] == 2.0


def test_open_incidents_and_alerts_are_the_lakes(make_client: ClientFactory, tmp_path: Path) -> None:
    resolved: dict[str, Any] = {"status": "resolved", "resolved_at": T0}
    rows = [alert(i, cluster="c1" if i % 4 else "c2", **(resolved if i % 5 == 0 else {}),
                  type="ACCEPTOR_BLOCKED" if i % 3 == 0 else "DELAYED_LEADER_AND_ISR") for i in range(20)]
    lake = tmp_path / "lake"
    write(lake, ALERTS, rows)
    made = incidents(rows)
    write(lake, INCIDENTS, made)
    text = make_client(lake).get("/metrics", headers=AUTH).text
    want_alerts = Counter((r["cluster"], r["type"]) for r in rows if r["status"] == "open")
    assert series(text, "planewatch_open_alerts") == {
        f'{{cluster="{c}",type="{t}"}}': float(n) for (c, t), n in want_alerts.items()}
    want_incidents = Counter((i["cluster"], i["cause"]) for i in made if i["status"] == "open")
    assert want_incidents
    assert series(text, "planewatch_open_incidents") == {
        f'{{cause="{cause}",cluster="{c}"}}': float(n) for (c, cause), n in want_incidents.items()}
    assert series(text, "planewatch_api_table_readable") == {'{table="incidents"}': 1.0, '{table="alerts"}': 1.0}


def test_the_lake_is_read_at_most_every_ttl(make_client: ClientFactory, lake: Path) -> None:
    c = make_client(lake)
    gauges = c.app.state.metrics.lake  # type: ignore[attr-defined]
    now = [1000.0]
    gauges.clock = lambda: now[0]
    before = series(c.get("/metrics", headers=AUTH).text, "planewatch_open_alerts")
    write(lake, ALERTS, [alert(100, cluster="c9")])
    now[0] += LAKE_TTL_S / 2
    assert series(c.get("/metrics", headers=AUTH).text, "planewatch_open_alerts") == before
    assert gauges.reads == 1
    now[0] += LAKE_TTL_S
    after = series(c.get("/metrics", headers=AUTH).text, "planewatch_open_alerts")
    assert after == {**before, '{cluster="c9",type="DELAYED_LEADER_AND_ISR"}': 1.0}
    assert gauges.reads == 2


def test_a_lake_without_incidents_has_none_and_an_unreadable_table_says_so(make_client: ClientFactory,
                                                                           lake: Path) -> None:
    shutil.rmtree(lake / "incidents")
    c = make_client(lake)
    text = c.get("/metrics", headers=AUTH).text
    assert series(text, "planewatch_open_incidents") == {}
    assert series(text, "planewatch_api_table_readable")['{table="alerts"}'] == 1.0
    text = make_client(lake.parent / "no-such-lake").get("/metrics", headers=AUTH).text
    assert series(text, "planewatch_open_alerts") == {}
    assert series(text, "planewatch_api_table_readable")['{table="alerts"}'] == 0.0


def test_open_alerts_counts_only_open_rows() -> None:
    snap = pa.table({"cluster": ["a", "a", "b", "a", None], "type": ["X", "X", "Y", "Y", "X"],
                     "status": ["open", "open", "open", "resolved", None]})
    assert open_alerts(snap) == {("a", "X"): 2, ("b", "Y"): 1}
