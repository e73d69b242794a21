"""The demo's logs as operators ship them: the Apache Kafka runs' brokers ship their log files through rsyslog into a
topic of a logging Kafka cluster the demo starts, and the pipeline reads that topic (`rsyslog` envelope, `host`
mapping) beside the file tree the reference-broker runs write.

`--logs` chooses (:data:`LOGS_MODES`):

* `shipped` (the default): an Apache Kafka run lives under ``<dir>/shipped/<run>``, outside the file tree, so its
  lines reach planewatch only through the shipper; its cluster is the run's name;
* `files`: every run in the file tree, no logging cluster (the demo before the shipper);
* `both`: an Apache Kafka run in the file tree AND shipped, the shipped copy named ``<run>-shipped``
  (:data:`SHIPPED_SUFFIX`): one pipeline, one lake, the same incidents caught through both ways under the same
  load (benchmarks.shipped_delays prints the delays side by side).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from planewatch.kafka.cluster import KafkaCluster, KafkaClusterSpec
from planewatch.kafka.shipper import ShipTo, cluster_shipper

__all__ = ["LOGGING_CLUSTER", "LOGS_MODES", "LOGS_TOPIC", "SHIPPED_SUFFIX", "logging_cluster", "pipeline_config",
           "run_dir", "shipped_name"]

LOGS_MODES = ("shipped", "files", "both")
SHIPPED_SUFFIX = "-shipped"
# The logging cluster: one KRaft broker of the newest Kafka (a platform team's logging cluster is its own, modern
# one); 3 partitions, so one broker's files may come through several (the shipper keys each record by its host and
# file: a file's lines stay in one partition, in order).
LOGGING_KAFKA = "4.4.0"
LOGS_TOPIC = "kafka-logs"
LOGS_PARTITIONS = 3
# The logging cluster's own name in the lake (its broker's logs are shipped like the others').
LOGGING_CLUSTER = "logging"


def shipped_name(run: str, mode: str) -> str:
    """The cluster name a run's shipped lines carry (their hosts' `kafka-<id>.<name>`)."""
    return f"{run}{SHIPPED_SUFFIX}" if mode == "both" else run


def run_dir(d: Path, run: str, shipped: bool, mode: str) -> Path:
    """Where a run's cluster lives: outside the file tree when its logs reach planewatch only shipped."""
    return d / ("shipped" if shipped and mode == "shipped" else "clusters") / run


def _merged(base: Mapping[str, Any], more: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in more.items():
        out[k] = _merged(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def pipeline_config(base: Path | None, bootstrap: str | None, prometheus_server: Mapping[str, Any] | None = None
                    ) -> dict[str, Any]:
    """The pipeline's settings: the user's (`base`, else none) with the Kafka source reading the logging topic (when
    `bootstrap`) and the `prometheus_server` source section (when given)."""
    raw = yaml.safe_load(base.read_text()) if base is not None else {}
    sources: dict[str, Any] = {}
    if bootstrap is not None:
        sources["kafka"] = {"enabled": True, "bootstrap_servers": bootstrap, "logs_topics": [LOGS_TOPIC],
                            "logs_envelope": "rsyslog", "logs_mapping": ["host"], "starting_offsets": "earliest"}
    if prometheus_server is not None:
        sources["prometheus_server"] = dict(prometheus_server)
    return _merged(raw or {}, {"sources": sources})


@contextmanager
def logging_cluster(directory: Path) -> Iterator[KafkaCluster]:
    """The logging cluster with its topic, stopped whatever happens. It ships its own broker's logs into its topic
    too (cluster LOGGING_CLUSTER: the fleet's logging cluster is a Kafka cluster to watch like the others), at the
    log levels Kafka ships (no line per request: its produce requests would be shipped as lines, which produce)."""
    cluster = KafkaCluster(KafkaClusterSpec(directory, LOGGING_KAFKA, brokers=1, jmx_exporter=False, log4j="shipped"))
    try:
        cluster.start()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers(), "log_level": 0})
        for f in admin.create_topics([NewTopic(LOGS_TOPIC, LOGS_PARTITIONS, 1)]).values():
            f.result(60)
        del admin  # its connections end now, not when the cluster is gone (a connection-refused line at the end)
        ship = ShipTo(cluster.bootstrap_servers(), LOGS_TOPIC, LOGGING_CLUSTER)
        with cluster_shipper(ship, {b: cluster.broker_dir(b) / "logs" for b in cluster.brokers}, directory / "rsyslog"):
            yield cluster
    finally:
        cluster.stop()
