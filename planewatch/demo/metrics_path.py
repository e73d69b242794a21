"""The demo's metrics as operators have them: a Prometheus the demo starts scrapes the Apache Kafka runs' JMX
exporters (file_sd kept from each run's cluster.json, as a service discovery would), and the pipeline reads that
Prometheus (jobs.sources.prometheus_server, `labels` preset) instead of asking the exporters itself.

`--metrics` chooses (:data:`METRICS_MODES`):

* `prometheus` (the default): no broker is scraped by planewatch; the samples reach it through Prometheus;
* `direct`: the pipeline scrapes the exporters itself (`sources.prometheus`, the demo before Prometheus);
* `both`: the pipeline scrapes them AND reads Prometheus's copy, named ``<run>-prom`` (:data:`PROM_SUFFIX`): one
  pipeline, one lake, the same metric incidents caught both ways under the same load (benchmarks.prometheus_delays
  prints the delays side by side).

The same Prometheus watches planewatch as an operator's would (:func:`planewatch_jobs`): the pipeline's metrics
port and the API's GET /metrics (with the demo's token), and the project's rule file (PlanewatchDown, Behind,
Failing: conf/prometheus/planewatch-rules.yml).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from jobs.sources.scrape import resolve_targets
from planewatch.kafka.prometheus import OperatorPrometheus, ScrapeTarget

__all__ = ["METRICS_MODES", "PROM_SUFFIX", "RULES", "operator_prometheus", "planewatch_jobs", "prometheus_name",
           "prometheus_source", "watching"]

METRICS_MODES = ("prometheus", "direct", "both")
PROM_SUFFIX = "-prom"
# The demo's discovery re-reads the runs' cluster.json this often (a broker restarted in a roll gets a new port).
SD_POLL_S = 1.0
# The pipeline reads Prometheus from this far back on its first start: the demo's lake starts empty with Prometheus.
CATCH_UP = "5 minutes"
# The project's rules about planewatch itself, which the demo's Prometheus evaluates.
RULES = Path(__file__).resolve().parents[2] / "conf" / "prometheus" / "planewatch-rules.yml"
# The scrape jobs the rules name.
PIPELINE_JOB, API_JOB = "planewatch-pipeline", "planewatch-api"


def planewatch_jobs(pipeline_address: str, api_address: str, token_file: Path) -> list[dict[str, Any]]:
    """The scrape jobs of planewatch itself: the pipeline's metrics port, the API's /metrics with its token."""
    return [{"job_name": PIPELINE_JOB, "static_configs": [{"targets": [pipeline_address]}]},
            {"job_name": API_JOB, "authorization": {"credentials_file": str(token_file)},
             "static_configs": [{"targets": [api_address]}]}]


def watching(url: str) -> str:
    """One line on how the demo's Prometheus sees planewatch: each planewatch job's `up` and each rule's state."""
    try:
        with httpx.Client(base_url=url, timeout=5) as client:
            up = client.get("/api/v1/query", params={"query": 'up{job=~"planewatch-.*"}'}).json()["data"]["result"]
            groups = client.get("/api/v1/rules").json()["data"]["groups"]
    except (httpx.HTTPError, ValueError, KeyError) as e:
        return f"cannot ask Prometheus ({type(e).__name__})"
    jobs = ", ".join(f"{r['metric']['job']} up={r['value'][1]}" for r in sorted(up, key=lambda r: r["metric"]["job"]))
    rules = ", ".join(f"{r['name']} {r.get('state', r.get('health'))}" for g in groups for r in g["rules"])
    return f"{jobs or 'no planewatch job scraped yet'}; rules: {rules or 'none loaded'}"


def prometheus_name(run: str, mode: str) -> str:
    """The cluster name a run's samples carry when they come through Prometheus."""
    return f"{run}{PROM_SUFFIX}" if mode == "both" else run


def prometheus_source(url: str) -> dict[str, Any]:
    """The pipeline's `sources.prometheus_server` section reading the demo's Prometheus."""
    return {"enabled": True, "url": url, "mapping": ["labels"], "catch_up": CATCH_UP}


def discovered(cluster_jsons: Mapping[str, Path]) -> list[ScrapeTarget]:
    """The exporters of every running cluster (cluster name -> its cluster.json), as scrape targets."""
    entries = [{"path": str(p), "cluster": name} for name, p in cluster_jsons.items()]
    targets, _ = resolve_targets([], entries, None, "default")
    return [ScrapeTarget(t.url.removeprefix("http://").split("/", 1)[0], t.cluster, t.broker_id)
            for t in targets if t.broker_id is not None]


@contextmanager
def operator_prometheus(root: Path, scrape_interval_s: float, cluster_jsons: Mapping[str, Path],
                        rule_files: Sequence[Path] = (), extra_jobs: Sequence[Mapping[str, object]] = ()
                        ) -> Iterator[OperatorPrometheus]:
    """The demo's Prometheus, its `kafka` targets kept from `cluster_jsons` every SD_POLL_S; stopped on exit."""
    stop = threading.Event()
    with OperatorPrometheus(root, scrape_interval_s, rule_files=rule_files, extra_jobs=extra_jobs) as prom:

        def sync() -> None:
            last: list[ScrapeTarget] | None = None
            while not stop.is_set():
                targets = discovered(cluster_jsons)
                if targets != last:
                    prom.set_targets(targets)
                    last = targets
                stop.wait(SD_POLL_S)

        thread = threading.Thread(target=sync, name="demo-prometheus-sd", daemon=True)
        thread.start()
        try:
            yield prom
        finally:
            stop.set()
            thread.join(SD_POLL_S * 5)
