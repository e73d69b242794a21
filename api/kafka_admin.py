"""A cluster described through Kafka's Admin API, for the roll-safety verdict (:mod:`pipelines.restart_probe`).

Topics, partitions with their ISR, topic configs and DescribeCluster come from confluent-kafka's AdminClient (the
connection's librdkafka properties, TLS and SASL included, as the operator's other clients have them); the KRaft
metadata quorum from DescribeQuorum (api key 55), which librdkafka does not offer, sent over the reference broker's
own blocking client (:class:`broker.network.client.BlockingClient`, planewatch's codec) to a bootstrap broker, which
forwards it to the active controller. DescribeQuorum is asked over PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL
(PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 logins: :mod:`api.kafka_sasl`); a refused login is :class:`AdminUnavailable`
with the broker's reason.

Connections per cluster come from a YAML file (``PLANEWATCH_ADMIN_CLUSTERS``, `planewatch roll-check --admin-config`)::

    clusters:
      prod-eu:
        bootstrap.servers: kafka-0.prod-eu:9093
        security.protocol: SASL_SSL
        sasl.mechanism: SCRAM-SHA-512
        sasl.username: planewatch
        sasl.password: file:/run/secrets/prod-eu-password   # or env:PROD_EU_PASSWORD
"""

from __future__ import annotations

import logging
import os
import ssl
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

from api.kafka_sasl import SaslError, authenticate
from broker.network.client import BlockingClient, ClientError
from broker.properties import PropertiesSyntaxError, load_properties_file
from broker.protocol import ApiKey
from pipelines.restart_probe import (
    DEFAULT_FETCH_TIMEOUT_MS,
    ClusterState,
    PartitionState,
    QuorumState,
    VoterState,
)

__all__ = ["ADMIN_TIMEOUT_S", "AdminConfigError", "AdminUnavailable", "ClientLines", "describe_cluster",
           "describe_quorum", "load_admin_clusters", "read_properties"]

# How long one description may take (metadata, configs, DescribeCluster, DescribeQuorum): a roll gate that waits
# longer than this for a cluster answers unknown.
ADMIN_TIMEOUT_S = 10.0
# The KRaft metadata log: DescribeQuorum describes its one partition.
METADATA_TOPIC = "__cluster_metadata"
# DescribeQuorum v1 has each voter's last caught-up time (KIP-836, Kafka 3.3+); v2 adds nothing the check reads.
QUORUM_VERSION = 1
_CLIENT_ID = "planewatch-roll-probe"
# librdkafka's syslog level for the probe's client: warnings and worse (its info lines, such as the purge of unserved
# background events when a client closes, say nothing to an operator); the connection's properties may override it
LOG_LEVEL = "4"
# A librdkafka line kept as a failure's detail is cut to this many characters (a host, an address and an OS error).
MAX_CLIENT_LINE = 300


class ClientLines:
    """A probe client's librdkafka lines (its `logger`), kept instead of printed: a cluster that cannot be reached
    made librdkafka print a `Connect to ... failed` line per bootstrap server every 50-1000 ms for the whole timeout,
    on the terminal of `planewatch roll-check` and in the API's log at every poll, while the client's own error said
    only "Broker transport failure". The newest error line becomes the failure's detail (:meth:`detail`)."""

    def __init__(self) -> None:
        self._last: str | None = None

    def log(self, level: int, fmt: str, *args: object) -> None:
        """librdkafka's callback (a `logging.Logger.log`'s signature), run when the client is polled."""
        if level >= logging.ERROR:
            self._last = (fmt % args if args else fmt).rsplit("]: ", 1)[-1][:MAX_CLIENT_LINE]

    def detail(self, client: Any) -> str:
        """`client`'s newest error line as a reason's suffix ('' when it logged none); its queued lines served
        first."""
        client.poll(0)
        return f" (librdkafka: {self._last})" if self._last else ""


class AdminConfigError(ValueError):
    """The admin connections file is unreadable or malformed, or a secret it points at is missing."""


class AdminUnavailable(RuntimeError):
    """The cluster could not be described (unreachable, refused, timed out); the message says why."""


def _secret(value: Any, where: str) -> str:
    text = str(value)
    if text.startswith("file:"):
        try:
            return Path(text[5:]).read_text().strip()
        except OSError as e:
            raise AdminConfigError(f"{where}: cannot read {text[5:]}: {e.strerror}") from None
    if text.startswith("env:"):
        if text[4:] not in os.environ:
            raise AdminConfigError(f"{where}: environment variable {text[4:]} is not set")
        return os.environ[text[4:]]
    return text


def load_admin_clusters(path: Path) -> dict[str, dict[str, str]]:
    """cluster -> librdkafka properties from the YAML file at `path` (module docstring); `file:` and `env:` values
    are read."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise AdminConfigError(f"{path}: {e}") from None
    clusters = doc.get("clusters") if isinstance(doc, dict) else None
    if not isinstance(clusters, dict):
        raise AdminConfigError(f"{path}: expected a mapping under `clusters:`")
    out = {}
    for name, props in clusters.items():
        if not isinstance(props, dict) or "bootstrap.servers" not in props:
            raise AdminConfigError(f"{path}: cluster {name!r} needs a mapping with bootstrap.servers")
        out[str(name)] = {str(k): _secret(v, f"{path}: {name}.{k}") for k, v in props.items()}
    return out


def read_properties(path: Path) -> dict[str, str]:
    """Client properties from a Java .properties file, as Kafka's tools take `--command-config` (broker.properties).

    Raises:
        AdminConfigError: the file cannot be read or has a malformed escape.
    """
    try:
        return load_properties_file(path)
    except (OSError, PropertiesSyntaxError) as e:
        raise AdminConfigError(f"{path}: {e}") from None


def _partitions(admin: AdminClient, timeout: float) -> tuple[list[PartitionState], list[int]]:
    md = admin.list_topics(timeout=timeout)
    parts = [PartitionState(str(t.topic), p.id, int(p.leader), tuple(p.replicas), tuple(p.isrs))
             for t in md.topics.values() if t.error is None for p in t.partitions.values()]
    return parts, sorted(md.brokers)


def _topic_configs(admin: AdminClient, topics: list[str], timeout: float) -> tuple[dict[str, int], dict[str, bool]]:
    min_isr: dict[str, int] = {}
    unclean: dict[str, bool] = {}
    if not topics:
        return min_isr, unclean
    futures = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics],
                                     request_timeout=timeout)
    for res, fut in futures.items():
        entries = fut.result(timeout=timeout)
        if "min.insync.replicas" in entries:
            min_isr[res.name] = int(entries["min.insync.replicas"].value)
        if "unclean.leader.election.enable" in entries:
            unclean[res.name] = entries["unclean.leader.election.enable"].value == "true"
    return min_isr, unclean


def _fetch_timeout_ms(admin: AdminClient, broker: int, timeout: float) -> int:
    res = ConfigResource(ConfigResource.Type.BROKER, str(broker))
    entries = admin.describe_configs([res], request_timeout=timeout)[res].result(timeout=timeout)
    entry = entries.get("controller.quorum.fetch.timeout.ms")
    return int(entry.value) if entry is not None and entry.value else DEFAULT_FETCH_TIMEOUT_MS


class _Endpoint(NamedTuple):
    host: str
    port: int


def _tls(props: Mapping[str, str]) -> ssl.SSLContext:
    """The TLS context of an SSL listener from the connection's librdkafka properties."""
    ctx = ssl.create_default_context(cafile=props.get("ssl.ca.location"))
    if props.get("enable.ssl.certificate.verification", "true") == "false":
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if "ssl.certificate.location" in props:
        ctx.load_cert_chain(props["ssl.certificate.location"], props.get("ssl.key.location"),
                            props.get("ssl.key.password"))
    return ctx


def _describe_quorum(client: BlockingClient) -> dict[str, Any] | None:
    """DescribeQuorum's body from `client`'s broker; None when the broker does not list the API (ZooKeeper mode)."""
    versions = client.round_trip(ApiKey.API_VERSIONS, 0, 1, client.encode(ApiKey.API_VERSIONS, 0, 1, {}))
    keys = {k["api_key"]: k for k in versions["api_keys"]}
    if ApiKey.DESCRIBE_QUORUM not in keys:
        return None
    version = min(QUORUM_VERSION, keys[ApiKey.DESCRIBE_QUORUM]["max_version"])
    body = {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}
    return client.round_trip(ApiKey.DESCRIBE_QUORUM, version, 2,
                             client.encode(ApiKey.DESCRIBE_QUORUM, version, 2, body))


def _ask_quorum(props: Mapping[str, str], timeout: float) -> tuple[dict[str, Any] | None, int]:
    """(DescribeQuorum's body or None, when it was asked in epoch ms) from the first bootstrap server that answers
    (a broker being restarted does not)."""
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    tls = _tls(props) if protocol in ("SSL", "SASL_SSL") else None
    refused: list[str] = []
    for server in props["bootstrap.servers"].split(","):
        host, _, port = server.strip().rpartition(":")
        if not port.isdigit():
            refused.append(f"{server.strip()!r}: not host:port")
            continue
        client = BlockingClient(_Endpoint(host.strip("[]"), int(port)), peer=server.strip(), client_id=_CLIENT_ID,
                                timeout_s=timeout, tls=tls)
        try:
            if protocol.startswith("SASL"):
                authenticate(client, props)
            asked = int(time.time() * 1000)
            return _describe_quorum(client), asked
        except SaslError as e:  # the same credentials fail on every broker: say so now
            raise AdminUnavailable(f"DescribeQuorum: {server.strip()} refused the SASL login: {e}") from None
        except ClientError as e:
            refused.append(f"{server.strip()}: {e}")
        finally:
            client.close()
    raise AdminUnavailable(f"DescribeQuorum: no bootstrap server answered ({'; '.join(refused)})")


def describe_quorum(props: Mapping[str, str], timeout: float = ADMIN_TIMEOUT_S) -> QuorumState | None:
    """The metadata quorum of the cluster at `props` (librdkafka properties: PLAINTEXT, SSL, SASL_PLAINTEXT or
    SASL_SSL), or None when the cluster has none (ZooKeeper mode: its brokers do not list DescribeQuorum in
    ApiVersions).

    Raises:
        AdminUnavailable: no bootstrap server answered, the SASL login was refused, or the quorum answered an
            error; the message says which.
    """
    body, asked = _ask_quorum(props, timeout)
    if body is None:
        return None
    if body["error_code"]:
        raise AdminUnavailable(f"DescribeQuorum: error code {body['error_code']}")
    (part,) = body["topics"][0]["partitions"]
    if part["error_code"]:
        raise AdminUnavailable(f"DescribeQuorum: partition error code {part['error_code']}")

    def states(rows: list[dict[str, Any]]) -> tuple[VoterState, ...]:
        return tuple(VoterState(r["replica_id"], r["log_end_offset"], r.get("last_caught_up_timestamp", -1))
                     for r in rows)

    return QuorumState(part["leader_id"], part["leader_epoch"], part["high_watermark"],
                       states(part["current_voters"]), states(part["observers"]), asked)


def describe_cluster(props: Mapping[str, str], timeout: float = ADMIN_TIMEOUT_S) -> ClusterState:
    """The cluster at `props` (librdkafka properties) now.

    Raises:
        AdminUnavailable: it could not be described within `timeout`; the message says why.
    """
    taken = int(time.time() * 1000)
    lines = ClientLines()
    admin = AdminClient({"log_level": LOG_LEVEL, **props, "client.id": _CLIENT_ID,
                         "socket.timeout.ms": str(int(timeout * 1000))}, logger=lines)
    try:
        parts, brokers = _partitions(admin, timeout)
        min_isr, unclean = _topic_configs(admin, sorted({p.topic for p in parts}), timeout)
        live = admin.describe_cluster(request_timeout=timeout).result(timeout=timeout)
        live_ids = tuple(sorted(int(n.id) for n in live.nodes)) or tuple(brokers)
        quorum = describe_quorum(props, timeout)
        fetch_timeout = _fetch_timeout_ms(admin, live_ids[0], timeout) if quorum and live_ids else \
            DEFAULT_FETCH_TIMEOUT_MS
    except KafkaException as e:
        why = e.args[0].str() if e.args and hasattr(e.args[0], "str") else str(e)
        raise AdminUnavailable(why + lines.detail(admin)) from None
    except TimeoutError:
        raise AdminUnavailable(f"no answer within {timeout:g} s{lines.detail(admin)}") from None
    controller = int(live.controller.id) if live.controller is not None else -1
    return ClusterState(taken, live_ids, tuple(parts), min_isr, unclean, quorum, fetch_timeout, controller)
