"""conf/prometheus/planewatch-rules.yml against Debian's Prometheus: `promtool check rules` and its unit tests
(`promtool test rules`, conf/prometheus/planewatch-rules.test.yml) pass, and a real Prometheus on 127.0.0.1 scraping
the pipeline's metrics server (jobs.run.observability, fed a batch report in this process: no Spark) every second
loads the rules and answers queries over planewatch's metrics."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs.ingest.batch import BatchReport
from jobs.run import observability
from jobs.run.settings import parse_settings
from planewatch.demo.processes import free_port
from tests.polling import wait_until

pytestmark = pytest.mark.integration

RULES_DIR = Path(__file__).resolve().parents[2] / "conf" / "prometheus"
RULES = RULES_DIR / "planewatch-rules.yml"
RULE_TESTS = RULES_DIR / "planewatch-rules.test.yml"
# promtool checks and tests the rule file in well under a second; the bound only keeps a hung tool from hanging the
# suite.
PROMTOOL_TIMEOUT_S = 60
# Prometheus starts on an empty data directory in 1-3 s on a loaded 2-core machine; it scrapes and evaluates every
# second here, so the metrics and the rules' first evaluation follow within a few more.
START_TIMEOUT_S = 60.0
SCRAPED_TIMEOUT_S = 30.0
# Prometheus stops within a second on SIGTERM; past this it is killed.
STOP_TIMEOUT_S = 10.0


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: scripts/bootstrap.sh installs Debian's prometheus package")
    return path


def _promtool(*args: str) -> None:
    done = subprocess.run([_binary("promtool"), *args], cwd=RULES_DIR, capture_output=True, text=True,
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
    """Prometheus on 127.0.0.1 (a free port, a temporary data directory) scraping the pipeline's metrics every
    second as job planewatch-pipeline, with the rule file loaded; stopped whatever the test does."""
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [{"job_name": "planewatch-pipeline",
                            "static_configs": [{"targets": [f"127.0.0.1:{pipeline_metrics}"]}]}],
    }
    (tmp_path / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    port = free_port(0)
    log = (tmp_path / "prometheus.log").open("wb")
    proc = subprocess.Popen([_binary("prometheus"), f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
                             "--log.level=warn"], stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            assert proc.poll() is None, f"prometheus exited {proc.returncode}: {_tail(tmp_path / 'prometheus.log')}"
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                return bool(r.status == 200)

        wait_until(ready, START_TIMEOUT_S, "prometheus ready", ignoring=(urllib.error.URLError, OSError))
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-2000:]


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
