"""The acceptor thread of one listener (Kafka's ``SocketServer.Acceptor``) and its KIP-402 assignment rule.

The acceptor selects on the listening socket (:data:`SELECT_TIMEOUT_S`), accepts one connection per ready event,
counts it in :class:`ConnectionQuotas` (which may block it while ``max.connections`` is reached, or reject it for
``max.connections.per.ip``), and hands it to a processor with :func:`assign_new_connection`: round-robin, trying a
non-blocking put on each processor and blocking only on the last one when every queue is full. Every blocked
nanosecond is marked on ``kafka.network:type=Acceptor,name=AcceptorBlockedPercent,listener=<L>``
(``ControlPlaneAcceptorBlockedPercent`` for the control plane; the KIP-402 draft called it AcceptorIdlePercent).
"""

from __future__ import annotations

import errno
import selectors
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Final, Protocol

from broker.log4j import Log4j
from broker.metrics.registry import Meter
from broker.network.quotas import ConnectionQuotas, QuotaWaitInterrupted, TooManyConnections

__all__ = ["Acceptor", "ConnectionTaker", "assign_new_connection"]

# Kafka's acceptor selects for at most 500 ms so it notices shutdown promptly.
SELECT_TIMEOUT_S: Final = 0.5
# Like trio's serve_listeners: running out of descriptors or memory is transient; log, back off, retry.
CAPACITY_ERRNOS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
CAPACITY_BACKOFF_S: Final = 0.1
# The listen backlog (Kafka 3.2+ socket.listen.backlog.size defaults to 50; Java's default too). Larger here so a
# connection storm queues in the kernel rather than being refused before the acceptor can apply its own policy.
LISTEN_BACKLOG: Final = 1024


class ConnectionTaker(Protocol):
    """The part of a processor the acceptor uses (tests pass fakes)."""

    def accept(self, sock: socket.socket, address: str, may_block: bool, blocked_meter: Meter | None) -> bool: ...


def assign_new_connection(
    processors: Sequence[ConnectionTaker],
    current_index: int,
    sock: socket.socket,
    address: str,
    blocked_meter: Meter | None,
) -> tuple[int, bool]:
    """Kafka's round-robin: try each processor once without blocking; block on the last one tried.

    Returns (next current_index, assigned). ``assigned`` is False only when the blocking put was abandoned
    (shutdown).
    """
    retries_left = len(processors)
    while True:
        retries_left -= 1
        processor = processors[current_index % len(processors)]
        current_index = (current_index % len(processors)) + 1
        may_block = retries_left == 0
        if processor.accept(sock, address, may_block, blocked_meter):
            return current_index, True
        if may_block:
            return current_index, False


class Acceptor(threading.Thread):
    """Accepts connections on one listener and spreads them over that listener's processors."""

    def __init__(
        self,
        listener: str,
        host: str,
        port: int,
        processors: Sequence[ConnectionTaker],
        quotas: ConnectionQuotas,
        blocked_meter: Meter,
        thread_name: str,
        log4j: Log4j,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        super().__init__(name=thread_name, daemon=True)
        self.listener = listener
        self.processors = list(processors)
        self._quotas = quotas
        self._meter = blocked_meter
        self._clock = clock
        self._log = log4j.get_logger("kafka.network.Acceptor")
        self._running = True
        self._index = 0
        self.server_socket = self._open_server_socket(host, port)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.server_socket, selectors.EVENT_READ)
        self.rejected_total = 0

    @staticmethod
    def _open_server_socket(host: str, port: int) -> socket.socket:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
        except OSError as e:
            sock.close()
            raise OSError(e.errno, f"Socket server failed to bind to {host}:{port}: {e.strerror}.") from None
        return sock

    @property
    def bound_port(self) -> int:
        return int(self.server_socket.getsockname()[1])

    def shutdown(self) -> None:
        self._running = False

    def run(self) -> None:
        try:
            while self._running:
                try:
                    for _key, _mask in self._selector.select(SELECT_TIMEOUT_S):
                        self._accept_one()
                except Exception:
                    if self._running:
                        self._log.error("Error occurred", exc_info=True)
        finally:
            self._selector.close()
            self.server_socket.close()

    def _accept_one(self) -> None:
        try:
            sock, addr = self.server_socket.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            if e.errno in CAPACITY_ERRNOS:
                self._log.error(f"Error occurred while accepting connection: {e}")
                time.sleep(CAPACITY_BACKOFF_S)
                return
            raise
        address = str(addr[0])
        try:
            self._quotas.inc(self.listener, address, self._meter, lambda: self._running)
        except TooManyConnections as e:
            self.rejected_total += 1
            self._log.info(
                f"Rejected connection from /{e.address}, address already has the configured maximum of "
                f"{e.limit} connections."
            )
            sock.close()
            return
        except QuotaWaitInterrupted:
            sock.close()
            return
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        except OSError:
            sock.close()
            self._quotas.dec(self.listener, address)
            return
        self._index, assigned = assign_new_connection(self.processors, self._index, sock, address, self._meter)
        if not assigned:
            sock.close()
            self._quotas.dec(self.listener, address)
