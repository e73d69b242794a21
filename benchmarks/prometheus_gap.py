"""The pipeline stopped while the operator's Prometheus kept scraping: does the restarted pipeline read the gap from
Prometheus, each sample once, and raise the gap's incident marked found late?

    .venv/bin/python -m benchmarks.prometheus_gap [--gap-minutes 30] [--scrape-interval 15] [--dir var/bench-gap]
                                                  [--json FILE]

1. Prometheus (Debian's) scrapes a broker's exporter endpoint (the reference broker's Prometheus server, in this
   process, serving Kafka's names) every --scrape-interval s, as cluster `gap`, broker 1 (file_sd labels);
2. `planewatch pipeline` (conf/pipeline.yaml's triggers, metrics read from Prometheus: sources.prometheus_server)
   runs for a few minutes, then stops (SIGINT);
3. for --gap-minutes no pipeline runs; halfway through, the broker's control-plane request queue holds 15 requests
   (of 20) for 90 s: CONTROL_PLANE_QUEUE_BACKLOG;
4. the pipeline starts again and reads the gap window by window; the benchmark polls the lake until the alert is
   there, then prints how long the catch-up took, the alert's found_late_s, and the gap's samples in the lake
   against what Prometheus holds (each once).
Numbers depend on the machine's load: run it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from benchmarks.exit import exit_with
from broker.metrics.prometheus import PrometheusServer
from broker.metrics.registry import MetricName, MetricsRegistry
from planewatch.demo.processes import Child, planewatch_cmd
from planewatch.kafka.prometheus import OperatorPrometheus, ScrapeTarget

CLUSTER, BROKER = "gap", 1
BEFORE_S = 180.0  # the pipeline runs this long before it is stopped (its start and first batches included)
BACKLOG_S = 90.0
BACKLOG = 15.0  # requests in the control-plane queue (capacity 20): warning at 10
QUEUE_SERIES = "kafka_network_requestchannel_controlplanerequestqueuesize"
SIGNAL = "ControlPlaneRequestQueueSize"
CATCH_UP_TIMEOUT_S = 900.0
POLL_S = 2.0


def _alerts(lake: Path) -> list[dict[str, Any]]:
    try:
        rows: list[dict[str, Any]] = DeltaTable(str(lake / "alerts")).to_pyarrow_table().to_pylist()
    except TableNotFoundError:  # the pipeline has not created it yet
        return []
    return [a for a in rows if a["type"] == "CONTROL_PLANE_QUEUE_BACKLOG" and a["cluster"] == CLUSTER]


def _samples(lake: Path, start_s: float, end_s: float) -> list[float]:
    rows = DeltaTable(str(lake / "metric_samples")).to_pyarrow_table(
        columns=["cluster", "signal", "ts"]).to_pylist()
    return sorted(r["ts"].timestamp() for r in rows
                  if r["cluster"] == CLUSTER and r["signal"] == SIGNAL and start_s <= r["ts"].timestamp() < end_s)


def _held(url: str, start_s: float, end_s: float) -> int:
    """Samples of the queue series Prometheus holds in [start_s, end_s)."""
    r = httpx.get(f"{url}/api/v1/query", params={"query": f"{QUEUE_SERIES}[{int((end_s - start_s) * 1000)}ms]",
                                                 "time": f"{end_s - 0.001:.3f}"}, timeout=30)
    return sum(len(s["values"]) for s in r.json()["data"]["result"])


def _pipeline(d: Path, config: Path) -> Child:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, "GX_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1"}
    return Child("pipeline", planewatch_cmd("pipeline", "--config", str(config), "--lake", str(d / "lake"),
                                            "--checkpoints", str(d / "checkpoints"), "-v"),
                 d / "logs" / "pipeline.log", env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gap-minutes", type=float, default=30.0)
    parser.add_argument("--scrape-interval", type=float, default=15.0)
    parser.add_argument("--dir", type=Path, default=Path("var/bench-gap"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    d = args.dir.resolve()
    for sub in ("lake", "checkpoints", "logs", "prometheus"):
        shutil.rmtree(d / sub, ignore_errors=True)
    (d / "logs").mkdir(parents=True)
    queue = [0.0]
    registry = MetricsRegistry()
    registry.gauge(MetricName.of("kafka.network", "RequestChannel", "ControlPlaneRequestQueueSize"), lambda: queue[0])
    registry.gauge(MetricName.of("kafka.network", "RequestChannel", "RequestQueueSize"), lambda: 0.0)
    exporter = PrometheusServer(registry, 0)
    exporter.start()
    out: dict[str, Any] = {"gap_minutes": args.gap_minutes, "scrape_interval_s": args.scrape_interval}
    try:
        with OperatorPrometheus(d / "prometheus", args.scrape_interval) as prom:
            prom.set_targets([ScrapeTarget(f"127.0.0.1:{exporter.port}", CLUSTER, BROKER)])
            config = d / "pipeline.yaml"
            raw = yaml.safe_load((Path(__file__).resolve().parents[1] / "conf" / "pipeline.yaml").read_text())
            raw["sources"]["files"]["enabled"] = False
            raw["sources"]["prometheus_server"].update({"enabled": True, "url": prom.url, "mapping": ["labels"],
                                                        "catch_up": "5 minutes"})
            config.write_text(yaml.safe_dump(raw, sort_keys=False))
            pipe = _pipeline(d, config)
            time.sleep(BEFORE_S)
            pipe.stop()
            gap_start = time.time()
            print(f"pipeline stopped; gap of {args.gap_minutes:g} minutes", flush=True)
            gap_s = args.gap_minutes * 60
            time.sleep(gap_s / 2)
            queue[0] = BACKLOG
            backlog_at = time.time()
            print("backlog on", flush=True)
            time.sleep(BACKLOG_S)
            queue[0] = 0.0
            time.sleep(max(0.0, gap_s / 2 - BACKLOG_S))
            gap_end = time.time()
            restart = time.time()
            pipe = _pipeline(d, config)
            print("pipeline restarted", flush=True)
            alert = None
            while time.time() - restart < CATCH_UP_TIMEOUT_S and alert is None:
                found = _alerts(d / "lake")
                alert = found[0] if found else None
                time.sleep(POLL_S)
            raised_after_s = time.time() - restart
            time.sleep(3 * args.scrape_interval)  # the gap's last windows and the live edge
            pipe.stop()
            in_lake = _samples(d / "lake", gap_start, gap_end)
            out.update({
                "alert_raised_after_restart_s": None if alert is None else round(raised_after_s, 1),
                "alert_found_late_s": None if alert is None else json.loads(alert["evidence"]).get("found_late_s"),
                "alert_started_at": None if alert is None else str(alert["started_at"]),
                "backlog_at": time.strftime("%H:%M:%S", time.gmtime(backlog_at)),
                "gap_samples_in_lake": len(in_lake), "gap_samples_distinct": len(set(in_lake)),
                "gap_samples_prometheus_holds": _held(prom.url, gap_start, gap_end),
            })
    finally:
        exporter.shutdown()
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    ok = out.get("alert_found_late_s") is not None and out["gap_samples_in_lake"] == out["gap_samples_distinct"] \
        == out["gap_samples_prometheus_holds"]
    return 0 if ok else 1


if __name__ == "__main__":
    exit_with(main())
