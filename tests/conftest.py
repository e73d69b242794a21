"""Shared fixtures: one session-scoped SparkSession for the whole suite (Spark start-up costs 20-30 s here)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO = Path(__file__).resolve().parent.parent

# Spark's workers must run the venv's interpreter, and every socket stays on loopback.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from pyspark.sql import SparkSession

    from jobs.run.jars import jar_conf, spark_jars
    from jobs.run.session import STATE_STORE_CONF

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("planewatch-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    for key, value in STATE_STORE_CONF.items():  # the de-duplication's state as the pipeline keeps it
        builder = builder.config(key, value)
    jars = spark_jars()  # delta-spark and spark-sql-kafka when fetched: their tests skip without them
    for key, value in (jar_conf(jars) if jars is not None else {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO
