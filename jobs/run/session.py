"""Building the SparkSession of the jobs: local by default, spark-submit's master when submitted, loopback only.

Under spark-submit (the JVM started first, `PYSPARK_GATEWAY_PORT` is set) the master is never set here, so
`--master` applies. On a non-local master the analytics packages (jobs, pipelines, schemas) are zipped and shipped
with `addPyFile`, so `spark-submit --master spark://...` needs no `--py-files`.

The JVM packages (delta-spark, spark-sql-kafka; `jobs.run.jars`) are loaded when fetched, with Delta's SQL extension
and catalog. They cost about a second of start-up (7.4 -> 8.5 s to the first job here; benchmarks.sinks_and_sources).
A setting that needs them (`sink.mode: delta-spark`, `sources.kafka.reader: spark`) fails at start-up with
`JarsMissing` naming the fetch command when they are absent, or when the session was started without them (under
spark-submit: pass `--jars`).
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from pathlib import Path

from pyspark.sql import SparkSession

from jobs.run.jars import JarsMissing, jar_conf, require_spark_jars, session_has_delta, session_has_kafka, spark_jars
from jobs.run.settings import Settings
from jobs.sources.dedup import DEDUP_STATE_PROVIDER
from lake.storage import OBJECT_STORE_ENV

__all__ = ["CHANGELOG_CHECKPOINTING", "JIT_HUGE_METHODS", "LOCAL_CONF", "PACKAGES", "STATE_STORE_CONF", "build_session",
           "check_jars", "jars_needed", "package_zip", "share_object_store_env"]

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("jobs", "lake", "pipelines", "schemas")

# HotSpot never JIT-compiles a method of more than 8000 bytes of bytecode; a parser stage's whole-stage-codegen
# `processNext` is far larger, so it ran interpreted: 37% of the parse's CPU samples (JFR) sat in that one method.
# With this flag the warm log parse costs ~15 us of CPU per line instead of ~30 (benchmarks.parse_throughput).
JIT_HUGE_METHODS = "-XX:-DontCompileHugeMethods"

# Spark's setting that commits a RocksDB state store's batch as a changelog file (STATE_STORE_CONF)
CHANGELOG_CHECKPOINTING = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
# The Kafka log query's kept origins (jobs.sources.dedup), the one state any query keeps; SQL settings, so a session
# that was not built here (the tests') takes them too.
STATE_STORE_CONF = {
    # on local disk, not in the heap
    "spark.sql.streaming.stateStore.providerClass": DEDUP_STATE_PROVIDER,
    # A batch's commit writes the batch's changes (a changelog file) instead of a RocksDB checkpoint each: a
    # 150-record shipped batch's read (Kafka, de-duplication, collect) fell from 0.49-0.53 to 0.45 s alone (0.26-0.27
    # without de-duplication; benchmarks.dedup_cost) and from 1.63 to 1.34 s (median) in the loaded demo
    # (benchmarks.shipped_delays). Spark takes a full checkpoint now and then and reads either form, so a checkpoint
    # started without it goes on.
    CHANGELOG_CHECKPOINTING: "true",
}
# Settings every job needs; spark.* keys of conf/pipeline.yaml come on top.
BASE_CONF = {
    "spark.executor.extraJavaOptions": JIT_HUGE_METHODS,
    # Even when HotSpot may compile it, the parser stage's 38 KB whole-stage `processNext` failed in C1 ("out of
    # virtual registers") and was recompiled by C2 again and again (deoptimised, seconds per compile on 2 cores),
    # running interpreted meanwhile. Above HotSpot's own limit Spark compiles the stage as separate projections of
    # small methods instead: the log parse fell from ~33 to ~24 us of CPU per line (benchmarks.parse_throughput).
    "spark.sql.codegen.hugeMethodLimit": "8000",
    # A partitioned write keeps up to this many files open instead of sorting the batch by (cluster, date) first;
    # a micro-batch touches a few partitions.
    "spark.sql.maxConcurrentOutputFileWriters": "16",
    # One polars thread per Python worker (the ingest engine runs in a task per core: more threads only contend).
    # Set in the workers' environment, not by the task: unpickling the task's function imports pipelines, which
    # imports polars at module top, before any task code runs (2 threads per task: the 500k-sample metrics ingest
    # took 2.3-2.5 s in the engine instead of 1.5).
    "spark.executorEnv.POLARS_MAX_THREADS": "1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
    # A long-running driver otherwise keeps 1000 SQL executions with their (large, regex-heavy) plans: after a
    # 2-million-line benchmark run the 2 GiB driver died with OutOfMemoryError in the next query.
    "spark.sql.ui.retainedExecutions": "20",
    "spark.ui.retainedJobs": "100",
    "spark.ui.retainedStages": "100",
    "spark.sql.streaming.numRecentProgressUpdates": "20",
    **STATE_STORE_CONF,
    # A query's checkpoint keeps the offsets and commits of this many batches (Spark's default 100). The batches read
    # back their own offsets and their predecessor's (jobs.sources.checkpoints.logged_offset), so a handful would do; a
    # file source's offset lists every file of the tree, so each kept batch costs its size again.
    "spark.sql.streaming.minBatchesToRetain": "20",
}
LOCAL_CONF = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.memory": "3g",
    # The parsers' plans are deep expression trees; the default 1 MiB thread stack overflowed while a
    # continuous query analysed one (java.lang.StackOverflowError in the stream execution thread).
    "spark.driver.extraJavaOptions": f"-Xss16m {JIT_HUGE_METHODS}",
}


def package_zip(target_dir: str | None = None) -> str:
    """Zip the analytics packages (for executors on a cluster); returns the zip's path."""
    out = os.path.join(target_dir or tempfile.mkdtemp(prefix="planewatch-pyfiles-"), "planewatch_analytics.zip")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for pkg in PACKAGES:
            for f in sorted((REPO / pkg).rglob("*")):
                if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".json", ".yaml"):
                    zf.write(f, f.relative_to(REPO).as_posix())
    return out


def jars_needed(settings: Settings) -> str | None:
    """What in `settings` needs the JVM packages (for the error message), or None."""
    if settings.sink_mode == "delta-spark":
        return "sink.mode: delta-spark"
    if settings.kafka.enabled and settings.kafka.reader == "spark":
        return "sources.kafka.reader: spark"
    return None


def check_jars(spark: SparkSession, settings: Settings) -> None:
    """JarsMissing when `settings` need a JVM package the (possibly reused) session did not load."""
    if settings.sink_mode == "delta-spark" and not session_has_delta(spark):
        raise JarsMissing("sink.mode: delta-spark needs a session started with delta-spark and its SQL extension "
                          "(spark-submit: --jars from .jvm/spark/spark-jars.txt)")
    if settings.kafka.enabled and settings.kafka.reader == "spark" and not session_has_kafka(spark):
        raise JarsMissing("sources.kafka.reader: spark needs a session started with spark-sql-kafka "
                          "(spark-submit: --jars from .jvm/spark/spark-jars.txt)")


def build_session(settings: Settings, app_name: str) -> SparkSession:
    """The job's SparkSession (getOrCreate: reuses an active one, e.g. in tests or `planewatch pipeline`)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    builder = SparkSession.builder.appName(app_name)
    master = None if submitted else settings.spark_master
    if master is not None:
        builder = builder.master(master)
        if master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            for k, v in LOCAL_CONF.items():
                builder = builder.config(k, v)
    conf = {**BASE_CONF, **settings.spark_conf}
    need = jars_needed(settings)
    jars = require_spark_jars(need) if need and not submitted else spark_jars()
    if jars is not None and not submitted:  # under spark-submit the JVM's classpath is already fixed
        conf.update(jar_conf(jars, conf.get("spark.jars", "")))
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    check_jars(spark, settings)
    actual = spark.sparkContext.master or ""
    if not actual.startswith("local"):
        spark.sparkContext.addPyFile(package_zip())
    return spark


def share_object_store_env(spark: SparkSession) -> None:
    """Give the executors' Python workers this process's object store environment (lake.storage: endpoint, keys):
    the jobs created from now on carry it (`SparkContext.environment`, Spark's executorEnv), whatever the
    environment the session's JVM was started with."""
    for key in OBJECT_STORE_ENV:
        value = os.environ.get(key)
        if value is not None:
            spark.sparkContext.environment[key] = value
