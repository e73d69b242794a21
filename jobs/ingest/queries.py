"""The ingest streaming queries shared by jobs/ingest_logs.py, jobs/ingest_metrics.py and `planewatch pipeline`.

One query per (family, source): `ingest_logs_files`, `ingest_logs_kafka`, `ingest_metrics_files`,
`ingest_metrics_kafka`, `ingest_metrics_prometheus` (live endpoints scraped every trigger; a failed scrape is one raw
record the parser quarantines with stage `source`), `ingest_metrics_prometheus_server` (the operator's Prometheus,
read through its query API). Each query's micro-batches are handled by its
`jobs.ingest.batch.IngestBatch`: bronze, the parse-and-validate engine, silver and quarantine, the family's
detection over the batch's silver rows (jobs.detect.rules: the logs' pairing and rules, the metrics' rollups and
rules; alerts), dq_results.

A query's checkpoint (jobs.sources.checkpoints) holds its run id: every table is written under the app id
`<query>.<run id>:<table>`, so a new checkpoint (batch ids restart at 0) gets new app ids.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
from typing import TYPE_CHECKING, Any

from jobs.detect.rules import batch_detect
from jobs.ingest.batch import IngestBatch
from jobs.run.settings import Settings, interval_seconds, split_named_path
from jobs.sources.checkpoints import SCRAPE_SPOOL_DIR, app_run_id
from jobs.sources.kafka_stream import kafka_stream
from jobs.sources.prometheus_query import rules_json
from jobs.sources.streams import register_sources
from schemas.inputs import SourceKind, ingest_query

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["start_ingest_queries"]

log = logging.getLogger(__name__)


def start_ingest_queries(spark: SparkSession, settings: Settings, family: str, detect: bool = True
                         ) -> list[StreamingQuery]:
    """Start the ingest queries of `family` (logs | metrics) for every enabled source; returns them running.

    detect: run the family's rules in each micro-batch (jobs.detect.rules), writing `alerts`."""
    queries: list[StreamingQuery] = []
    for name, stream in _streams(spark, settings, family, detect):
        checkpoint = settings.checkpoint_path(name)
        run_id = app_run_id(checkpoint)
        handler = IngestBatch(settings, family, name, run_id,
                              checkpoint if name == ingest_query(family, SourceKind.FILES) else None,
                              checkpoint if name in _scrape_queries(family) else None,
                              batch_detect(settings, family, name, run_id) if detect else None,
                              kafka_checkpoint=checkpoint if name == ingest_query(family, SourceKind.KAFKA) else None)
        handler.ensure_tables()
        handler.quality.prepare()
        writer = stream.writeStream.queryName(name).option("checkpointLocation", checkpoint).foreachBatch(handler)
        writer = (
            writer.trigger(availableNow=True)
            if settings.once
            else writer.trigger(processingTime=settings.trigger_for(family))
        )
        query = writer.start()
        handler.last_progress = functools.partial(_progress, query)
        queries.append(query)
        log.info("started %s (checkpoint %s)", name, checkpoint)
    return queries


def _scrape_queries(family: str) -> tuple[str, ...]:
    """The queries of `family` whose offsets and spool are scrapes' (jobs.sources.prometheus_source's layout)."""
    return (ingest_query(family, SourceKind.PROMETHEUS), ingest_query(family, SourceKind.PROMETHEUS_SERVER))


def _cluster_json(spec: str, root: str | None) -> dict[str, str | None]:
    """A `cluster_json` entry `[NAME=]PATH` as the Prometheus source takes it (its cluster: NAME, else by path)."""
    name, path = split_named_path(spec)
    return {"path": os.path.abspath(path), "root": root, "cluster": name}


def _progress(query: StreamingQuery) -> dict[str, Any] | None:
    """`query`'s last progress as a dict (None before its first batch)."""
    return query.lastProgress


def _streams(spark: SparkSession, settings: Settings, family: str, detect: bool
             ) -> list[tuple[str, DataFrame]]:
    """(query name, source stream) of every enabled source of `family`; `detect`: the batches pair and detect (a
    log query's files then yield a batch every `sources.files.idle_batch_s` even without news)."""
    register_sources(spark)
    streams: list[tuple[str, DataFrame]] = []
    if settings.files.enabled:
        reader = (
            spark.readStream.format("planewatch_files")
            .option("family", family)
            .option("maxBytesPerTrigger", settings.files.max_bytes_per_batch)
            .option("tailQuietS", settings.files.tail_quiet_s)
            .option("cleanFinished", settings.files.clean_finished)
            # a log batch without news moves the pairing's event time (jobs.detect.pairing); metrics need none
            .option("idleBatchS", settings.files.idle_batch_s if family == "logs" and detect else 0)
            .option("defaultCluster", settings.default_cluster)
        )
        if settings.cluster:
            reader = reader.option("cluster", settings.cluster)
        streams.append((ingest_query(family, SourceKind.FILES), reader.load(os.path.abspath(settings.files.path))))
    topics = settings.kafka.logs_topics if family == "logs" else settings.kafka.metrics_topics
    if settings.kafka.enabled and topics:
        name = ingest_query(family, SourceKind.KAFKA)
        streams.append((name, kafka_stream(spark, settings, family, topics, settings.checkpoint_path(name))))
    prom = settings.prometheus
    if prom.enabled and family == "metrics":
        name = ingest_query(family, SourceKind.PROMETHEUS)
        root = os.path.abspath(settings.files.path) if settings.files.enabled else None
        targets = [{"url": t.url, "cluster": t.cluster, "broker_id": t.broker_id} for t in prom.targets]
        reader = (
            spark.readStream.format("planewatch_prometheus")
            .option("targets", json.dumps(targets))
            .option("clusterJson", json.dumps([_cluster_json(p, root) for p in prom.cluster_json]))
            .option("interval", prom.interval_s or interval_seconds(settings.trigger_for("metrics")))
            .option("timeout", prom.timeout_s)
            .option("defaultCluster", settings.default_cluster)
            .option("spoolDir", os.path.join(os.path.abspath(settings.checkpoint_path(name)), SCRAPE_SPOOL_DIR))
            # scrape on the interval's clock, not when a batch is planned: a slow batch must not leave a gap
            .option("scrapeAhead", str(not settings.once).lower())
        )
        if settings.cluster:
            reader = reader.option("cluster", settings.cluster)
        streams.append((name, reader.load()))
    server = settings.prometheus_server
    if server.enabled and family == "metrics":
        name = ingest_query(family, SourceKind.PROMETHEUS_SERVER)
        reader = (
            spark.readStream.format("planewatch_prometheus_server")
            .option("url", server.url)
            .option("match", server.match)
            .option("mapping", rules_json(server.mapping))
            .option("catchUpS", server.catch_up_s)
            .option("maxWindowS", server.max_window_s)
            .option("timeout", server.timeout_s)
            .option("auth", json.dumps({k: v for k, v in dataclasses.asdict(server.auth).items() if v}))
            .option("defaultCluster", settings.default_cluster)
            .option("spoolDir", os.path.join(os.path.abspath(settings.checkpoint_path(name)), SCRAPE_SPOOL_DIR))
        )
        if settings.cluster:
            reader = reader.option("cluster", settings.cluster)
        streams.append((name, reader.load()))
    return streams
