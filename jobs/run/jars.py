"""The JVM packages a SparkSession may load: spark-sql-kafka (Spark's `kafka` source) and delta-spark.

They are fetched by `python -m planewatch.kafka.artifacts fetch spark` into `<jvm dir>/spark/` (`$PLANEWATCH_JVM_DIR`,
else `<repo>/.jvm`), whose `spark-jars.txt` names the jars pyspark does not ship, one file name a line; the set is
complete once its `.complete` stamp exists. This module only reads that directory (the analytics import nothing from
the `planewatch` CLI package), and gives the session the settings that load them:

- `spark.jars`: the listed jars by absolute path (local files: no Ivy resolution, no network at start-up);
- Delta's SQL extension and catalog, so `format("delta")`, `DESCRIBE HISTORY` and `delta.\\`path\\`` work.

A session already started without them cannot load them later (the JVM's classpath is fixed), so the decision is
taken when the session is built: loaded when present, required (`JarsMissing` naming the fetch command) when a setting
needs them (`sink.mode: delta-spark`, `sources.kafka.reader: spark`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from jobs import PipelineIOError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DELTA_CATALOG",
    "DELTA_EXTENSION",
    "FETCH_COMMAND",
    "JarsMissing",
    "jar_conf",
    "require_spark_jars",
    "session_has_delta",
    "session_has_kafka",
    "spark_jars",
]

REPO = Path(__file__).resolve().parents[2]
FETCH_COMMAND = "python -m planewatch.kafka.artifacts fetch spark"
JARS_LIST = "spark-jars.txt"
STAMP = ".complete"
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
# The file-name prefixes that tell a session's spark.jars (ours, or spark-submit's --jars/--packages) holds them.
DELTA_JAR_PREFIX = "delta-spark_"
KAFKA_JAR_PREFIX = "spark-sql-kafka-0-10_"
# delta-spark reconstructs a table's snapshot (the log replay) with this many tasks. Its default of 50 made every
# micro-batch commit on 2 cores run 50 tiny tasks per table: 6-19 s per append of a 20k-row batch, against 3-5 s
# with 1 (the logs of our tables are a few MB; one task reads them in well under a second).
DELTA_SNAPSHOT_PARTITIONS = "1"


class JarsMissing(PipelineIOError):
    """A setting needs spark-sql-kafka / delta-spark and the jars were never fetched (or the session lacks them)."""


def _jvm_dir() -> Path:
    return Path(os.environ.get("PLANEWATCH_JVM_DIR") or REPO / ".jvm")


def spark_jars() -> tuple[str, ...] | None:
    """Absolute paths of the fetched jars pyspark lacks; None when the set is absent or incomplete."""
    target = _jvm_dir() / "spark"
    listing = target / JARS_LIST
    if not (target / STAMP).exists() or not listing.is_file():
        return None
    jars = tuple(str(target / name) for name in listing.read_text().split() if name)
    if not jars or not all(os.path.isfile(j) for j in jars):
        return None
    return jars


def require_spark_jars(why: str) -> tuple[str, ...]:
    """`spark_jars()`, or JarsMissing saying what needs them and how to fetch them."""
    jars = spark_jars()
    if jars is None:
        raise JarsMissing(
            f"{why} needs the delta-spark and spark-sql-kafka jars, not found in {_jvm_dir() / 'spark'}; "
            f"run `{FETCH_COMMAND}` (needs mvn and Maven Central)"
        )
    return jars


def jar_conf(jars: tuple[str, ...], existing_jars: str = "") -> dict[str, str]:
    """The session settings that load `jars` and switch Delta's SQL support on (`existing_jars`: a spark.jars value
    already configured, kept in front)."""
    listed = [j for j in existing_jars.split(",") if j]
    return {
        "spark.jars": ",".join([*listed, *(j for j in jars if j not in listed)]),
        "spark.sql.extensions": DELTA_EXTENSION,
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
        "spark.databricks.delta.snapshotPartitions": DELTA_SNAPSHOT_PARTITIONS,
    }


def _session_jars(spark: SparkSession) -> list[str]:
    raw = spark.sparkContext.getConf().get("spark.jars") or ""
    return [os.path.basename(j) for j in raw.split(",") if j]


def session_has_delta(spark: SparkSession) -> bool:
    """Whether the session loaded delta-spark with its SQL extension (so `format("delta")` works)."""
    extensions = spark.sparkContext.getConf().get("spark.sql.extensions") or ""
    return DELTA_EXTENSION in extensions and any(j.startswith(DELTA_JAR_PREFIX) for j in _session_jars(spark))


def session_has_kafka(spark: SparkSession) -> bool:
    """Whether the session loaded spark-sql-kafka (so `format("kafka")` works)."""
    return any(j.startswith(KAFKA_JAR_PREFIX) for j in _session_jars(spark))
