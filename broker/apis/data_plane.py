"""The data plane of one broker: its logs, the partitions it leads, local topic management, purgatory, metrics.

Theory of operation
-------------------
Leadership comes from two sources:

* a controller (``planewatch cluster``): LeaderAndIsr makes this broker leader or follower of a partition and
  UpdateMetadata fills the metadata cache; Produce and consumer Fetch are served only where
  ``BrokerState.partition(tp)`` says this broker is the leader (else NOT_LEADER_OR_FOLLOWER), so a LeaderAndIsr
  that makes it a follower is honoured by the very next request;
* itself, while no controller has spoken (a standalone ``planewatch broker``, the way a KRaft combined node is its
  own controller): CreateTopics, auto topic creation and the topics found in ``log.dirs`` at start-up are led by
  this broker at leader epoch 0 (or the log's latest epoch), and the metadata cache names it as controller so admin
  clients send CreateTopics here. Once another controller is known, CreateTopics answers NOT_CONTROLLER and topics
  are no longer auto-created locally.

High watermark: with ISR = {this broker} it moves to the log end offset right after each append (acks=all appends
are fsynced first, see ``broker.log``); with other replicas in the ISR it is the minimum of their fetch offsets
(follower Fetch requests report them), as Kafka's ``Partition.maybeIncrementLeaderHW``.

Settings: :class:`broker.settings.DataPlaneSettings` (``auto.create.topics.enable``, ``num.partitions``,
``default.replication.factor``: only 1 can be placed here, ``num.io.threads``), declared in the broker's table.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from broker.apis.convert import uuid_to_kafka_string
from broker.apis.producers import ProducerStates
from broker.log import Log, LogError, LogManager, validate_topic_name
from broker.log4j import Log4j
from broker.metrics.registry import Meter, MetricName, MetricsRegistry
from broker.protocol.error_codes import ErrorCode
from broker.purgatory import Purgatory
from broker.settings import DataPlaneSettings
from broker.state import BrokerState, LiveBroker, TopicPartition
from broker.state.model import CachedPartition, PartitionState, Role

__all__ = ["DataPlane", "LeaderLookup", "TopicConfigAuthority"]

TOPIC_CONFIGS_FILE = "topic-configs.json"
# Partitions one CreateTopics may ask for: a typo like 100000 must not create 100k directories on a laptop.
MAX_PARTITIONS_PER_TOPIC = 10_000
# A stable namespace for topic ids derived from names (a standalone broker has no ZooKeeper to store them in).
_TOPIC_ID_NAMESPACE = uuid.UUID("6c0f2a52-93f7-4d0e-9d3e-8f7b1c2a5e10")


@dataclass(frozen=True, slots=True)
class LeaderLookup:
    """The outcome of looking up a partition for a leader-only request: the log and state, or an error code."""

    error: int
    log: Log | None = None
    state: PartitionState | None = None


class TopicConfigAuthority(Protocol):
    """Where topic config overrides are decided when this broker is not their keeper: the reference cluster's
    controller (Kafka: ZooKeeper's ``/config/topics/<topic>``). None on a standalone broker, which keeps its own."""

    def refresh(self) -> None:
        """Bring this broker's overrides up to date with the authority's (best effort: an unreachable authority is
        logged, the local overrides stay)."""

    def store(self, topic: str, overrides: Mapping[str, str]) -> None:
        """Have the authority store ``topic``'s new overrides (the whole set), then apply them here.

        Raises:
            broker.apis.topic_configs.AlterError: the authority refused them or could not be reached.
        """


class TopicMeters:
    """BrokerTopicMetrics: MessagesInPerSec, BytesInPerSec, BytesOutPerSec, broker-wide and per topic."""

    NAMES = ("MessagesInPerSec", "BytesInPerSec", "BytesOutPerSec")

    def __init__(self, registry: MetricsRegistry | None) -> None:
        self._registry = registry
        self._lock = threading.Lock()
        self._meters: dict[tuple[str, str | None], Meter] = {}

    def _meter(self, name: str, topic: str | None) -> Meter | None:
        if self._registry is None:
            return None
        key = (name, topic)
        meter = self._meters.get(key)
        if meter is None:
            with self._lock:
                meter = self._meters.get(key)
                if meter is None:
                    tags = {"topic": topic} if topic is not None else {}
                    meter = self._registry.meter(MetricName.of("kafka.server", "BrokerTopicMetrics", name, **tags))
                    self._meters[key] = meter
        return meter

    def mark(self, name: str, topic: str, n: int) -> None:
        """Mark ``n`` on the broker-wide meter and the topic's."""
        if n <= 0:
            return
        for t in (None, topic):
            m = self._meter(name, t)
            if m is not None:
                m.mark(n)


class DataPlane:
    """Logs, leadership checks, local topic management and delayed operations of one broker.

    Args:
        state: the broker's replica state (leadership) and metadata cache.
        logs: the log manager (not yet started: :meth:`startup` does it).
        self_broker: this broker as Metadata describes it.
        config: the data-plane settings (the broker table's view).
        log4j: the logging hierarchy (server.log's ``kafka.server.KafkaApis`` lines for topic creation).
        registry: where BrokerTopicMetrics go (None: not recorded).
    """

    def __init__(self, state: BrokerState, logs: LogManager, self_broker: LiveBroker, config: DataPlaneSettings,
                 log4j: Log4j, registry: MetricsRegistry | None = None) -> None:
        self.state = state
        self.logs = logs
        self.self_broker = self_broker
        self.config = config
        # Long polls may park at most half the handler threads (see broker.purgatory).
        self.purgatory = Purgatory(max_waiting=max(1, config.num_io_threads // 2))
        self.producers = ProducerStates()
        self.meters = TopicMeters(registry)
        self._log = log4j.get_logger("kafka.zk.AdminZkClient")
        self._topics_lock = threading.Lock()
        self._topic_configs_path = logs.log_dirs[0] / TOPIC_CONFIGS_FILE
        # Set by a cluster member: topic config alters go there (None: this broker keeps its topics' configs).
        self.topic_config_authority: TopicConfigAuthority | None = None
        # Fetch offsets of the other ISR members, per partition (for the high watermark of acks=all).
        self._replica_offsets: dict[TopicPartition, dict[int, int]] = {}

    # -------------------------------------------------------------------------------------------- lifecycle
    def startup(self) -> None:
        """Load the logs (recovering after a crash), re-apply the topic configs, start retention, and lead the
        topics found on disk."""
        self.logs.startup()
        for topic, overrides in self._load_topic_configs().items():
            try:
                self.logs.set_topic_config(topic, overrides)
            except ValueError as exc:
                self._log.error(f"Ignoring stored configs of topic {topic}: {exc}")
        self.logs.start()
        by_topic: dict[str, list[Log]] = {}
        for ltp, log in self.logs.all_logs().items():
            by_topic.setdefault(ltp.topic, []).append(log)
        states: list[PartitionState] = []
        for logs in by_topic.values():
            for log in logs:
                tp = log.topic_partition
                log.update_high_watermark(log.log_end_offset)  # ISR = {self}: everything on disk is committed
                states.append(self._local_state(tp, max(log.epoch_cache.latest_epoch, 0)))
        self._publish(states, [])

    def _load_topic_configs(self) -> dict[str, dict[str, str]]:
        path = self._topic_configs_path
        if not path.exists():
            return {}
        try:
            raw = json.loads(path.read_text())
            return {str(t): {str(k): str(v) for k, v in c.items()} for t, c in raw.items()}
        except (ValueError, AttributeError) as exc:
            self._log.error(f"Ignoring damaged topic configs file {path}: {exc}")
            return {}

    def topic_overrides(self, topic: str) -> dict[str, str]:
        """A topic's config overrides, as created or last altered (DescribeConfigs' TOPIC_CONFIG entries)."""
        return self._load_topic_configs().get(topic, {})

    def set_topic_overrides(self, topic: str, overrides: Mapping[str, str]) -> None:
        """Replace a topic's config overrides: applied to its running logs at once, then persisted.

        Raises:
            ValueError: an unknown name or a bad value (nothing changed).
            OSError: the overrides could not be persisted (the logs already run with them).
        """
        with self._topics_lock:
            self.logs.set_topic_config(topic, dict(overrides))
            self._store_topic_config(topic, overrides)

    def _store_topic_config(self, topic: str, overrides: Mapping[str, str] | None) -> None:
        """Persist (or with None forget) a topic's config overrides: temp file, fsync, rename."""
        configs = self._load_topic_configs()
        if overrides:
            configs[topic] = dict(overrides)
        elif configs.pop(topic, None) is None:
            return
        tmp = self._topic_configs_path.with_suffix(".tmp")
        with open(tmp, "w") as fh:
            json.dump(configs, fh, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self._topic_configs_path)

    def close(self) -> None:
        """Wake parked operations, then flush and close the logs (clean shutdown marker)."""
        self.purgatory.close()
        self.logs.shutdown()

    # -------------------------------------------------------------------------------------------- leadership
    def is_own_controller(self) -> bool:
        """True while this broker manages its topics itself (no other controller has sent metadata)."""
        cache = self.state.metadata_cache
        return cache.local_authority or cache.snapshot.controller_id is None

    def leader_log(self, tp: TopicPartition, current_leader_epoch: int = -1) -> LeaderLookup:
        """The log of a partition this broker leads: UNKNOWN_TOPIC_OR_PARTITION when nobody hosts it here or in
        the metadata, NOT_LEADER_OR_FOLLOWER when it exists but this broker is not its leader. A request's
        `current_leader_epoch` (KIP-320; -1: not given) older than this leadership's answers FENCED_LEADER_EPOCH, a
        newer one UNKNOWN_LEADER_EPOCH."""
        ps = self.state.partition(tp)
        if ps is None:
            known = self.state.metadata_cache.snapshot.partition(tp) is not None
            return LeaderLookup(ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if ps.role is not Role.LEADER or ps.leader != self.state.broker_id:
            return LeaderLookup(ErrorCode.NOT_LEADER_OR_FOLLOWER, state=ps)
        if current_leader_epoch != -1 and current_leader_epoch != ps.leader_epoch:
            fenced = current_leader_epoch < ps.leader_epoch
            return LeaderLookup(ErrorCode.FENCED_LEADER_EPOCH if fenced else ErrorCode.UNKNOWN_LEADER_EPOCH, state=ps)
        log = self.logs.get_log(tp)
        if log is None:
            log = self.logs.get_or_create_log(tp)
        return LeaderLookup(ErrorCode.NONE, log, ps)

    def still_leader(self, tp: TopicPartition, state: PartitionState) -> bool:
        """True while ``state`` (looked up before an append) is still this broker's leadership of ``tp``."""
        now = self.state.partition(tp)
        return now is state or (now is not None and now.role is Role.LEADER and now.leader == self.state.broker_id
                                and now.leader_epoch == state.leader_epoch)

    def hosted_log(self, tp: TopicPartition) -> Log | None:
        """The local log of a partition this broker hosts in any role (follower fetches, ListOffsets by replicas)."""
        if self.state.partition(tp) is None:
            return None
        return self.logs.get_log(tp)

    def after_leader_append(self, tp: TopicPartition, log: Log, state: PartitionState) -> None:
        """Move the high watermark after an append as far as the ISR allows, then wake waiting operations."""
        self._maybe_increment_hw(tp, log, state)
        self.purgatory.signal()

    def record_follower_offset(self, tp: TopicPartition, replica_id: int, fetch_offset: int) -> None:
        """A follower fetched from ``fetch_offset``: it holds everything below; the high watermark may move."""
        ps = self.state.partition(tp)
        log = self.logs.get_log(tp)
        if ps is None or log is None or ps.role is not Role.LEADER:
            return
        self._replica_offsets.setdefault(tp, {})[replica_id] = fetch_offset
        if self._maybe_increment_hw(tp, log, ps):
            self.purgatory.signal()

    def _maybe_increment_hw(self, tp: TopicPartition, log: Log, state: PartitionState) -> bool:
        leo = log.log_end_offset
        others = [r for r in state.isr if r != self.state.broker_id]
        offsets = self._replica_offsets.get(tp, {})
        new_hw = min([leo, *(offsets.get(r, 0) for r in others)])
        if new_hw > log.high_watermark:
            log.update_high_watermark(new_hw)
            return True
        return False

    # -------------------------------------------------------------------------------------------- topics
    @staticmethod
    def topic_id(topic: str) -> str:
        """The topic id of a locally created topic (stable across restarts: derived from the name)."""
        return uuid_to_kafka_string(uuid.uuid5(_TOPIC_ID_NAMESPACE, topic))

    def _local_state(self, tp: TopicPartition, epoch: int) -> PartitionState:
        me = self.state.broker_id
        return PartitionState(tp=tp, role=Role.LEADER, leader=me, leader_epoch=epoch, isr=(me,), replicas=(me,),
                              partition_epoch=0, controller_epoch=self.state.controller_epoch,
                              topic_id=self.topic_id(tp.topic))

    def _publish(self, states: Iterable[PartitionState], removed: list[TopicPartition]) -> None:
        states = list(states)
        self.state.host_local_partitions(states, removed)
        cached = [CachedPartition(s.tp.topic, s.tp.partition, s.controller_epoch, s.leader, s.leader_epoch, s.isr,
                                  s.partition_epoch, s.replicas) for s in states]
        removed_topics = sorted({tp.topic for tp in removed})
        ids = {s.tp.topic: self.topic_id(s.tp.topic) for s in states}
        self.state.metadata_cache.apply_local(cached, removed_topics, topic_ids=ids, self_broker=self.self_broker)

    def topic_exists(self, topic: str) -> bool:
        """True when the metadata cache knows ``topic``."""
        return bool(self.state.metadata_cache.snapshot.partitions.get(topic))

    def create_topic(self, topic: str, num_partitions: int, replication_factor: int,
                     configs: Mapping[str, str] | None = None, *,
                     validate_only: bool = False) -> tuple[int, str | None]:
        """Create a topic led by this broker; ``(error code, message)`` as CreateTopics answers.

        -1 for ``num_partitions``/``replication_factor`` means the broker defaults (KIP-464).
        """
        if not self.is_own_controller():
            return ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this cluster."
        try:
            validate_topic_name(topic)
        except ValueError as exc:
            return ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)
        n = self.config.num_partitions if num_partitions == -1 else num_partitions
        rf = self.config.default_replication_factor if replication_factor == -1 else replication_factor
        if n < 1 or n > MAX_PARTITIONS_PER_TOPIC:
            return (ErrorCode.INVALID_PARTITIONS,
                    f"Number of partitions must be between 1 and {MAX_PARTITIONS_PER_TOPIC}.")
        if rf < 1:
            return ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
        if rf > 1:
            return ErrorCode.INVALID_REPLICATION_FACTOR, (f"Replication factor: {rf} larger than available brokers: 1.")
        with self._topics_lock:
            if self.topic_exists(topic):
                return ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic}' already exists."
            if validate_only:
                return ErrorCode.NONE, None
            try:
                if configs:
                    self.logs.set_topic_config(topic, dict(configs))
            except ValueError as exc:
                return ErrorCode.INVALID_CONFIG, str(exc)
            tps = [TopicPartition(topic, p) for p in range(n)]
            failed = self._create_logs(tps)
            if failed is None and configs:
                try:
                    self._store_topic_config(topic, configs)
                except OSError as exc:
                    self._drop_logs(tps)
                    failed = ErrorCode.KAFKA_STORAGE_ERROR, f"Could not store the configs of topic {topic}: {exc}"
            if failed is not None:
                if configs:
                    self.logs.set_topic_config(topic, {})  # a later topic of this name starts from the defaults
                return failed
            self._publish([self._local_state(tp, 0) for tp in tps], [])
        assignment = ", ".join(f"{p} -> ArrayBuffer({self.state.broker_id})" for p in range(n))
        self._log.info(f"Creating topic {topic} with configuration {dict(configs or {})} and initial partition "
                       f"assignment HashMap({assignment})")
        return ErrorCode.NONE, None

    def add_partitions(self, topic: str, count: int, *, validate_only: bool = False) -> tuple[int, str | None]:
        """Grow a locally managed topic to ``count`` partitions, led by this broker; ``(error code, message)`` as
        CreatePartitions answers."""
        if not self.is_own_controller():
            return ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this cluster."
        with self._topics_lock:
            old = len(self.state.metadata_cache.snapshot.partitions.get(topic) or {})
            if not old:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist."
            if count <= old:
                return ErrorCode.INVALID_PARTITIONS, (
                    f"Topic currently has {old} partitions, which is higher than the requested {count}."
                    if count < old else f"Topic already has {old} partitions.")
            if count > MAX_PARTITIONS_PER_TOPIC:
                return (ErrorCode.INVALID_PARTITIONS,
                        f"Number of partitions must be between 1 and {MAX_PARTITIONS_PER_TOPIC}.")
            if validate_only:
                return ErrorCode.NONE, None
            added = [TopicPartition(topic, p) for p in range(old, count)]
            failed = self._create_logs(added)
            if failed is not None:
                return failed
            self._publish([self._local_state(tp, 0) for tp in added], [])
        self._log.info(f"Creating {count - old} partitions for '{topic}' with the following replica assignment: "
                       + ", ".join(f"{tp.partition} -> ReplicaAssignment(replicas={self.state.broker_id})"
                                   for tp in added))
        return ErrorCode.NONE, None

    def _create_logs(self, tps: list[TopicPartition]) -> tuple[int, str] | None:
        """Create the logs of new partitions, all or none: when one cannot be created, the ones created before it
        are deleted again and the answer is KAFKA_STORAGE_ERROR with the reason (None when all were created)."""
        created: list[TopicPartition] = []
        for tp in tps:
            try:
                self.logs.get_or_create_log(tp)
            except LogError as exc:
                self._drop_logs(created)
                self._log.error(f"Creating {len(tps)} partitions of {tp.topic} failed at partition {tp.partition}, "
                                f"rolled back: {exc}")
                return ErrorCode.KAFKA_STORAGE_ERROR, f"Could not create partition {tp}: {exc}"
            created.append(tp)
        return None

    def _drop_logs(self, tps: list[TopicPartition]) -> None:
        for tp in reversed(tps):
            try:
                self.logs.delete_log(tp)
            except OSError as exc:  # logged and left: the next start loads it, and DeleteTopics can remove it
                self._log.error(f"Could not remove the log of {tp} while rolling back: {exc}")

    def delete_topic(self, topic: str) -> int:
        """Delete a locally managed topic and its logs; the error code DeleteTopics answers."""
        if not self.is_own_controller():
            return ErrorCode.NOT_CONTROLLER
        with self._topics_lock:
            parts = self.state.metadata_cache.snapshot.partitions.get(topic)
            if not parts:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            removed = [TopicPartition(topic, p) for p in parts]
            self._publish([], removed)
            self._store_topic_config(topic, None)
            self.logs.set_topic_config(topic, {})  # a later topic of this name starts from the defaults
            for tp in removed:
                self.logs.delete_log(tp)
                self._replica_offsets.pop(tp, None)
                self.producers.forget_partition(tp)
        self._log.info(f"Topic deletion callback for {topic}")
        return ErrorCode.NONE

    def maybe_auto_create(self, topics: Iterable[str]) -> None:
        """Metadata's auto topic creation: create the unknown ones (when enabled and this broker is the controller)."""
        if not self.config.auto_create_topics or not self.is_own_controller():
            return
        for topic in topics:
            if not self.topic_exists(topic):
                self.create_topic(topic, -1, -1)

    def describe(self) -> dict[str, Any]:
        """A small summary for logs and tests."""
        snap = self.state.metadata_cache.snapshot
        return {"topics": {t: len(p) for t, p in snap.partitions.items()}, "controller": snap.controller_id}
