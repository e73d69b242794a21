"""In-flight reports are bounded by what the broker itself shows (`in_flight.BrokerView`): event time counts for a
request only while its broker is alive, and a failed-over controller's unanswered sends are not in flight once the
broker serves its successor. Through the group step (pipelines.detection.pairing_groups.step_group, pandas rows as a
task hands them)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pipelines.detection.in_flight import IN_FLIGHT_FLAG, BrokerView
from pipelines.detection.pairing import PairingParams
from pipelines.detection.pairing_groups import step_group

LEVELS = {"LeaderAndIsr": (5_000, 30_000), "UpdateMetadata": (5_000, 30_000), "StopReplica": (5_000, 30_000)}
P = PairingParams(timeout_ms=120_000, max_skew_ms=5_000, in_flight_ms=LEVELS)
LAI = "LeaderAndIsr"
COLS = ["cluster", "controller_id", "broker_id", "kind", "ts", "request", "correlation_id", "controller_epoch",
        "partitions", "elapsed_ms", "lock_wait_ms", "detail"]


def _row(kind: str, ts_ms: int, broker: int = 2, controller: int = 1, corr: int | None = None,
         epoch: int | None = 3, elapsed: int | None = None) -> dict[str, Any]:
    return {"cluster": "c1", "controller_id": -1 if kind == "heartbeat" else controller, "broker_id": broker,
            "kind": kind, "ts": pd.Timestamp(ts_ms, unit="ms"), "request": None if kind == "heartbeat" else LAI,
            "correlation_id": corr, "controller_epoch": None if kind == "heartbeat" else epoch, "partitions": 4,
            "elapsed_ms": elapsed, "lock_wait_ms": None, "detail": None}


class Group:
    """One (cluster, bucket) group's state across batches, as the log batches keep it (its JSON value)."""

    def __init__(self) -> None:
        self.blob: str | None = None

    def batch(self, rows: list[dict[str, Any]], watermark: int) -> list[dict[str, Any]]:
        out, new = step_group("c1", self.blob, pd.DataFrame(rows, columns=COLS) if rows else None, watermark, P)
        self.blob = new.blob if new is not None else None
        return out


def _warmed() -> Group:
    """Broker 2 has answered one LeaderAndIsr of controller 1 (so a missing finish means something)."""
    g = Group()
    g.batch([_row("send", 0), _row("handling", 5, corr=1), _row("finished", 9, corr=1, elapsed=4)], 0)
    g.batch([], 6_000)
    return g


def test_a_stuck_request_of_a_live_broker_is_reported_in_flight() -> None:
    g = _warmed()
    # started, not finished, not old enough to report: no row yet (its final row or its report comes later)
    assert g.batch([_row("send", 100_000), _row("handling", 100_010, corr=2)], 90_000) == []
    # the broker's metric samples (moved 20 s back for the watermark, elapsed_ms says so) show it alive at 107 s;
    # the watermark is at 120 s: the request is reported stuck for as long as the broker vouches, 7 s
    (warn,) = g.batch([_row("heartbeat", 87_000, elapsed=20_000)], 120_000)
    assert (warn["status"], warn["end_to_end_ms"], warn["flags"]) == ("in_flight", 7_000.0, IN_FLIGHT_FLAG)


def test_a_stopped_clusters_open_request_is_not_in_flight_while_other_clusters_move_event_time() -> None:
    g = _warmed()
    # the cluster stops 2 s after the send: its broker's last sign of life is 102 s
    g.batch([_row("send", 100_000), _row("handling", 100_010, corr=2), _row("heartbeat", 102_000)], 90_000)
    # other clusters carry the watermark far past both levels: nothing says this broker was stuck that long
    assert g.batch([], 200_000) == []
    (dead,) = g.batch([], 221_000)  # the timeout still resolves it, without the in-flight report
    assert (dead["status"], dead["flags"]) == ("never_completed", None)


def test_a_failed_over_controllers_unanswered_send_is_not_in_flight_once_the_broker_serves_its_successor() -> None:
    g = _warmed()
    # controller 1 (epoch 3) logs a send and dies before the broker gets it; controller 4 (epoch 4) takes over
    g.batch([_row("send", 100_000)], 90_000)
    out = g.batch([_row("send", 101_000, controller=4, epoch=4), _row("handling", 101_010, controller=4, corr=1,
                                                                      epoch=4),
                   _row("finished", 101_050, controller=4, corr=1, epoch=4, elapsed=40),
                   _row("heartbeat", 140_000)], 130_000)
    assert [(r["controller_id"], r["status"]) for r in out] == [(4, "completed")]


def test_the_broker_view_keeps_the_latest_life_and_the_newest_epoch() -> None:
    v = BrokerView().seen(100, 3).seen(90, 2).seen(None, 5)
    assert (v.alive_until, v.epoch) == (100, 5)
    assert (v.now(150), v.now(50), BrokerView().now(50)) == (100, 50, None)
    assert [v.superseded({"epoch": e}) for e in (4, 5, None)] == [True, False, False]
