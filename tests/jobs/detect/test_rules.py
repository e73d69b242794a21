"""The rules inside an ingest micro-batch (jobs.detect.rules) over a delta-rs lake, without Spark: alert writes exactly
once per batch id, a batch holding only one of its family's tables, resolution by the event time the input reached,
ownership by cluster, and the metric windows completed from samples earlier batches committed."""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake

from jobs.detect.rules import LogRules, MetricRules, SilverBatch
from jobs.run.settings import Settings
from pipelines.detection.config import DetectionConfig
from schemas.tables import METRIC_ROLLUPS_1M, METRIC_SAMPLES, REQUEST_EVENTS, STATE_CHANGE_EVENTS, Table
from tests.lake_helpers import lake_rows, pipeline_settings

T0 = dt.datetime(2026, 3, 2, 8, 0, 0, tzinfo=dt.UTC)
CFG = DetectionConfig()
STALE = "Received LeaderAndIsr request with broker epoch 25 smaller than the current broker epoch 31"


def t(sec: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=sec)


def table(spec: Table, rows: list[dict]) -> pa.Table:
    full = [{"source": "f", "source_offset": i, "date": r["ts"].date(), **r} for i, r in enumerate(rows)]
    return pa.Table.from_pylist([{n: r.get(n) for n in spec.names} for r in full], spec.to_arrow())


def stale(cluster: str, sec: float, broker: int = 3) -> dict:
    return {"cluster": cluster, "broker_id": broker, "ts": t(sec), "level": "INFO", "event": "stale_broker_epoch",
            "message": STALE, "request": "LeaderAndIsr", "broker_epoch": 25, "current_broker_epoch": 31}


def fetch(cluster: str, sec: float) -> dict:
    return {"cluster": cluster, "broker_id": 2, "ts": t(sec), "api_name": "Fetch", "correlation_id": 5,
            "listener": "PLAINTEXT", "request_queue_time_ms": 0.1, "total_time_ms": 1.0, "error_code": 0}


def _rows(table: pa.Table, columns: list[str] | None, where: pc.Expression | None) -> pa.Table:
    kept = table if where is None else table.filter(where)
    return kept if columns is None else kept.select(columns)


def loader(rows: pa.Table):
    """A batch's loader of one silver table's rows (jobs.detect.rules.SilverLoad) over rows held in memory."""
    return functools.partial(_rows, rows)


def alerts(lake: Path) -> list[dict]:
    return lake_rows(lake, "alerts")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return pipeline_settings(tmp_path, once=False)


def test_log_rules_write_once_per_batch_and_resolve_by_event_time(settings: Settings, tmp_path: Path) -> None:
    rules = LogRules(settings, "ingest_logs_files", "r1", CFG)
    sc = table(STATE_CHANGE_EVENTS, [stale("c", 1), stale("c", 2)])
    rules(SilverBatch({STATE_CHANGE_EVENTS.name: loader(sc)}), 0)
    [a] = alerts(tmp_path / "lake")
    assert (a["type"], a["broker_id"], a["severity"], a["value"], a["threshold"], a["status"]) == (
        "STALE_BROKER_EPOCH", 3, "warning", 2.0, 1.0, "open")
    version = DeltaTable(str(tmp_path / "lake" / "alerts")).version()
    rules(SilverBatch({STATE_CHANGE_EVENTS.name: loader(sc)}), 0)  # a replayed batch: no second write
    assert DeltaTable(str(tmp_path / "lake" / "alerts")).version() == version
    # a batch of request-log rows only, its event time short of the alert's last sighting plus the hysteresis and
    # the watermark delay: still open; the next one passes it, and the batch's own event time resolves it
    later = 2 + CFG.resolve_after_s + CFG.watermark_delay_s
    rules(SilverBatch({REQUEST_EVENTS.name: loader(table(REQUEST_EVENTS, [fetch("c", later - 1)]))}), 1)
    assert [a["status"] for a in alerts(tmp_path / "lake")] == ["open"]
    rules(SilverBatch({REQUEST_EVENTS.name: loader(table(REQUEST_EVENTS, [fetch("c", later + 1)]))}), 2)
    [a] = alerts(tmp_path / "lake")
    assert a["status"] == "resolved"
    assert a["resolved_at"] == t(2 + CFG.resolve_after_s)


def test_a_writer_resolves_only_the_clusters_its_query_reads(settings: Settings, tmp_path: Path) -> None:
    rules = LogRules(settings, "ingest_logs_files", "r1", CFG)
    rules(SilverBatch({STATE_CHANGE_EVENTS.name: loader(table(STATE_CHANGE_EVENTS, [stale("a", 1)]))}), 0)
    other = LogRules(settings, "ingest_logs_kafka", "r2", CFG)  # another source, another cluster, far later
    for batch, sec in enumerate((1000.0, 1001.0)):
        other(SilverBatch({REQUEST_EVENTS.name: loader(table(REQUEST_EVENTS, [fetch("b", sec)]))}), batch)
    assert [(a["cluster"], a["status"]) for a in alerts(tmp_path / "lake")] == [("a", "open")]
    # nor does another cluster of the same source: each cluster's own event time resolves its alerts
    for batch, sec in enumerate((1000.0, 1001.0), start=1):
        rules(SilverBatch({REQUEST_EVENTS.name: loader(table(REQUEST_EVENTS, [fetch("b", sec)]))}), batch)
    assert [(a["cluster"], a["status"]) for a in alerts(tmp_path / "lake")] == [("a", "open")]


def _queue(sec: float, value: float, broker: int = 1) -> dict:
    return {"cluster": "c", "broker_id": broker, "ts": t(sec), "signal": "RequestQueueSize", "attribute": "Value",
            "value": value}


def test_metric_windows_take_earlier_batches_samples_from_silver(settings: Settings, tmp_path: Path) -> None:
    """RequestQueueSize at the queue's capacity for 4 scrapes, one per batch: only the windows holding several of
    them show a sustained run, so the alert needs the samples earlier batches committed."""
    rules = MetricRules(settings, "ingest_metrics_files", "r1", CFG)
    cap = 500.0
    path = str(tmp_path / "lake" / METRIC_SAMPLES.name)
    for batch, sec in enumerate((0.0, 2.0, 4.0, 6.0)):
        rows = table(METRIC_SAMPLES, [_queue(sec, cap)])
        write_deltalake(path, rows, partition_by=list(METRIC_SAMPLES.partition_by), mode="append")  # the commit
        rules(SilverBatch({METRIC_SAMPLES.name: loader(rows)}), batch)
    found = [a for a in alerts(tmp_path / "lake") if a["type"] == "REQUEST_QUEUE_SATURATED"]
    assert [(a["broker_id"], a["severity"], a["value"], a["listener"]) for a in found] == [
        (1, "critical", cap, "data-plane")]
    assert "4 samples" in found[0]["summary"] or '"samples": 4' in found[0]["evidence"]


def test_one_scrape_a_minute_one_batch_each_fires_by_the_second_saturated_scrape(settings: Settings,
                                                                                  tmp_path: Path) -> None:
    """At a 60 s scrape interval each batch holds one sample of the series: its window reaches back to the previous
    scrape (read from silver), so two saturated scrapes in a row are a sustained run."""
    rules = MetricRules(settings, "ingest_metrics_files", "r1", CFG)
    path = str(tmp_path / "lake" / METRIC_SAMPLES.name)
    for batch, (sec, value) in enumerate(((0.0, 3.0), (60.0, 3.0), (120.0, 3.0), (180.0, 480.0), (240.0, 490.0))):
        rows = table(METRIC_SAMPLES, [_queue(sec, value)])
        write_deltalake(path, rows, partition_by=list(METRIC_SAMPLES.partition_by), mode="append")
        rules(SilverBatch({METRIC_SAMPLES.name: loader(rows)}), batch)
        found = [a for a in alerts(tmp_path / "lake") if a["type"] == "REQUEST_QUEUE_SATURATED"]
        assert bool(found) == (sec == 240.0), f"after the scrape at {sec:g} s: {found}"
    assert [(a["broker_id"], a["value"]) for a in found] == [(1, 480.0)]


def test_a_late_sample_is_not_judged_again(settings: Settings, tmp_path: Path) -> None:
    """Once the cluster's event time passed a resolved alert's windows, a sample arriving late for them (a file
    shipped again, a lagging source) reopens nothing: its windows were judged already."""
    rules = MetricRules(settings, "ingest_metrics_files", "r1", CFG)
    path = str(tmp_path / "lake" / METRIC_SAMPLES.name)
    quiet_from = 6 + CFG.resolve_after_s + CFG.watermark_delay_s + CFG.metric_window_s

    def batch(batch_id: int, points: list[tuple[float, float]]) -> None:
        rows = table(METRIC_SAMPLES, [_queue(sec, value) for sec, value in points])
        write_deltalake(path, rows, partition_by=list(METRIC_SAMPLES.partition_by), mode="append")
        rules(SilverBatch({METRIC_SAMPLES.name: loader(rows)}), batch_id)

    batch(0, [(0.0, 500.0), (2.0, 500.0), (4.0, 500.0)])
    batch(1, [(quiet_from, 0.0)])
    batch(2, [(quiet_from + 5, 0.0)])
    before = sorted((a["alert_id"], a["type"], a["status"], a["last_seen_at"]) for a in alerts(tmp_path / "lake"))
    # the saturated queue, and on a broker without a control plane its controller requests waiting behind data
    assert sorted((t, status) for _, t, status, _ in before) == [("CONTROL_REQUEST_QUEUE_DELAY", "resolved"),
                                                               ("REQUEST_QUEUE_SATURATED", "resolved")]
    batch(3, [(6.0, 500.0)])  # late: its windows lie far behind the cluster's event time
    assert sorted((a["alert_id"], a["type"], a["status"], a["last_seen_at"])
                  for a in alerts(tmp_path / "lake")) == before


def _scrape(cluster: str, sec: float, urp_on_1: float) -> list[dict]:
    """A ZooKeeper-mode cluster's roll signals at one scrape: broker 1 the controller."""
    rows = []
    for b in (1, 2, 3):
        for signal, v in (("UnderReplicatedPartitions", urp_on_1 if b == 1 else 0.0),
                          ("UnderMinIsrPartitionCount", 0.0), ("ActiveControllerCount", float(b == 1))):
            rows.append({"cluster": cluster, "broker_id": b, "ts": t(sec), "signal": signal, "attribute": "Value",
                         "value": v})
    return rows


def test_a_shutdown_is_judged_once_its_clusters_samples_reach_it(settings: Settings, tmp_path: Path) -> None:
    """A controlled-shutdown line can reach the lake before the scrapes of the seconds before it: ROLL_TOO_FAST
    waits for the cluster's samples to pass the line's time, then judges the cluster as it was just before."""
    lake = tmp_path / "lake"
    rules = LogRules(settings, "ingest_logs_files", "r1", CFG)
    write_deltalake(str(lake / METRIC_SAMPLES.name), table(METRIC_SAMPLES, _scrape("c", 0, 0.0)),
                    partition_by=list(METRIC_SAMPLES.partition_by))
    shutdown = {"cluster": "c", "broker_id": 2, "ts": t(12), "level": "INFO", "event": "controlled_shutdown_started",
                "message": "Starting controlled shutdown"}
    rules(SilverBatch({STATE_CHANGE_EVENTS.name: loader(table(STATE_CHANGE_EVENTS, [shutdown]))}), 0)
    assert alerts(lake) == []  # the samples reach 0 s only: judged now, the cluster would read safe
    # the scrapes at 10 s (broker 3 not back in the ISR: 4 under-replicated on broker 1) and 15 s arrive
    write_deltalake(str(lake / METRIC_SAMPLES.name), table(METRIC_SAMPLES, _scrape("c", 10, 4.0) + _scrape(
        "c", 15, 4.0)), mode="append", partition_by=list(METRIC_SAMPLES.partition_by))
    rules(SilverBatch({REQUEST_EVENTS.name: loader(table(REQUEST_EVENTS, [fetch("c", 16)]))}), 1)
    [a] = alerts(lake)
    assert (a["type"], a["broker_id"], a["severity"]) == ("ROLL_TOO_FAST", 2, "warning")
    assert "broker 1: 4 under-replicated" in a["summary"]


def test_a_restarted_query_judges_the_shutdowns_its_predecessor_left_pending(settings: Settings,
                                                                              tmp_path: Path) -> None:
    """The shutdown waits for its samples in one run of the query; the query is restarted (a new process, the same
    checkpoint) before they arrive: the new run judges it, as the first would have, and a replay of its batch
    raises it once."""
    lake = tmp_path / "lake"
    write_deltalake(str(lake / METRIC_SAMPLES.name), table(METRIC_SAMPLES, _scrape("c", 0, 0.0)),
                    partition_by=list(METRIC_SAMPLES.partition_by))
    shutdown = {"cluster": "c", "broker_id": 2, "ts": t(12), "level": "INFO", "event": "controlled_shutdown_started",
                "message": "Starting controlled shutdown"}
    first = LogRules(settings, "ingest_logs_files", "r1", CFG)
    first(SilverBatch({STATE_CHANGE_EVENTS.name: loader(table(STATE_CHANGE_EVENTS, [shutdown]))}), 0)
    assert alerts(lake) == []
    assert first.rolls.pending(1).height == 1
    write_deltalake(str(lake / METRIC_SAMPLES.name), table(METRIC_SAMPLES, _scrape("c", 10, 4.0) + _scrape(
        "c", 15, 4.0)), mode="append", partition_by=list(METRIC_SAMPLES.partition_by))
    restarted = LogRules(settings, "ingest_logs_files", "r2", CFG)
    assert restarted.rolls.pending(1).get_column("ts").to_list() == [t(12)]
    later = SilverBatch({REQUEST_EVENTS.name: loader(table(REQUEST_EVENTS, [fetch("c", 16)]))})
    restarted(later, 1)
    [a] = alerts(lake)
    assert (a["type"], a["broker_id"], a["severity"]) == ("ROLL_TOO_FAST", 2, "warning")
    assert restarted.rolls.pending(2).is_empty()
    LogRules(settings, "ingest_logs_files", "r3", CFG)(later, 1)  # batch 1 replayed by yet another run
    assert [(x["alert_id"], x["type"]) for x in alerts(lake)] == [(a["alert_id"], "ROLL_TOO_FAST")]


def test_a_metric_alert_reads_its_brokers_history_from_the_rollups(settings: Settings, tmp_path: Path) -> None:
    """The own-history half of a metric alert's baseline comes from metric_rollups_1m in the lake: 30 quiet minutes
    of broker 1's RequestQueueSize (2 requests on average) before the queue filled."""
    minutes = [T0 - dt.timedelta(minutes=30 - m) for m in range(30)]
    quiet = [{"cluster": "c", "broker_id": 1, "signal": "RequestQueueSize", "listener": None, "request": None,
              "attribute": "Value", "minute": m, "min": 0.0, "max": 5.0, "avg": 2.0, "last": 1.0, "samples": 12,
              "date": m.date()} for m in minutes]
    write_deltalake(str(tmp_path / "lake" / METRIC_ROLLUPS_1M.name),
                    pa.Table.from_pylist(quiet, METRIC_ROLLUPS_1M.to_arrow()),
                    partition_by=list(METRIC_ROLLUPS_1M.partition_by) or None)
    rules = MetricRules(settings, "ingest_metrics_files", "r1", CFG)
    path = str(tmp_path / "lake" / METRIC_SAMPLES.name)
    for batch, sec in enumerate((0.0, 2.0, 4.0)):
        rows = table(METRIC_SAMPLES, [_queue(sec, 500.0)])
        write_deltalake(path, rows, partition_by=list(METRIC_SAMPLES.partition_by), mode="append")
        rules(SilverBatch({METRIC_SAMPLES.name: loader(rows)}), batch)
    [found] = [a for a in alerts(tmp_path / "lake") if a["type"] == "REQUEST_QUEUE_SATURATED"]
    assert "[against: its own p90 over the previous 60 min 2.0 requests (30 one-minute values)]" in found["summary"]


def _control(sec: float, queued_ms: float, broker: int = 2, corr: int = 5) -> dict:
    return {"cluster": "c", "broker_id": broker, "ts": t(sec), "api_name": "LeaderAndIsr", "correlation_id": corr,
            "listener": "PLAINTEXT", "request_queue_time_ms": queued_ms, "total_time_ms": queued_ms + 20.0,
            "error_code": 0}


def test_a_queued_control_request_is_compared_with_the_request_logs_earlier_ones(settings: Settings,
                                                                                   tmp_path: Path) -> None:
    """CONTROL_REQUEST_QUEUED_BEHIND_DATA's baseline: the broker's own p90 and its peers' median of the same request
    type's queue time, from the request log's rows in the lake."""
    earlier = ([_control(-600 + 10 * i, 2.0 + i, corr=i) for i in range(10)]
               + [_control(-600 + 10 * i, 1.0, broker=1, corr=100 + i) for i in range(6)])
    write_deltalake(str(tmp_path / "lake" / REQUEST_EVENTS.name), table(REQUEST_EVENTS, earlier),
                    partition_by=list(REQUEST_EVENTS.partition_by))
    rules = LogRules(settings, "ingest_logs_files", "r1", CFG)
    slow = table(REQUEST_EVENTS, [_control(0.0, 4_300.0, corr=77)])
    write_deltalake(str(tmp_path / "lake" / REQUEST_EVENTS.name), slow, partition_by=list(REQUEST_EVENTS.partition_by),
                    mode="append")
    rules(SilverBatch({REQUEST_EVENTS.name: loader(slow)}), 0)
    [a] = [a for a in alerts(tmp_path / "lake") if a["type"] == "CONTROL_REQUEST_QUEUED_BEHIND_DATA"]
    assert a["summary"].endswith("[against: its own p90 in the request queue over the last 60 min 10 ms (10 requests "
                                 "under 100 ms); its peers' median 1 ms (6 requests)]"), a["summary"]
