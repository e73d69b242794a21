"""An Apache Kafka cluster for the length of a run (`started`), and what every run does to it first: admin
clients and topics whose partitions all have a leader. Shared by the incident scenarios (planewatch.kafka.scenarios)
and the rolling restarts (planewatch.kafka.rolls).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from broker.scenarios.base import Timeline, wait_until
from planewatch.kafka.cluster import KafkaCluster, KafkaClusterSpec
from planewatch.kafka.shipper import DRAIN_S, cluster_shipper

__all__ = ["CLIENT_LOG", "admin_client", "create_topic", "started"]


@contextmanager
def started(spec: KafkaClusterSpec, tl: Timeline) -> Iterator[KafkaCluster]:
    """Start an Apache Kafka cluster, report it, always stop it; with `spec.ship`, its brokers' logs are shipped
    by rsyslog (one per broker host) from before its start until after it stopped."""
    cluster = KafkaCluster(spec)
    shipping = ExitStack()
    try:
        if spec.ship is not None:  # the shipper runs before Kafka starts, as on a host: the first lines leave at once
            logs = {b: cluster.broker_dir(b) / "logs" for b in range(1, spec.brokers + 1)}
            for d in logs.values():
                d.mkdir(parents=True, exist_ok=True)
            shipper = shipping.enter_context(cluster_shipper(spec.ship, logs, spec.directory / "rsyslog"))
            shipping.callback(time.sleep, DRAIN_S)  # runs first at the end: the brokers' last lines leave
            tl.emit("logs-shipped", shipper="rsyslog", to=spec.ship.bootstrap, topic=spec.ship.topic,
                    hosts=sorted(shipper.hosts))
        cluster.start()
        tl.emit("cluster-started", engine="apache-kafka", kafka_version=spec.version, brokers=spec.brokers,
                mode="kraft" if spec.is_kraft else "zookeeper", control_plane=cluster.control_plane,
                bootstrap=cluster.bootstrap_servers())
        yield cluster
    finally:
        cluster.stop()
        shipping.close()
        tl.emit("cluster-stopped")


# librdkafka's connection errors while a scenario kills brokers on purpose are expected: logged at DEBUG here.
CLIENT_LOG = logging.getLogger("planewatch.kafka.clients")
CLIENT_LOG.addHandler(logging.NullHandler())
CLIENT_LOG.propagate = False


def admin_client(cluster: KafkaCluster) -> Any:
    """An admin client of the cluster, logging librdkafka's connection errors at DEBUG (CLIENT_LOG)."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers()}, logger=CLIENT_LOG)


def create_topic(cluster: KafkaCluster, topic: str, partitions: int, rf: int,
                 config: dict[str, str] | None = None) -> None:
    """Create a topic with Kafka's admin API and wait until every partition has a leader."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    admin = admin_client(cluster)
    for fut in admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf,
                                             config=config or {})]).values():
        fut.result(60)
    wait_until(f"leaders of {topic}", lambda: all(
        p.leader >= 0 for p in admin.list_topics(topic, timeout=10).topics[topic].partitions.values()))
