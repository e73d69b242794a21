"""One replica fetcher thread: fetches the partitions a follower hosts from one leader (Kafka's ReplicaFetcherThread).

Theory of operation
-------------------
A partition added to the thread first has its log truncated where it may diverge from the leader's (KIP-101,
KIP-279): the thread asks the leader (OffsetForLeaderEpoch) where the newest epoch in the local log ends there and
truncates to that offset, repeating with the epoch the leader names when the local log does not know it; a log without
epochs falls back to its high watermark. Records every ISR member acknowledged are therefore never truncated away by a
follower that has not yet learnt the high watermark that covers them.

Then the thread loops: build a Fetch (``replica_id`` = this broker) for its partitions at their log end offsets, send it
to the leader's inter-broker listener, then process the response partition by partition: append the batches as a
follower (keeping offsets and leader epochs), move the local high watermark to ``min(leader HW, log end)``, and adopt
the leader's log start offset when it moved (which clears and flushes the leader-epoch checkpoint, with fsync: slow
when ``planewatch.leader.epoch.checkpoint.delay.ms`` is set). The follower's next fetch offset tells the leader how far
it got, so the leader can move its high watermark and keep it in the ISR.

Two models (``replica.fetcher.model``):

* ``locked`` (Kafka 2.x ``AbstractFetcherThread.partitionMapLock``): the fetcher holds the lock while it processes a
  whole response, slow checkpoint flushes included; :meth:`add_partitions` / :meth:`remove_partitions` run on the
  request-handler thread handling LeaderAndIsr (under ``replicaStateChangeLock``) and take the same lock, so they
  wait for the whole response to be processed, and every later control request waits behind them (KAFKA-6974).
* ``async`` (the KAFKA-6974 proposal): add/remove are events on the thread's queue; only the fetcher thread touches
  its partition map, between two responses; the handler thread never blocks.

Either way, the time a control request spent waiting for the lock (or 0 ms for the async enqueue) is logged at DEBUG
in server.log as ``[ReplicaFetcherManager on broker 1] LeaderAndIsr waited N ms for partitionMapLock of
ReplicaFetcherThread-0-2 (planewatch)`` and kept in :attr:`ReplicaFetcherThread.lock_waits_ns`.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from broker.config_table import FETCHER_MODELS
from broker.log import Log, LogManager, LogStartOffsetIncrementReason
from broker.log4j import Log4j
from broker.metrics.registry import Meter
from broker.network.client import BlockingClient, ClientError
from broker.protocol import ApiKey
from broker.protocol.error_codes import ErrorCode
from broker.settings import ReplicationSettings
from broker.state.model import BrokerEndPoint, InitialFetchState, TopicPartition

__all__ = ["FETCHER_MODELS", "FetchSettings", "PartitionFetchState", "ReplicaFetcherThread"]

# Fetch v11: replica id, current leader epoch, log start offset; the last non-flexible version (no tagged fields).
FETCH_VERSION = 11
# OffsetForLeaderEpoch v3: replica id and current leader epoch; the last non-flexible version.
EPOCH_VERSION = 3
# How many lock-wait measurements a thread keeps (newest last).
LOCK_WAIT_HISTORY = 10_000


_DEFAULTS = ReplicationSettings.defaults()


@dataclass(frozen=True, slots=True)
class FetchSettings:
    """``replica.fetch.*`` settings; defaults are the configuration table's (:class:`ReplicationSettings`)."""

    model: str = _DEFAULTS.fetcher_model  # replica.fetcher.model
    max_wait_ms: int = _DEFAULTS.fetch_wait_max_ms  # replica.fetch.wait.max.ms
    min_bytes: int = _DEFAULTS.fetch_min_bytes  # replica.fetch.min.bytes
    max_bytes: int = _DEFAULTS.fetch_response_max_bytes  # replica.fetch.response.max.bytes
    partition_max_bytes: int = _DEFAULTS.fetch_max_bytes  # replica.fetch.max.bytes
    backoff_ms: int = _DEFAULTS.fetch_backoff_ms  # replica.fetch.backoff.ms
    socket_timeout_ms: int = _DEFAULTS.socket_timeout_ms  # replica.socket.timeout.ms


@dataclass(slots=True)
class PartitionFetchState:
    """What the fetcher knows of one partition."""

    tp: TopicPartition
    leader_epoch: int
    log: Log
    delayed_until_ns: int = 0  # after an error: not fetched before this time
    truncating: bool = True  # the log's divergence from the leader's is not settled yet: not fetched


class ReplicaFetcherThread(threading.Thread):
    """Fetches partitions from one leader; see the module docstring for the two locking models.

    Args:
        broker_id: this (follower) broker.
        fetcher_id: index among the threads to the same leader (``num.replica.fetchers``; planewatch uses 0).
        leader: the leader's inter-broker endpoint.
        logs: the follower's log manager.
        settings: fetch settings incl. the model.
        log4j: server.log.
        on_fetched: called (outside the lock) after each processed response with the partitions that got data.
    """

    def __init__(
        self,
        broker_id: int,
        fetcher_id: int,
        leader: BrokerEndPoint,
        logs: LogManager,
        settings: FetchSettings,
        log4j: Log4j,
        on_fetched: Callable[[list[TopicPartition]], None] | None = None,
    ) -> None:
        if settings.model not in FETCHER_MODELS:
            raise ValueError(
                f"Invalid value {settings.model} for configuration replica.fetcher.model: String must "
                f"be one of: {', '.join(FETCHER_MODELS)}"
            )
        super().__init__(name=f"ReplicaFetcherThread-{fetcher_id}-{leader.id}", daemon=True)
        self.broker_id = broker_id
        self.leader = leader
        self.logs = logs
        self.settings = settings
        self.partition_map_lock = threading.Lock()
        self.partitions: dict[TopicPartition, PartitionFetchState] = {}
        self.lock_waits_ns: deque[int] = deque(maxlen=LOCK_WAIT_HISTORY)
        self._events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._running = threading.Event()
        self._running.set()
        self._wake = threading.Event()
        self._client = BlockingClient(
            leader,
            peer=f"leader {leader.id}",
            client_id=f"broker-{broker_id}-fetcher-0",
            timeout_s=settings.socket_timeout_ms / 1000,
        )
        self._correlation = 0
        self._on_fetched = on_fetched
        self._log = log4j.get_logger(
            "kafka.server.ReplicaFetcherThread",
            f"[ReplicaFetcher replicaId={broker_id}, leaderId={leader.id}, fetcherId={fetcher_id}] ",
        )
        self._mgr_log = log4j.get_logger(
            "kafka.server.ReplicaFetcherManager", f"[ReplicaFetcherManager on broker {broker_id}] "
        )
        self._pending = 0  # async model: partitions added but not yet applied (for idleness)
        # FetcherStats / FetcherLagMetrics: fetch requests sent, and per partition the records the leader's high
        # watermark is ahead of this log after the last fetch (read by the manager's MaxLag / MinFetchRate)
        self.request_rate = Meter()
        self.lags: dict[TopicPartition, int] = {}

    # ------------------------------------------------------------------------------------------------ control side
    def add_partitions(self, fetches: Mapping[TopicPartition, InitialFetchState], api: str = "LeaderAndIsr") -> None:
        """Start fetching (become-follower). Locked model: takes the partition-map lock on the caller's thread."""
        if self.settings.model == "async":
            self._pending += len(fetches)
            self._events.put(("add", dict(fetches)))
            self._record_wait(api, 0)
            self._wake.set()
            return
        before = time.monotonic_ns()
        with self.partition_map_lock:
            self._record_wait(api, time.monotonic_ns() - before)
            self._apply_add(fetches)

    def remove_partitions(self, tps: Collection[TopicPartition], api: str = "LeaderAndIsr") -> None:
        """Stop fetching. Locked model: takes the partition-map lock on the caller's thread."""
        if self.settings.model == "async":
            self._events.put(("remove", list(tps)))
            self._record_wait(api, 0)
            self._wake.set()
            return
        before = time.monotonic_ns()
        with self.partition_map_lock:
            self._record_wait(api, time.monotonic_ns() - before)
            self._apply_remove(tps)

    def partition_count(self) -> int:
        """Partitions fetched or about to be (a racy read)."""
        return len(self.partitions) + max(self._pending, 0)

    def hosts(self, tp: TopicPartition) -> bool:
        """True when ``tp`` is in the partition map (a racy read)."""
        return tp in self.partitions

    def initiate_shutdown(self) -> None:
        """Stop after the current fetch."""
        self._running.clear()
        self._wake.set()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Stop and join; closes the connection."""
        self.initiate_shutdown()
        self._client.close()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout_s)

    def _record_wait(self, api: str, waited_ns: int) -> None:
        self.lock_waits_ns.append(waited_ns)
        if self._mgr_log.is_debug_enabled():
            self._mgr_log.debug(
                f"{api} waited {waited_ns // 1_000_000} ms for partitionMapLock of {self.name} (planewatch)"
            )

    # ------------------------------------------------------------------------------------------------ state changes
    def _apply_add(self, fetches: Mapping[TopicPartition, InitialFetchState]) -> None:
        for tp, init in fetches.items():
            log = self.logs.get_or_create_log(tp)
            self.partitions[tp] = PartitionFetchState(tp, init.leader_epoch, log)
        if fetches:
            self._log.info("Added partitions " + ", ".join(f"{tp.topic}-{tp.partition}" for tp in fetches))

    def _apply_remove(self, tps: Collection[TopicPartition]) -> None:
        removed = [tp for tp in tps if self.partitions.pop(tp, None) is not None]
        for tp in removed:
            self.lags.pop(tp, None)
        if removed:
            self._log.info("Removed partitions " + ", ".join(f"{tp.topic}-{tp.partition}" for tp in removed))

    def _drain_events(self) -> None:
        while True:
            try:
                kind, arg = self._events.get_nowait()
            except queue.Empty:
                return
            if kind == "add":
                self._apply_add(arg)
                self._pending -= len(arg)
            else:
                self._apply_remove(arg)

    # ------------------------------------------------------------------------------------------------ fetch loop
    def run(self) -> None:
        self._log.info("Starting")
        try:
            while self._running.is_set():
                if self.settings.model == "async":
                    self._drain_events()
                    self._do_work()
                else:
                    self._do_work()
        finally:
            self._client.close()
            self._log.info("Stopped")

    def _do_work(self) -> None:
        if self._truncate():
            return
        body = self._build_fetch()
        if body is None:
            self._wake.wait(self.settings.backoff_ms / 1000 / 10)
            self._wake.clear()
            return
        self.request_rate.mark()
        response = self._send(ApiKey.FETCH, FETCH_VERSION, body, (
            f"fetch request (type=FetchRequest, replicaId={self.broker_id}, maxWait={self.settings.max_wait_ms}, "
            f"minBytes={self.settings.min_bytes}, maxBytes={self.settings.max_bytes})"))
        if response is None:
            return
        if self.settings.model == "async":
            self._drain_events()  # removals that arrived during the request win over its answer
        with self._map_guard():
            fetched = self._process(response)
        if fetched and self._on_fetched is not None:
            self._on_fetched(fetched)

    def _ready(self, *, truncating: bool) -> list[PartitionFetchState]:
        now = time.monotonic_ns()
        with self._map_guard():
            states = list(self.partitions.values())
        return [s for s in states if s.delayed_until_ns <= now and s.truncating == truncating]

    def _truncate(self) -> bool:
        """maybeTruncate: settle the divergence of newly added partitions; True if a request was sent."""
        states = self._ready(truncating=True)
        if not states:
            return False
        hw_only = [s for s in states if s.log.epoch_cache.latest_epoch < 0]
        asked = [s for s in states if s.log.epoch_cache.latest_epoch >= 0]
        with self._map_guard():
            for s in hw_only:  # no epochs (an empty log, or pre-v2 batches): the local high watermark is all there is
                if self.partitions.get(s.tp) is s:
                    self._finish_truncation(s, s.log.high_watermark, "local high watermark")
        if not asked:
            return False
        topics: dict[str, list[dict[str, Any]]] = {}
        for s in asked:
            topics.setdefault(s.tp.topic, []).append({"partition": s.tp.partition,
                                                      "current_leader_epoch": s.leader_epoch,
                                                      "leader_epoch": s.log.epoch_cache.latest_epoch})
        body = {"replica_id": self.broker_id,
                "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
        response = self._send(ApiKey.OFFSET_FOR_LEADER_EPOCH, EPOCH_VERSION, body,
                              f"leader epoch request for {len(asked)} partitions")
        if response is None:
            return True
        if self.settings.model == "async":
            self._drain_events()
        with self._map_guard():
            self._apply_epoch_end_offsets(response, {s.tp: s for s in asked})
        return True

    def _send(self, api: ApiKey, version: int, body: dict[str, Any], what: str) -> dict[str, Any] | None:
        """One request to the leader and its answer; None (logged, after a backoff) when the connection failed: the
        next request reconnects."""
        self._correlation += 1
        try:
            frame = self._client.encode(api, version, self._correlation, body)
            return self._client.round_trip(api, version, self._correlation, frame)
        except ClientError as exc:
            if self._running.is_set():
                self._log.warn(f"Error in response for {what} to node {self.leader.id}: {exc}")
                self._wake.wait(self.settings.backoff_ms / 1000)
                self._wake.clear()
            return None

    def _map_guard(self) -> AbstractContextManager[object]:
        """The partition-map lock in the locked model; nothing in the async one (only this thread touches the map)."""
        return self.partition_map_lock if self.settings.model == "locked" else nullcontext()

    def _apply_epoch_end_offsets(self, response: dict[str, Any],
                                 asked: Mapping[TopicPartition, PartitionFetchState]) -> None:
        backoff_ns = self.settings.backoff_ms * 1_000_000
        for topic in response.get("topics") or ():
            for p in topic.get("partitions") or ():
                tp = TopicPartition(topic["topic"], int(p["partition"]))
                state = self.partitions.get(tp)
                if state is None or state is not asked.get(tp) or not state.truncating:
                    continue  # removed, or re-added with another leader epoch, while the request was in flight
                code = int(p["error_code"])
                if code != ErrorCode.NONE:
                    self._log.warn(f"Error in response for leader epoch request for partition {state.tp.topic}-"
                                   f"{state.tp.partition}: error code {code}. Backing off.")
                    state.delayed_until_ns = time.monotonic_ns() + backoff_ns
                    continue
                self._truncate_to_epoch_end(state, int(p["leader_epoch"]), int(p["end_offset"]))

    def _truncate_to_epoch_end(self, state: PartitionFetchState, leader_epoch: int, leader_end: int) -> None:
        """Kafka's ``getOffsetTruncationState`` for one partition's answer."""
        log = state.log
        if leader_end < 0:  # the leader knows no end for the epoch: nothing better than the local high watermark
            self._finish_truncation(state, log.high_watermark, "local high watermark")
            return
        if leader_epoch < 0:
            self._finish_truncation(state, leader_end, "the leader's epoch end offset")
            return
        local_epoch, local_end = log.end_offset_for_epoch(leader_epoch)
        if local_epoch < 0 or local_epoch == leader_epoch:
            self._finish_truncation(state, min(leader_end, local_end) if local_epoch >= 0 else leader_end,
                                    f"the end offset of epoch {leader_epoch}")
            return
        # The local log does not know the leader's epoch: cut at the end of the largest local epoch below it and
        # ask again with that epoch (it is now the newest local one).
        target = min(local_end, log.log_end_offset)
        if target < log.log_end_offset:
            self._log.info(f"Truncating partition {state.tp.topic}-{state.tp.partition} to offset {target}, the end"
                           f" of local epoch {local_epoch}, which the leader does not have")
            log.truncate_to(target)

    def _finish_truncation(self, state: PartitionFetchState, offset: int, what: str) -> None:
        log = state.log
        target = max(min(offset, log.log_end_offset), log.log_start_offset)
        if target < log.log_end_offset:
            self._log.info(f"Truncating partition {state.tp.topic}-{state.tp.partition} to {what} {target}")
            log.truncate_to(target)
        state.truncating = False

    def _build_fetch(self) -> dict[str, Any] | None:
        states = self._ready(truncating=False)
        if not states:
            return None
        topics: dict[str, list[dict[str, Any]]] = {}
        for s in states:
            topics.setdefault(s.tp.topic, []).append(
                {
                    "partition": s.tp.partition,
                    "current_leader_epoch": s.leader_epoch,
                    "fetch_offset": s.log.log_end_offset,
                    "log_start_offset": s.log.log_start_offset,
                    "partition_max_bytes": self.settings.partition_max_bytes,
                }
            )
        return {
            "replica_id": self.broker_id,
            "max_wait_ms": self.settings.max_wait_ms,
            "min_bytes": self.settings.min_bytes,
            "max_bytes": self.settings.max_bytes,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [],
            "rack_id": "",
        }

    def _process(self, response: dict[str, Any]) -> list[TopicPartition]:
        """processFetchResponse: append, move HW and log start offset, per partition (caller holds the lock)."""
        fetched: list[TopicPartition] = []
        backoff_ns = self.settings.backoff_ms * 1_000_000
        for topic in response.get("responses") or ():
            for p in topic.get("partitions") or ():
                tp = TopicPartition(topic["topic"], int(p["partition_index"]))
                state = self.partitions.get(tp)
                if state is None:
                    continue  # removed while the fetch was in flight
                code = int(p["error_code"])
                if code != ErrorCode.NONE:
                    self._on_error(state, code, int(p.get("log_start_offset", -1)), int(p.get("high_watermark", -1)))
                    state.delayed_until_ns = time.monotonic_ns() + backoff_ns
                    continue
                if self._append(state, p):
                    fetched.append(tp)
        return fetched

    def _append(self, state: PartitionFetchState, p: Mapping[str, Any]) -> bool:
        log = state.log
        records = p.get("records") or b""
        appended = False
        if records:
            try:
                log.append_as_follower(records)
                appended = True
            except Exception as exc:  # a bad batch must not kill the thread: back off and refetch
                self._log.error(
                    f"Unexpected error occurred while processing data for partition {state.tp.topic}-"
                    f"{state.tp.partition} at offset {log.log_end_offset}: {exc}"
                )
                state.delayed_until_ns = time.monotonic_ns() + self.settings.backoff_ms * 1_000_000
                return False
        leader_hw = int(p.get("high_watermark", -1))
        if leader_hw >= 0:
            log.update_high_watermark(min(leader_hw, log.log_end_offset))
            self.lags[state.tp] = max(0, leader_hw - log.log_end_offset)
        leader_lso = int(p.get("log_start_offset", -1))
        if 0 <= leader_lso <= log.high_watermark and leader_lso > log.log_start_offset:
            # Kafka 2.x: maybeIncrementLogStartOffset -> leader epoch cache clearAndFlushEarliest (fsync).
            log.increment_log_start_offset(leader_lso, LogStartOffsetIncrementReason.LEADER_OFFSET_INCREMENTED)
        return appended

    def _on_error(self, state: PartitionFetchState, code: int, leader_lso: int, leader_hw: int) -> None:
        tp = f"{state.tp.topic}-{state.tp.partition}"
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            log = state.log
            if 0 <= leader_hw < log.log_end_offset:
                # Our tail is beyond the leader's log: uncommitted records of an old leadership. Everything below
                # the leader's high watermark is committed on both sides: keep that, refetch the rest.
                self._log.info(
                    f"Truncating partition {tp} to the leader's high watermark {leader_hw}: the local "
                    f"log end offset {log.log_end_offset} is out of range on the leader"
                )
                log.truncate_to(max(leader_hw, log.log_start_offset))
            elif leader_lso > log.log_end_offset:
                self._log.info(
                    f"Current offset {log.log_end_offset} for partition {tp} is out of range, which "
                    f"typically implies a leader change. Reset fetch offset to {leader_lso}"
                )
                log.truncate_fully_and_start_at(leader_lso)
            elif log.log_end_offset > log.high_watermark:
                log.truncate_to(log.high_watermark)
            return
        self._log.warn(f"Error in response for fetch request for partition {tp}: error code {code}. Backing off.")
