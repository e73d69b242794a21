"""The replica fetcher manager (Kafka's ReplicaFetcherManager): one fetcher thread per leader broker.

It implements :class:`broker.state.model.FetcherManager`, the hook ReplicaManager calls under
``replicaStateChangeLock`` while handling LeaderAndIsr / StopReplica. Partitions are routed to the thread of their
leader (``num.replica.fetchers`` = 1); a partition whose leader changed is removed from its old thread first.

With a registry it reports Kafka's ``kafka.server:type=ReplicaFetcherManager,name=<N>,clientId=Replica`` gauges:
``MaxLag`` (the most records any partition's log is behind its leader's high watermark after the last fetch),
``MinFetchRate`` (the lowest one-minute fetch request rate of the threads), ``DeadThreadCount`` (threads that died
while still owned), ``FailedPartitionsCount`` (always 0: a partition whose fetch fails is retried after a back-off,
never marked failed as Kafka 2.5+ does on an unexpected error).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping

from broker.fetcher.thread import FetchSettings, ReplicaFetcherThread
from broker.log import LogManager
from broker.log4j import Log4j
from broker.metrics.registry import MetricName, MetricsRegistry
from broker.state.model import BrokerEndPoint, InitialFetchState, TopicPartition

__all__ = ["ReplicaFetcherManager"]


class ReplicaFetcherManager:
    """Creates, feeds and stops :class:`ReplicaFetcherThread` s (see the module docstring)."""

    def __init__(self, broker_id: int, logs: LogManager, settings: FetchSettings, log4j: Log4j,
                 on_fetched: Callable[[list[TopicPartition]], None] | None = None,
                 registry: MetricsRegistry | None = None) -> None:
        self.broker_id = broker_id
        self.logs = logs
        self.settings = settings
        self.log4j = log4j
        self._on_fetched = on_fetched
        self._lock = threading.Lock()
        self._threads: dict[BrokerEndPoint, ReplicaFetcherThread] = {}
        self._owner: dict[TopicPartition, BrokerEndPoint] = {}
        self._log = log4j.get_logger("kafka.server.ReplicaFetcherManager",
                                     f"[ReplicaFetcherManager on broker {broker_id}] ")
        if registry is not None:
            def gauge(name: str, fn: Callable[[], float]) -> None:
                registry.gauge(MetricName.of("kafka.server", "ReplicaFetcherManager", name, clientId="Replica"), fn)

            gauge("MaxLag", lambda: float(max((lag for t in self.threads() for lag in list(t.lags.values())),
                                              default=0)))
            gauge("MinFetchRate", lambda: min((t.request_rate.rate(1) for t in self.threads()), default=0.0))
            gauge("DeadThreadCount", lambda: float(sum(1 for t in self.threads() if not t.is_alive())))
            gauge("FailedPartitionsCount", lambda: 0.0)

    def threads(self) -> list[ReplicaFetcherThread]:
        """The running fetcher threads."""
        with self._lock:
            return list(self._threads.values())

    def add_fetcher_for_partitions(self, fetches: Mapping[TopicPartition, InitialFetchState]) -> None:
        """Start fetching these partitions from their leaders (become-follower)."""
        by_leader: dict[BrokerEndPoint, dict[TopicPartition, InitialFetchState]] = {}
        for tp, init in fetches.items():
            by_leader.setdefault(init.leader, {})[tp] = init
        moved: dict[BrokerEndPoint, list[TopicPartition]] = {}
        with self._lock:
            for leader, group in by_leader.items():
                for tp in group:
                    old = self._owner.get(tp)
                    if old is not None and old != leader:
                        moved.setdefault(old, []).append(tp)
                    self._owner[tp] = leader
            for old, tps in moved.items():
                thread = self._threads.get(old)
                if thread is not None:
                    thread.remove_partitions(tps)
            for leader, group in by_leader.items():
                thread = self._threads.get(leader)
                if thread is None or not thread.is_alive():
                    thread = ReplicaFetcherThread(self.broker_id, 0, leader, self.logs, self.settings, self.log4j,
                                                  self._on_fetched)
                    self._threads[leader] = thread
                    thread.start()
                thread.add_partitions(group)
                self._log.info(f"Added fetcher to broker {leader.id} for partitions "
                               + ", ".join(f"{tp.topic}-{tp.partition}" for tp in group))

    def remove_fetcher_for_partitions(self, partitions: Collection[TopicPartition]) -> None:
        """Stop fetching these partitions (become-leader, become-follower, StopReplica)."""
        by_leader: dict[BrokerEndPoint, list[TopicPartition]] = {}
        with self._lock:
            for tp in partitions:
                leader = self._owner.pop(tp, None)
                if leader is not None:
                    by_leader.setdefault(leader, []).append(tp)
            for leader, tps in by_leader.items():
                thread = self._threads.get(leader)
                if thread is not None:
                    thread.remove_partitions(tps)
        if by_leader:
            self._log.info("Removed fetcher for partitions "
                           + ", ".join(f"{tp.topic}-{tp.partition}" for tps in by_leader.values() for tp in tps))

    def shutdown_idle_fetcher_threads(self) -> None:
        """Stop threads with no partitions left (nothing is owned by their leader any more)."""
        with self._lock:
            used = set(self._owner.values())
            idle = [leader for leader in self._threads if leader not in used]
            stopping = [self._threads.pop(leader) for leader in idle]
        for thread in stopping:
            thread.initiate_shutdown()

    def shutdown(self) -> None:
        """Stop every fetcher thread."""
        with self._lock:
            threads = list(self._threads.values())
            self._threads.clear()
            self._owner.clear()
        for thread in threads:
            thread.shutdown()
        self._log.info("shutdown completed")
