"""The ingest queries' Kafka stream: Spark's own `kafka` source or the Python data source `planewatch_kafka`.

Both give the raw-record columns (jobs.sources.streams.RAW_RECORD_DDL) through the one record mapping of
jobs.sources.kafka_records, so the bronze rows are the same whichever reads. `sources.kafka.reader` chooses:

- `spark`: spark-sql-kafka (the session must have loaded it: jobs.run.jars); consumers are cached per executor and
  fetch in the JVM, the mapping runs over its Arrow batches (`mapInArrow`);
- `python`: planewatch_kafka (confluent-kafka in the Python workers);
- `auto`: Spark's where its jar is loaded, unless the query's checkpoint was started by the other reader: the two
  keep their offsets in different forms, so a checkpoint stays with the reader that began it.

A log stream with a shipper's envelope then drops the records delivered twice (jobs.sources.dedup).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from jobs import PipelineIOError
from jobs.run.jars import JarsMissing, session_has_kafka
from jobs.sources.checkpoints import latest_logged_offset
from jobs.sources.dedup import drop_redelivered
from jobs.sources.envelopes import rules_json
from jobs.sources.kafka_records import kafka_arrow_to_raw
from jobs.sources.kafka_security import PYTHON_READER_ONLY, reader_options
from jobs.sources.streams import RAW_RECORD_DDL
from schemas.inputs import Envelope, InputFamily

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from jobs.run.settings import Settings

__all__ = ["checkpoint_reader", "choose_reader", "kafka_batch_records", "kafka_stream"]


def checkpoint_reader(checkpoint: str) -> str | None:
    """Which reader wrote the newest offsets of `checkpoint` (`python`, `spark`), None when it has none."""
    end = latest_logged_offset(checkpoint)
    if end is None:
        return None
    return "python" if _python_form(end) else "spark"


def _python_form(offset: dict[str, Any]) -> bool:
    """Whether a logged offset is planewatch_kafka's {"partitions": {"<topic>/<partition>": n}} (else Spark's
    {"<topic>": {"<partition>": n}})."""
    parts = offset.get("partitions")
    return isinstance(parts, dict) and all("/" in str(k) for k in parts)


def _positions(offset: dict[str, Any]) -> dict[str, int]:
    """`<topic>/<partition>` -> position of either reader's logged offset (_python_form)."""
    if _python_form(offset):
        return {str(k): int(v) for k, v in offset["partitions"].items()}
    return {f"{t}/{p}": int(v) for t, by in offset.items() if isinstance(by, dict) for p, v in by.items()}


def kafka_batch_records(start: dict[str, Any] | None, end: dict[str, Any] | None) -> int | None:
    """The records a Kafka batch reads, from its logged offsets and its predecessor's (metadata, no record read);
    None when one is unknown or a partition went back (a topic created again: read it whole)."""
    if start is None or end is None:
        return None
    begin, stop = _positions(start), _positions(end)
    counts = [n - begin.get(tp, 0) for tp, n in stop.items()]
    return None if any(c < 0 for c in counts) else sum(counts)


def choose_reader(setting: str, has_jar: bool, checkpoint: str) -> str:
    """The reader a query uses (`spark` or `python`) for `sources.kafka.reader: setting`."""
    if setting == "auto":
        return checkpoint_reader(checkpoint) or ("spark" if has_jar else "python")
    return setting


def kafka_stream(spark: SparkSession, settings: Settings, family: str, topics: tuple[str, ...],
                 checkpoint: str) -> DataFrame:
    """The raw-record stream of `topics` for the ingest query whose checkpoint is `checkpoint`.

    Raises:
        JarsMissing: the reader is `spark` and the session has no spark-sql-kafka.
    """
    k = settings.kafka
    has_jar = session_has_kafka(spark)
    reader = choose_reader(k.reader, has_jar, checkpoint)
    if reader == "python":
        stream = (
            spark.readStream.format("planewatch_kafka")
            .option("bootstrap.servers", k.bootstrap_servers)
            .option("topics", ",".join(topics))
            .option("family", family)
            .option("startingOffsets", k.starting_offsets)
            .option("maxRecordsPerTrigger", k.max_records_per_batch)
            .option("defaultCluster", settings.default_cluster)
        )
        if settings.cluster:
            stream = stream.option("cluster", settings.cluster)
        for key, value in reader_options(k.security).items():
            stream = stream.option(key, value)
        if family == InputFamily.LOGS:
            stream = stream.option("envelope", k.logs_envelope).option("mapping", rules_json(k.logs_mapping))
        return _kept_once(stream.load(), settings, family)
    if k.security.protocol != "PLAINTEXT":
        raise PipelineIOError(f"sources.kafka.security {PYTHON_READER_ONLY}")
    if not has_jar:
        raise JarsMissing(f"the Kafka query of {checkpoint} reads with Spark's kafka source (sources.kafka.reader: "
                          f"{k.reader}) and the session has no spark-sql-kafka; python -m planewatch.kafka.artifacts "
                          "fetch spark, or sources.kafka.reader: python with a new checkpoint")
    records = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", k.bootstrap_servers)
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", k.starting_offsets)
        .option("maxOffsetsPerTrigger", k.max_records_per_batch)
        # as planewatch_kafka: records removed by retention before they were read are skipped, not a failure
        .option("failOnDataLoss", "false")
        .load()
        .select("key", "value", "topic", "partition", "offset")
    )
    to_raw = functools.partial(kafka_arrow_to_raw, family=family, default_cluster=settings.default_cluster,
                               cluster=settings.cluster, envelope=Envelope(k.logs_envelope), rules=k.logs_mapping)
    return _kept_once(records.mapInArrow(to_raw, RAW_RECORD_DDL), settings, family)


def _kept_once(stream: DataFrame, settings: Settings, family: str) -> DataFrame:
    """A log stream without the shipped records delivered twice (jobs.sources.dedup); a metric stream as it is."""
    if family != InputFamily.LOGS:
        return stream
    return drop_redelivered(stream, settings.kafka.logs_dedup_horizon, Envelope(settings.kafka.logs_envelope))
