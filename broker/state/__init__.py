"""Broker state: partition roles and leader epochs, the metadata cache, controller and broker epochs, and the
``replicaStateChangeLock`` that serialises LeaderAndIsr, StopReplica and UpdateMetadata (see replica_manager).

Modules: `decisions` (Pure decisions of the control requests); `metadata_cache` (The broker's metadata cache, fed by
UpdateMetadata and read by Metadata requests...); `model` (Value types of a broker's replica and metadata state, and
the hooks the data plane...).
"""

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
