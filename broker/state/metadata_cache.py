"""The broker's metadata cache, fed by UpdateMetadata and read by Metadata requests (Kafka 2.8 ``MetadataCache``).

Readers never lock: the cache is an immutable :class:`MetadataSnapshot` swapped in one assignment (Kafka's
``@volatile metadataSnapshot``); writers (UpdateMetadata, already serialised by ``replicaStateChangeLock``) build a
new snapshot from a copy of the old one, because the controller may send partial updates.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from broker.log4j import KafkaLogger
from broker.state.model import (
    LEADER_DURING_DELETE,
    CachedPartition,
    LiveBroker,
    TopicPartition,
    UpdateMetadataRequestModel,
)

__all__ = ["MetadataCache", "MetadataSnapshot"]


@dataclass(frozen=True, slots=True)
class MetadataSnapshot:
    """One consistent view of the cluster metadata."""

    partitions: Mapping[str, Mapping[int, CachedPartition]] = field(default_factory=dict)
    topic_ids: Mapping[str, str] = field(default_factory=dict)
    controller_id: int | None = None
    alive_brokers: Mapping[int, LiveBroker] = field(default_factory=dict)

    def partition(self, tp: TopicPartition) -> CachedPartition | None:
        """The cached state of one partition."""
        return self.partitions.get(tp.topic, {}).get(tp.partition)

    def partition_count(self) -> int:
        """How many partitions are cached."""
        return sum(len(p) for p in self.partitions.values())


class MetadataCache:
    """The metadata cache of one broker; state-change lines go to ``state_change_logger`` (``[Broker id=N] ``)."""

    def __init__(self, broker_id: int, state_change_logger: KafkaLogger) -> None:
        self.broker_id = broker_id
        self._logger = state_change_logger
        self._write_lock = threading.Lock()  # Kafka's partitionMetadataLock (write side)
        self._snapshot = MetadataSnapshot()
        # True while the metadata is this broker's own (apply_local), False once a controller sent UpdateMetadata.
        self.local_authority = False

    @property
    def snapshot(self) -> MetadataSnapshot:
        """The current snapshot (never mutated; read it once per request for a consistent view)."""
        return self._snapshot

    def alive_broker(self, broker_id: int) -> LiveBroker | None:
        """A live broker by id."""
        return self._snapshot.alive_brokers.get(broker_id)

    def apply_local(self, partitions: Iterable[CachedPartition], removed_topics: Iterable[str] = (), *,
                    topic_ids: Mapping[str, str] | None = None, self_broker: LiveBroker | None = None) -> None:
        """Data-plane hook (issue 3): cache topics a standalone broker created or deleted itself. While no controller
        has spoken, ``self_broker`` becomes the alive broker and the controller (so admin clients send CreateTopics
        here); once a controller has sent UpdateMetadata its brokers and controller id are kept."""
        with self._write_lock:
            old = self._snapshot
            parts: dict[str, dict[int, CachedPartition]] = {t: dict(p) for t, p in old.partitions.items()}
            ids = dict(old.topic_ids)
            for topic in removed_topics:
                parts.pop(topic, None)
                ids.pop(topic, None)
            for p in partitions:
                parts.setdefault(p.topic, {})[p.partition] = p
            ids.update(topic_ids or {})
            controller, alive = old.controller_id, old.alive_brokers
            if controller is None and self_broker is not None:
                controller, alive = self_broker.id, {self_broker.id: self_broker}
                self.local_authority = True
            self._snapshot = MetadataSnapshot(parts, ids, controller, alive)

    def update_metadata(self, correlation_id: int, request: UpdateMetadataRequestModel) -> list[TopicPartition]:
        """Apply an UpdateMetadata request; returns the partitions it deleted (leader == -2).

        Writes TRACE ``Cached leader info ...`` / ``Deleted partition ...`` per partition and the INFO summary
        ``Add $n partitions and deleted $m partitions from metadata cache ...`` (only when the request carries
        partition states, as Kafka does).
        """
        with self._write_lock:
            self.local_authority = False
            old = self._snapshot
            controller_id = request.controller_id if request.controller_id >= 0 else None
            alive = {b.id: b for b in request.live_brokers}
            topic_ids = dict(old.topic_ids)
            topic_ids.update({t: i for t, i in request.topic_ids.items() if i and i != _ZERO_UUID})
            deleted: list[TopicPartition] = []
            if not request.partitions:
                self._snapshot = MetadataSnapshot(old.partitions, topic_ids, controller_id, alive)
                return deleted
            partitions: dict[str, dict[int, CachedPartition]] = {t: dict(p) for t, p in old.partitions.items()}
            trace = self._logger.is_trace_enabled()
            cid, cepoch = request.controller_id, request.controller_epoch
            for state in request.partitions:
                tp = state.tp
                if state.leader == LEADER_DURING_DELETE:
                    topic = partitions.get(tp.topic)
                    if topic is not None:
                        topic.pop(tp.partition, None)
                        if not topic:
                            del partitions[tp.topic]
                            topic_ids.pop(tp.topic, None)
                    if trace:
                        self._logger.trace(f"Deleted partition {tp} from metadata cache in response to UpdateMetadata "
                                           f"request sent by controller {cid} epoch {cepoch} with correlation id "
                                           f"{correlation_id}")
                    deleted.append(tp)
                else:
                    partitions.setdefault(tp.topic, {})[tp.partition] = state
                    if trace:
                        self._logger.trace(f"Cached leader info {state.to_kafka_string()} for partition {tp} in "
                                           f"response to UpdateMetadata request sent by controller {cid} epoch "
                                           f"{cepoch} with correlation id {correlation_id}")
            cached = len(request.partitions) - len(deleted)
            self._logger.info(f"Add {cached} partitions and deleted {len(deleted)} partitions from metadata cache in "
                              f"response to UpdateMetadata request sent by controller {cid} epoch {cepoch} with "
                              f"correlation id {correlation_id}")
            self._snapshot = MetadataSnapshot(partitions, topic_ids, controller_id, alive)
            return deleted


_ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
