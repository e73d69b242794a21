"""The files an operator writes to run Apache Kafka, as text (pure: no I/O).

Kafka's jars carry neither its shell scripts nor its ``config/`` directory, so planewatch writes what an operator
would: ``server.properties`` (ZooKeeper mode, or KRaft broker / controller), ``zookeeper.properties``, the log4j
configuration that sends each logger to its file in the layout ``[%d] %p %m (%c)%n`` (log4j 1 / reload4j below 4.0,
log4j2 from 4.0), and the JMX exporter agent's rules.

Loggers (as Kafka's own ``config/log4j.properties``, with the levels planewatch needs):

================================  =====  ======================
logger                            level  file
================================  =====  ======================
root                              INFO   server.log
``state.change.logger``           TRACE  state-change.log
``kafka.request.logger``          DEBUG  kafka-request.log (one ``Completed request:`` line per request)
``kafka.controller``              TRACE  controller.log
``org.apache.kafka.controller``   INFO   controller.log (KRaft's QuorumController)
================================  =====  ======================

That is the ``planewatch`` profile (every witness on). The ``shipped`` profile (``loggers``) sets them as Kafka's
``config/log4j.properties`` (below 4.0) and ``config/log4j2.yaml`` (4.x) ship them: state-change at INFO from 2.6
(KAFKA-8470; TRACE before), the request log at WARN (no per-request line), and the log-cleaner and authorizer files
Kafka writes beside them.

Files roll hourly (``DailyRollingFileAppender`` with ``'.'yyyy-MM-dd-HH``, log4j2's time-based policy likewise), the
rotation planewatch's file source follows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "LOG4J_PROFILES",
    "LOGGERS",
    "LOG_PATTERN",
    "SECURE_LISTENERS",
    "KafkaNode",
    "log4j2_properties",
    "log4j_properties",
    "loggers",
    "properties_text",
    "secure_properties",
    "server_properties",
    "zookeeper_properties",
]

LOG_PATTERN = "[%d] %p %m (%c)%n"
# (appender id, file name, logger name or None for root, level)
Loggers = tuple[tuple[str, str, str | None, str], ...]
LOGGERS: Loggers = (
    ("kafkaAppender", "server.log", None, "INFO"),
    ("stateChangeAppender", "state-change.log", "state.change.logger", "TRACE"),
    ("requestAppender", "kafka-request.log", "kafka.request.logger", "DEBUG"),
    ("controllerAppender", "controller.log", "kafka.controller", "TRACE"),
    ("controllerAppender", "controller.log", "org.apache.kafka.controller", "INFO"),
)
LOG4J_PROFILES = ("planewatch", "shipped")
# Listener name -> security protocol of the listeners a secured cluster adds beside PLAINTEXT: SCRAM over TLS, and
# TLS with client certificates (mTLS). Every other listener is PLAINTEXT.
SECURE_LISTENERS = {"SASL_SSL": "SASL_SSL", "SSL": "SSL"}
# The SCRAM mechanism of the SASL_SSL listener (Kafka's strongest; librdkafka and the JVM client both speak it).
SCRAM_MECHANISM = "SCRAM-SHA-512"


@dataclass(frozen=True)
class KafkaNode:
    """One Kafka process: its id, roles and the paths and ports its configuration names."""

    node_id: int
    roles: str  # "broker" in ZooKeeper mode; "broker" or "controller" in KRaft
    data_dir: str
    listeners: tuple[tuple[str, int], ...]  # (listener name, port) on 127.0.0.1


def properties_text(props: Mapping[str, str], header: str = "") -> str:
    """A Java properties file: an optional comment header, then ``key=value`` lines in the mapping's order."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    lines.extend(f"{k}={v}" for k, v in props.items())
    return "\n".join(lines) + "\n"


def _listeners(node: KafkaNode) -> str:
    return ",".join(f"{name}://127.0.0.1:{port}" for name, port in node.listeners)


def server_properties(node: KafkaNode, *, brokers: int, zookeeper: str | None, quorum_voters: str | None,
                      control_plane: bool, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """``server.properties`` of one node.

    ZooKeeper mode when ``zookeeper`` (``host:port/chroot``) is given: ``broker.id``, the control-plane listener
    ``CONTROLLER`` when ``control_plane`` (KIP-291). KRaft when ``quorum_voters`` (``id@host:port,...``) is given:
    ``process.roles``/``node.id``, the quorum's listener ``CONTROLLER`` on controllers. Internal topics get
    ``min(3, brokers)`` replicas; ``extra`` (e.g. ``num.io.threads``) comes last and wins.
    """
    rf = str(min(3, brokers))
    props: dict[str, str] = {}
    listener_names = [name for name, _ in node.listeners]
    if zookeeper is not None:
        props["broker.id"] = str(node.node_id)
    else:
        props["process.roles"] = node.roles
        props["node.id"] = str(node.node_id)
        props["controller.quorum.voters"] = str(quorum_voters)
        props["controller.listener.names"] = "CONTROLLER"
    props["listeners"] = _listeners(node)
    if node.roles == "broker":
        props["advertised.listeners"] = _listeners(node)
        props["inter.broker.listener.name"] = "PLAINTEXT"
    props["listener.security.protocol.map"] = ",".join(
        f"{name}:{SECURE_LISTENERS.get(name, 'PLAINTEXT')}"
        for name in dict.fromkeys([*listener_names, "PLAINTEXT", "CONTROLLER"]))
    if zookeeper is not None:
        props["zookeeper.connect"] = zookeeper
        # a killed broker's session ends within this (Kafka's default 18 s makes a bounce scenario slow)
        props["zookeeper.session.timeout.ms"] = "6000"
        if control_plane:
            props["control.plane.listener.name"] = "CONTROLLER"
    props["log.dirs"] = node.data_dir
    if node.roles == "broker":
        props.update({
            "num.partitions": "1",
            "default.replication.factor": rf,
            "offsets.topic.replication.factor": rf,
            # 6 instead of Kafka's 50: fifty partitions' leader elections on 2 cores delay the first consumer
            "offsets.topic.num.partitions": "6",
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "6",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            "replica.lag.time.max.ms": "10000",
        })
    props.update(extra or {})
    return props


def secure_properties(keystore_pem: str, truststore_pem: str) -> dict[str, str]:
    """The broker properties of the SECURE_LISTENERS, as operators secure a logging cluster: ``SASL_SSL`` with SCRAM
    (users created through the Admin API) and ``SSL`` requiring a client certificate, both with the broker's key and
    certificate chain in one PEM file (``keystore_pem``) and the CA certificates it trusts (``truststore_pem``)."""
    mech = SCRAM_MECHANISM.lower()
    return {
        "sasl.enabled.mechanisms": SCRAM_MECHANISM,
        f"listener.name.sasl_ssl.{mech}.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": keystore_pem,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": truststore_pem,
        "listener.name.ssl.ssl.client.auth": "required",
    }


def zookeeper_properties(data_dir: str, port: int) -> dict[str, str]:
    """ZooKeeper's standalone server on 127.0.0.1 (no admin server, no connection limit)."""
    return {
        "dataDir": data_dir,
        "clientPort": str(port),
        "clientPortAddress": "127.0.0.1",
        "admin.enableServer": "false",
        "maxClientCnxns": "0",
        "4lw.commands.whitelist": "ruok,srvr",
    }


def loggers(profile: str, version: tuple[int, int]) -> Loggers:
    """The loggers of a log4j profile (``LOG4J_PROFILES``) for Kafka ``version`` (major, minor)."""
    if profile == "planewatch":
        return LOGGERS
    if profile != "shipped":
        raise ValueError(f"log4j profile must be one of {LOG4J_PROFILES}, got {profile!r}")
    levels = {"state.change.logger": "INFO" if version >= (2, 6) else "TRACE", "kafka.request.logger": "WARN"}
    cleaner = "org.apache.kafka.storage.internals.log.LogCleaner" if version >= (4, 0) else "kafka.log.LogCleaner"
    return (*((a, f, name, levels.get(name or "", level)) for a, f, name, level in LOGGERS),
            ("requestAppender", "kafka-request.log", "kafka.network.RequestChannel$", "WARN"),
            ("cleanerAppender", "log-cleaner.log", cleaner, "INFO"),
            ("authorizerAppender", "kafka-authorizer.log", "kafka.authorizer.logger",
             "INFO" if version >= (4, 0) else "WARN"))


def log4j_properties(chosen: Loggers = LOGGERS) -> str:
    """log4j 1.x (reload4j) configuration of Kafka below 4.0; files under ``${kafka.logs.dir}``."""
    out = []
    for appender, filename in dict.fromkeys((a, f) for a, f, _, _ in chosen):
        p = f"log4j.appender.{appender}"
        out += [f"{p}=org.apache.log4j.DailyRollingFileAppender", f"{p}.DatePattern='.'yyyy-MM-dd-HH",
                f"{p}.File=${{kafka.logs.dir}}/{filename}", f"{p}.layout=org.apache.log4j.PatternLayout",
                f"{p}.layout.ConversionPattern={LOG_PATTERN}"]
    for appender, _, logger, level in chosen:
        if logger is None:
            out.append(f"log4j.rootLogger={level}, {appender}")
        else:
            out += [f"log4j.logger.{logger}={level}, {appender}", f"log4j.additivity.{logger}=false"]
    return "\n".join(out) + "\n"


def log4j2_properties(chosen: Loggers = LOGGERS) -> str:
    """log4j2 configuration of Kafka 4.x, the same files and levels as :func:`log4j_properties`."""
    out = ["status = warn", "name = planewatch-kafka"]
    for appender, filename in dict.fromkeys((a, f) for a, f, _, _ in chosen):
        p = f"appender.{appender}"
        out += [f"{p}.type = RollingFile", f"{p}.name = {appender}",
                f"{p}.fileName = ${{sys:kafka.logs.dir}}/{filename}",
                f"{p}.filePattern = ${{sys:kafka.logs.dir}}/{filename}.%d{{yyyy-MM-dd-HH}}",
                f"{p}.layout.type = PatternLayout", f"{p}.layout.pattern = {LOG_PATTERN}",
                f"{p}.policies.type = Policies", f"{p}.policies.time.type = TimeBasedTriggeringPolicy"]
    for i, (appender, _, logger, level) in enumerate(chosen):
        if logger is None:
            out += [f"rootLogger.level = {level}", f"rootLogger.appenderRef.main.ref = {appender}"]
        else:
            p = f"logger.l{i}"
            out += [f"{p}.name = {logger}", f"{p}.level = {level}", f"{p}.additivity = false",
                    f"{p}.appenderRef.main.ref = {appender}"]
    return "\n".join(out) + "\n"
