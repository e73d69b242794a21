"""Connection quotas (Kafka's ``ConnectionQuotas``, KIP-402 part 2): per-IP, per-listener and broker-wide limits.

* ``max.connections.per.ip`` (+ ``max.connections.per.ip.overrides``): the count for the address is incremented and,
  when it was already at the limit, :class:`TooManyConnections` is raised; the acceptor logs
  ``Rejected connection from <ip>, address already has the configured maximum of <n> connections.`` and closes.
* ``listener.name.<l>.max.connections`` and ``max.connections``: :meth:`ConnectionQuotas.inc` **waits** (the acceptor
  thread blocks; the wait is marked on its AcceptorBlockedPercent meter) until a slot is free.
* Inter-broker protection: when the broker has more than one listener, the inter-broker listener ignores the
  broker-wide limit (only its own listener limit applies); processors of the other listeners then close their
  least-recently-used connection while :meth:`max_connections_exceeded` says the broker is over its limit.

Every limit can be changed at run time (:meth:`update`), e.g. by IncrementalAlterConfigs; waiting acceptors are
woken and re-check. All methods are thread-safe (one condition variable, like Kafka's ``counts.synchronized``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from broker.metrics.registry import Meter

__all__ = ["ConnectionQuotas", "QuotaWaitInterrupted", "TooManyConnections"]

# How long one wait for a connection slot sleeps before re-checking whether the acceptor is shutting down.
WAIT_SLICE_S = 0.1


class TooManyConnections(Exception):
    """``TooManyConnectionsException``: the address already has its maximum number of connections."""

    def __init__(self, address: str, limit: int) -> None:
        super().__init__(f"Too many connections from {address} (maximum = {limit})")
        self.address = address
        self.limit = limit


class QuotaWaitInterrupted(Exception):
    """The acceptor was shut down while waiting for a connection slot."""


class ConnectionQuotas:
    """Counts connections per address, per listener and in total, and enforces the limits."""

    def __init__(
        self,
        max_connections: int,
        max_connections_per_ip: int,
        per_ip_overrides: Mapping[str, int],
        inter_broker_listener: str | None,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._cond = threading.Condition()
        self._clock = clock
        self._broker_max = max_connections
        self._default_per_ip = max_connections_per_ip
        self._overrides: dict[str, int] = dict(per_ip_overrides)
        self._inter_broker = inter_broker_listener
        self._listener_max: dict[str, int] = {}
        self._listener_counts: dict[str, int] = {}
        self._ip_counts: dict[str, int] = {}
        self._total = 0
        self.peak_total = 0  # highest total ever observed (benchmarks, tests)

    # -- configuration -------------------------------------------------------------------------------------------
    def add_listener(self, listener: str, max_connections: int) -> None:
        """Register a listener with its own limit (``listener.name.<l>.max.connections`` or the broker limit)."""
        with self._cond:
            self._listener_max[listener] = max_connections
            self._listener_counts.setdefault(listener, 0)

    def update(
        self,
        *,
        max_connections: int | None = None,
        max_connections_per_ip: int | None = None,
        per_ip_overrides: Mapping[str, int] | None = None,
        listener_max: Mapping[str, int] | None = None,
    ) -> None:
        """Dynamic reconfiguration (any subset); wakes acceptors waiting for a slot."""
        with self._cond:
            if max_connections is not None:
                self._broker_max = max_connections
            if max_connections_per_ip is not None:
                self._default_per_ip = max_connections_per_ip
            if per_ip_overrides is not None:
                self._overrides = dict(per_ip_overrides)
            if listener_max is not None:
                for listener, limit in listener_max.items():
                    if listener not in self._listener_max:
                        raise KeyError(f"unknown listener {listener}")
                    self._listener_max[listener] = limit
            self._cond.notify_all()

    # -- counting ------------------------------------------------------------------------------------------------
    def _protected(self, listener: str) -> bool:
        return listener == self._inter_broker and len(self._listener_counts) > 1

    def _slot_available(self, listener: str) -> bool:
        if self._listener_counts.get(listener, 0) >= self._listener_max.get(listener, self._broker_max):
            return False
        return self._protected(listener) or self._total < self._broker_max

    def max_for_ip(self, address: str) -> int:
        """The per-IP limit that applies to ``address``."""
        with self._cond:
            return self._overrides.get(address, self._default_per_ip)

    def inc(
        self,
        listener: str,
        address: str,
        blocked_meter: Meter | None,
        should_run: Callable[[], bool] = lambda: True,
    ) -> None:
        """Count a new connection; blocks while the listener or broker is at its limit.

        Raises:
            TooManyConnections: the address is at its per-IP limit (nothing is counted).
            QuotaWaitInterrupted: ``should_run()`` turned false while waiting.
        """
        with self._cond:
            if not self._slot_available(listener):
                # Marked slice by slice (not once at the end as Kafka does): the meter, and so
                # AcceptorBlockedPercent, shows the acceptor blocked WHILE it is, not only once the storm is over.
                mark_from = self._clock()
                try:
                    while not self._slot_available(listener):
                        if not should_run():
                            raise QuotaWaitInterrupted(listener)
                        self._cond.wait(WAIT_SLICE_S)
                        if blocked_meter is not None:
                            now = self._clock()
                            blocked_meter.mark(now - mark_from)
                            mark_from = now
                finally:
                    if blocked_meter is not None:
                        blocked_meter.mark(self._clock() - mark_from)
            count = self._ip_counts.get(address, 0)
            limit = self._overrides.get(address, self._default_per_ip)
            if count >= limit:
                raise TooManyConnections(address, limit)
            self._ip_counts[address] = count + 1
            self._listener_counts[listener] = self._listener_counts.get(listener, 0) + 1
            self._total += 1
            self.peak_total = max(self.peak_total, self._total)

    def dec(self, listener: str, address: str) -> None:
        """Uncount a closed connection and wake a waiting acceptor."""
        with self._cond:
            count = self._ip_counts.get(address, 0)
            if count <= 0:
                raise ValueError(f"Attempted to decrease connection count for address with no connections, {address}")
            if count == 1:
                del self._ip_counts[address]
            else:
                self._ip_counts[address] = count - 1
            self._listener_counts[listener] = max(0, self._listener_counts.get(listener, 0) - 1)
            self._total -= 1
            self._cond.notify_all()

    def get(self, address: str) -> int:
        """Open connections from ``address``."""
        with self._cond:
            return self._ip_counts.get(address, 0)

    def total(self) -> int:
        """Open connections on all listeners."""
        with self._cond:
            return self._total

    def listener_count(self, listener: str) -> int:
        """Open connections on ``listener``."""
        with self._cond:
            return self._listener_counts.get(listener, 0)

    def max_connections_exceeded(self, listener: str) -> bool:
        """True when the broker is over ``max.connections`` and ``listener`` is not the protected one."""
        with self._cond:
            return self._total > self._broker_max and not self._protected(listener)
