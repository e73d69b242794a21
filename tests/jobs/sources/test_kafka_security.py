"""sources.kafka.security: the reader's options carry no secret; the password is read when a client is made."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from jobs import SourceRefused
from jobs.run.runner import _failed, query_failure
from jobs.run.settings import SettingsError, parse_settings
from jobs.sources.kafka_security import KafkaSecurity, SecretError, client_conf, reader_options

BASE = {"bootstrap.servers": "b:9093"}


def test_options_name_the_password_file_and_the_client_reads_it(tmp_path: Path) -> None:
    f = tmp_path / "pw"
    f.write_text("s3cret\nignored\n")
    sec = KafkaSecurity("SASL_SSL", username="u", password_file=str(f), ca_file="/ca.pem")
    options = reader_options(sec)
    assert "s3cret" not in repr(options)
    conf = client_conf({k.lower(): v for k, v in options.items()}, BASE)  # Spark hands options lower-cased
    assert conf | {"sasl.password": "-"} == {**BASE, "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                              "sasl.username": "u", "ssl.ca.location": "/ca.pem", "sasl.password": "-"}
    assert conf["sasl.password"] == "s3cret"


def test_a_password_from_the_environment_and_clear_errors_without_the_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PW_VAR", "from-env")
    env = reader_options(KafkaSecurity("SASL_SSL", username="u", password_env="PW_VAR"))
    assert client_conf(env, BASE)["sasl.password"] == "from-env"
    monkeypatch.delenv("PW_VAR")
    with pytest.raises(SecretError, match="the variable PW_VAR is not set"):
        client_conf(env, BASE)
    missing = reader_options(KafkaSecurity("SASL_SSL", username="u", password_file=str(tmp_path / "nope")))
    with pytest.raises(SecretError, match=r"password_file .*nope: cannot read it \(FileNotFoundError"):
        client_conf(missing, BASE)


def test_mtls_options_and_plaintext_adds_nothing_secret() -> None:
    mtls = reader_options(KafkaSecurity("SSL", ca_file="/ca", certificate_file="/c.pem", key_file="/c.key"))
    assert client_conf(mtls, BASE)["ssl.key.location"] == "/c.key"
    assert "sasl.password" not in client_conf(reader_options(KafkaSecurity()), BASE)


@pytest.mark.parametrize(("security", "message"), [
    ({"protocol": "SASL_SSL", "password_file": "/pw"}, "needs a username"),
    ({"protocol": "SASL_SSL", "username": "u"}, "needs one of password_file, password_env"),
    ({"protocol": "SSL", "certificate_file": "/c"}, "needs its key_file"),
    ({"protocol": "TLS"}, "protocol"),
])
def test_bad_security_settings_name_the_key(security: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        parse_settings({"sources": {"kafka": {"security": security}}}, "t")


def test_spark_reader_with_security_is_refused() -> None:
    with pytest.raises(SettingsError, match="applies to the python reader"):
        parse_settings({"sources": {"kafka": {"reader": "spark", "security": {"protocol": "SSL"}}}}, "t")


def test_a_failed_query_is_told_by_the_jobs_error_line() -> None:
    text = ("[STREAM_FAILED] Query terminated with exception: Traceback (most recent call last):\n  File x\n"
            "jobs.SourceRefused: sources.kafka (h:1): authentication failed: bad credentials\n SQLSTATE: 38000")
    assert query_failure(text) == "sources.kafka (h:1): authentication failed: bad credentials"
    assert query_failure("java.lang.OutOfMemoryError\n at x") == "java.lang.OutOfMemoryError"


def test_a_secret_that_cannot_be_read_stops_the_run_like_a_refused_login() -> None:
    query = SimpleNamespace(name="ingest_logs_kafka")
    text = ("Traceback (most recent call last):\n  File x\njobs.sources.kafka_security.SecretError: "
            "sources.kafka.security.password_env: the variable PW is not set in this process\n SQLSTATE: 38000")
    failed = _failed(query, text)  # type: ignore[arg-type]
    assert isinstance(failed, SourceRefused)
    assert str(failed) == "sources.kafka.security.password_env: the variable PW is not set in this process"
    retried = _failed(query, "jobs.PipelineIOError: Kafka logs/0: [3, 9) not readable in time")  # type: ignore[arg-type]
    assert isinstance(retried, RuntimeError)
    assert str(retried) == "query ingest_logs_kafka failed: Kafka logs/0: [3, 9) not readable in time"
