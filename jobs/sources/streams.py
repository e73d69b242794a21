"""PySpark Python streaming data sources: growing log/metric files (`planewatch_files`) and Kafka topics
(`planewatch_kafka`, confluent-kafka); Prometheus endpoints (`planewatch_prometheus`) live in
`jobs.sources.prometheus_source`. All emit the same raw-record columns (`RAW_RECORD_DDL`), which the jobs map to the
bronze tables (`raw_logs`, `raw_metrics`).

    from jobs.sources.streams import register_sources
    register_sources(spark)
    spark.readStream.format("planewatch_files").option("family", "logs").load("/var/log/kafka")
    spark.readStream.format("planewatch_kafka").option("bootstrap.servers", "127.0.0.1:9092")
         .option("topics", "kafka-logs").option("family", "logs").load()

Offsets live in Spark's checkpoint (JSON): per file {"<dev>:<ino>": {path, from, offset, ...}}, per Kafka
partition {"<topic>/<partition>": next offset}. `read()` runs in the Python workers and is stateless.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadMaxRows, SupportsTriggerAvailableNow

from jobs import PipelineIOError, SourceRefused
from jobs.run.settings import CLEAN_FINISHED, DEFAULT_TAIL_QUIET_S
from jobs.sources.envelopes import MappingError, rules_from_config
from jobs.sources.file_tail import (
    OUTPUT_SCHEMA_DDL,
    Piece,
    delete_read_finished,
    forget_read,
    pack,
    piece_bytes,
    plan,
    read_piece,
    split,
)
from jobs.sources.kafka_records import raw_kafka_batch
from jobs.sources.kafka_security import client_conf
from jobs.sources.paths import FAMILIES
from jobs.sources.prometheus_server import PrometheusServerSource
from jobs.sources.prometheus_source import PrometheusStreamSource
from schemas.inputs import Envelope

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "DEFAULT_MAX_BYTES_PER_TRIGGER",
    "DEFAULT_MAX_RECORDS_PER_TRIGGER",
    "RAW_RECORD_DDL",
    "FileStreamSource",
    "KafkaStreamSource",
    "register_sources",
]

log = logging.getLogger(__name__)

RAW_RECORD_DDL = OUTPUT_SCHEMA_DDL
# A micro-batch reads at most this many bytes of files: bounds memory and batch duration after a long stop.
DEFAULT_MAX_BYTES_PER_TRIGGER = 64 * 1024 * 1024
# A micro-batch reads at most this many Kafka records (over all partitions).
DEFAULT_MAX_RECORDS_PER_TRIGGER = 200_000
# Kafka records are read with this timeout per poll; a partition range that does not arrive in
# KAFKA_READ_DEADLINE_S fails the task (Spark retries it) rather than hanging the query.
KAFKA_POLL_S = 1.0
KAFKA_READ_DEADLINE_S = 60.0
KAFKA_METADATA_TIMEOUT_S = 10.0
# librdkafka errors that mean the cluster refused us (a wrong password, a certificate not trusted either way): no
# retry helps, so the planner fails at once with what the client says.
REFUSED_ERRORS = {KafkaError._AUTHENTICATION: "authentication failed", KafkaError._SSL: "TLS handshake failed",
                  KafkaError.SASL_AUTHENTICATION_FAILED: "authentication failed"}


def _family(options: dict[str, str]) -> str:
    family = options.get("family", "logs")
    if family not in FAMILIES:
        raise PipelineIOError(f"option family must be one of {FAMILIES}, got {family!r}")
    return family


class _PiecePartition(InputPartition):
    def __init__(self, pieces: list[Piece]) -> None:
        self.pieces = pieces


class _FileStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict[str, str]) -> None:
        self.root = options.get("path") or ""
        if not self.root:
            raise PipelineIOError("planewatch_files needs a path: .load(DIR)")
        self.family = _family(options)
        self.cluster = options.get("cluster") or None
        self.default_cluster = options.get("defaultcluster", "default")
        self.max_bytes = int(options.get("maxbytespertrigger", DEFAULT_MAX_BYTES_PER_TRIGGER))
        if self.max_bytes <= 0:
            raise PipelineIOError(f"maxBytesPerTrigger must be positive, got {self.max_bytes}")
        self.tail_quiet_s = float(options.get("tailquiets", DEFAULT_TAIL_QUIET_S))
        if self.tail_quiet_s <= 0:
            raise PipelineIOError(f"tailQuietS must be positive, got {self.tail_quiet_s}")
        self.clean_finished = options.get("cleanfinished", "keep")
        # a batch runs this often even when no file holds news (0: never): the log query's pairing moves its event
        # time on the metric family's samples (jobs.detect.pairing)
        self.idle_batch_s = float(options.get("idlebatchs", 0))
        if self.idle_batch_s < 0:
            raise PipelineIOError(f"idleBatchS must be >= 0, got {self.idle_batch_s}")
        if self.clean_finished not in CLEAN_FINISHED:
            raise PipelineIOError(f"cleanFinished: one of {list(CLEAN_FINISHED)}, got {self.clean_finished!r}")
        self.available_now: dict[str, dict[str, Any]] | None = None

    def initialOffset(self) -> dict[str, Any]:
        return {"files": {}, "skipped": {}, "skipped_total": 0}

    def _plan(self, start: dict[str, Any], max_bytes: int, now: float,
              read_before: dict[str, float] | None = None) -> Any:
        return plan(self.root, self.family, start, max_bytes, self.cluster, self.default_cluster, now=now,
                    tail_quiet_s=self.tail_quiet_s, read_before=read_before)

    def prepareForTriggerAvailableNow(self) -> None:
        # Snapshot of "everything there now": file sizes. Batches then never read past them.
        self.available_now = self._plan({}, 1 << 62, time.time()).files

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        now = time.time()
        read_before = start.get("read_before")
        if not isinstance(read_before, dict):
            read_before = {}  # none yet
        planned = self._plan(start["files"], self.max_bytes, now, read_before)
        files: dict[str, dict[str, Any]] = planned.files
        if self.available_now is not None:
            # availableNow: do not take lines written after the query started (so --once terminates).
            for key, entry in files.items():
                snap = self.available_now.get(key)
                cap = int(snap["offset"]) if snap is not None else int(entry["from"])
                if int(entry["offset"]) > cap:
                    entry["offset"] = max(cap, int(entry["from"]))
                    entry["deferred"] = True  # for a later run
        before: dict[str, Any] = start["files"]
        same_skipped = (planned.skipped == start.get("skipped", {})
                        and planned.skipped_total == start.get("skipped_total", 0))
        if same_skipped and files.keys() == before.keys() and all(
            int(e["offset"]) == int(before[k]["offset"]) for k, e in files.items()
        ) and not self._idle_batch_due(start, now):
            return start  # nothing new: the same offset, so Spark runs no (empty) micro-batch
        # files read long ago leave the offset (written at every trigger), only with a batch that has news
        files, read_before, forgotten = forget_read(files, self.family, read_before, now, planned.skipped)
        # the skipped entries and the planning time travel with the offset: the batch's dq rows report them
        # (jobs.sources.file_accounting reads the offset log)
        return {"files": files, "skipped": planned.skipped, "skipped_total": planned.skipped_total,
                "planned_at": now, "tail_quiet_s": self.tail_quiet_s, "read_before": read_before,
                "forgotten_total": int(start.get("forgotten_total", 0)) + forgotten}

    def _idle_batch_due(self, start: dict[str, Any], now: float) -> bool:
        """Whether a batch without news is due (`idleBatchS` since the last batch was planned; never under
        availableNow, whose run ends with its input)."""
        if not self.idle_batch_s or self.available_now is not None:
            return False
        return now - float(start.get("planned_at", 0.0)) >= self.idle_batch_s

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[_PiecePartition]:
        return [_PiecePartition(group) for group in pack(split(self.family, start["files"], end["files"]), piece_bytes)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, _PiecePartition)
        for piece in partition.pieces:
            yield from read_piece(piece)

    def commit(self, end: dict[str, Any]) -> None:
        """Spark committed every batch up to `end`: with cleanFinished=delete, the finished files it read to their
        end are deleted, so neither the input tree nor the offsets grow with the files ever seen."""
        if self.clean_finished == "delete":
            deleted = delete_read_finished(self.family, end.get("files", {}))
            if deleted:
                log.info("planewatch_files: deleted %d input file(s) read to their end", len(deleted))


class FileStreamSource(DataSource):
    """`planewatch_files`: lines of growing, rotating log or metric files under a directory.

    Options: `family` (logs | metrics), `cluster` (else a first-level directory, else `defaultCluster`),
    `maxBytesPerTrigger` (default 64 MiB), `tailQuietS` (seconds a growing file's unterminated last line must stay
    unchanged to be read; default 30), `cleanFinished` (keep | delete: delete a scrape answer or a rotated log once a
    committed batch read it to its end, as Spark's file source's `cleanSource`), `idleBatchS` (a batch without news
    this often, 0: never; default 0). Regular files only: other entries are skipped and listed in the offset.
    """

    @classmethod
    def name(cls) -> str:
        return "planewatch_files"

    def schema(self) -> str:
        return RAW_RECORD_DDL

    def streamReader(self, schema: StructType) -> _FileStreamReader:
        return _FileStreamReader({str(k).lower(): str(v) for k, v in self.options.items()})


# ---------------------------------------------------------------------------------------------------- Kafka


class _KafkaRange(InputPartition):
    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end


def _kafka_conf(options: dict[str, str], group_suffix: str) -> dict[str, Any]:
    """librdkafka's configuration of one client (jobs.sources.kafka_security: the `kafka.*` options, the SASL
    password read now)."""
    return client_conf(options, {
        "bootstrap.servers": options["bootstrap.servers"],
        "group.id": f"planewatch-{group_suffix}",  # never committed: offsets live in the Spark checkpoint
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        # a range starting below the log's start (a partition created again, read from 0) starts at its first record
        "auto.offset.reset": "earliest",
        "log_level": 3,
    })


def _metadata(consumer: Consumer, errors: list[KafkaError], bootstrap: str) -> Any:
    """The cluster's metadata; a refused login or certificate fails at once with librdkafka's reason (its error
    callback's, not list_topics' bare `transport failure`), any other failure after KAFKA_METADATA_TIMEOUT_S."""
    deadline = time.monotonic() + KAFKA_METADATA_TIMEOUT_S
    while True:
        try:
            return consumer.list_topics(timeout=min(KAFKA_POLL_S, max(0.1, deadline - time.monotonic())))
        except KafkaException as exc:
            consumer.poll(0)  # serves the error callback
            refused = [e for e in errors if e.code() in REFUSED_ERRORS]
            if refused:
                raise SourceRefused(f"sources.kafka ({bootstrap}): {REFUSED_ERRORS[refused[0].code()]}: "
                                    f"{refused[0].str()}") from None
            if time.monotonic() >= deadline:
                told = [e for e in errors if e.code() != KafkaError._ALL_BROKERS_DOWN]
                reason = (told or [exc.args[0]])[0]
                raise PipelineIOError(f"sources.kafka ({bootstrap}): no metadata: {reason.str()}") from None


class _KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict[str, str]) -> None:
        if not options.get("bootstrap.servers"):
            raise PipelineIOError("planewatch_kafka needs option bootstrap.servers")
        self.topics = [t.strip() for t in options.get("topics", "").split(",") if t.strip()]
        if not self.topics:
            raise PipelineIOError("planewatch_kafka needs option topics (comma-separated)")
        self.options = options
        self.family = _family(options)
        self.starting = options.get("startingoffsets", "earliest")
        if self.starting not in ("earliest", "latest"):
            raise PipelineIOError(f"startingOffsets must be earliest or latest, got {self.starting!r}")
        self.max_records = int(options.get("maxrecordspertrigger", DEFAULT_MAX_RECORDS_PER_TRIGGER))
        self.cluster = options.get("cluster") or None
        self.default_cluster = options.get("defaultcluster", "default")
        try:
            self.envelope = Envelope(options.get("envelope", Envelope.RAW.value))
            self.rules = rules_from_config(json.loads(options.get("mapping") or "[]"))
        except (ValueError, MappingError) as exc:
            raise PipelineIOError(f"planewatch_kafka: options envelope/mapping: {exc}") from exc
        self.available_now: dict[str, int] | None = None

    def _watermarks(self) -> dict[str, tuple[int, int]]:
        errors: list[KafkaError] = []
        consumer = Consumer({**_kafka_conf(self.options, "planner"), "error_cb": errors.append})
        try:
            out: dict[str, tuple[int, int]] = {}
            meta = _metadata(consumer, errors, self.options["bootstrap.servers"])
            for topic in self.topics:
                tmeta = meta.topics.get(topic)
                if tmeta is None or tmeta.error is not None:
                    log.warning("topic %s not available yet: %s", topic, None if tmeta is None else tmeta.error)
                    continue
                for pid in sorted(tmeta.partitions):
                    lo, hi = consumer.get_watermark_offsets(
                        TopicPartition(topic, pid), timeout=KAFKA_METADATA_TIMEOUT_S
                    )
                    out[f"{topic}/{pid}"] = (int(lo), int(hi))
            return out
        except KafkaException as exc:
            raise PipelineIOError(f"Kafka metadata from {self.options['bootstrap.servers']}: {exc}") from exc
        finally:
            consumer.close()

    def initialOffset(self) -> dict[str, Any]:
        marks = self._watermarks()
        idx = 0 if self.starting == "earliest" else 1
        return {"partitions": {tp: m[idx] for tp, m in marks.items()}}

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now = {tp: hi for tp, (_lo, hi) in self._watermarks().items()}

    def getDefaultReadLimit(self) -> Any:
        return ReadMaxRows(self.max_records)

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        marks = self._watermarks()
        begin: dict[str, int] = dict(start["partitions"])
        budget = getattr(limit, "max_rows", None)
        end: dict[str, int] = {}
        first: dict[str, int] = {}
        for tp in sorted(set(begin) | set(marks)):
            lo, hi = marks.get(tp, (0, begin.get(tp, 0)))
            if self.available_now is not None:
                hi = min(hi, self.available_now.get(tp, hi))
            at = begin.get(tp, lo)
            if tp in marks and at > hi:
                # past the partition's end: the topic was deleted and created again (or an unclean leader cut the
                # log); its records start over, and partitions() reads them from the start
                log.warning("Kafka %s: the checkpoint's position %d is past the partition's end %d (the topic was "
                            "deleted and created again, or its log truncated): reading it from its start %d",
                            tp, at, hi, lo)
                at = 0
            # A new partition starts at its low watermark; a position below it (retention) moves up to it.
            first[tp] = max(at, lo)
            end[tp] = max(first[tp], hi)
        if budget is not None:
            # Share the record budget fairly: round-robin in chunks so no partition starves.
            want = {tp: end[tp] - first[tp] for tp in end}
            grant = dict.fromkeys(end, 0)
            left = int(budget)
            while left > 0 and any(grant[tp] < want[tp] for tp in end):
                active = [tp for tp in end if grant[tp] < want[tp]]
                share = max(1, left // len(active))
                for tp in active:
                    g = min(share, want[tp] - grant[tp], left)
                    grant[tp] += g
                    left -= g
            for tp in end:
                end[tp] = end[tp] - want[tp] + grant[tp]
        return {"partitions": end}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[_KafkaRange]:
        ranges = []
        for tp, stop in sorted(end["partitions"].items()):
            begin = int(start["partitions"].get(tp, 0))
            if int(stop) < begin:  # the partition was created again (latestOffset): from its start
                begin = 0
            if int(stop) > begin:
                topic, _, pid = tp.rpartition("/")
                ranges.append(_KafkaRange(topic, int(pid), begin, int(stop)))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, _KafkaRange)
        p = partition
        consumer = Consumer(_kafka_conf(self.options, f"reader-{p.topic}-{p.partition}"))
        values: list[bytes | None] = []
        keys: list[bytes | None] = []
        offsets: list[int] = []
        try:
            consumer.assign([TopicPartition(p.topic, p.partition, p.start)])
            deadline = time.monotonic() + KAFKA_READ_DEADLINE_S
            nxt = p.start
            while nxt < p.end:
                if time.monotonic() > deadline:
                    raise PipelineIOError(f"Kafka {p.topic}/{p.partition}: [{nxt}, {p.end}) not readable in time")
                msgs = consumer.consume(num_messages=min(10_000, p.end - nxt), timeout=KAFKA_POLL_S)
                for msg in msgs:
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            continue
                        raise PipelineIOError(f"Kafka {p.topic}/{p.partition}: {err}")
                    off = msg.offset()
                    if off is None or off < nxt:
                        continue
                    if off >= p.end:
                        nxt = p.end  # past the range (a compacted gap before it): done
                        break
                    values.append(msg.value())
                    keys.append(msg.key())
                    offsets.append(off)
                    nxt = off + 1
        finally:
            consumer.close()
        if not offsets:
            return
        source = f"kafka:{p.topic}/{p.partition}"
        yield raw_kafka_batch(values, keys, [source] * len(offsets), offsets, self.family, self.default_cluster,
                              self.cluster, dt.datetime.now(dt.UTC), self.envelope, self.rules)

    def commit(self, end: dict[str, Any]) -> None:
        del end


class KafkaStreamSource(DataSource):
    """`planewatch_kafka`: records of Kafka topics (confluent-kafka), one raw row per record.

    Options: `bootstrap.servers`, `topics` (comma-separated), `family` (logs | metrics), `startingOffsets`
    (earliest | latest, first run only), `maxRecordsPerTrigger` (default 200,000), `cluster`/`defaultCluster`,
    `envelope` (schemas.inputs.Envelope, default raw) and `mapping` (a JSON list of mapping rules:
    jobs.sources.envelopes), and any `kafka.<librdkafka property>`. A raw record's key may name the broker
    (`broker-2` or `2`).
    """

    @classmethod
    def name(cls) -> str:
        return "planewatch_kafka"

    def schema(self) -> str:
        return RAW_RECORD_DDL

    def streamReader(self, schema: StructType) -> _KafkaStreamReader:
        return _KafkaStreamReader({str(k).lower(): str(v) for k, v in self.options.items()})


def register_sources(spark: SparkSession) -> None:
    """Register planewatch_files, planewatch_kafka, planewatch_prometheus and planewatch_prometheus_server with the
    session."""
    for source in (FileStreamSource, KafkaStreamSource, PrometheusStreamSource, PrometheusServerSource):
        spark.dataSource.register(source)


def offsets_json(offsets: dict[str, Any]) -> str:
    """Compact JSON of an offsets dict (for logs and tests)."""
    return json.dumps(offsets, sort_keys=True, separators=(",", ":"))
