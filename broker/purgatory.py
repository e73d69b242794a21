"""Delayed operations of the data plane (Kafka's ``DelayedOperationPurgatory`` for DelayedProduce and DelayedFetch).

Theory of operation
-------------------
Kafka parks a request that cannot complete yet (acks=all waiting for the in-sync replicas, a Fetch waiting for
``min_bytes``) in a purgatory keyed by partition, frees the handler thread, and completes the operation from
whichever thread makes it completable (an append, a follower fetch moving the high watermark) or from the expiry
reaper. This broker's handlers return one response per call (``RequestHandlerApi.handle``), so a delayed operation
waits **on the handler thread** instead: :meth:`Purgatory.await_completion` re-checks the operation's
``try_complete`` predicate each time a watched event is signalled (:meth:`Purgatory.signal`, called after every
append and every high-watermark move) and gives up at the deadline, exactly when Kafka's reaper would expire it.

What this costs: a long poll occupies one of ``num.io.threads`` handlers for up to ``max_wait_ms`` (clients'
defaults: librdkafka 500 ms, kafka-python 500 ms); a Fetch that can answer at once never waits. So that parked
operations can never starve the other requests, at most ``max_waiting`` operations wait at a time (the data plane
uses half of ``num.io.threads``, at least 1); beyond that an operation is answered at once with what it has (an
empty long poll, which the client simply repeats; an acks=all produce then waits as usual, see
:meth:`Purgatory.await_completion`). The signal is one condition variable
(a version counter, ``notify_all``): waiters re-check their own predicate, which reads log offsets only (no lock,
see ``broker.log.Log.read``).

:meth:`Purgatory.close` (broker shutdown) wakes every waiter; their operations then complete with what they have.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["RECHECK_INTERVAL_S", "Purgatory"]

# Waiters re-check their predicate at least this often even without a signal: conditions that change without an
# append (a LeaderAndIsr taking leadership away from a parked acks=all produce) are noticed within this time.
RECHECK_INTERVAL_S = 0.1


class Purgatory:
    """Where handler threads wait for delayed produce/fetch operations to become completable.

    Args:
        clock: monotonic seconds (injected for tests).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_waiting: int = 2**31 - 1) -> None:
        self.max_waiting = max_waiting
        self._cond = threading.Condition()
        self._version = 0
        self._closed = False
        self._clock = clock
        self.waiting = 0  # operations parked right now (Kafka's PurgatorySize gauge)

    def signal(self) -> None:
        """Something a delayed operation may wait for happened (an append, a high-watermark move)."""
        with self._cond:
            self._version += 1
            if self.waiting:
                self._cond.notify_all()

    def await_completion(self, try_complete: Callable[[], bool], timeout_ms: int, *, optional: bool = False) -> bool:
        """Wait until ``try_complete()`` is true (True) or ``timeout_ms`` passed / the purgatory closed (False).

        ``try_complete`` runs first without waiting, then after every :meth:`signal`; it must be cheap and must not
        block (it runs while the purgatory's condition is held). An ``optional`` wait (a long poll) is skipped
        (False at once) while ``max_waiting`` operations already wait; a required one (acks=all) always waits.
        """
        if try_complete():
            return True
        if timeout_ms <= 0:
            return False
        deadline = self._clock() + timeout_ms / 1000.0
        with self._cond:
            if optional and self.waiting >= self.max_waiting:
                return False
            self.waiting += 1
            try:
                while not self._closed:
                    seen = self._version
                    if try_complete():
                        return True
                    remaining = deadline - self._clock()
                    if remaining <= 0:
                        return False
                    while self._version == seen and not self._closed:
                        if not self._cond.wait(min(remaining, RECHECK_INTERVAL_S)):
                            break
                        remaining = deadline - self._clock()
                        if remaining <= 0:
                            break
                return try_complete()
            finally:
                self.waiting -= 1

    def close(self) -> None:
        """Wake every waiter for good (broker shutdown)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
