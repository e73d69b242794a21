"""Plug the data plane into a KafkaApis: logs, Produce/Fetch/ListOffsets, topics, groups (issue 3).

:func:`install_data_plane` is called by ``broker.apis.factory.build_kafka_apis`` once the listeners are bound. It
loads the logs (recovery after a crash happens here, before any request is served), registers every data-plane
handler in KafkaApis' dispatch table (so ApiVersions advertises exactly them), and arranges for the logs to be
closed cleanly at broker shutdown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from broker.apis.admin import install_admin_apis
from broker.apis.configs import ConfigApis, DynamicBrokerConfig
from broker.apis.data_plane import DataPlane
from broker.apis.fetch import handle_fetch
from broker.apis.groups import GroupApis
from broker.apis.kafka_apis import HandlerResult, KafkaApis
from broker.apis.leader_epochs import handle_offset_for_leader_epoch
from broker.apis.list_offsets import handle_list_offsets
from broker.apis.membership import GroupCoordinator
from broker.apis.metadata import OFFSETS_TOPIC
from broker.apis.metrics_topic import TopicMetricsReporter
from broker.apis.offsets import OffsetStore
from broker.apis.produce import handle_produce
from broker.apis.producers import ProducerIds
from broker.apis.topics import handle_create_topics, handle_delete_topics, metadata_with_auto_create
from broker.config import KafkaConfig
from broker.log import LogManager
from broker.log4j import Log4j
from broker.metrics.registry import MetricsRegistry
from broker.network.request import Request
from broker.protocol import ApiKey, RequestHeader
from broker.settings import DataPlaneSettings, GroupSettings, LogSettings, PlanewatchSettings

__all__ = ["install_data_plane"]

_DataHandler = Callable[[DataPlane, Request, RequestHeader, dict[str, Any]], HandlerResult]


def _bind(dp: DataPlane, fn: _DataHandler) -> Callable[[Request, RequestHeader, dict[str, Any]], HandlerResult]:
    def handler(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        return fn(dp, request, header, body)
    return handler


def _partition_exists(dp: DataPlane) -> Callable[[str, int], bool]:
    def exists(topic: str, partition: int) -> bool:
        return partition in dp.state.metadata_cache.snapshot.partitions.get(topic, {})
    return exists


def _offsets_topic_creator(dp: DataPlane, partitions: int) -> Callable[[], None]:
    """Kafka creates ``__consumer_offsets`` (``offsets.topic.num.partitions``) at the first group FindCoordinator;
    here too, while this broker is its own controller (a cluster's controller does not create it)."""

    def ensure() -> None:
        if not dp.topic_exists(OFFSETS_TOPIC) and dp.is_own_controller():
            dp.create_topic(OFFSETS_TOPIC, partitions, 1)
    return ensure


def install_data_plane(apis: KafkaApis, config: KafkaConfig, log4j: Log4j,
                       registry: MetricsRegistry | None = None,
                       reconfigure: Callable[[Mapping[str, str]], None] | None = None) -> DataPlane:
    """Start the data plane of ``apis``' broker from its configuration and register its handlers.

    ``reconfigure`` applies dynamic connection limits (``SocketServer.reconfigure``); the persisted dynamic
    configs are re-applied through it here, before the acceptors start. The data plane is also published as
    ``apis.data_plane``.

    Raises:
        broker.log.LogDirInUseError: another broker holds a log dir.
    """
    logs = LogManager.from_settings(LogSettings.from_config(config), log4j=log4j, metrics=registry)
    dp = DataPlane(apis.state, logs, apis.self_broker, DataPlaneSettings.from_config(config), log4j, registry)
    dp.startup()
    apis.add_closer(dp.close)
    apis.data_plane = dp
    store = OffsetStore(logs.log_dirs[0])
    group_settings = GroupSettings.from_config(config)
    coordinator = GroupCoordinator(offset_groups=store.groups, settings=group_settings)
    apis.add_closer(coordinator.close)
    groups = GroupApis(apis.self_broker, store, coordinator, group_settings, partition_exists=_partition_exists(dp),
                       on_group_lookup=_offsets_topic_creator(dp, group_settings.offsets_topic_num_partitions))
    apis.register(ApiKey.PRODUCE, _bind(dp, handle_produce))
    apis.register(ApiKey.FETCH, _bind(dp, handle_fetch))
    apis.register(ApiKey.LIST_OFFSETS, _bind(dp, handle_list_offsets))
    apis.register(ApiKey.OFFSET_FOR_LEADER_EPOCH, _bind(dp, handle_offset_for_leader_epoch))
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
    apis.register(ApiKey.DELETE_GROUPS, groups.delete_groups)
    apis.register(ApiKey.INIT_PRODUCER_ID, ProducerIds().init_producer_id)
    dynamic = DynamicBrokerConfig(apis.state.broker_id, logs.log_dirs[0], config.originals, reconfigure, log4j)
    dynamic.load()
    configs = ConfigApis(dynamic, dp)
    apis.register(ApiKey.DESCRIBE_CONFIGS, configs.describe_configs)
    apis.register(ApiKey.ALTER_CONFIGS, configs.alter_configs)
    apis.register(ApiKey.INCREMENTAL_ALTER_CONFIGS, configs.incremental_alter_configs)
    install_admin_apis(apis, dp)
    metrics = PlanewatchSettings.from_config(config)
    if metrics.metric_reporter_topic and registry is not None:
        reporter = TopicMetricsReporter(dp, registry, metrics.metric_reporter_topic, metrics.metrics_interval_ms,
                                        log4j)
        reporter.start()
        apis.add_closer(reporter.shutdown)  # closers run last-added first: before the logs close
    return dp
