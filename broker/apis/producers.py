"""Idempotent producers: InitProducerId (22) and the per-partition sequence checks of Produce (KIP-98, no transactions).

Clients turn idempotence on by default (kafka-python 3.x, librdkafka with ``enable.idempotence``), so a broker that
advertises Produce v3+ must hand out producer ids and keep the sequence rules, else a retried batch is written
twice:

* :meth:`ProducerIds.next_id`: ids are unique across restarts without storage: the start-up wall clock in
  milliseconds times :data:`IDS_PER_MS_OF_UPTIME`, plus a counter (Kafka allocates blocks in ZooKeeper).
* :class:`ProducerStates` (one per broker, keyed by partition and producer id) keeps the last
  :data:`CACHED_BATCHES` appended batches of each producer, as Kafka's ``ProducerStateEntry``:

  - a batch whose sequence range equals a cached one is a **duplicate** (a retry after a lost answer): nothing is
    appended and the original base offset is answered;
  - a higher producer epoch starts over (sequence must be 0, else OUT_OF_ORDER_SEQUENCE_NUMBER), a lower one is
    INVALID_PRODUCER_EPOCH;
  - otherwise the batch must continue the last one (``first == last + 1``, with int32 wrap), else
    OUT_OF_ORDER_SEQUENCE_NUMBER; an unknown producer (first batch after a broker restart: the state is in memory
    only) is accepted at any sequence.

Transactions (a transactional id, transactional batches) are not implemented: InitProducerId with a
transactional id and FindCoordinator for transactions answer COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from broker.apis.handler import HandlerResult
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode
from broker.state import TopicPartition

__all__ = ["CACHED_BATCHES", "MAX_PRODUCER_ENTRIES", "ProducerIds", "ProducerStates", "SequenceVerdict"]

CACHED_BATCHES = 5  # Kafka's ProducerStateEntry.NumBatchesToRetain (max.in.flight 5 with idempotence)
# Producer states kept per broker: the oldest are forgotten first (Kafka expires them after
# producer.id.expiration.ms); a forgotten producer's next batch is accepted at any sequence.
MAX_PRODUCER_ENTRIES = 100_000
IDS_PER_MS_OF_UPTIME = 1000  # at most 1000 InitProducerId per ms before ids could collide after a restart
NO_PRODUCER_ID = -1
_INT32_MAX = 2**31 - 1


class ProducerIds:
    """Hands out producer ids for InitProducerId."""

    def __init__(self, now_ms: int | None = None) -> None:
        start = (now_ms if now_ms is not None else int(time.time() * 1000)) * IDS_PER_MS_OF_UPTIME
        self._ids = itertools.count(start)
        self._lock = threading.Lock()

    def next_id(self) -> int:
        """A producer id never handed out before by this broker (nor, by construction, by an earlier run)."""
        with self._lock:
            return next(self._ids)

    def init_producer_id(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        """A new id at epoch 0 (idempotent producers); transactional ids are not supported."""
        del request, header
        if body.get("transactional_id") is not None:
            return HandlerResult({"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                  "producer_id": -1, "producer_epoch": -1}, (ErrorCode.COORDINATOR_NOT_AVAILABLE,))
        return HandlerResult({"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": self.next_id(),
                              "producer_epoch": 0}, (ErrorCode.NONE,))


@dataclass(frozen=True, slots=True)
class SequenceVerdict:
    """What to do with a batch: append it (error 0, duplicate_of None), answer a duplicate's offset, or an error."""

    error: int = 0
    duplicate_of: int | None = None


@dataclass(slots=True)
class _Entry:
    epoch: int
    batches: deque[tuple[int, int, int]] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))
    # (first sequence, last sequence, base offset)


class ProducerStates:
    """Sequence state of idempotent producers, per partition; :meth:`lock` serialises check + append + record."""

    def __init__(self) -> None:
        self._entries: dict[tuple[TopicPartition, int], _Entry] = {}
        self._locks: dict[TopicPartition, threading.Lock] = {}
        self._guard = threading.Lock()

    def lock(self, tp: TopicPartition) -> threading.Lock:
        """The lock to hold across :meth:`check`, the append and :meth:`record` for ``tp``."""
        with self._guard:
            lk = self._locks.get(tp)
            if lk is None:
                lk = self._locks[tp] = threading.Lock()
            return lk

    def check(self, tp: TopicPartition, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> SequenceVerdict:
        """The verdict for a batch (call with :meth:`lock` held)."""
        if producer_id == NO_PRODUCER_ID:
            return SequenceVerdict()
        entry = self._entries.get((tp, producer_id))
        if entry is None:
            return SequenceVerdict()
        if epoch < entry.epoch:
            return SequenceVerdict(ErrorCode.INVALID_PRODUCER_EPOCH)
        if epoch > entry.epoch:
            return SequenceVerdict() if first_seq == 0 else SequenceVerdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        for first, last, base in entry.batches:
            if first == first_seq and last == last_seq:
                return SequenceVerdict(duplicate_of=base)
        if not entry.batches:
            return SequenceVerdict()
        expected = 0 if entry.batches[-1][1] == _INT32_MAX else entry.batches[-1][1] + 1
        return SequenceVerdict() if first_seq == expected else SequenceVerdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)

    def record(self, tp: TopicPartition, producer_id: int, epoch: int, first_seq: int, last_seq: int,
               base_offset: int) -> None:
        """Remember an appended batch (call with :meth:`lock` held)."""
        if producer_id == NO_PRODUCER_ID:
            return
        key = (tp, producer_id)
        entry = self._entries.get(key)
        if entry is None or epoch > entry.epoch:
            if entry is None and len(self._entries) >= MAX_PRODUCER_ENTRIES:
                del self._entries[next(iter(self._entries))]
            entry = self._entries[key] = _Entry(epoch)
        entry.batches.append((first_seq, last_seq, base_offset))

    def forget_partition(self, tp: TopicPartition) -> None:
        """Drop the state of a partition (deleted, or led elsewhere now)."""
        with self._guard:
            for key in [k for k in self._entries if k[0] == tp]:
                del self._entries[key]
