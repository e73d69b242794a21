"""The admin APIs clients call beyond topics, configs and groups: registered into a KafkaApis by
:func:`install_admin_apis` (``broker.apis.install`` calls it once the data plane is up).

Each API is registered only once it works, so ApiVersions advertises exactly these. On the reference cluster
(:mod:`broker.cluster.node`) the APIs a controller carries out (CreatePartitions, ElectLeaders, partition
reassignments) are registered again, forwarding to the cluster's controller. Transactional clients are refused at
once (:mod:`broker.apis.transactions`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker.apis.acls import handle_create_acls, handle_delete_acls, handle_describe_acls
from broker.apis.data_plane import DataPlane
from broker.apis.kafka_apis import Handler, HandlerResult, KafkaApis
from broker.apis.log_dirs import handle_alter_replica_log_dirs, handle_describe_log_dirs
from broker.apis.partitions import LocalAdmin, admin_handlers
from broker.apis.records import handle_delete_records
from broker.apis.transactions import refuse_transactional_coordinator, refuse_transactional_init
from broker.network.request import Request
from broker.protocol import ApiKey, RequestHeader

__all__ = ["install_admin_apis"]

_DataHandler = Callable[[DataPlane, Request, RequestHeader, dict[str, Any]], HandlerResult]


def _bind(dp: DataPlane, fn: _DataHandler) -> Handler:
    def handler(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        return fn(dp, request, header, body)
    return handler


def install_admin_apis(apis: KafkaApis, dp: DataPlane) -> None:
    """Register the admin APIs of a broker whose data plane is ``dp`` (single-broker behaviour)."""
    apis.register(ApiKey.DESCRIBE_ACLS, handle_describe_acls)
    apis.register(ApiKey.CREATE_ACLS, handle_create_acls)
    apis.register(ApiKey.DELETE_ACLS, handle_delete_acls)
    apis.register(ApiKey.DELETE_RECORDS, _bind(dp, handle_delete_records))
    apis.register(ApiKey.DESCRIBE_LOG_DIRS, _bind(dp, handle_describe_log_dirs))
    apis.register(ApiKey.ALTER_REPLICA_LOG_DIRS, _bind(dp, handle_alter_replica_log_dirs))
    for api_key, handler in admin_handlers(LocalAdmin(dp)).items():
        apis.register(api_key, handler)
    apis.register(ApiKey.FIND_COORDINATOR, refuse_transactional_coordinator(apis.handler(ApiKey.FIND_COORDINATOR)))
    apis.register(ApiKey.INIT_PRODUCER_ID, refuse_transactional_init(apis.handler(ApiKey.INIT_PRODUCER_ID)))
