"""The Kafka log source reads a logging cluster secured as operators secure one: SASL_SSL with SCRAM, and TLS with
client certificates (mTLS), on Apache Kafka 4.4.0 with certificates this test makes (tests/kafka/tls.py). The
password comes from a file and is in no table, checkpoint or log line; a wrong password and an untrusted certificate
fail the query at once with the client's reason and the source's address."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from api.kafka_admin import AdminUnavailable, describe_quorum
from jobs import SourceRefused
from jobs.run.runner import run_pipeline
from planewatch.kafka.cluster import KafkaCluster, KafkaClusterSpec
from tests.kafka.tls import Tls, make_tls
from tests.lake_helpers import lake_rows, pipeline_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

VERSION = "4.4.0"
USER = "planewatch"
PASSWORD = "pw-8d1f-not-in-any-file"  # searched for in every file the pipeline writes
TOPIC = "kafka-logs"
# A refused login ends the run within this (measured 2.4-3 s alone: the query's start and librdkafka's first answer;
# the other way, the metadata timeout of jobs.sources.streams.KAFKA_METADATA_TIMEOUT_S and three restarts, is > 40 s)
REFUSED_WITHIN_S = 20.0
LINES = [f"[2026-12-06 10:00:{i:02d},000] INFO [Broker id=2] Shutting down the fetcher {i} (state.change.logger)"
         for i in range(12)]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, Tls, Tls]]:
    d = tmp_path_factory.mktemp("secured")
    tls, other = make_tls(d / "tls"), make_tls(d / "other", "a CA nobody trusts")
    c = KafkaCluster(KafkaClusterSpec(d / "c", VERSION, brokers=1, jmx_exporter=False, tls_dir=d / "tls"))
    c.start()
    try:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers()})
        cred = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(USER, cred, PASSWORD.encode())
                                                     ]).values():
            f.result(30)
        for f in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
            f.result(30)
        p = Producer({"bootstrap.servers": c.bootstrap_servers(), "acks": "all", "log_level": 0})
        for line in LINES:
            p.produce(TOPIC, line.encode(), key=b"broker-2")
        assert p.flush(30) == 0
        yield c, tls, other
    finally:
        c.stop()


def _settings(root: Path, bootstrap: str, security: dict[str, Any]) -> Any:
    return pipeline_settings(
        root, cluster="logs-secured",
        sources={"files": {"enabled": False},
                 "kafka": {"enabled": True, "bootstrap_servers": bootstrap, "logs_topics": [TOPIC],
                           "security": security}},
        quality={"enabled": False},
    )  # fmt: skip


def _password_file(root: Path, password: str) -> str:
    f = root / "secret" / "kafka-password"
    f.parent.mkdir(parents=True)
    f.write_text(password + "\n")
    return str(f)


def _written_anywhere(root: Path, secret: str) -> list[Path]:
    """Files under `root` (the lake and the checkpoints) holding `secret`, the password's own file left out."""
    return [f for f in root.rglob("*") if f.is_file() and "secret" not in f.parts
            and secret.encode() in f.read_bytes()]


def test_sasl_ssl_with_scram_reads_the_topic_and_the_password_is_nowhere(
        spark: SparkSession, secured: tuple[KafkaCluster, Tls, Tls], tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    c, tls, _ = secured
    caplog.set_level(logging.DEBUG)
    settings = _settings(tmp_path, c.bootstrap_servers("SASL_SSL"), {
        "protocol": "SASL_SSL", "username": USER, "password_file": _password_file(tmp_path, PASSWORD),
        "ca_file": str(tls.ca)})
    assert run_pipeline(spark, settings, families=("logs",), detection=False) == 0
    raw = lake_rows(tmp_path / "lake", "raw_logs")
    assert sorted(r["line"] for r in raw) == sorted(LINES)
    assert {(r["cluster"], r["broker_id"]) for r in raw} == {("logs-secured", 2)}
    assert _written_anywhere(tmp_path, PASSWORD) == []
    assert PASSWORD not in caplog.text


def test_mtls_reads_the_topic_with_a_client_certificate(
        spark: SparkSession, secured: tuple[KafkaCluster, Tls, Tls], tmp_path: Path) -> None:
    c, tls, _ = secured
    settings = _settings(tmp_path, c.bootstrap_servers("SSL"), {
        "protocol": "SSL", "ca_file": str(tls.ca), "certificate_file": str(tls.client_cert),
        "key_file": str(tls.client_key)})
    assert run_pipeline(spark, settings, families=("logs",), detection=False) == 0
    assert sorted(r["line"] for r in lake_rows(tmp_path / "lake", "raw_logs")) == sorted(LINES)


@pytest.mark.parametrize("case", ["wrong password", "untrusted certificate"])
def test_a_refused_login_fails_the_query_at_once_naming_the_source_and_the_reason(
        spark: SparkSession, secured: tuple[KafkaCluster, Tls, Tls], tmp_path: Path, case: str,
        caplog: pytest.LogCaptureFixture) -> None:
    c, tls, other = secured
    wrong = "wrong-" + PASSWORD
    bootstrap = c.bootstrap_servers("SASL_SSL")
    settings = _settings(tmp_path, bootstrap, {
        "protocol": "SASL_SSL", "username": USER,
        "password_file": _password_file(tmp_path, wrong if case == "wrong password" else PASSWORD),
        "ca_file": str(tls.ca if case == "wrong password" else other.ca)})
    started = time.monotonic()
    with pytest.raises(SourceRefused) as refused:
        run_pipeline(spark, settings, families=("logs",), detection=False)
    reason = "authentication failed" if case == "wrong password" else "TLS handshake failed"
    assert str(refused.value).startswith(f"sources.kafka ({bootstrap}): {reason}: ")
    assert time.monotonic() - started < REFUSED_WITHIN_S  # no restart, no metadata timeout
    assert PASSWORD not in str(refused.value)
    assert PASSWORD not in caplog.text


def test_describe_quorum_logs_in_over_sasl_ssl_and_a_wrong_password_is_named(
        secured: tuple[KafkaCluster, Tls, Tls]) -> None:
    """The roll gate's quorum check on a SASL_SSL listener (SCRAM-SHA-512), as the operator's other clients connect:
    the quorum of Apache Kafka 4.4.0 is described; a wrong password is the broker's refusal, named, not a timeout."""
    c, tls, _ = secured
    props = {"bootstrap.servers": c.bootstrap_servers("SASL_SSL"), "security.protocol": "SASL_SSL",
             "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": USER, "sasl.password": PASSWORD,
             "ssl.ca.location": str(tls.ca)}
    quorum = describe_quorum(props)
    assert quorum is not None
    assert quorum.leader in {v.node for v in quorum.voters}
    assert quorum.observers  # the broker
    started = time.monotonic()
    with pytest.raises(AdminUnavailable, match="refused the SASL login: authentication failed") as refused:
        describe_quorum({**props, "sasl.password": "wrong-" + PASSWORD})
    assert time.monotonic() - started < REFUSED_WITHIN_S
    assert PASSWORD not in str(refused.value)
