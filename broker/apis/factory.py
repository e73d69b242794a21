"""Build a broker's KafkaApis from its server configuration (the ``apis_factory`` of ``broker.server``).

The broker's identity comes from :class:`broker.settings.BrokerSettings`: ``broker.id``, ``broker.rack``, and the
planewatch keys ``cluster.id`` (the cluster id Metadata v2+ returns; Kafka: from ZooKeeper; when not set, the one
``meta.properties`` in the log dirs stores, generated at the first start: :mod:`broker.meta_properties`) and
``broker.epoch`` (this broker's epoch as a controller would have registered it, Kafka: the czxid of
``/brokers/ids/N``; -1 = unknown, no request is stale). The data plane (logs, Produce/Fetch/ListOffsets, topics,
groups, configs) is installed by :func:`broker.apis.install.install_data_plane` and reachable as
:func:`data_plane_of`.

It also turns on the planewatch lock-wait DEBUG line of ``kafka.server.ReplicaManager`` in server.log
(see :mod:`broker.state.replica_manager`).
"""

from __future__ import annotations

from typing import Any, Protocol

from broker.apis.data_plane import DataPlane
from broker.apis.install import install_data_plane
from broker.apis.kafka_apis import KafkaApis
from broker.config import KafkaConfig
from broker.log4j import Log4j
from broker.meta_properties import load_or_create_cluster_id
from broker.settings import BrokerSettings, LogSettings
from broker.state.replica_manager import BrokerState

__all__ = ["build_kafka_apis", "data_plane_of"]


class _Server(Protocol):
    config: KafkaConfig
    log4j: Log4j

    def advertised_listeners(self) -> list[Any]: ...


def build_kafka_apis(server: _Server) -> KafkaApis:
    """KafkaApis over a new BrokerState, with the data plane installed, for ``server`` (a
    ``broker.server.KafkaServer``).

    Raises:
        ConfigException: ``broker.epoch`` is not an integer (Kafka's message, naming the key).
        InconsistentClusterIdError: ``cluster.id`` differs from the one the log dirs store.
    """
    cfg = server.config
    identity = BrokerSettings.from_config(cfg)
    state = BrokerState(identity.broker_id, broker_epoch=identity.broker_epoch, log4j=server.log4j,
                        inter_broker_listener=cfg.inter_broker_listener_name)
    server.log4j.set_level("kafka.server.ReplicaManager", "DEBUG")
    listeners = server.advertised_listeners()
    apis = KafkaApis(
        state,
        advertised_listeners={ep.name: (ep.host, ep.port) for ep in listeners},
        security_protocols={ep.name: ep.security_protocol for ep in listeners},
        cluster_id=load_or_create_cluster_id(LogSettings.from_config(cfg).log_dirs, identity.broker_id,
                                             identity.cluster_id),
        rack=identity.rack,
        log4j=server.log4j,
        release=identity.kafka_release,
    )
    install_data_plane(apis, cfg, server.log4j, getattr(server, "registry", None),
                       getattr(getattr(server, "socket_server", None), "reconfigure", None))
    return apis


def data_plane_of(apis: KafkaApis) -> DataPlane:
    """The data plane :func:`build_kafka_apis` installed in ``apis``.

    Raises:
        RuntimeError: ``apis`` has no data plane (it was not built by :func:`build_kafka_apis`).
    """
    if apis.data_plane is None:
        raise RuntimeError("these KafkaApis have no data plane: build them with broker.apis.factory.build_kafka_apis")
    return apis.data_plane
