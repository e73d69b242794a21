"""Pairing in the log family's micro-batches, end to end: Kafka log files -> the log query (--once) -> silver,
control_request_latency, pairing_state and alerts in Delta.

The lines go through the pipeline's own file source, parser and batch; metric samples (the brokers' heartbeats)
are written straight into metric_samples, as the metric family would have committed them before. Two scenarios:
  * the outside check's fixture (Kafka 2.8 INFO logs, broker 2's LeaderAndIsr 17 takes 13973 ms): exactly one
    alert, DELAYED_LEADER_AND_ISR on broker 2, and a latency row with the numbers the logs say;
  * a quiet cluster whose LeaderAndIsr never finishes: only metric heartbeats follow, over two runs of the query
    (the pairing state kept in pairing_state, the same lines shipped twice) -> LEADER_AND_ISR_NOT_COMPLETED; a
    healthy cluster in the same lake gets no alert.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from deltalake import DeltaTable

from jobs.run.runner import run_pipeline
from schemas.tables import METRIC_SAMPLES
from tests.lake_helpers import lake_rows, pipeline_settings

pytestmark = [pytest.mark.spark, pytest.mark.streaming, pytest.mark.slow]

FIXTURE = Path("/work/shared/checks/fixture/demo-cluster")


def _ts(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=dt.UTC)


def append(lake: Path, table, rows: list[dict]) -> None:
    """Rows written straight into a Delta table, as the pipeline's other family would have committed them."""
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


def write_log(root: Path, cluster: str, broker: int, lines: list[str], name: str = "state-change.log") -> None:
    """Append `lines` to broker `broker`'s log file `name` in the input tree (`<cluster>/broker-<id>/`)."""
    path = root / cluster / f"broker-{broker}" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.writelines(f"{line}\n" for line in lines)


def settings_for(tmp: Path, on_executors: bool = False, **detection):
    """The log query over `tmp/input`; `on_executors`: every batch processed (and paired) on the executors."""
    sink = {"driver_batch_max_rows": 0} if on_executors else {}
    return pipeline_settings(tmp, files=tmp / "input", detection=detection, sink=sink)


def run_logs(spark, settings) -> None:
    """The log family's query over what the input tree holds (--once)."""
    assert run_pipeline(spark, settings, families=("logs",)) == 0


def table(lake: Path, name: str) -> list[dict]:
    return lake_rows(lake, name)


def _operations(path: Path) -> list[str]:
    """The operation of each commit of the Delta table at `path`, oldest first."""
    return [row["operation"] for row in reversed(DeltaTable(str(path)).history())]


def test_fixture_replay_pairs_and_alerts_exactly_once(spark, tmp_path):
    if not FIXTURE.is_dir():
        pytest.skip(f"{FIXTURE} is not here")
    lake = tmp_path / "lake"
    settings = settings_for(tmp_path)
    for b in (1, 2):
        write_log(tmp_path / "input", "demo-cluster", b,
                  (FIXTURE / f"broker-{b}" / "state-change.log").read_text().splitlines())
    write_log(tmp_path / "input", "demo-cluster", 2, (FIXTURE / "broker-2" / "kafka-request.log").read_text()
              .splitlines(), "kafka-request.log")
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
    run_logs(spark, settings)

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
    # queued at the controller until the LeaderAndIsr before it was answered: its response left at 14,978 (request log)
    assert lat[(2, "UpdateMetadata", 18)]["controller_queue_ms"] == 13928.0
    assert len(lat) == 4
    # each request's one row was appended (its first row, into an empty table), not merged
    assert sorted(r["request_key"] for r in table(lake, "control_request_latency")) == sorted(
        r["request_key"] for r in lat.values())
    assert _operations(lake / "control_request_latency") == ["CREATE TABLE", "WRITE"]
    # the log query's checkpoint and the pairing state reset: the query reads and pairs everything again, and the
    # requests already in the table are merged (they started before what the table held), so each request keeps one
    # row
    shutil.rmtree(settings.checkpoint_path("ingest_logs_files"))
    shutil.rmtree(lake / "pairing_state")
    run_logs(spark, settings)
    again = table(lake, "control_request_latency")
    assert sorted(r["request_key"] for r in again) == sorted(r["request_key"] for r in lat.values())
    assert _operations(lake / "control_request_latency")[-1] == "MERGE"

    alerts = table(lake, "alerts")
    assert [(a["type"], a["broker_id"], a["status"]) for a in alerts] == [("DELAYED_LEADER_AND_ISR", 2, "open")]
    assert "took 13973 ms on broker 2: " in alerts[0]["summary"]
    assert "(6 ms of it waiting for a lock, inferred from the log lines' times)" in alerts[0]["summary"]


@pytest.mark.parametrize("on_executors", [False, True], ids=["driver", "executors"])
def test_quiet_cluster_never_completed_fires_with_heartbeats(spark, tmp_path, on_executors):
    lake = tmp_path / "lake"
    t0 = dt.datetime(2024, 5, 10, 9, 0, tzinfo=dt.UTC)

    def line(sec, msg):
        stamp = (t0 + dt.timedelta(seconds=sec)).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
        return f"[{stamp}] INFO {msg} (state.change.logger)"

    stuck_send = [line(0.000, "[Controller id=1 epoch=4] Sending LeaderAndIsr request to broker 3 with 1 "
                              "become-leader and 0 become-follower partitions")]
    stuck_broker = [line(0.004, "[Broker id=3] Handling LeaderAndIsr request correlationId 8 from controller 1 for "
                                "1 partitions")]
    root = tmp_path / "input"
    write_log(root, "quiet", 1, stuck_send)
    write_log(root, "quiet", 3, stuck_broker)
    write_log(root, "healthy", 1, [line(0.000, "[Controller id=1 epoch=2] Sending LeaderAndIsr request to broker 2 "
                                               "with 1 become-leader and 0 become-follower partitions")])
    write_log(root, "healthy", 2, [
        line(0.003, "[Broker id=2] Handling LeaderAndIsr request correlationId 3 from controller 1 for 1 partitions"),
        line(0.020, "[Broker id=2] Finished LeaderAndIsr request in 17ms correlationId 3 from controller 1 for 1 "
                    "partitions"),
    ])
    settings = settings_for(tmp_path, on_executors, never_completed_timeout_s=60, watermark_delay_s=5)
    run_logs(spark, settings)
    assert table(lake, "alerts") == []
    # the stuck request is still young (no in-flight report yet): it has no row until it ends or is reported
    assert [r for r in table(lake, "control_request_latency") if r["cluster"] == "quiet"] == []
    assert {r["cluster"] for r in table(lake, "pairing_state")} == {"quiet", "healthy"}

    # the cluster stays quiet: the same lines shipped again (duplicates) and metric heartbeats every 10 s
    write_log(root, "quiet", 1, stuck_send)
    write_log(root, "quiet", 3, stuck_broker)
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
    run_logs(spark, settings)

    alerts = table(lake, "alerts")
    assert [(a["type"], a["cluster"], a["broker_id"]) for a in alerts] == [("LEADER_AND_ISR_NOT_COMPLETED", "quiet", 3)]
    rows = [r for r in table(lake, "control_request_latency") if r["cluster"] == "quiet"]
    assert [(r["status"], r["correlation_id"]) for r in rows] == [("never_completed", 8)]
