"""The baseline window kept between batches (jobs.detect.latency_history) gives the baselines the lake gives, reads the
lake once per cluster, follows each batch's rows, and reads the lake again only for what it does not hold."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from deltalake import write_deltalake

import jobs.detect.latency_history as history_module
from jobs.detect.latency_history import LatencyHistory
from lake.read import LatestTable
from pipelines.detection.baselines import add_baselines
from pipelines.detection.candidates import frame as polars_frame
from pipelines.detection.config import DetectionConfig
from schemas.tables import CONTROL_REQUEST_LATENCY

T0 = dt.datetime(2026, 12, 7, 6, 0, tzinfo=dt.UTC)
WINDOW = dt.timedelta(hours=1)
CFG = DetectionConfig()


class CountingTable(LatestTable):
    """The lake's reader, counting its reads."""

    reads = 0

    def read_spans(self, *args: Any, **kw: Any) -> pa.Table:
        self.reads += 1
        return super().read_spans(*args, **kw)


def request(i: int, broker: int, e2e: float, cluster: str = "c1", status: str = "completed") -> dict[str, Any]:
    sent = T0 + dt.timedelta(seconds=20 * i)
    return {"cluster": cluster, "broker_id": broker, "controller_id": 1, "correlation_id": i, "request": "LeaderAndIsr",
            "sent_ts": sent, "finished_ts": sent + dt.timedelta(milliseconds=e2e), "end_to_end_ms": e2e,
            "controller_queue_ms": 0.0, "status": status, "request_key": f"{cluster}-{i}", "date": sent.date()}


def write(path: Path, rows: list[dict[str, Any]]) -> pa.Table:
    table = pa.Table.from_pylist(rows, CONTROL_REQUEST_LATENCY.to_arrow())
    write_deltalake(str(path), table, partition_by=list(CONTROL_REQUEST_LATENCY.partition_by), mode="append")
    return table


def slow(i: int, broker: int = 2, cluster: str = "c1") -> dict[str, Any]:
    return {"type": "DELAYED_LEADER_AND_ISR", "cluster": cluster, "broker_id": broker,
            "ts": T0 + dt.timedelta(seconds=20 * i), "summary": "slow", "evidence": {"request_key": f"x-{i}"}}


def baseline(rows: pl.DataFrame, cand: dict[str, Any]) -> Any:
    c = {**cand, "evidence": dict(cand["evidence"])}
    add_baselines([c], rows, WINDOW, CFG)
    return c["evidence"].get("baseline")


def test_the_kept_window_gives_the_lakes_baselines_and_reads_the_lake_once(tmp_path: Path) -> None:
    path = tmp_path / "control_request_latency"
    write(path, [request(i, 1 + i % 3, 100.0 + i) for i in range(200)])
    write(path, [request(i, 1, 50.0, cluster="c2") for i in range(200, 210)])
    reader = CountingTable(str(path), CONTROL_REQUEST_LATENCY.to_arrow())
    kept = LatencyHistory(reader, WINDOW)
    fresh = LatestTable(str(path), CONTROL_REQUEST_LATENCY.to_arrow())

    def from_lake(cands: list[dict[str, Any]]) -> pl.DataFrame:
        from pipelines.detection.baselines import history_spans
        return polars_frame(fresh.read_spans(history_spans(cands, WINDOW), "sent_ts"))

    first = [slow(199)]
    assert baseline(kept.rows_for(first), first[0]) == baseline(from_lake(first), first[0]) is not None
    assert reader.reads == 1
    # batches follow: a request completed after being in flight, new ones; none read the lake
    for batch in range(3):
        base = 200 + 20 * batch
        rows = [request(base + k, 1 + k % 3, 120.0 + k) for k in range(10)]
        rows[0]["status"] = "in_flight"
        written = write(path, rows)
        kept.observe(written)
        done = write(path, [{**rows[0], "status": "completed"}])
        kept.observe(done)
        cands = [slow(base + 9, broker=3)]
        assert baseline(kept.rows_for(cands), cands[0]) == baseline(from_lake(cands), cands[0])
    assert reader.reads == 1
    got = kept.rows_for([slow(259)])
    assert got.filter(pl.col("request_key") == "c1-240").get_column("status").to_list() == ["completed"]
    # another cluster: read once, then kept too
    kept.rows_for([slow(209, cluster="c2")])
    kept.rows_for([slow(209, cluster="c2")])
    assert reader.reads == 2


def test_a_candidate_older_than_the_kept_window_reads_the_lake(tmp_path: Path) -> None:
    path = tmp_path / "control_request_latency"
    write(path, [request(i, 1 + i % 3, 100.0) for i in range(600)])  # 200 minutes of requests
    reader = CountingTable(str(path), CONTROL_REQUEST_LATENCY.to_arrow())
    kept = LatencyHistory(reader, WINDOW)
    kept.rows_for([slow(599)])
    kept.observe(write(path, [request(i, 1, 100.0) for i in range(600, 610)]))
    assert reader.reads == 1
    late = slow(300)  # 100 minutes before the newest: outside what is kept
    rows = kept.rows_for([late])
    assert reader.reads == 2
    assert rows.get_column("sent_ts").min() >= late["ts"] - WINDOW


def test_a_cluster_with_too_many_requests_is_read_from_the_lake_each_time(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history_module, "MAX_ROWS_PER_CLUSTER", 50)
    path = tmp_path / "control_request_latency"
    write(path, [request(i, 1 + i % 3, 100.0) for i in range(120)])
    reader = CountingTable(str(path), CONTROL_REQUEST_LATENCY.to_arrow())
    kept = LatencyHistory(reader, WINDOW)
    cands = [slow(119)]
    assert baseline(kept.rows_for(cands), cands[0]) is not None
    kept.rows_for(cands)
    assert reader.reads == 3  # the first read, its fallback, and the next call's
