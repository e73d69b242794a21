"""Plug the data plane into a KafkaApis: logs, Produce/Fetch/ListOffsets, topics, groups (issue 3).

:func:`install_data_plane` is called by ``broker.apis.factory.build_kafka_apis`` once the listeners are bound. It
loads the logs (recovery after a crash happens here, before any request is served), registers every data-plane
handler in KafkaApis' dispatch table (so ApiVersions advertises exactly them), and arranges for the logs to be
closed cleanly at broker shutdown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from broker.apis.configs import ConfigApis, DynamicBrokerConfig
from broker.apis.data_plane import DataPlane, DataPlaneConfig
from broker.apis.fetch import handle_fetch
from broker.apis.groups import GroupApis
from broker.apis.kafka_apis import HandlerResult, KafkaApis
from broker.apis.list_offsets import handle_list_offsets
from broker.apis.membership import GroupCoordinator
from broker.apis.metrics_topic import TopicMetricsReporter
from broker.apis.offsets import OffsetStore
from broker.apis.produce import handle_produce
from broker.apis.producers import ProducerIds
from broker.apis.topics import handle_create_topics, handle_delete_topics, metadata_with_auto_create
from broker.log import LogManager
from broker.log4j import Log4j
from broker.metrics.registry import MetricsRegistry
from broker.network.request import Request
from broker.protocol import ApiKey, RequestHeader

__all__ = ["install_data_plane"]

# KafkaConfig's default metrics.interval.ms (the JSON-lines reporter's interval; the topic reporter follows it).
METRICS_INTERVAL_MS = 5000

_DataHandler = Callable[[DataPlane, Request, RequestHeader, dict[str, Any]], HandlerResult]


def _bind(dp: DataPlane, fn: _DataHandler) -> Callable[[Request, RequestHeader, dict[str, Any]], HandlerResult]:
    def handler(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        return fn(dp, request, header, body)
    return handler


def install_data_plane(apis: KafkaApis, properties: Mapping[str, str], log4j: Log4j,
                       registry: MetricsRegistry | None = None,
                       reconfigure: Callable[[Mapping[str, str]], None] | None = None) -> DataPlane:
    """Start the data plane of ``apis``' broker from raw ``server.properties`` and register its handlers.

    ``reconfigure`` applies dynamic connection limits (``SocketServer.reconfigure``); the persisted dynamic
    configs are re-applied through it here, before the acceptors start.

    Raises:
        ValueError: a bad data-plane or log setting (Kafka's ConfigException text).
        broker.log.LogDirInUseError: another broker holds a log dir.
    """
    config = DataPlaneConfig.from_properties(properties)
    logs = LogManager.from_properties(properties, log4j=log4j, metrics=registry)
    dp = DataPlane(apis.state, logs, apis.self_broker, config, log4j, registry)
    dp.startup()
    apis.add_closer(dp.close)
    store = OffsetStore(logs.log_dirs[0])
    coordinator = GroupCoordinator(offset_groups=store.groups)
    apis.add_closer(coordinator.close)
    groups = GroupApis(apis.self_broker, store, coordinator)
    apis.register(ApiKey.PRODUCE, _bind(dp, handle_produce))
    apis.register(ApiKey.FETCH, _bind(dp, handle_fetch))
    apis.register(ApiKey.LIST_OFFSETS, _bind(dp, handle_list_offsets))
    apis.register(ApiKey.CREATE_TOPICS, _bind(dp, handle_create_topics))
    apis.register(ApiKey.DELETE_TOPICS, _bind(dp, handle_delete_topics))
    apis.register(ApiKey.METADATA, metadata_with_auto_create(dp, apis.handler(ApiKey.METADATA)))
    apis.register(ApiKey.FIND_COORDINATOR, groups.find_coordinator)
    apis.register(ApiKey.OFFSET_COMMIT, groups.offset_commit)
    apis.register(ApiKey.OFFSET_FETCH, groups.offset_fetch)
    apis.register(ApiKey.JOIN_GROUP, coordinator.join_group)
    apis.register(ApiKey.SYNC_GROUP, coordinator.sync_group)
    apis.register(ApiKey.HEARTBEAT, coordinator.heartbeat)
    apis.register(ApiKey.LEAVE_GROUP, coordinator.leave_group)
    apis.register(ApiKey.DESCRIBE_GROUPS, coordinator.describe_groups)
    apis.register(ApiKey.LIST_GROUPS, coordinator.list_groups)
    apis.register(ApiKey.INIT_PRODUCER_ID, ProducerIds().init_producer_id)
    dynamic = DynamicBrokerConfig(apis.state.broker_id, logs.log_dirs[0], properties, reconfigure, log4j)
    dynamic.load()
    configs = ConfigApis(dynamic, dp)
    apis.register(ApiKey.DESCRIBE_CONFIGS, configs.describe_configs)
    apis.register(ApiKey.ALTER_CONFIGS, configs.alter_configs)
    apis.register(ApiKey.INCREMENTAL_ALTER_CONFIGS, configs.incremental_alter_configs)
    if config.metric_reporter_topic and registry is not None:
        interval = int(properties.get("metrics.interval.ms") or METRICS_INTERVAL_MS)
        reporter = TopicMetricsReporter(dp, registry, config.metric_reporter_topic, interval, log4j)
        reporter.start()
        apis.add_closer(reporter.shutdown)  # closers run last-added first: before the logs close
    return dp
