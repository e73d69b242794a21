"""The reference cluster's controller: registration, broker epochs, elections, topics, ISR (Kafka 2.x ZK controller).

Theory of operation
-------------------
The controller runs in its own process (``python -m broker.cluster.controller_main``) and plays ZooKeeper and the
Kafka controller at once. Brokers talk to it over a small planewatch registration channel (HTTP/JSON on 127.0.0.1,
see :mod:`broker.cluster.http`): ``register`` (the ``/brokers/ids/N`` ephemeral node: the answer is the broker epoch,
a monotonic counter like the czxid, persisted so a restarted controller never reuses one), ``heartbeat`` (the ZK
session: a broker not heard from for ``session_timeout_ms`` is dead; the answer carries the topic configs' version),
``create_topics`` (the broker forwards CreateTopics with its configs), ``alter_topic_configs`` / ``topic_configs``
(``/config/topics/<topic>`` and its change notifications: :mod:`broker.cluster.topic_config_store`), ``alter_isr``
(the leader's ISR shrink/expand, Kafka 2.x's ZK write) and ``status``.

Every change is an event on one queue processed by one thread (``ControllerEventManager``: metrics
``EventQueueSize`` and ``EventQueueTimeMs``), which updates the partition states (pure decisions in
:mod:`broker.cluster.model`), persists them, and sends LeaderAndIsr / UpdateMetadata / StopReplica with the
:class:`~broker.controller.ControllerChannelManager` (one request in flight per broker, KIP-291 routing: the broker's
control-plane listener when the controller is configured with one and the broker advertises it, else the
inter-broker listener).

Cacheable UpdateMetadata (``controller.update.metadata.cached``, default true): control requests carry broker epoch
-1 and ``max_broker_epoch`` = the maximum epoch of the live brokers (tagged field 100 of the flexible versions,
LeaderAndIsr v5, UpdateMetadata v7, StopReplica v3: no collision with Apache's version numbers), so one
UpdateMetadata is serialized per metadata change and the same bytes go to every broker. ``false`` sends per-broker
bodies with each broker's own epoch. The controller still keeps every broker's epoch: a registration with a live
broker id is a bounced broker (failure then start-up), and a heartbeat or ISR change with an old epoch is fenced.

Which broker "is" the controller: clients send CreateTopics to the controller id of Metadata, so the controller takes
the id of a live broker (the lowest) and forwards nothing itself: that broker forwards CreateTopics here. When that
broker dies, the controller fails over: the epoch moves and a new id is taken (``controller-failover``).
"""

from __future__ import annotations

import functools
import json
import os
import queue
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from broker.apis.convert import uuid_to_kafka_string
from broker.cluster.controller_admin import AdminEvents
from broker.cluster.model import (
    MAX_PARTITIONS_PER_TOPIC,
    NO_LEADER,
    PartitionInfo,
    Reassignment,
    assign_replicas,
    elect_leader,
    leader_and_isr_text,
    remove_from_isr,
)
from broker.cluster.topic_config_store import TopicConfigStore, check_overrides
from broker.controller import BrokerNode, ControllerChannelManager, ControlRequestSender, select_control_endpoint
from broker.controller.requests import endpoints_of
from broker.log import validate_topic_name
from broker.log4j import Log4j
from broker.metrics.registry import MetricName, MetricsRegistry
from broker.protocol.error_codes import ErrorCode
from broker.state.model import CachedPartition, LeaderAndIsrPartition, LiveBroker, StopReplicaPartition

__all__ = ["BrokerRegistration", "Controller", "ControllerSettings"]

T = TypeVar("T")
# first flexible-enough versions carrying max_broker_epoch
LEADER_AND_ISR_VERSION, UPDATE_METADATA_VERSION, STOP_REPLICA_VERSION = 5, 7, 3
# How long an HTTP caller waits for its event to be processed before answering an error.
EVENT_TIMEOUT_S = 30.0
# How often the session checker looks for brokers whose heartbeats stopped.
SESSION_CHECK_INTERVAL_S = 0.2
# Kafka 2.8's ControllerState: (name, the ControllerState gauge's value, the ControllerStats timer or None). Each
# event is processed in a state and timed by its timer; BrokerChange keeps its pre-ControllerState metric name.
CONTROLLER_STATES: tuple[tuple[str, int, str | None], ...] = (
    ("Idle", 0, None),
    ("ControllerChange", 1, "ControllerChangeRateAndTimeMs"),
    ("BrokerChange", 2, "LeaderElectionRateAndTimeMs"),
    ("TopicChange", 3, "TopicChangeRateAndTimeMs"),
    ("TopicDeletion", 4, "TopicDeletionRateAndTimeMs"),
    ("AlterPartitionReassignment", 5, "PartitionReassignmentRateAndTimeMs"),
    ("AutoLeaderBalance", 6, "AutoLeaderBalanceRateAndTimeMs"),
    ("ManualLeaderBalance", 7, "ManualLeaderBalanceRateAndTimeMs"),
    ("ControlledShutdown", 8, "ControlledShutdownRateAndTimeMs"),
    ("IsrChange", 9, "IsrChangeRateAndTimeMs"),
    ("LeaderAndIsrResponseReceived", 10, "LeaderAndIsrResponseReceivedRateAndTimeMs"),
    ("LogDirChange", 11, "LogDirChangeRateAndTimeMs"),
    ("ControllerShutdown", 12, "ControllerShutdownRateAndTimeMs"),
    ("UncleanLeaderElectionEnable", 13, "UncleanLeaderElectionEnableRateAndTimeMs"),
    ("TopicUncleanLeaderElectionEnable", 14, "TopicUncleanLeaderElectionEnableRateAndTimeMs"),
    ("ListPartitionReassignment", 15, "ListPartitionReassignmentRateAndTimeMs"),
    ("UpdateMetadataResponseReceived", 16, None),
    ("UpdateFeatures", 17, "UpdateFeaturesRateAndTimeMs"),
)
# Scala 2.13's immutable Map1..Map4 print "Map(...)"; a larger map is a HashMap (Kafka's controller.log texts).
SCALA_SMALL_MAP_MAX = 4


class StateChangeFailedException(Exception):
    """Kafka's ``kafka.common.StateChangeFailedException``: a partition state change the controller could not make
    (logged with the ERROR line of ``logFailedStateChange``)."""


def _leader_isr_and_controller_epoch(p: PartitionInfo) -> str:
    """Kafka 2.8's ``LeaderIsrAndControllerEpoch.toString`` (the replica state machine's ISR-removal line)."""
    return (f"(Leader:{p.leader},ISR:{','.join(map(str, p.isr))},LeaderEpoch:{p.leader_epoch},"
            f"ZkVersion:{p.partition_epoch},ControllerEpoch:{p.controller_epoch})")


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """Controller-side configuration."""

    session_timeout_ms: int = 3000  # zookeeper.session.timeout.ms, short for a laptop cluster
    cached_update_metadata: bool = True  # controller.update.metadata.cached
    control_plane_listener: str | None = "CONTROLLER"  # control.plane.listener.name on the controller side
    inter_broker_listener: str = "PLAINTEXT"


@dataclass(slots=True)
class BrokerRegistration:
    """A live broker as registered (``/brokers/ids/N``)."""

    id: int
    epoch: int
    listeners: dict[str, tuple[str, int]]
    protocols: dict[str, str]
    rack: str | None
    last_seen_ns: int

    def node(self, settings: ControllerSettings) -> BrokerNode:
        """Where control requests go (KIP-291)."""
        return select_control_endpoint(self.id, self.listeners, settings.control_plane_listener,
                                       settings.inter_broker_listener)

    def live_broker(self) -> LiveBroker:
        """UpdateMetadata's live-broker entry."""
        return endpoints_of(self.id, self.listeners, self.protocols, self.rack)


class Controller(AdminEvents):
    """Cluster controller (see the module docstring). Thread-safe: public methods go through the event queue."""

    def __init__(self, state_dir: Path, log4j: Log4j, registry: MetricsRegistry, settings: ControllerSettings,
                 clock_ns: Callable[[], int] = time.monotonic_ns) -> None:
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.log4j = log4j
        self.registry = registry
        self.settings = settings
        self._clock = clock_ns
        self._events: queue.Queue[tuple[int, Callable[[], Any], Future[Any], str | None] | None] = queue.Queue()
        self._queue_time = registry.histogram(MetricName.of("kafka.controller", "ControllerEventManager",
                                                            "EventQueueTimeMs"))
        registry.gauge(MetricName.of("kafka.controller", "ControllerEventManager", "EventQueueSize"),
                       lambda: float(self._events.qsize()))
        # ControllerStats: a timer per state (events of states this controller never enters stay at zero, as in a
        # Kafka controller that never reassigns), unclean elections (never: clean election only)
        self._state = "Idle"
        self._state_values = {name: value for name, value, _ in CONTROLLER_STATES}
        self._state_timers = {name: registry.histogram(MetricName.of("kafka.controller", "ControllerStats", metric))
                              for name, _, metric in CONTROLLER_STATES if metric is not None}
        self._unclean = registry.meter(MetricName.of("kafka.controller", "ControllerStats",
                                                     "UncleanLeaderElectionsPerSec"))
        registry.gauge(MetricName.of("kafka.controller", "KafkaController", "ControllerState"),
                       lambda: float(self._state_values[self._state]))
        registry.gauge(MetricName.of("kafka.controller", "KafkaController", "ActiveControllerCount"),
                       lambda: 1.0 if self.controller_id >= 0 else 0.0)
        registry.gauge(MetricName.of("kafka.controller", "KafkaController", "OfflinePartitionsCount"),
                       lambda: float(sum(1 for p in self.partitions.values() if p.leader == NO_LEADER)))
        registry.gauge(MetricName.of("kafka.controller", "KafkaController", "GlobalTopicCount"),
                       lambda: float(len({t for t, _ in self.partitions})))
        registry.gauge(MetricName.of("kafka.controller", "KafkaController", "GlobalPartitionCount"),
                       lambda: float(len(self.partitions)))
        registry.gauge(MetricName.of("kafka.controller", "KafkaController", "PreferredReplicaImbalanceCount"),
                       lambda: float(sum(1 for p in self.partitions.values() if p.leader != p.replicas[0])))
        for deletion in ("TopicsToDeleteCount", "ReplicasToDeleteCount", "TopicsIneligibleToDeleteCount",
                         "ReplicasIneligibleToDeleteCount"):  # this controller deletes no topics: none queued
            registry.gauge(MetricName.of("kafka.controller", "KafkaController", deletion), lambda: 0.0)
        self.brokers: dict[int, BrokerRegistration] = {}
        self.partitions: dict[tuple[str, int], PartitionInfo] = {}
        self.topic_ids: dict[str, str] = {}
        self.reassignments: dict[tuple[str, int], Reassignment] = {}  # in progress (/admin/reassign_partitions)
        self.topic_configs = TopicConfigStore()  # /config/topics/<topic>
        self.controller_epoch = 0
        self.controller_id = -1
        self._next_broker_epoch = 1
        self._expected: set[int] = set()
        self._load()
        # After a restart, wait up to one session timeout for the brokers that were live to register again before
        # electing leaders (Kafka's new controller reads the live brokers from ZooKeeper at once).
        self._grace_until_ns = clock_ns() + settings.session_timeout_ms * 1_000_000 if self._expected else 0
        self.channel: ControllerChannelManager | None = None
        self._log = log4j.get_logger("kafka.controller.KafkaController", "[Controller id=-1] ")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="controller-event-thread", daemon=True)
        self._checker = threading.Thread(target=self._check_sessions, name="controller-session-checker",
                                         daemon=True)

    # ------------------------------------------------------------------------------------------------ persistence
    def _state_file(self) -> Path:
        return self.state_dir / "controller-state.json"

    def _load(self) -> None:
        path = self._state_file()
        if not path.exists():
            return
        data = json.loads(path.read_text())
        self.controller_epoch = int(data.get("controller_epoch", 0))
        self._next_broker_epoch = int(data.get("next_broker_epoch", 1))
        self._expected = {int(b) for b in data.get("brokers", {})}  # live before a controller restart
        self.topic_ids = {str(k): str(v) for k, v in data.get("topic_ids", {}).items()}
        for d in data.get("partitions", []):
            info = PartitionInfo.from_json(d)
            self.partitions[(info.topic, info.partition)] = info
        for d in data.get("reassignments", []):
            self.reassignments[(str(d["topic"]), int(d["partition"]))] = Reassignment.from_json(d)
        self.topic_configs = TopicConfigStore.from_json(data.get("topic_configs") or {})

    def _save(self) -> None:
        data = {"controller_epoch": self.controller_epoch, "next_broker_epoch": self._next_broker_epoch,
                "controller_id": self.controller_id, "topic_ids": self.topic_ids,
                "brokers": {str(b.id): b.epoch for b in self.brokers.values()},
                "partitions": [p.to_json() for p in sorted(self.partitions.values(),
                                                           key=lambda p: (p.topic, p.partition))],
                "reassignments": [{"topic": t, "partition": p, **m.to_json()}
                                  for (t, p), m in sorted(self.reassignments.items())],
                "topic_configs": self.topic_configs.to_json()}
        tmp = self._state_file().with_suffix(".tmp")
        with open(tmp, "w") as fh:
            json.dump(data, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self._state_file())

    # ------------------------------------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start the event thread and the session checker."""
        self._thread.start()
        self._checker.start()

    def shutdown(self) -> None:
        """Stop the threads and the channel."""
        self._stop.set()
        self._events.put(None)
        self._thread.join(5)
        self._checker.join(5)
        if self.channel is not None:
            self.channel.shutdown(2)

    def submit(self, fn: Callable[[], T], state: str | None = None) -> Future[T]:
        """Queue an event; its Future completes with ``fn()`` run on the event thread, in ``state`` (a
        :data:`CONTROLLER_STATES` name: its ControllerStats timer measures the processing; None: a read, untimed)."""
        fut: Future[T] = Future()
        self._events.put((self._clock(), fn, fut, state))
        return fut

    def call(self, fn: Callable[[], T], state: str | None = None) -> T:
        """Run ``fn`` on the event thread and wait for it (TimeoutError after :data:`EVENT_TIMEOUT_S`)."""
        return self.submit(fn, state).result(EVENT_TIMEOUT_S)

    def _run(self) -> None:
        while True:
            item = self._events.get()
            if item is None:
                return
            enqueued, fn, fut, state = item
            started = self._clock()
            self._queue_time.update((started - enqueued) / 1e6)
            self._state = state or "Idle"
            try:
                fut.set_result(fn())
            except Exception as exc:  # a bad event must not kill the controller
                self._log.error(f"Error processing event: {exc}", exc_info=True)
                fut.set_exception(exc)
            finally:
                timer = self._state_timers.get(self._state)
                if timer is not None:
                    timer.update((self._clock() - started) / 1e6)
                self._state = "Idle"

    def _check_sessions(self) -> None:
        timeout_ns = self.settings.session_timeout_ms * 1_000_000
        while not self._stop.wait(SESSION_CHECK_INTERVAL_S):
            now = self._clock()
            expired = [(b.id, b.epoch) for b in list(self.brokers.values()) if now - b.last_seen_ns > timeout_ns]
            for bid, epoch in expired:
                self.submit(functools.partial(self._on_session_expired, bid, epoch), "BrokerChange")

    # ------------------------------------------------------------------------------------------------ public API
    def register(self, broker_id: int, listeners: dict[str, tuple[str, int]], protocols: dict[str, str],
                 rack: str | None) -> int:
        """A broker (re)starts: its new epoch. A live id with an older epoch is a bounced broker."""
        return self.call(lambda: self._on_register(broker_id, listeners, protocols, rack), "BrokerChange")

    def heartbeat(self, broker_id: int, epoch: int) -> int:
        """Keep a broker's session alive; STALE_BROKER_EPOCH when ``epoch`` is not its current one."""
        reg = self.brokers.get(broker_id)
        if reg is None or reg.epoch != epoch:
            return ErrorCode.STALE_BROKER_EPOCH
        reg.last_seen_ns = self._clock()
        return ErrorCode.NONE

    def unregister(self, broker_id: int, epoch: int) -> int:
        """A broker shuts down cleanly: handled as its session expiring now (STALE_BROKER_EPOCH for an old one)."""
        reg = self.brokers.get(broker_id)
        if reg is None or reg.epoch != epoch:
            return ErrorCode.STALE_BROKER_EPOCH
        self.call(lambda: self._on_session_expired(broker_id, epoch), "BrokerChange")
        return ErrorCode.NONE

    def create_topics(self, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """CreateTopics forwarded by a broker: ``[{name, num_partitions, replication_factor, configs}]`` -> results."""
        return self.call(lambda: [self._create_topic(t) for t in topics], "TopicChange")

    def alter_topic_configs(self, topic: str, overrides: dict[str, str]) -> dict[str, Any]:
        """A broker's validated alter of a topic's overrides (the whole new set): stored, then announced by the next
        heartbeats' config version. ``{error_code, error_message, version}``."""
        def alter() -> dict[str, Any]:
            if not any(t == topic for t, _ in self.partitions):
                return {"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "version": self.topic_configs.version,
                        "error_message": f"The topic '{topic}' does not exist."}
            try:
                check_overrides(overrides)
            except ValueError as exc:
                return {"error_code": ErrorCode.INVALID_CONFIG, "version": self.topic_configs.version,
                        "error_message": f"Invalid config value for resource ConfigResource(type=TOPIC, "
                                         f"name='{topic}'): {exc}"}
            version = self.topic_configs.put(topic, overrides)
            self._save()
            return {"error_code": ErrorCode.NONE, "error_message": None, "version": version}
        return self.call(alter)  # Kafka 2.8 writes configs without its controller: no ControllerState

    def alter_isr(self, broker_id: int, broker_epoch: int, topic: str, partition: int, leader_epoch: int,
                  isr: list[int]) -> dict[str, Any]:
        """The leader's ISR change (Kafka 2.x writes it to ZooKeeper); answers the new partition epoch."""
        return self.call(lambda: self._on_alter_isr(broker_id, broker_epoch, topic, partition, leader_epoch, isr),
                         "IsrChange")

    def status(self) -> dict[str, Any]:
        """Who leads what (for ``planewatch cluster --status``)."""
        return self.call(lambda: {
            "controller_id": self.controller_id, "controller_epoch": self.controller_epoch,
            "cached_update_metadata": self.settings.cached_update_metadata, "topic_ids": dict(self.topic_ids),
            "topic_configs": self.topic_configs.changes_since(0)[1],
            "brokers": {str(b.id): {"epoch": b.epoch, "listeners": {k: list(v) for k, v in b.listeners.items()}}
                        for b in self.brokers.values()},
            "partitions": [p.to_json() for p in sorted(self.partitions.values(),
                                                       key=lambda p: (p.topic, p.partition))]})

    # ------------------------------------------------------------------------------------------------ events
    def _state_change_log(self) -> Any:
        return self.log4j.get_logger("state.change.logger",
                                     f"[Controller id={self.controller_id} epoch={self.controller_epoch}] ")

    def _replica_states(self, sc: Any, partitions: list[PartitionInfo], brokers: set[int] | None, from_state: str,
                        to_state: str) -> None:
        """ReplicaStateMachine's TRACE ``Changed state of replica ...`` for the replicas of ``partitions`` hosted on
        ``brokers`` (None: every replica)."""
        for info in partitions:
            for r in info.replicas:
                if brokers is None or r in brokers:
                    sc.trace(f"Changed state of replica {r} for partition {info.topic}-{info.partition} from "
                             f"{from_state} to {to_state}")

    def _elected(self, sc: Any, old: PartitionInfo, new: PartitionInfo) -> None:
        """PartitionStateMachine after an OfflinePartitionLeaderElection: the INFO line of the new state, or the ERROR
        of ``logFailedStateChange`` when no live in-sync replica could lead."""
        tp = f"{old.topic}-{old.partition}"
        if new.leader != NO_LEADER:
            sc.info(f"Changed partition {tp} from OfflinePartition to OnlinePartition with state "
                    f"{leader_and_isr_text(new)}")
            return
        try:
            raise StateChangeFailedException(f"Failed to elect leader for partition {tp} under strategy "
                                             "OfflinePartitionLeaderElectionStrategy(false)")
        except StateChangeFailedException:
            sc.error(f"Controller {self.controller_id} epoch {self.controller_epoch} failed to change state for "
                     f"partition {tp} from OfflinePartition to OnlinePartition", exc_info=True)

    def _max_broker_epoch(self) -> int:
        return max((b.epoch for b in self.brokers.values()), default=-1)

    def _on_register(self, broker_id: int, listeners: dict[str, tuple[str, int]], protocols: dict[str, str],
                     rack: str | None) -> int:
        epoch = self._next_broker_epoch
        self._next_broker_epoch += 1
        bounced = broker_id in self.brokers
        if bounced:
            self._on_broker_failure([broker_id])
        self.brokers[broker_id] = BrokerRegistration(broker_id, epoch, dict(listeners), dict(protocols), rack,
                                                     self._clock())
        self._save()
        live = ",".join(str(b) for b in sorted(self.brokers))
        if self.controller_id < 0 and self._expected - set(self.brokers) and self._clock() < self._grace_until_ns:
            self._log.info(f"Broker {broker_id} registered; waiting for brokers "
                           f"{','.join(map(str, sorted(self._expected - set(self.brokers))))} before the failover")
            if len(self.brokers) == 1:
                threading.Thread(target=self._failover_after_grace, name="controller-grace", daemon=True).start()
            return epoch
        if self.controller_id < 0 or self.controller_id not in self.brokers or (bounced and
                                                                               broker_id == self.controller_id):
            self._failover()  # the broker hosting the controller bounced: a new controller epoch, as in Kafka
        self._log.info(f"Newly added brokers: {'' if bounced else broker_id}, deleted brokers: , bounced brokers: "
                       f"{broker_id if bounced else ''}, all live brokers: {live}")
        self._on_broker_startup(broker_id)
        return epoch

    def _failover_after_grace(self) -> None:
        self._stop.wait(max(self._grace_until_ns - self._clock(), 0) / 1e9)
        if not self._stop.is_set():
            self.submit(lambda: None if self.controller_id >= 0 else self._failover(), "ControllerChange")

    def _failover(self) -> None:
        """Take the id of the lowest live broker, move the controller epoch, resend all state (onControllerFailover)."""
        if self.channel is not None:
            self.channel.shutdown(2)
            self.channel = None
            # the old channel's gauge would keep reporting the old queues
            self.registry.remove(MetricName.of("kafka.controller", "ControllerChannelManager", "TotalQueueSize"))
        if not self.brokers:
            self.controller_id = -1
            return
        self.controller_id = min(self.brokers)
        self.controller_epoch += 1
        self._save()
        self._log = self.log4j.get_logger("kafka.controller.KafkaController", f"[Controller id={self.controller_id}] ")
        self._log.info(f"{self.controller_id} successfully elected as the controller. Epoch incremented to "
                       f"{self.controller_epoch} and epoch zk version is now {self.controller_epoch}")
        self.channel = ControllerChannelManager(self.controller_id, self.controller_epoch, log4j=self.log4j,
                                                registry=self.registry)
        for reg in self.brokers.values():
            self.channel.add_broker(reg.node(self.settings))
        # onControllerFailover: every live broker first learns the live brokers (UpdateMetadata): a broker told to
        # follow a leader missing from its metadata cache logs "cannot become follower since the new leader ... is
        # unavailable" and starts no fetcher for it. Then the replica state machine starts (live replicas online, the
        # others offline), then the partitions without a live leader are elected.
        self._send_update_metadata(list(self.brokers), list(self.partitions.values()))
        live = set(self.brokers)
        sc = self._state_change_log()
        everything = list(self.partitions.values())
        self._replica_states(sc, everything, live, "OnlineReplica", "OnlineReplica")
        dead = {r for info in everything for r in info.replicas} - live
        self._replica_states(sc, everything, dead, "ReplicaDeletionIneligible", "OfflineReplica")
        for key, info in list(self.partitions.items()):
            if info.leader == NO_LEADER or info.leader not in live:
                self.partitions[key] = elect_leader(info, live, self.controller_epoch)
                self._elected(sc, info, self.partitions[key])
        self._save()
        self._send_leader_and_isr(list(self.partitions.values()))
        self._send_update_metadata(list(self.brokers), list(self.partitions.values()))

    def _on_broker_startup(self, broker_id: int) -> None:
        reg = self.brokers[broker_id]
        assert self.channel is not None
        if broker_id not in self.channel.brokers():
            self.channel.add_broker(reg.node(self.settings))
        live = set(self.brokers)
        sc = self._state_change_log()
        self._replica_states(sc, [p for p in self.partitions.values() if broker_id in p.replicas], {broker_id},
                             "OfflineReplica", "OnlineReplica")
        changed: list[PartitionInfo] = []
        for key, info in list(self.partitions.items()):
            if info.leader == NO_LEADER and broker_id in info.replicas:
                new = elect_leader(info, live, self.controller_epoch)
                if new.leader != NO_LEADER:
                    self.partitions[key] = new
                    changed.append(new)
                    self._elected(sc, info, new)
        self._save()
        # onBrokerStartup: UpdateMetadata to everyone (live brokers changed), then the new broker's replicas.
        self._send_update_metadata(list(self.brokers), list(self.partitions.values()))
        hosted = [p for p in self.partitions.values() if broker_id in p.replicas and p not in changed]
        self._send_leader_and_isr(changed)
        if hosted:
            self._send_leader_and_isr(hosted, only={broker_id})

    def _on_session_expired(self, broker_id: int, epoch: int) -> None:
        reg = self.brokers.get(broker_id)
        if reg is None or reg.epoch != epoch:
            return  # already handled, or re-registered meanwhile
        self._log.info(f"Newly added brokers: , deleted brokers: {broker_id}, bounced brokers: , all live brokers: "
                       + ",".join(str(b) for b in sorted(self.brokers) if b != broker_id))
        self._on_broker_failure([broker_id])
        self._save()
        if self.controller_id == broker_id or self.controller_id not in self.brokers:
            self._failover()
        else:
            self._send_update_metadata(list(self.brokers), list(self.partitions.values()))

    def _on_broker_failure(self, dead: list[int]) -> None:
        """onBrokerFailure: remove from the channel, elect new leaders for the partitions they led, shrink ISRs."""
        self._log.info(f"Broker failure callback for {', '.join(map(str, dead))}")
        for bid in dead:
            self.brokers.pop(bid, None)
            if self.channel is not None:  # synchronous: a bounced broker's new send thread must not race it
                self.channel.remove_broker(bid, timeout_s=2.0)
        live = set(self.brokers)
        sc = self._state_change_log()
        # onReplicasBecomeOffline: the partitions they led go offline, are elected again, then the replicas go
        # offline (leaving the ISRs they were in).
        hosted = [p for p in self.partitions.values() if set(p.replicas) & set(dead)]
        for info in hosted:
            if info.leader in dead:
                sc.trace(f"Changed partition {info.topic}-{info.partition} state from OnlinePartition to "
                         "OfflinePartition")
        changed: list[PartitionInfo] = []
        for key, info in list(self.partitions.items()):
            new = info
            if info.leader in dead:
                new = elect_leader(info, live, self.controller_epoch)
                self._elected(sc, info, new)
                if new.leader == NO_LEADER:  # removeReplicasFromIsr keeps the last ISR member, leader -1
                    sc.info(f"Partition {info.topic}-{info.partition} state changed to "
                            f"{_leader_isr_and_controller_epoch(new)} after removing replica {info.leader} from the "
                            "ISR as part of transition to OfflineReplica")
            else:
                for bid in dead:
                    shrunk = remove_from_isr(new, bid, self.controller_epoch)
                    if shrunk is not new:
                        sc.info(f"Partition {info.topic}-{info.partition} state changed to "
                                f"{_leader_isr_and_controller_epoch(shrunk)} after removing replica {bid} from the "
                                "ISR as part of transition to OfflineReplica")
                    new = shrunk
            if new is not info:
                self.partitions[key] = new
                changed.append(new)
        self._replica_states(sc, hosted, set(dead), "OnlineReplica", "OfflineReplica")
        if changed:
            self._send_leader_and_isr([p for p in changed if p.leader != NO_LEADER])

    def _create_topic(self, spec: dict[str, Any]) -> dict[str, Any]:
        name = str(spec.get("name", ""))
        n, rf = int(spec.get("num_partitions", -1)), int(spec.get("replication_factor", -1))
        n = 1 if n == -1 else n
        rf = min(3, len(self.brokers)) if rf == -1 else rf
        try:
            validate_topic_name(name)
        except ValueError as exc:
            return {"name": name, "error_code": ErrorCode.INVALID_TOPIC_EXCEPTION, "error_message": str(exc)}
        if any(t == name for t, _ in self.partitions):
            return {"name": name, "error_code": ErrorCode.TOPIC_ALREADY_EXISTS,
                    "error_message": f"Topic '{name}' already exists."}
        if n < 1 or n > MAX_PARTITIONS_PER_TOPIC:
            return {"name": name, "error_code": ErrorCode.INVALID_PARTITIONS,
                    "error_message": f"Number of partitions must be between 1 and {MAX_PARTITIONS_PER_TOPIC}."}
        try:
            start = zlib.crc32(name.encode()) % max(len(self.brokers), 1)  # deterministic spread of leaders
            assignment = assign_replicas(list(self.brokers), n, rf, start_index=start)
        except ValueError as exc:
            return {"name": name, "error_code": ErrorCode.INVALID_REPLICATION_FACTOR, "error_message": str(exc)}
        configs = {str(k): str(v) for k, v in (spec.get("configs") or {}).items()}
        try:
            check_overrides(configs)
        except ValueError as exc:  # Kafka: InvalidConfigurationException with the ConfigException's message
            return {"name": name, "error_code": ErrorCode.INVALID_CONFIG, "error_message": str(exc)}
        if spec.get("validate_only"):
            return {"name": name, "error_code": ErrorCode.NONE, "error_message": None}
        self.topic_ids[name] = uuid_to_kafka_string(uuid.uuid4())
        if configs:  # stored before the replicas are told, so a broker creating a log finds them
            self.topic_configs.put(name, configs)
        created = [PartitionInfo(name, p, replicas, replicas[0], 0, replicas, 0, self.controller_epoch)
                   for p, replicas in enumerate(assignment)]
        for info in created:
            self.partitions[(name, info.partition)] = info
        self._save()
        assigned = ", ".join(f"{name}-{i.partition} -> ReplicaAssignment(replicas={','.join(map(str, i.replicas))}, "
                             "addingReplicas=, removingReplicas=)" for i in created)
        # Kafka 2.8 on Scala 2.13: topic ids in the assignment; an immutable Map of more than 4 entries is a HashMap
        scala_map = "Map" if len(created) <= SCALA_SMALL_MAP_MAX else "HashMap"
        self._log.info(f"New topics: [Set({name})], deleted topics: [HashSet()], new partition replica assignment "
                       f"[Set(TopicIdReplicaAssignment({name},Some({self.topic_ids[name]}),{scala_map}({assigned})))]")
        # onNewPartitionCreation: partitions and replicas New, then Online
        sc = self._state_change_log()
        for info in created:
            sc.info(f"Changed partition {name}-{info.partition} state from NonExistentPartition to NewPartition with "
                    f"assigned replicas {','.join(map(str, info.replicas))}")
        self._replica_states(sc, created, None, "NonExistentReplica", "NewReplica")
        for info in created:
            sc.info(f"Changed partition {name}-{info.partition} from NewPartition to OnlinePartition with state "
                    f"{leader_and_isr_text(info)}")
        self._replica_states(sc, created, None, "NewReplica", "OnlineReplica")
        self._send_leader_and_isr(created, is_new=True)
        self._send_update_metadata(list(self.brokers), list(self.partitions.values()))
        return {"name": name, "error_code": ErrorCode.NONE, "error_message": None}

    def _on_alter_isr(self, broker_id: int, broker_epoch: int, topic: str, partition: int, leader_epoch: int,
                      isr: list[int]) -> dict[str, Any]:
        reg = self.brokers.get(broker_id)
        if reg is None or reg.epoch != broker_epoch:
            return {"error_code": ErrorCode.STALE_BROKER_EPOCH}
        info = self.partitions.get((topic, partition))
        if info is None or info.leader != broker_id or info.leader_epoch != leader_epoch:
            return {"error_code": ErrorCode.FENCED_LEADER_EPOCH}
        new_isr = tuple(r for r in isr if r in info.replicas)
        if broker_id not in new_isr:
            return {"error_code": ErrorCode.INVALID_REQUEST}
        new = replace(info, isr=new_isr, partition_epoch=info.partition_epoch + 1)
        self.partitions[(topic, partition)] = new
        self._save()
        self._send_update_metadata(list(self.brokers), [new])
        self._maybe_finish_reassignment((topic, partition))
        return {"error_code": ErrorCode.NONE, "partition_epoch": new.partition_epoch}

    # ------------------------------------------------------------------------------------------------ admin events
    # ------------------------------------------------------------------------------------------------ sending
    def _live_leaders(self, partitions: list[PartitionInfo]) -> list[BrokerNode]:
        out = []
        for bid in sorted({p.leader for p in partitions}):
            reg = self.brokers.get(bid)
            if reg is not None and self.settings.inter_broker_listener in reg.listeners:
                host, port = reg.listeners[self.settings.inter_broker_listener]
                out.append(BrokerNode(bid, host, port))
        return out

    def _send_leader_and_isr(self, partitions: list[PartitionInfo], *, is_new: bool = False,
                             only: set[int] | None = None) -> None:
        if self.channel is None or not partitions:
            return
        sender = ControlRequestSender(self.channel)
        by_broker: dict[int, list[LeaderAndIsrPartition]] = {}
        for p in partitions:
            move = self.reassignments.get((p.topic, p.partition))
            state = LeaderAndIsrPartition(p.topic, p.partition, p.controller_epoch, p.leader, p.leader_epoch, p.isr,
                                          p.partition_epoch, p.replicas, move.adding if move else (),
                                          move.removing if move else (), is_new=is_new)
            for r in p.replicas:
                if r in self.brokers and (only is None or r in only):
                    by_broker.setdefault(r, []).append(state)
        cached = self.settings.cached_update_metadata
        max_epoch = self._max_broker_epoch() if cached else None
        for bid, states in sorted(by_broker.items()):
            mine = [self._partition(s) for s in states]
            sender.send_leader_and_isr(bid, LEADER_AND_ISR_VERSION, states,
                                       broker_epoch=-1 if cached else self.brokers[bid].epoch,
                                       live_leaders=self._live_leaders(mine), topic_ids=self.topic_ids,
                                       max_broker_epoch=max_epoch)

    def _partition(self, s: LeaderAndIsrPartition) -> PartitionInfo:
        return self.partitions[(s.topic, s.partition)]

    def _send_stop_replica(self, broker_ids: list[int], partitions: list[StopReplicaPartition]) -> None:
        if self.channel is None:
            return
        sender = ControlRequestSender(self.channel)
        cached = self.settings.cached_update_metadata
        for bid in broker_ids:
            sender.send_stop_replica(bid, STOP_REPLICA_VERSION, partitions,
                                     broker_epoch=-1 if cached else self.brokers[bid].epoch,
                                     max_broker_epoch=self._max_broker_epoch() if cached else None)

    def _send_update_metadata(self, broker_ids: list[int], partitions: list[PartitionInfo]) -> None:
        if self.channel is None or not broker_ids:
            return
        sender = ControlRequestSender(self.channel)
        cached = [CachedPartition(p.topic, p.partition, p.controller_epoch, p.leader, p.leader_epoch, p.isr,
                                  p.partition_epoch, p.replicas,
                                  tuple(r for r in p.replicas if r not in self.brokers))
                  for p in partitions]
        live = [b.live_broker() for b in sorted(self.brokers.values(), key=lambda b: b.id)]
        ids = [b for b in broker_ids if b in self.brokers]
        if self.settings.cached_update_metadata:
            sender.send_update_metadata(ids, UPDATE_METADATA_VERSION, cached, live, topic_ids=self.topic_ids,
                                        max_broker_epoch=self._max_broker_epoch())
        else:
            sender.send_update_metadata(ids, UPDATE_METADATA_VERSION, cached, live, topic_ids=self.topic_ids,
                                        broker_epochs={b: self.brokers[b].epoch for b in ids})
