"""conf/prometheus/planewatch-rules.yml against Debian's Prometheus: `promtool check rules` and its unit tests
(`promtool test rules`, conf/prometheus/planewatch-rules.test.yml) pass, and a real Prometheus on 127.0.0.1 scraping
the pipeline's metrics server (jobs.run.observability, fed a batch report in this process: no Spark) every second
loads the rules and answers queries over planewatch's metrics."""

from __future__ import annotations

import json
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs.ingest.batch import BatchReport
from jobs.run import observability
from jobs.run.settings import parse_settings
from planewatch.kafka.prometheus import OperatorPrometheus, binary
from tests.polling import wait_until

pytestmark = pytest.mark.integration

RULES_DIR = Path(__file__).resolve().parents[2] / "conf" / "prometheus"
RULES = RULES_DIR / "planewatch-rules.yml"
RULE_TESTS = RULES_DIR / "planewatch-rules.test.yml"
# promtool checks and tests the rule file in well under a second; the bound only keeps a hung tool from hanging the
# suite.
PROMTOOL_TIMEOUT_S = 60
# Prometheus scrapes and evaluates every second here, so the metrics and the rules' first evaluation follow its start
# within a few seconds.
SCRAPE_S = 1.0
SCRAPED_TIMEOUT_S = 30.0


def _promtool(*args: str) -> None:
    done = subprocess.run([binary("promtool"), *args], cwd=RULES_DIR, capture_output=True, text=True,
                          timeout=PROMTOOL_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"promtool {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}"


def test_the_rule_file_passes_promtool_check() -> None:
    _promtool("check", "rules", RULES.name)


def test_the_rules_pass_their_promtool_unit_tests() -> None:
    _promtool("test", "rules", RULE_TESTS.name)


@pytest.fixture
def pipeline_metrics() -> Iterator[int]:
    """The pipeline's metrics server on 127.0.0.1 (a free port), holding one ok batch of a log query."""
    port = observability.start(parse_settings({"observability": {"metrics_port": 0}}), ("logs",))
    assert port is not None
    try:
        report = BatchReport(1, raw=5, silver={"state_change_events": 4}, quarantine=1)
        report.ok, report.seconds = True, 0.8
        report.quarantine_reasons, report.newest_event_ts = {"rejected": 1}, {"c1": 1_700_000_000.0}
        observability.batch_done("logs", "ingest_logs_files", report)
        yield port
    finally:
        observability.stop()


@pytest.fixture
def prometheus(tmp_path: Path, pipeline_metrics: int) -> Iterator[str]:
    """An operator's Prometheus on 127.0.0.1 (planewatch.kafka.prometheus) scraping the pipeline's metrics every
    second as job planewatch-pipeline, with the rule file loaded; stopped whatever the test does."""
    job = {"job_name": "planewatch-pipeline", "static_configs": [{"targets": [f"127.0.0.1:{pipeline_metrics}"]}]}
    with OperatorPrometheus(tmp_path, SCRAPE_S, rule_files=[RULES], extra_jobs=[job]) as prom:
        yield prom.url


def _api(url: str, path: str, **params: str) -> Any:
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with urllib.request.urlopen(f"{url}/api/v1/{path}{query}", timeout=5) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]


def test_a_real_prometheus_scrapes_the_pipeline_and_evaluates_the_rules(prometheus: str) -> None:
    def scraped() -> list[dict[str, Any]] | None:
        result: list[dict[str, Any]] = _api(prometheus, "query", query='planewatch_batches_total{outcome="ok"}')[
            "result"]
        return result or None

    (series,) = wait_until(scraped, SCRAPED_TIMEOUT_S, "planewatch_batches_total in Prometheus")
    assert series["metric"]["job"] == "planewatch-pipeline"
    assert series["metric"]["query"] == "ingest_logs_files"
    assert series["value"][1] == "1"
    quarantined = _api(prometheus, "query", query="planewatch_records_quarantined_total")["result"]
    assert [(q["metric"]["reason"], q["value"][1]) for q in quarantined] == [("rejected", "1")]
    lag = _api(prometheus, "query", query="planewatch_input_lag_seconds")["result"]
    assert [q["metric"]["cluster"] for q in lag] == ["c1"]
    assert float(lag[0]["value"][1]) > 0
    groups = _api(prometheus, "rules")["groups"]
    rules = {r["name"]: r["health"] for g in groups for r in g["rules"]}
    assert rules == {"PlanewatchDown": "ok", "PlanewatchBehind": "ok", "PlanewatchFailing": "ok"}

    def api_job_missing() -> bool:
        # no target of the API job here: PlanewatchDown holds for it (pending for its 2 minutes)
        alerts = _api(prometheus, "alerts")["alerts"]
        return any(a["labels"]["alertname"] == "PlanewatchDown" and a["labels"].get("job") == "planewatch-api"
                   for a in alerts)

    wait_until(api_job_missing, SCRAPED_TIMEOUT_S, "PlanewatchDown pending for the absent API job")
