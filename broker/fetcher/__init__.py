"""Replica fetchers: followers pull from leaders over the data plane (Fetch with ``replica_id`` = follower id).

Two models behind ``replica.fetcher.model`` (see :mod:`broker.fetcher.thread`): ``locked`` (Kafka 2.x: the
partition-map lock is held across the processing of a whole fetch response, and LeaderAndIsr's handler thread takes
it in add/remove partitions) and ``async`` (KAFKA-6974: add/remove are events on the fetcher's queue; only the
fetcher thread touches its partition state; the handler never blocks).

Modules: `manager` (The replica fetcher manager (Kafka's ReplicaFetcherManager)).
"""

from __future__ import annotations

from broker.fetcher.manager import ReplicaFetcherManager
from broker.fetcher.thread import FETCHER_MODELS, ReplicaFetcherThread

__all__ = ["FETCHER_MODELS", "ReplicaFetcherManager", "ReplicaFetcherThread"]
