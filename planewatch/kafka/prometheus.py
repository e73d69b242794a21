"""An operator's Prometheus: Debian's `prometheus` scraping Kafka's exporters, as the demo, the tests and the benchmarks
run it on 127.0.0.1, and planewatch reads it (jobs.sources.prometheus_server).

* `prometheus_yml` writes the configuration operators write: one `kafka` job over a file_sd target list (each
  exporter with its `cluster` and `broker_id` labels, planewatch's `labels` preset), other jobs as given (planewatch
  itself), rule files, a scrape interval of 15-60 s in the demo.
* `OperatorPrometheus` starts it (its own data directory, a free port, `/-/ready` awaited) and stops it whatever
  happens (a context manager); `set_targets` rewrites the file_sd list, which Prometheus re-reads by itself.
* `backfill` writes samples into a data directory as blocks (`promtool tsdb create-blocks-from openmetrics`), the way
  an operator imports history: Prometheus then holds an hour it never scraped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import yaml

from planewatch.demo.processes import Child, free_port, wait_http_ok

__all__ = ["KAFKA_JOB", "OperatorPrometheus", "PrometheusMissing", "ScrapeTarget", "backfill", "prometheus_yml"]

# The scrape job of the brokers' exporters (the label planewatch's selectors may use).
KAFKA_JOB = "kafka"
# Prometheus replays no WAL in a fresh directory; on a loaded 2-core machine it is ready in a few seconds.
START_TIMEOUT_S = 60.0
# It stops within a second on SIGINT; past this its process group is killed.
STOP_TIMEOUT_S = 10.0
# promtool writes an hour of a few brokers' samples into blocks in well under this.
BACKFILL_TIMEOUT_S = 120.0


class PrometheusMissing(RuntimeError):
    """Debian's prometheus (prometheus, promtool) is not installed."""


def binary(name: str) -> str:
    """The path of `name` (prometheus, promtool); PrometheusMissing names the fix if absent."""
    path = shutil.which(name)
    if path is None:
        raise PrometheusMissing(f"{name} is not installed: scripts/bootstrap.sh installs Debian's prometheus")
    return path


@dataclass(frozen=True)
class ScrapeTarget:
    """One exporter: `host:port`, its cluster and broker (or KRaft controller) id."""

    address: str
    cluster: str
    broker_id: int


def file_sd(targets: Sequence[ScrapeTarget]) -> list[dict[str, object]]:
    """A file_sd list of `targets`, each with its `cluster` and `broker_id` labels."""
    return [{"targets": [t.address], "labels": {"cluster": t.cluster, "broker_id": str(t.broker_id)}}
            for t in targets]


def prometheus_yml(targets_file: Path, scrape_interval_s: float, *, rule_files: Sequence[Path] = (),
                   extra_jobs: Sequence[Mapping[str, object]] = (), remote_write: Sequence[str] = ()) -> str:
    """prometheus.yml: the `kafka` job over `targets_file` (file_sd, re-read as it changes), `extra_jobs` as given,
    `rule_files` evaluated at the scrape interval, every sample pushed to the `remote_write` URLs."""
    interval = f"{scrape_interval_s:g}s"
    conf: dict[str, object] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval,
                   "scrape_timeout": f"{min(10.0, scrape_interval_s):g}s"},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [
            {"job_name": KAFKA_JOB, "file_sd_configs": [{"files": [str(targets_file)], "refresh_interval": "5s"}]},
            *extra_jobs,
        ],
    }
    if remote_write:
        conf["remote_write"] = [{"url": url} for url in remote_write]
    return yaml.safe_dump(conf, sort_keys=False)


class OperatorPrometheus:
    """Prometheus on 127.0.0.1 under `root` (config, file_sd list, data, log); a context manager that stops it."""

    def __init__(self, root: Path, scrape_interval_s: float = 15.0, *, rule_files: Sequence[Path] = (),
                 extra_jobs: Sequence[Mapping[str, object]] = (), remote_write: Sequence[str] = (),
                 retention: str = "2d") -> None:
        self.root = root
        self.scrape_interval_s = scrape_interval_s
        self.rule_files = rule_files
        self.extra_jobs = extra_jobs
        self.remote_write = remote_write
        self.retention = retention
        self.data = root / "data"
        self.targets_file = root / "targets.json"
        self.url = ""
        self._child: Child | None = None

    def start(self) -> OperatorPrometheus:
        """Write the configuration (no targets yet) and start; returns once it answers /-/ready."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.targets_file.exists():
            self.targets_file.write_text("[]")
        config = self.root / "prometheus.yml"
        config.write_text(prometheus_yml(self.targets_file, self.scrape_interval_s, rule_files=self.rule_files,
                                         extra_jobs=self.extra_jobs, remote_write=self.remote_write))
        port = free_port(0)
        self.url = f"http://127.0.0.1:{port}"
        self._child = Child("prometheus", [binary("prometheus"), f"--config.file={config}",
                                           f"--storage.tsdb.path={self.data}",
                                           f"--storage.tsdb.retention.time={self.retention}",
                                           f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                            self.root / "prometheus.log", dict(os.environ))
        try:
            wait_http_ok(f"{self.url}/-/ready", START_TIMEOUT_S, self._child)
        except BaseException:
            self.stop()
            raise
        return self

    def set_targets(self, targets: Sequence[ScrapeTarget]) -> None:
        """Make `targets` the `kafka` job's targets (Prometheus re-reads the file within its refresh interval)."""
        tmp = self.targets_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(file_sd(targets)))
        os.replace(tmp, self.targets_file)  # Prometheus never sees a half-written list

    def stop(self) -> None:
        if self._child is not None:
            self._child.stop(STOP_TIMEOUT_S)
            self._child = None

    def __enter__(self) -> OperatorPrometheus:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def backfill(data: Path, openmetrics: str) -> None:
    """Write `openmetrics` (OpenMetrics text with timestamps in seconds, ending in `# EOF`) into the data directory
    `data` as blocks, before Prometheus starts on it."""
    data.mkdir(parents=True, exist_ok=True)
    source = data.parent / "backfill.om"
    source.write_text(openmetrics)
    try:
        subprocess.run([binary("promtool"), "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
                       check=True, capture_output=True, timeout=BACKFILL_TIMEOUT_S)
    except subprocess.CalledProcessError as e:
        raise RuntimeError(f"promtool could not backfill: {e.stderr.decode(errors='replace')[-500:]}") from None
    finally:
        source.unlink(missing_ok=True)
