"""A slow control request against its broker's own history and its peers (pure polars)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl
import pyarrow as pa

from pipelines.detection.baselines import BASELINE_MIN_REQUESTS, add_baselines
from pipelines.detection.config import DetectionConfig
from schemas.tables import CONTROL_REQUEST_LATENCY

T0 = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def request(broker: int, minute: float, e2e: float, cq: float | None = None, key: str | None = None
            ) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(CONTROL_REQUEST_LATENCY.names)
    row.update(cluster="c1", broker_id=broker, request="LeaderAndIsr", status="completed",
               sent_ts=T0 + timedelta(minutes=minute), end_to_end_ms=e2e, controller_queue_ms=cq,
               request_key=key or f"r{broker}-{minute}")
    return row


def history(rows: list[dict[str, Any]]) -> pl.DataFrame:
    out = pl.from_arrow(pa.Table.from_pylist(rows, schema=CONTROL_REQUEST_LATENCY.to_arrow()))
    assert isinstance(out, pl.DataFrame)
    return out


def slow(broker: int = 2, e2e: float = 9000.0) -> dict[str, Any]:
    return {"type": "DELAYED_LEADER_AND_ISR", "cluster": "c1", "broker_id": broker, "ts": T0 + 50 * timedelta(
        minutes=1), "summary": "LeaderAndIsr took 9000 ms on broker 2", "value": e2e,
        "evidence": {"request_key": "the-slow-one"}}


def test_a_slow_request_is_compared_with_its_brokers_p90_and_its_peers_median() -> None:
    rows = [request(2, m, 40.0 + m) for m in range(10)]  # broker 2: 40..49 ms
    # peers: 30 ms, one of them 10 ms of it queued at the controller (the alerts' measure leaves that out)
    rows += [request(b, m, 30.0, cq=10.0 if m == 0 else None) for b in (1, 3) for m in range(5)]
    rows += [request(2, 49.5, 9000.0, key="the-slow-one"), request(2, -20, 5.0)]  # itself; before the window
    rows += [request(2, 45.5, 6000.0)]  # an earlier slow one (an alert of its own): not part of the baseline
    c = slow()
    add_baselines([c], history(rows), HOUR, DetectionConfig())
    ev = c["evidence"]["baseline"]
    assert (ev["own_p90_ms"], ev["own_requests"]) == (48.0, 10)
    assert (ev["peers_median_ms"], ev["peers_requests"]) == (30.0, 10)
    assert c["summary"].endswith("[against: its own p90 over the last 60 min 48 ms (10 requests under 5000 ms); "
                                 "its peers' median 30 ms (10 requests)]")


def test_too_few_requests_give_no_baseline_and_other_alerts_none() -> None:
    few = [request(2, m, 40.0) for m in range(BASELINE_MIN_REQUESTS - 1)]
    c, other = slow(), {**slow(), "type": "LOCK_CONTENTION"}
    add_baselines([c, other], history(few), HOUR, DetectionConfig())
    assert "baseline" not in c["evidence"]
    assert other["summary"] == slow()["summary"]
