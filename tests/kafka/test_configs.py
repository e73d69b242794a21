"""The operator files planewatch writes to run Apache Kafka (pure: no processes)."""

from __future__ import annotations

import re

import pytest

from planewatch.kafka import artifacts, configs

BROKER = configs.KafkaNode(2, "broker", "/d/data", (("PLAINTEXT", 9092), ("CONTROLLER", 9093)))


def test_zookeeper_mode_broker_has_the_kip291_control_plane_listener() -> None:
    p = configs.server_properties(BROKER, brokers=3, zookeeper="127.0.0.1:2181/kafka", quorum_voters=None,
                                  control_plane=True)
    assert p["broker.id"] == "2"
    assert p["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert p["control.plane.listener.name"] == "CONTROLLER"
    assert p["inter.broker.listener.name"] == "PLAINTEXT"  # must differ from the control listener (Kafka rule)
    assert "CONTROLLER:PLAINTEXT" in p["listener.security.protocol.map"]
    assert p["offsets.topic.replication.factor"] == "3"
    assert "process.roles" not in p


def test_no_control_plane_and_small_clusters_and_extra_wins() -> None:
    node = configs.KafkaNode(1, "broker", "/d", (("PLAINTEXT", 9092),))
    p = configs.server_properties(node, brokers=1, zookeeper="z:1/k", quorum_voters=None, control_plane=False,
                                  extra={"num.io.threads": "1", "replica.lag.time.max.ms": "30000"})
    assert "control.plane.listener.name" not in p
    assert p["offsets.topic.replication.factor"] == "1"
    assert p["num.io.threads"] == "1"
    assert p["replica.lag.time.max.ms"] == "30000"


def test_kraft_nodes_name_the_quorum_and_never_a_control_plane() -> None:
    ctl = configs.KafkaNode(100, "controller", "/c", (("CONTROLLER", 9500),))
    p = configs.server_properties(ctl, brokers=3, zookeeper=None, quorum_voters="100@127.0.0.1:9500",
                                  control_plane=True)
    assert (p["process.roles"], p["node.id"], p["controller.listener.names"]) == ("controller", "100", "CONTROLLER")
    for broker_only in ("control.plane.listener.name", "zookeeper.connect", "advertised.listeners",
                        "offsets.topic.replication.factor"):
        assert broker_only not in p


def test_log4j_sends_each_logger_to_its_file_in_kafkas_layout() -> None:
    text = configs.log4j_properties()
    assert "log4j.logger.state.change.logger=TRACE, stateChangeAppender" in text
    assert "log4j.logger.kafka.request.logger=DEBUG, requestAppender" in text
    assert "log4j.logger.kafka.controller=TRACE, controllerAppender" in text
    assert "log4j.additivity.state.change.logger=false" in text
    assert text.count("ConversionPattern=[%d] %p %m (%c)%n") == 4  # one appender per file
    assert "log4j.appender.requestAppender.File=${kafka.logs.dir}/kafka-request.log" in text


def test_log4j2_has_the_same_files_and_levels() -> None:
    text = configs.log4j2_properties()
    levels = dict(re.findall(r"logger\.l\d+\.name = (\S+)\nlogger\.l\d+\.level = (\S+)", text))
    assert levels == {"state.change.logger": "TRACE", "kafka.request.logger": "DEBUG", "kafka.controller": "TRACE",
                      "org.apache.kafka.controller": "INFO"}
    assert "fileName = ${sys:kafka.logs.dir}/state-change.log" in text
    assert "rootLogger.level = INFO" in text


def test_the_shipped_log4j_profile_sets_the_levels_kafka_ships() -> None:
    text = configs.log4j_properties(configs.loggers("shipped", (3, 9)))
    assert "log4j.logger.state.change.logger=INFO, stateChangeAppender" in text
    assert "log4j.logger.kafka.request.logger=WARN, requestAppender" in text
    assert "log4j.logger.kafka.controller=TRACE, controllerAppender" in text
    assert "log4j.logger.kafka.log.LogCleaner=INFO, cleanerAppender" in text
    assert "log4j.appender.authorizerAppender.File=${kafka.logs.dir}/kafka-authorizer.log" in text
    assert "log4j.logger.state.change.logger=TRACE" in configs.log4j_properties(configs.loggers("shipped", (2, 5)))
    text = configs.log4j2_properties(configs.loggers("shipped", (4, 4)))
    assert "org.apache.kafka.storage.internals.log.LogCleaner" in text
    assert "fileName = ${sys:kafka.logs.dir}/log-cleaner.log" in text
    with pytest.raises(ValueError, match="log4j profile"):
        configs.loggers("verbose", (3, 9))


@pytest.mark.parametrize(("name", "profiles"), [("kafka-3.9.1", ("kafka", "log4j1")),
                                                ("kafka-4.4.0", ("kafka", "log4j2")),
                                                ("agent", ("agent",)), ("spark", ("spark",))])
def test_artifact_sets_resolve_to_pom_profiles(name: str, profiles: tuple[str, ...]) -> None:
    assert artifacts.artifact_set(name).profiles == profiles


def test_a_missing_set_names_the_artifact_and_the_fetch_command(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PLANEWATCH_JVM_DIR", str(tmp_path))
    with pytest.raises(artifacts.ArtifactMissing, match=r"org.apache.kafka:kafka_2.13:3.9.0 .*fetch kafka-3.9.0"):
        artifacts.kafka_classpath("3.9.0")
    with pytest.raises(ValueError, match="not a Kafka release"):
        artifacts.artifact_set("kafka-latest")


def test_jar_names_lose_their_version() -> None:
    assert artifacts._artifact_name("kafka-clients-3.9.2.jar") == "kafka-clients"
    assert artifacts._artifact_name("spark-sql-kafka-0-10_2.13-4.2.0.jar") == "spark-sql-kafka-0-10_2.13"
    assert artifacts._artifact_name("delta-spark_2.13-4.4.0.jar") == "delta-spark_2.13"
