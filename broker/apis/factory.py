"""Build a broker's KafkaApis from its server configuration (the ``apis_factory`` of ``broker.server``).

planewatch-specific properties read here (not in Kafka; set them in the properties file or with
``--override key=value``):

=================  =========  ===========================================================================
key                default    meaning
=================  =========  ===========================================================================
``broker.epoch``   ``-1``     this broker's epoch, as a controller would have registered it (Kafka: the
                              czxid of ``/brokers/ids/N``); -1 = unknown, no request is stale
``cluster.id``     (none)     the cluster id Metadata v2+ returns (Kafka: from ZooKeeper)
``broker.rack``    (none)     Kafka's ``broker.rack``
=================  =========  ===========================================================================

It also turns on the planewatch lock-wait DEBUG line of ``kafka.server.ReplicaManager`` in server.log
(see :mod:`broker.state.replica_manager`).
"""

from __future__ import annotations

from typing import Any, Protocol

from broker.apis.install import install_data_plane
from broker.apis.kafka_apis import KafkaApis
from broker.log4j import Log4j
from broker.state.replica_manager import BrokerState

__all__ = ["build_kafka_apis", "planewatch_setting"]


class _Server(Protocol):
    config: Any
    log4j: Log4j

    def advertised_listeners(self) -> list[Any]: ...


def planewatch_setting(config: Any, key: str) -> str | None:
    """A property the config table may not define: its parsed value if defined, else the raw string, else None."""
    values = getattr(config, "values", {})
    if key in values and values[key] is not None:
        return str(values[key])
    raw = getattr(config, "originals", {}).get(key)
    return None if raw is None or str(raw).strip() == "" else str(raw).strip()


def build_kafka_apis(server: _Server) -> KafkaApis:
    """KafkaApis over a new BrokerState for ``server`` (a ``broker.server.KafkaServer``).

    Raises:
        ValueError: ``broker.epoch`` is not an integer (message names the key, as Kafka's ConfigException does).
    """
    cfg = server.config
    raw_epoch = planewatch_setting(cfg, "broker.epoch")
    try:
        epoch = int(raw_epoch) if raw_epoch is not None else -1
    except ValueError:
        raise ValueError(f"Invalid value {raw_epoch} for configuration broker.epoch: Not a number of type LONG"
                         ) from None
    inter_broker = getattr(cfg, "inter_broker_listener_name", "PLAINTEXT")
    state = BrokerState(cfg.broker_id, broker_epoch=epoch, log4j=server.log4j, inter_broker_listener=inter_broker)
    server.log4j.set_level("kafka.server.ReplicaManager", "DEBUG")
    listeners = server.advertised_listeners()
    apis = KafkaApis(
        state,
        advertised_listeners={ep.name: (ep.host, ep.port) for ep in listeners},
        security_protocols={ep.name: ep.security_protocol for ep in listeners},
        cluster_id=planewatch_setting(cfg, "cluster.id"),
        rack=planewatch_setting(cfg, "broker.rack"),
        log4j=server.log4j,
    )
    # The data plane (issue 3): logs under log.dirs, Produce/Fetch/ListOffsets, topics, groups.
    install_data_plane(apis, getattr(cfg, "originals", {}), server.log4j, getattr(server, "registry", None),
                       getattr(getattr(server, "socket_server", None), "reconfigure", None))
    return apis
