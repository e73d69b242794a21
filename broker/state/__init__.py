"""Broker state: partition roles and leader epochs, the metadata cache, controller and broker epochs, and the
``replicaStateChangeLock`` that serialises LeaderAndIsr, StopReplica and UpdateMetadata (see replica_manager)."""

from __future__ import annotations

from broker.state.metadata_cache import MetadataCache, MetadataSnapshot
from broker.state.model import (
    CachedPartition,
    Endpoint,
    LeaderAndIsrPartition,
    LeaderAndIsrRequestModel,
    LiveBroker,
    PartitionState,
    Role,
    StopReplicaPartition,
    StopReplicaRequestModel,
    TopicPartition,
    UpdateMetadataRequestModel,
)
from broker.state.replica_manager import BrokerState, ControllerMovedError, LeaderAndIsrResult, StopReplicaResult

__all__ = [
    "BrokerState",
    "CachedPartition",
    "ControllerMovedError",
    "Endpoint",
    "LeaderAndIsrPartition",
    "LeaderAndIsrRequestModel",
    "LeaderAndIsrResult",
    "LiveBroker",
    "MetadataCache",
    "MetadataSnapshot",
    "PartitionState",
    "Role",
    "StopReplicaPartition",
    "StopReplicaRequestModel",
    "StopReplicaResult",
    "TopicPartition",
    "UpdateMetadataRequestModel",
]
