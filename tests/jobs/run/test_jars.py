"""Which JVM packages a session loads, and the error when a setting needs them and they were never fetched."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.run.jars import DELTA_CATALOG, DELTA_EXTENSION, FETCH_COMMAND, JarsMissing, jar_conf, spark_jars
from jobs.run.session import build_session, jars_needed
from jobs.run.settings import parse_settings


def _fetched(root: Path, names: list[str]) -> Path:
    d = root / "spark"
    d.mkdir(parents=True)
    for n in names:
        (d / n).write_bytes(b"PK")
    (d / "spark-jars.txt").write_text("".join(f"{n}\n" for n in names))
    (d / ".complete").write_text("x\n")
    return d


def test_the_listed_jars_of_a_complete_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANEWATCH_JVM_DIR", str(tmp_path))
    assert spark_jars() is None
    d = _fetched(tmp_path, ["delta-spark_2.13-4.4.0.jar", "spark-sql-kafka-0-10_2.13-4.2.0.jar"])
    assert spark_jars() == (str(d / "delta-spark_2.13-4.4.0.jar"), str(d / "spark-sql-kafka-0-10_2.13-4.2.0.jar"))
    (d / ".complete").unlink()  # a fetch that never finished is no set
    assert spark_jars() is None


def test_jar_conf_keeps_configured_jars_and_switches_delta_on() -> None:
    conf = jar_conf(("/j/a.jar", "/j/b.jar"), "/mine.jar,/j/a.jar")
    assert conf["spark.jars"] == "/mine.jar,/j/a.jar,/j/b.jar"
    assert (conf["spark.sql.extensions"], conf["spark.sql.catalog.spark_catalog"]) == (DELTA_EXTENSION, DELTA_CATALOG)


def test_a_setting_that_needs_the_jars_fails_before_spark_starts(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANEWATCH_JVM_DIR", str(tmp_path))
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    spark_sink = parse_settings({"sink": {"mode": "delta-spark"}}, "t")
    kafka = parse_settings({"sources": {"kafka": {"enabled": True, "logs_topics": ["l"], "reader": "spark"}}}, "t")
    assert jars_needed(spark_sink) == "sink.mode: delta-spark"
    assert jars_needed(kafka) == "sources.kafka.reader: spark"
    assert jars_needed(parse_settings({}, "t")) is None
    for settings in (spark_sink, kafka):
        with pytest.raises(JarsMissing, match=FETCH_COMMAND):
            build_session(settings, "t")
