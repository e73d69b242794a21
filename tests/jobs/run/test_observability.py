"""The pipeline's own metrics (jobs.run.observability): a batch's report and a maintenance pass become exactly their
updates (pure, no HTTP); the updates land in the registry; the lag is computed at the scrape; `observability:` is
validated; the server binds loopback, serves the text format and stops. No Spark."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from jobs import PipelineIOError
from jobs.ingest.batch import BatchReport
from jobs.run import observability
from jobs.run.observability import PipelineMetrics, Update, batch_updates, maintenance_updates
from jobs.run.settings import ObservabilitySettings, SettingsError, load_settings, parse_settings
from lake.maintenance import TableReport

NOW = 1_700_000_100.0
QUERY = "ingest_logs_files"


def report(ok: bool = True, **counts: object) -> BatchReport:
    r = BatchReport(7, **counts)  # type: ignore[arg-type]
    r.seconds, r.ok = 1.5, ok
    return r


def sample(metrics: PipelineMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


@pytest.fixture
def served() -> Iterator[None]:
    yield
    observability.stop()


def test_an_ok_batch_counts_its_records_reasons_event_times_and_commits() -> None:
    r = report(raw=10, silver={"state_change_events": 6, "request_events": 0}, quarantine=3, unused=1)
    r.quarantine_reasons = {"rejected": 1, "ts_not_null": 1}  # the third: a replay's row, its reason unknown
    # c3's newest line is dated next year: a bad timestamp, not input (it would hold the lag at 0)
    r.newest_event_ts = {"c2": 1_700_000_050.0, "c1": 1_700_000_000.0, "c3": NOW + 365 * 86400}
    assert batch_updates("logs", QUERY, r, NOW) == [
        Update("batches_total", (QUERY, "ok"), 1.0),
        Update("batches_total", (QUERY, "failed"), 0.0),
        Update("batch_duration_seconds", (QUERY,), 1.5),
        Update("records_read_total", (QUERY,), 10.0),
        Update("records_accepted_total", (QUERY,), 6.0),
        Update("records_quarantined_total", (QUERY, "rejected"), 1.0),
        Update("records_quarantined_total", (QUERY, "ts_not_null"), 1.0),
        Update("records_quarantined_total", (QUERY, "other"), 1.0),
        Update("input_newest_event_timestamp_seconds", ("logs", QUERY, "c1"), 1_700_000_000.0),
        Update("input_newest_event_timestamp_seconds", ("logs", QUERY, "c2"), 1_700_000_050.0),
        Update("last_commit_timestamp_seconds", ("raw_logs",), NOW),
        Update("last_commit_timestamp_seconds", ("state_change_events",), NOW),
        Update("last_commit_timestamp_seconds", ("quarantine",), NOW),
        Update("last_commit_timestamp_seconds", ("dq_results",), NOW),
    ]


def test_a_failed_batch_counts_only_as_failed_and_an_empty_one_commits_nothing() -> None:
    failed = report(ok=False, raw=10, silver={"metric_samples": 10})
    assert batch_updates("metrics", "q", failed, NOW) == [Update("batches_total", ("q", "failed"), 1.0),
                                                          Update("batches_total", ("q", "ok"), 0.0)]
    empty = batch_updates("metrics", "q", report(), NOW)
    assert not [u for u in empty if u.metric == "last_commit_timestamp_seconds"]
    assert Update("records_read_total", ("q",), 0.0) in empty


def test_a_maintenance_pass_counts_a_run_per_table() -> None:
    reports = {"raw_logs": TableReport("raw_logs"), "alerts": TableReport("alerts", errors=["OSError: gone"])}
    assert maintenance_updates(reports) == [Update("maintenance_runs_total", ("alerts", "failed"), 1.0),
                                            Update("maintenance_runs_total", ("raw_logs", "ok"), 1.0)]


def test_updates_land_in_the_registry_and_the_lag_is_computed_at_the_scrape() -> None:
    now = [NOW]
    metrics = PipelineMetrics(clock=lambda: now[0])
    r = report(raw=4, silver={"metric_samples": 4})
    r.newest_event_ts = {"c1": NOW - 30}
    metrics.apply(batch_updates("metrics", "q", r, NOW))
    metrics.apply(batch_updates("metrics", "q", r, NOW))
    older = report(raw=1, silver={"metric_samples": 1})
    older.newest_event_ts = {"c1": NOW - 3600}  # a backfill's batch does not move the newest time back
    metrics.apply(batch_updates("metrics", "q", older, NOW))
    metrics.apply(maintenance_updates({"alerts": TableReport("alerts")}))
    assert sample(metrics, "planewatch_batches_total", query="q", outcome="ok") == 3
    assert sample(metrics, "planewatch_batches_total", query="q", outcome="failed") == 0
    assert sample(metrics, "planewatch_records_read_total", query="q") == 9
    assert sample(metrics, "planewatch_batch_duration_seconds_count", query="q") == 3
    assert sample(metrics, "planewatch_batch_duration_seconds_bucket", query="q", le="2.0") == 3
    assert sample(metrics, "planewatch_last_commit_timestamp_seconds", table="metric_samples") == NOW
    assert sample(metrics, "planewatch_maintenance_runs_total", table="alerts", outcome="ok") == 1
    labels = {"family": "metrics", "query": "q", "cluster": "c1"}
    assert sample(metrics, "planewatch_input_newest_event_timestamp_seconds", **labels) == NOW - 30
    assert sample(metrics, "planewatch_input_lag_seconds", **labels) == 30
    now[0] += 60  # nothing newer arrived: the lag grows by itself
    assert sample(metrics, "planewatch_input_lag_seconds", **labels) == 90


def test_observability_settings_default_off_and_name_the_key() -> None:
    assert load_settings().observability == ObservabilitySettings(None, "127.0.0.1")
    assert parse_settings({"observability": {"metrics_port": 9464}}).observability.metrics_port == 9464
    assert parse_settings({"observability": {"metrics_port": None}}).observability.metrics_port is None
    for bad in ({"metrics_port": -1}, {"metrics_port": 70000}, {"metrics_port": "x"}, {"port": 1}):
        with pytest.raises(SettingsError, match=r"observability[.:]"):
            parse_settings({"observability": bad})


def test_the_server_serves_loopback_and_the_hooks_record_only_while_it_runs(served: None) -> None:
    settings = parse_settings({"observability": {"metrics_port": 0}})
    metrics = PipelineMetrics()
    observability.batch_done("logs", QUERY, report(raw=1, silver={"request_events": 1}))  # not served: ignored
    port = observability.start(settings, ("metrics", "logs"), metrics)
    assert port
    observability.batch_done("logs", QUERY, report(raw=2, silver={"request_events": 2}))
    observability.maintenance_done({"alerts": TableReport("alerts")})
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    assert f'planewatch_records_read_total{{query="{QUERY}"}} 2.0' in text
    assert "planewatch_pipeline_up 1.0" in text
    assert 'planewatch_maintenance_runs_total{outcome="ok",table="alerts"} 1.0' in text
    assert 'families="metrics,logs"' in text
    with pytest.raises(RuntimeError, match="already served"):
        observability.start(settings, ("logs",))
    observability.stop()
    observability.batch_done("logs", QUERY, report(raw=5))  # stopped: ignored again
    assert sample(metrics, "planewatch_records_read_total", query=QUERY) == 2
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0  # the port is closed


def test_no_port_serves_nothing_and_a_taken_port_names_the_key(served: None) -> None:
    assert observability.start(parse_settings({}), ("logs",)) is None
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PipelineIOError, match=r"observability\.metrics_port"):
            observability.start(parse_settings({"observability": {"metrics_port": port}}), ("logs",))
