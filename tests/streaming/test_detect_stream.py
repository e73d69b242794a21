"""The detect job end to end: silver Delta tables -> jobs/detect.py (streaming, --once) -> gold Delta tables.

Silver rows are written straight into Delta (as the ingest job would); the job reads them through the
planewatch_delta streaming source, pairs, detects and MERGEs. Two scenarios:
  * the outside check's fixture (Kafka 2.8 INFO logs, broker 2's LeaderAndIsr 17 takes 13973 ms): exactly one
    alert, DELAYED_LEADER_AND_ISR on broker 2, and a latency row with the numbers the logs say;
  * a quiet cluster whose LeaderAndIsr never finishes: only metric heartbeats follow, over two runs of the job
    (state kept in the checkpoint, the same lines shipped twice) -> LEADER_AND_ISR_NOT_COMPLETED; a healthy
    cluster in the same lake gets no alert.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from deltalake import DeltaTable

from schemas.tables import METRIC_SAMPLES, REQUEST_EVENTS, STATE_CHANGE_EVENTS
from tests.lake_helpers import lake_rows, pipeline_settings

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.slow]

FIXTURE = Path("/work/shared/checks/fixture/demo-cluster")


def _ts(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=dt.UTC)


def append(lake: Path, table, rows: list[dict]) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    full = []
    for i, r in enumerate(rows):
        r = {"source": "test", "source_offset": i, **r}
        r.setdefault("date", r["ts"].date())
        full.append({n: r.get(n) for n in table.names})
    write_deltalake(
        str(lake / table.name),
        pa.Table.from_pylist(full, schema=table.to_arrow()),
        partition_by=list(table.partition_by),
        mode="append",
    )


def log_rows(cluster: str, broker: int, lines: list[str]) -> list[dict]:
    """state_change_events rows of log lines as the ingest job writes them: through the pipeline's own parser."""
    import pyarrow as pa

    from pipelines.parsing.engine import route_records
    from schemas.tables import RAW_LOGS

    raw = [{"cluster": cluster, "broker_id": broker, "log_kind": "state-change", "line": line,
            "line_bytes": len(line), "source": "test", "source_offset": i, "date": dt.date(2024, 1, 1)}
           for i, line in enumerate(lines)]
    keep = set(STATE_CHANGE_EVENTS.names) - {"source", "source_offset", "ingest_ts", "batch_id", "date"}
    return [{k: v for k, v in r.items() if k in keep}
            for route, r in route_records(pa.Table.from_pylist(raw, RAW_LOGS.to_arrow()), "logs")
            if route == "state_change"]


def settings_for(tmp: Path, **detection):
    return pipeline_settings(tmp, detection=detection)


def run_detect(spark, settings) -> None:
    from jobs.detect import start_detection_queries

    queries = start_detection_queries(spark, settings)
    try:
        for q in queries:
            assert q.awaitTermination(timeout=300), f"{q.name} did not finish"
            assert q.exception() is None, q.exception()
    finally:
        for q in queries:
            if q.isActive:
                q.stop()


def table(lake: Path, name: str) -> list[dict]:
    return lake_rows(lake, name)


def _operations(path: Path) -> list[str]:
    """The operation of each commit of the Delta table at `path`, oldest first."""
    return [row["operation"] for row in reversed(DeltaTable(str(path)).history())]


def test_fixture_replay_pairs_and_alerts_exactly_once(spark, tmp_path):
    lake = tmp_path / "lake"
    rows = []
    for b in (1, 2):
        rows += log_rows("demo-cluster", b, (FIXTURE / f"broker-{b}" / "state-change.log").read_text().splitlines())
    append(lake, STATE_CHANGE_EVENTS, rows)
    append(
        lake,
        REQUEST_EVENTS,
        [
            {
                "cluster": "demo-cluster",
                "broker_id": 2,
                "ts": _ts("2021-03-02 08:00:14,978"),
                "api_key": 4,
                "api_name": "LeaderAndIsr",
                "correlation_id": 17,
                "listener": "CONTROLLER",
                "total_time_ms": 13974.2,
                "request_queue_time_ms": 0.061,
                "local_time_ms": 13973.7,
                "error_code": 0,
            }
        ],
    )
    samples = []
    for f in sorted((FIXTURE / "broker-2" / "metrics").glob("*.prom")):
        for line in f.read_text().splitlines():
            if line and not line.startswith("#"):
                name, value, ms = line.split()
                signal = {
                    "kafka_network_requestchannel_requestqueuesize": "RequestQueueSize",
                    "kafka_network_requestchannel_controlplanerequestqueuesize": "ControlPlaneRequestQueueSize",
                    "kafka_network_socketserver_networkprocessoravgidlepercent": "NetworkProcessorAvgIdlePercent",
                }[name]
                samples.append(
                    {
                        "cluster": "demo-cluster",
                        "broker_id": 2,
                        "signal": signal,
                        "attribute": "Value",
                        "value": float(value),
                        "raw_name": name,
                        "metric_format": "prometheus",
                        "ts": dt.datetime.fromtimestamp(int(ms) / 1000, dt.UTC),
                    }
                )
    append(lake, METRIC_SAMPLES, samples)

    settings = settings_for(tmp_path)
    run_detect(spark, settings)

    lat = {(r["broker_id"], r["request"], r["correlation_id"]): r for r in table(lake, "control_request_latency")}
    lai = lat[(2, "LeaderAndIsr", 17)]
    assert lai["status"] == "completed"
    assert lai["pairing"] == "order"
    assert lai["end_to_end_ms"] == 13973.0
    assert lai["queue_ms"] == 6.0
    assert lai["processing_ms"] == 13967.0
    assert lai["lock_wait_ms"] == 6.0
    assert lai["controller_epoch"] == 9
    assert lai["sent_ts"] == _ts("2021-03-02 08:00:01,004")
    assert lat[(1, "LeaderAndIsr", 16)]["end_to_end_ms"] == 36.0
    assert lat[(2, "UpdateMetadata", 18)]["controller_queue_ms"] == 13927.0
    assert len(lat) == 4
    # each request's one row was appended (its first row, into an empty table), not merged
    assert sorted(r["request_key"] for r in table(lake, "control_request_latency")) == sorted(
        r["request_key"] for r in lat.values())
    assert _operations(lake / "control_request_latency") == ["CREATE TABLE", "WRITE"]
    # the pairing's checkpoint reset: the query pairs everything again, and the requests already in the table are
    # merged (they started before what the table held), so each request keeps one row
    shutil.rmtree(settings.checkpoint_path("detect_pairing"))
    run_detect(spark, settings)
    again = table(lake, "control_request_latency")
    assert sorted(r["request_key"] for r in again) == sorted(r["request_key"] for r in lat.values())
    assert _operations(lake / "control_request_latency")[-1] == "MERGE"

    alerts = table(lake, "alerts")
    assert [(a["type"], a["broker_id"], a["status"]) for a in alerts] == [("DELAYED_LEADER_AND_ISR", 2, "open")]
    assert "took 13973 ms on broker 2: " in alerts[0]["summary"]
    assert "(6 ms of it waiting for a lock, inferred from the log lines' times)" in alerts[0]["summary"]
    rollups = table(lake, "metric_rollups_1m")
    rqs = [r for r in rollups if r["signal"] == "RequestQueueSize"]
    # scrapes at 08:00:00, :15, :30, :45 -> one minute
    assert [(r["minute"], r["min"], r["max"], r["avg"], r["last"], r["samples"]) for r in rqs] == [
        (_ts("2021-03-02 08:00:00,000"), 0.0, 9.0, 4.5, 9.0, 4)
    ]


def test_quiet_cluster_never_completed_fires_with_heartbeats(spark, tmp_path):
    lake = tmp_path / "lake"
    t0 = dt.datetime(2024, 5, 10, 9, 0, tzinfo=dt.UTC)

    def line(cluster, sec, msg, broker):
        stamp = (t0 + dt.timedelta(seconds=sec)).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
        (row,) = log_rows(cluster, broker, [f"[{stamp}] INFO {msg} (state.change.logger)"])
        return row

    stuck = [
        line(
            "quiet",
            0.000,
            "[Controller id=1 epoch=4] Sending LeaderAndIsr request to broker 3 with 1 "
            "become-leader and 0 become-follower partitions",
            1,
        ),
        line(
            "quiet",
            0.004,
            "[Broker id=3] Handling LeaderAndIsr request correlationId 8 from controller 1 for 1 partitions",
            3,
        ),
    ]
    healthy = [
        line(
            "healthy",
            0.000,
            "[Controller id=1 epoch=2] Sending LeaderAndIsr request to broker 2 with 1 "
            "become-leader and 0 become-follower partitions",
            1,
        ),
        line(
            "healthy",
            0.003,
            "[Broker id=2] Handling LeaderAndIsr request correlationId 3 from controller 1 for 1 partitions",
            2,
        ),
        line(
            "healthy",
            0.020,
            "[Broker id=2] Finished LeaderAndIsr request in 17ms correlationId 3 from controller 1 for 1 partitions",
            2,
        ),
    ]
    append(lake, STATE_CHANGE_EVENTS, stuck + healthy)
    settings = settings_for(tmp_path, never_completed_timeout_s=60, watermark_delay_s=5)
    run_detect(spark, settings)
    assert table(lake, "alerts") == []
    # the stuck request is still young (no in-flight report yet): it has no row until it ends or is reported
    assert [r for r in table(lake, "control_request_latency") if r["cluster"] == "quiet"] == []

    # the cluster stays quiet: the same lines shipped again (duplicates) and metric heartbeats every 10 s
    append(lake, STATE_CHANGE_EVENTS, stuck)
    beats = [
        {
            "cluster": c,
            "broker_id": 3,
            "signal": "RequestQueueSize",
            "attribute": "Value",
            "value": 0.0,
            "ts": t0 + dt.timedelta(seconds=10 * i),
        }
        for i in range(1, 13)
        for c in ("quiet", "healthy")
    ]
    append(lake, METRIC_SAMPLES, beats)
    run_detect(spark, settings)

    alerts = table(lake, "alerts")
    assert [(a["type"], a["cluster"], a["broker_id"]) for a in alerts] == [("LEADER_AND_ISR_NOT_COMPLETED", "quiet", 3)]
    rows = [r for r in table(lake, "control_request_latency") if r["cluster"] == "quiet"]
    assert [(r["status"], r["correlation_id"]) for r in rows] == [("never_completed", 8)]
