"""The broker's replica state and the one lock that serialises control requests (Kafka's ReplicaManager).

Theory of operation
-------------------
``replica_state_change_lock`` is Kafka's ``replicaStateChangeLock``: LeaderAndIsr (``becomeLeaderOrFollower``),
StopReplica (``stopReplicas``) and the metadata-cache update of UpdateMetadata (``maybeUpdateMetadataCache``) all run
under it, so a slow one (e.g. a become-follower waiting for a replica fetcher's partition-map lock, KAFKA-6974)
delays every later control request on the broker. As in Kafka 2.7+, LeaderAndIsr takes its start time **before**
acquiring the lock and logs ``Handling ...`` **after** acquiring it, so
``lock wait = elapsed - (ts(Finished) - ts(Handling))``.

planewatch adds one line that Kafka does not write, measured directly (logger ``kafka.server.ReplicaManager``,
DEBUG, server.log)::

    [ReplicaManager broker=1] LeaderAndIsr correlationId 7 waited 0 ms for replicaStateChangeLock (planewatch)

(``LeaderAndIsr`` / ``StopReplica`` / ``UpdateMetadata``; the wait in whole milliseconds). The suffix
``(planewatch)`` marks it as ours; Kafka's own lines are unchanged. The numbers are also kept in
:attr:`BrokerState.lock_waits`.

The decisions (stale epochs, leader/follower split) are pure functions in :mod:`broker.state.decisions`; this module
applies them, calls the data-plane hooks (:class:`~broker.state.model.FetcherManager`,
:class:`~broker.state.model.LocalLog`) and writes the state-change lines of Kafka 2.8.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from broker.log.errors import LogError
from broker.log4j import Log4j, default_log4j
from broker.protocol.error_codes import ErrorCode
from broker.state.decisions import (
    Outcome,
    is_broker_epoch_stale,
    is_controller_epoch_stale,
    plan_leader_and_isr,
    plan_stop_replica,
)
from broker.state.metadata_cache import MetadataCache
from broker.state.model import (
    UNKNOWN_BROKER_EPOCH,
    BrokerEndPoint,
    FetcherManager,
    InitialFetchState,
    LeaderAndIsrPartition,
    LeaderAndIsrRequestModel,
    LocalLog,
    NullFetcherManager,
    NullLocalLog,
    PartitionState,
    Role,
    StopReplicaRequestModel,
    TopicPartition,
    UpdateMetadataRequestModel,
)

__all__ = ["LOCK_WAIT_HISTORY", "BrokerState", "ControllerMovedError", "LeaderAndIsrResult", "LockWait",
           "StopReplicaResult"]

# How many lock-wait measurements BrokerState keeps in memory (newest last); enough for a scenario's analysis.
LOCK_WAIT_HISTORY = 10_000
# Kafka's controller epoch before any controller has spoken (KafkaController.InitialControllerEpoch).
INITIAL_CONTROLLER_EPOCH = 0


@dataclass(frozen=True, slots=True)
class LockWait:
    """One control request's wait for ``replicaStateChangeLock``."""

    api: str  # "LeaderAndIsr", "StopReplica", "UpdateMetadata"
    correlation_id: int
    wait_ns: int


@dataclass(frozen=True, slots=True)
class LeaderAndIsrResult:
    """Outcome of a LeaderAndIsr request: top-level error and per-partition errors (request order)."""

    error: int
    partition_errors: list[tuple[TopicPartition, int]]
    leaders: list[TopicPartition]
    followers: list[TopicPartition]


@dataclass(frozen=True, slots=True)
class StopReplicaResult:
    """Outcome of a StopReplica request."""

    error: int
    partition_errors: list[tuple[TopicPartition, int]]


class ControllerMovedError(Exception):
    """UpdateMetadata from an older controller epoch (Kafka's ControllerMovedException -> STALE_CONTROLLER_EPOCH)."""

    error_code = ErrorCode.STALE_CONTROLLER_EPOCH


class BrokerState:
    """All control-plane state of one broker: epochs, hosted partitions, metadata cache, and the state-change lock.

    Thread-safe: control requests serialise on :attr:`replica_state_change_lock`; readers use snapshots.

    Args:
        broker_id: ``broker.id``.
        broker_epoch: this broker's epoch (-1 = unknown; see :meth:`set_broker_epoch`).
        log4j: the logging hierarchy to write to (default: the process-wide one).
        fetcher_manager: the replica-fetcher hook (default: records only).
        local_log: the log hook (default: offsets 0).
        inter_broker_listener: listener name followers use to reach leaders.
        clock_ns: monotonic nanosecond clock (injected for tests).
    """

    def __init__(self, broker_id: int, *, broker_epoch: int = UNKNOWN_BROKER_EPOCH, log4j: Log4j | None = None,
                 fetcher_manager: FetcherManager | None = None, local_log: LocalLog | None = None,
                 inter_broker_listener: str = "PLAINTEXT", clock_ns: Callable[[], int] = time.monotonic_ns) -> None:
        self.broker_id = broker_id
        self._broker_epoch = broker_epoch
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH
        self.inter_broker_listener = inter_broker_listener
        self.fetcher_manager: FetcherManager = fetcher_manager or NullFetcherManager()
        self.local_log: LocalLog = local_log or NullLocalLog()
        self.replica_state_change_lock = threading.Lock()
        self._clock_ns = clock_ns
        # Copy-on-write: control requests edit self._work under the lock and publish it as self._partitions.
        self._partitions: dict[TopicPartition, PartitionState] = {}
        self._work: dict[TopicPartition, PartitionState] = {}
        lg = log4j or default_log4j()
        self.state_change_logger = lg.get_logger("state.change.logger", f"[Broker id={broker_id}] ")
        self._rm_logger = lg.get_logger("kafka.server.ReplicaManager", f"[ReplicaManager broker={broker_id}] ")
        self.metadata_cache = MetadataCache(broker_id, self.state_change_logger)
        self.lock_waits: deque[LockWait] = deque(maxlen=LOCK_WAIT_HISTORY)

    # ----------------------------------------------------------------------------------------------------- epochs
    @property
    def broker_epoch(self) -> int:
        """This broker's epoch as the controller registered it (-1 = unknown: no request is stale)."""
        return self._broker_epoch

    def set_broker_epoch(self, epoch: int) -> None:
        """Learn this broker's epoch (the controller assigns it at registration; ``broker.epoch`` sets it here)."""
        self._broker_epoch = epoch

    def is_broker_epoch_stale(self, request_epoch: int, max_broker_epoch: int | None = None) -> bool:
        """Kafka 2.6+ ``isBrokerEpochStale`` (+ the LinkedIn ``max_broker_epoch`` rule); see decisions."""
        return is_broker_epoch_stale(request_epoch, self._broker_epoch, max_broker_epoch)

    # ----------------------------------------------------------------------------------------------------- reads
    def partitions(self) -> dict[TopicPartition, PartitionState]:
        """A copy of the hosted partitions (never blocks: the published map is replaced, not mutated)."""
        return dict(self._partitions)

    def partition_count(self) -> int:
        """How many partitions this broker hosts (a gauge may call it while a control request holds the lock)."""
        return len(self._partitions)

    def partition(self, tp: TopicPartition) -> PartitionState | None:
        """One hosted partition (a racy but consistent read: values are immutable)."""
        return self._partitions.get(tp)

    def host_local_partitions(self, states: Iterable[PartitionState], removed: Iterable[TopicPartition] = ()) -> None:
        """Data-plane hook (issue 3): publish partitions this broker leads on its own authority (a standalone broker
        that creates topics itself, as a KRaft combined node does), or drop deleted ones, under the state-change lock
        and without state-change lines (no controller request is involved)."""
        with self.replica_state_change_lock:
            work = dict(self._partitions)
            for tp in removed:
                work.pop(tp, None)
            for s in states:
                work[s.tp] = s
            self._partitions = work

    def update_led_isr(self, tp: TopicPartition, leader_epoch: int, isr: tuple[int, ...],
                       partition_epoch: int | None) -> PartitionState | None:
        """Adopt the ISR (and ``partition_epoch``; None: keep the current one) the controller accepted for ``tp``, if
        this broker still leads it at ``leader_epoch``.

        The check and the publish happen under the state-change lock, as Kafka's Partition does under its
        leaderIsrUpdateLock: a LeaderAndIsr applied while the AlterIsr answer travelled (a finished reassignment
        bumps the leader epoch) wins, and the stale ISR is dropped. Returns the new state, or None when dropped.
        """
        with self.replica_state_change_lock:
            ps = self._partitions.get(tp)
            if ps is None or ps.role is not Role.LEADER or ps.leader_epoch != leader_epoch:
                return None
            epoch = ps.partition_epoch if partition_epoch is None else partition_epoch
            new = replace(ps, isr=isr, partition_epoch=epoch)
            self._partitions = {**self._partitions, tp: new}
            return new

    # ----------------------------------------------------------------------------------------------------- locking
    @contextmanager
    def _state_change(self, api: str, correlation_id: int) -> Iterator[None]:
        before = self._clock_ns()
        with self.replica_state_change_lock:
            waited = self._clock_ns() - before
            self.lock_waits.append(LockWait(api, correlation_id, waited))
            if self._rm_logger.is_debug_enabled():
                self._rm_logger.debug(f"{api} correlationId {correlation_id} waited {waited // 1_000_000} ms for "
                                      "replicaStateChangeLock (planewatch)")
            yield

    # ----------------------------------------------------------------------------------------------------- LeaderAndIsr
    def become_leader_or_follower(self, correlation_id: int, request: LeaderAndIsrRequestModel) -> LeaderAndIsrResult:
        """ReplicaManager.becomeLeaderOrFollower (2.8): epoch checks, then make leaders and followers."""
        start_ms = self._clock_ns() // 1_000_000  # before the lock, as Kafka 2.7+
        log = self.state_change_logger
        cid, n = request.controller_id, len(request.partitions)
        with self._state_change("LeaderAndIsr", correlation_id):
            log.info(f"Handling LeaderAndIsr request correlationId {correlation_id} from controller {cid} "
                     f"for {n} partitions")
            if log.is_trace_enabled():
                for state in request.partitions:
                    log.trace(f"Received LeaderAndIsr request {state.to_kafka_string()} correlation id "
                              f"{correlation_id} from controller {cid} epoch {request.controller_epoch}")
            if is_controller_epoch_stale(request.controller_epoch, self.controller_epoch):
                log.warn(f"Ignoring LeaderAndIsr request from controller {cid} with correlation id {correlation_id} "
                         f"since its controller epoch {request.controller_epoch} is old. Latest known controller "
                         f"epoch is {self.controller_epoch}")
                code = ErrorCode.STALE_CONTROLLER_EPOCH
                result = LeaderAndIsrResult(code, [(s.tp, code) for s in request.partitions], [], [])
            else:
                self.controller_epoch = request.controller_epoch
                self._work = dict(self._partitions)
                try:
                    result = self._apply_leader_and_isr(correlation_id, request)
                finally:  # publish (copy-on-write): readers never see a half-applied request
                    self._partitions = self._work
                self.fetcher_manager.shutdown_idle_fetcher_threads()
            elapsed_ms = self._clock_ns() // 1_000_000 - start_ms
            log.info(f"Finished LeaderAndIsr request in {elapsed_ms}ms correlationId {correlation_id} from "
                     f"controller {cid} for {n} partitions")
            return result

    def _apply_leader_and_isr(self, correlation_id: int, request: LeaderAndIsrRequestModel) -> LeaderAndIsrResult:
        log = self.state_change_logger
        cid, cepoch = request.controller_id, self.controller_epoch
        plan = plan_leader_and_isr(self._work, request.partitions, self.broker_id)
        errors: dict[TopicPartition, int] = {}
        to_lead: list[LeaderAndIsrPartition] = []
        to_follow: list[LeaderAndIsrPartition] = []
        for d in plan:
            tp = d.state.tp
            prefix = f"Ignoring LeaderAndIsr request from controller {cid} with correlation id {correlation_id} " \
                     f"epoch {cepoch} for partition {tp}"
            if d.outcome is Outcome.NOT_IN_REPLICAS:
                log.warn(f"{prefix} as itself is not in assigned replica list {','.join(map(str, d.state.replicas))}")
            elif d.outcome is Outcome.STALE_SMALLER:
                log.warn(f"{prefix} since its associated leader epoch {d.state.leader_epoch} is smaller than the "
                         f"current leader epoch {d.current_leader_epoch}")
            elif d.outcome is Outcome.STALE_EQUAL:
                log.info(f"{prefix} since its associated leader epoch {d.state.leader_epoch} matches the current "
                         "leader epoch")
            elif d.outcome is Outcome.BECOME_LEADER:
                to_lead.append(d.state)
            else:
                to_follow.append(d.state)
            errors[tp] = d.error
        leaders = self._make_leaders(correlation_id, cid, cepoch, to_lead, request, errors) if to_lead else []
        followers = (self._make_followers(correlation_id, cid, cepoch, to_follow, request, errors)
                     if to_follow else [])
        return LeaderAndIsrResult(ErrorCode.NONE, list(errors.items()), leaders, followers)

    def _local_offsets(self, corr: int, cid: int, cepoch: int, s: LeaderAndIsrPartition, transition: str,
                       errors: dict[TopicPartition, int]) -> tuple[int, int] | None:
        """The partition's log end offset and high watermark (its log created if new), or None when its log cannot
        be had: the partition answers KAFKA_STORAGE_ERROR and is skipped, the others go on (Kafka 2.8's
        ``makeLeaders``/``makeFollowers`` on a KafkaStorageException)."""
        try:
            return self.local_log.log_end_offset(s.tp), self.local_log.high_watermark(s.tp)
        except (OSError, LogError) as exc:
            self.state_change_logger.error(
                f"Skipped the become-{transition} state change with correlation id {corr} from controller {cid} epoch "
                f"{cepoch} for partition {s.tp} (last update controller epoch {s.controller_epoch}) since the replica "
                f"for the partition is offline due to disk error org.apache.kafka.common.errors.KafkaStorageException: "
                f"{exc}")
            errors[s.tp] = ErrorCode.KAFKA_STORAGE_ERROR
            return None

    def _make_leaders(self, corr: int, cid: int, cepoch: int, states: list[LeaderAndIsrPartition],
                      request: LeaderAndIsrRequestModel, errors: dict[TopicPartition, int]) -> list[TopicPartition]:
        log = self.state_change_logger
        trace = log.is_trace_enabled()
        if trace:
            for s in states:
                log.trace(f"Handling LeaderAndIsr request correlationId {corr} from controller {cid} epoch {cepoch} "
                          f"starting the become-leader transition for partition {s.tp}")
        self.fetcher_manager.remove_fetcher_for_partitions([s.tp for s in states])
        log.info(f"Stopped fetchers as part of LeaderAndIsr request correlationId {corr} from controller {cid} "
                 f"epoch {cepoch} as part of the become-leader transition for {len(states)} partitions")
        became: list[TopicPartition] = []
        for s in states:
            old = self._work.get(s.tp)
            old_epoch = old.leader_epoch if old is not None else -1
            offsets = self._local_offsets(corr, cid, cepoch, s, "leader", errors)
            if offsets is None:
                continue
            offset, hw = offsets
            log.info(f"Leader {s.tp} starts at leader epoch {s.leader_epoch} from offset {offset} with high watermark "
                     f"{hw} ISR [{','.join(map(str, s.isr))}] addingReplicas [{','.join(map(str, s.adding_replicas))}] "
                     f"removingReplicas [{','.join(map(str, s.removing_replicas))}]. Previous leader epoch was "
                     f"{old_epoch}.")
            self._work[s.tp] = self._hosted(s, Role.LEADER, request)
            if old is not None and old.role is Role.LEADER:
                log.info(f"Skipped the become-leader state change after marking its partition as leader with "
                         f"correlation id {corr} from controller {cid} epoch {cepoch} for partition {s.tp} (last "
                         f"update controller epoch {s.controller_epoch}) since it is already the leader for the "
                         "partition.")
            else:
                became.append(s.tp)
        if trace:
            for s in states:
                log.trace(f"Completed LeaderAndIsr request correlationId {corr} from controller {cid} epoch {cepoch} "
                          f"for the become-leader transition for partition {s.tp}")
        return became

    def _make_followers(self, corr: int, cid: int, cepoch: int, states: list[LeaderAndIsrPartition],
                        request: LeaderAndIsrRequestModel, errors: dict[TopicPartition, int]) -> list[TopicPartition]:
        log = self.state_change_logger
        trace = log.is_trace_enabled()
        if trace:
            for s in states:
                log.trace(f"Handling LeaderAndIsr request correlationId {corr} from controller {cid} epoch {cepoch} "
                          f"starting the become-follower transition for partition {s.tp} with leader {s.leader}")
        changed: list[LeaderAndIsrPartition] = []
        alive = self.metadata_cache.snapshot.alive_brokers
        for s in states:
            old = self._work.get(s.tp)
            if s.leader not in alive:
                log.error(f"Received LeaderAndIsrRequest with correlation id {corr} from controller {cid} epoch "
                          f"{cepoch} for partition {s.tp} (last update controller epoch {s.controller_epoch}) but "
                          f"cannot become follower since the new leader {s.leader} is unavailable.")
                # Kafka still creates the local replica (KAFKA-1647); keep the old role/epoch if there was one.
                if old is None:
                    self._work[s.tp] = replace(self._hosted(s, Role.FOLLOWER, request), leader=-1,
                                                     leader_epoch=-1)
                continue
            old_epoch = old.leader_epoch if old is not None else -1
            offsets = self._local_offsets(corr, cid, cepoch, s, "follower", errors)
            if offsets is None:
                continue
            offset, hw = offsets
            log.info(f"Follower {s.tp} starts at leader epoch {s.leader_epoch} from offset {offset} with high "
                     f"watermark {hw}. Previous leader epoch was {old_epoch}.")
            self._work[s.tp] = self._hosted(s, Role.FOLLOWER, request)
            if old is not None and old.role is Role.FOLLOWER and old.leader == s.leader:
                log.info(f"Skipped the become-follower state change after marking its partition as follower with "
                         f"correlation id {corr} from controller {cid} epoch {cepoch} for partition {s.tp} (last "
                         f"update controller epoch {s.controller_epoch}) since the new leader {s.leader} is the same "
                         "as the old leader")
            else:
                changed.append(s)
        self.fetcher_manager.remove_fetcher_for_partitions([s.tp for s in changed])
        log.info(f"Stopped fetchers as part of become-follower request from controller {cid} epoch {cepoch} with "
                 f"correlation id {corr} for {len(changed)} partitions")
        fetches: dict[TopicPartition, InitialFetchState] = {}
        for s in changed:
            broker = alive[s.leader]
            ep = broker.endpoint(self.inter_broker_listener)
            if ep is not None:
                fetches[s.tp] = InitialFetchState(BrokerEndPoint(broker.id, ep.host, ep.port), s.leader_epoch,
                                                  self.local_log.high_watermark(s.tp))
        if fetches:
            self.fetcher_manager.add_fetcher_for_partitions(fetches)
        if trace:
            for s in states:
                log.trace(f"Completed LeaderAndIsr request correlationId {corr} from controller {cid} epoch {cepoch} "
                          f"for the become-follower transition for partition {s.tp} with leader {s.leader}")
        return [s.tp for s in changed]

    @staticmethod
    def _hosted(s: LeaderAndIsrPartition, role: Role, request: LeaderAndIsrRequestModel) -> PartitionState:
        return PartitionState(tp=s.tp, role=role, leader=s.leader, leader_epoch=s.leader_epoch, isr=s.isr,
                              replicas=s.replicas, partition_epoch=s.partition_epoch,
                              controller_epoch=s.controller_epoch, adding_replicas=s.adding_replicas,
                              removing_replicas=s.removing_replicas, topic_id=request.topic_ids.get(s.topic))

    # -------------------------------------------------------------------------------------------------- StopReplica
    def stop_replicas(self, correlation_id: int, request: StopReplicaRequestModel) -> StopReplicaResult:
        """ReplicaManager.stopReplicas (2.8): controller-epoch check, leader-epoch fencing, stop fetchers, delete."""
        log = self.state_change_logger
        cid, cepoch = request.controller_id, request.controller_epoch
        with self._state_change("StopReplica", correlation_id):
            log.info(f"Handling StopReplica request correlationId {correlation_id} from controller {cid} for "
                     f"{len(request.partitions)} partitions")
            if log.is_trace_enabled():
                for s in request.partitions:
                    log.trace(f"Received StopReplica request {s.to_kafka_string()} correlation id {correlation_id} "
                              f"from controller {cid} epoch {cepoch} for partition {s.tp}")
            if is_controller_epoch_stale(cepoch, self.controller_epoch):
                log.warn(f"Ignoring StopReplica request from controller {cid} with correlation id {correlation_id} "
                         f"since its controller epoch {cepoch} is old. Latest known controller epoch is "
                         f"{self.controller_epoch}")
                return StopReplicaResult(ErrorCode.STALE_CONTROLLER_EPOCH, [])
            self.controller_epoch = cepoch
            self._work = dict(self._partitions)
            try:
                return self._apply_stop_replica(correlation_id, request)
            finally:
                self._partitions = self._work

    def _apply_stop_replica(self, correlation_id: int, request: StopReplicaRequestModel) -> StopReplicaResult:
        log = self.state_change_logger
        cid, cepoch = request.controller_id, request.controller_epoch
        errors: dict[TopicPartition, int] = {}
        stopped: dict[TopicPartition, bool] = {}
        for d in plan_stop_replica(self._work, request.partitions):
            tp = d.state.tp
            if d.outcome is Outcome.STOP:
                stopped[tp] = d.state.delete
            else:
                prefix = (f"Ignoring StopReplica request (delete={str(d.state.delete).lower()}) from controller "
                          f"{cid} with correlation id {correlation_id} epoch {cepoch} for partition {tp} since "
                          f"its associated leader epoch {d.state.leader_epoch}")
                if d.outcome is Outcome.STALE_SMALLER:
                    log.warn(f"{prefix} is smaller than the current leader epoch {d.current_leader_epoch}")
                else:
                    log.info(f"{prefix} matches the current leader epoch")
            errors[tp] = d.error
        self.fetcher_manager.remove_fetcher_for_partitions(list(stopped))
        deleted = [tp for tp, delete in stopped.items() if delete]
        for tp in deleted:
            self._work.pop(tp, None)
        if deleted:
            self.local_log.delete_partitions(deleted)
        self.fetcher_manager.shutdown_idle_fetcher_threads()
        return StopReplicaResult(ErrorCode.NONE, list(errors.items()))

    # ----------------------------------------------------------------------------------------------- UpdateMetadata
    def maybe_update_metadata_cache(self, correlation_id: int,
                                    request: UpdateMetadataRequestModel) -> list[TopicPartition]:
        """ReplicaManager.maybeUpdateMetadataCache (2.8); returns the deleted partitions.

        Raises:
            ControllerMovedError: the request's controller epoch is older than the latest known one.
        """
        with self._state_change("UpdateMetadata", correlation_id):
            if is_controller_epoch_stale(request.controller_epoch, self.controller_epoch):
                text = (f"Received update metadata request with correlation id {correlation_id} from an old "
                        f"controller {request.controller_id} with epoch {request.controller_epoch}. Latest known "
                        f"controller epoch is {self.controller_epoch}")
                self.state_change_logger.warn(text)
                raise ControllerMovedError(self.state_change_logger.ident + text)
            deleted = self.metadata_cache.update_metadata(correlation_id, request)
            self.controller_epoch = request.controller_epoch
            return deleted
