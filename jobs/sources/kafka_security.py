"""How the Kafka source authenticates to a secured logging cluster (`sources.kafka.security`), pure but for reading a
secret when a client is made.

Operators secure a logging cluster with SASL_SSL (SCRAM) or with TLS client certificates (mTLS). The settings name
files and environment variables, never the secret itself: the password is read where and when a Kafka client is
made (the planner on the driver, each reader task on its executor), so it is in no Spark plan, option, checkpoint,
log line or table. A mounted Kubernetes secret or a file readable by the Spark user is the usual home; executors on
other hosts need it at the same path (or the variable in `spark.executorEnv.*`).

`reader_options` gives the `planewatch_kafka` options (no secret: the password's file or variable name);
`client_conf` turns them into librdkafka's configuration, reading the secret; `SecretError` says which setting
failed and why (never the secret). Spark's own `kafka` reader is not configured from here (jobs.sources.kafka_stream
refuses a security section with it): give it `kafka.*` options through `spark.conf` instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobs.sources.secrets import SecretError, read_secret

__all__ = ["PROTOCOLS", "PYTHON_READER_ONLY", "SASL_MECHANISMS", "KafkaSecurity", "SecretError", "client_conf",
           "reader_options"]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL", "SASL_PLAINTEXT")
SASL_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")
# Why a security section with Spark's own kafka reader is refused (the settings' and the query's error).
PYTHON_READER_ONLY = ("applies to the python reader (planewatch_kafka); Spark's kafka reader takes its security as "
                      "kafka.* options through spark.conf: set sources.kafka.reader: python, or drop the section")
# The reader options naming where the password is (not librdkafka keys: client_conf resolves them).
PASSWORD_FILE_OPTION = "saslPasswordFile"
PASSWORD_ENV_OPTION = "saslPasswordEnv"


@dataclass(frozen=True)
class KafkaSecurity:
    """`sources.kafka.security`: the protocol, SASL user and where its password is, and the TLS files."""

    protocol: str = "PLAINTEXT"
    sasl_mechanism: str = "SCRAM-SHA-512"
    username: str | None = None
    password_file: str | None = None
    password_env: str | None = None
    ca_file: str | None = None  # the CA certificates that signed the brokers' (PEM); None: the system's
    certificate_file: str | None = None  # the client's certificate (PEM), for mTLS
    key_file: str | None = None  # its private key (PEM, unencrypted)

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")


def reader_options(sec: KafkaSecurity) -> dict[str, str]:
    """The `planewatch_kafka` options of `sec` (librdkafka keys under `kafka.`; the password's file or variable)."""
    out = {"kafka.security.protocol": sec.protocol}
    if sec.sasl:
        out["kafka.sasl.mechanism"] = sec.sasl_mechanism
        out["kafka.sasl.username"] = sec.username or ""
        if sec.password_file:
            out[PASSWORD_FILE_OPTION] = sec.password_file
        if sec.password_env:
            out[PASSWORD_ENV_OPTION] = sec.password_env
    if sec.tls:
        for key, path in (("ssl.ca.location", sec.ca_file), ("ssl.certificate.location", sec.certificate_file),
                          ("ssl.key.location", sec.key_file)):
            if path:
                out[f"kafka.{key}"] = path
    return out


def _password(options: Mapping[str, str]) -> str:
    """The SASL password the options point to (a file's first line, or an environment variable)."""
    return read_secret("sources.kafka.security",
                       options.get(PASSWORD_FILE_OPTION.lower(), options.get(PASSWORD_FILE_OPTION)),
                       options.get(PASSWORD_ENV_OPTION.lower(), options.get(PASSWORD_ENV_OPTION)))


def client_conf(options: Mapping[str, str], base: Mapping[str, Any]) -> dict[str, Any]:
    """librdkafka's configuration: `base`, the options' `kafka.*` keys, and the SASL password read now."""
    conf: dict[str, Any] = dict(base)
    for key, value in options.items():
        if key.startswith("kafka."):
            conf[key[len("kafka."):]] = value
    if str(conf.get("security.protocol", "")).upper().startswith("SASL_"):
        conf["sasl.password"] = _password(options)
    return conf
