"""A network processor thread (Kafka's ``SocketServer.Processor``): one selector, many connections.

Theory of operation
-------------------
The acceptor hands each accepted socket to a processor through that processor's bounded queue of new connections
(:data:`CONNECTION_QUEUE_SIZE`, KIP-402). The processor loop is a list of named steps, as in Kafka::

    configure_new_connections   register at most CONNECTION_QUEUE_SIZE queued sockets with the selector
    process_new_responses       take responses the handlers queued; start sending (or unmute for "no response")
    poll                        select (300 ms, 0 when work is pending); read, frame, write; idle expiry
    process_completed_receives  parse each complete frame's header, hand the request to the RequestChannel
    process_completed_sends     a response is fully written: metrics + request log, then unmute
    process_disconnected        drop connections the peer closed or that failed
    close_excess_connections    over max.connections and not the protected listener: close the LRU connection

**Muting** keeps one request in flight per connection: after a complete frame is handed over, the connection is not
read again (and further frames already buffered wait) until its response has been written. The hand-over is
``RequestChannel.send_request``, which **blocks** this thread when the request queue is full, exactly like Kafka's
``requestQueue.put``: backpressure reaches the clients through TCP.

**Bad input** closes only the offending connection: a size prefix above ``socket.request.max.bytes`` or negative,
a header that cannot be parsed, an unknown API key, a known API in a version this broker does not speak (Kafka's
``InvalidRequestException``: the connection is closed without an answer). ApiVersions in an unsupported version is
the exception: Kafka's v0 error answer (``error_response``) and the connection stays open (clients retry with a lower
version, KIP-511). Each case is counted (``invalid-request-total`` on the processor's
socket-server-metrics MBean, planewatch-specific) and logged in server.log. Any other exception in a step is logged
with its traceback and the loop goes on: a processor thread never dies of one connection.
"""

from __future__ import annotations

import collections
import queue
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from broker.log4j import KafkaLogger, Log4j
from broker.metrics.registry import Meter, MetricName, MetricsRegistry
from broker.network.channel import RequestChannel
from broker.network.idle import IoWaitRatio
from broker.network.quotas import ConnectionQuotas
from broker.network.request import Request, Response
from broker.network.request_metrics import RequestMetrics
from broker.protocol import (
    SUPPORTED,
    ApiKey,
    CorruptRequest,
    ErrorCode,
    FrameDecoder,
    FrameTooLarge,
    ProtocolError,
    UnsupportedVersion,
    decode_request,
    error_response,
    parse_request_header,
)

__all__ = ["CONNECTION_QUEUE_SIZE", "Processor"]

# KIP-402: each processor accepts at most this many queued new connections, and registers at most this many per
# loop pass, so a connection storm is spread over processors and cannot starve requests on existing connections.
CONNECTION_QUEUE_SIZE: Final = 20
# Kafka's processor polls its selector for at most 300 ms, so shutdown and new work are noticed quickly.
POLL_TIMEOUT_S: Final = 0.3
# One recv() per readable connection per pass; 64 KiB covers every control request and keeps passes fair.
RECEIVE_CHUNK: Final = 65536
# A processor blocked on a full new-connection queue... is the acceptor; this is its re-check interval at shutdown.
PUT_SLICE_S: Final = 0.1
# Kafka's connection index wraps at Int.MaxValue.
_INT_MAX: Final = 2**31 - 1


def _client_software(frame: bytes, current: tuple[str, str]) -> tuple[str, str]:
    """ClientSoftwareName/Version of an ApiVersions v3+ request (KIP-511); ``current`` when absent or garbled."""
    try:
        _header, body = decode_request(frame)
    except ProtocolError:
        return current
    name, version = body.get("client_software_name"), body.get("client_software_version")
    return (str(name), str(version)) if name and version else current


@dataclass(slots=True, eq=False)
class _Conn:
    id: str
    sock: socket.socket
    address: str
    decoder: FrameDecoder
    frames: collections.deque[bytes] = field(default_factory=collections.deque)
    send_buf: memoryview | None = None
    inflight: tuple[Request, Response] | None = None  # the response being written
    muted: bool = False  # a request of this connection is with the handlers
    events: int = 0  # selector interest currently registered (0 = unregistered)
    last_active_ns: int = 0
    client_software: tuple[str, str] = ("unknown", "unknown")  # KIP-511, from ApiVersions v3+


class Processor(threading.Thread):
    """One network thread of one listener (see the module docstring)."""

    def __init__(
        self,
        processor_id: int,
        listener: str,
        security_protocol: str,
        thread_name: str,
        request_channel: RequestChannel,
        quotas: ConnectionQuotas,
        request_metrics: RequestMetrics,
        registry: MetricsRegistry,
        log4j: Log4j,
        max_request_size: int,
        connections_max_idle_ms: int,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        super().__init__(name=thread_name, daemon=True)
        self.id = processor_id
        self.listener = listener
        self.security_protocol = security_protocol
        self._channel = request_channel
        self._quotas = quotas
        self._request_metrics = request_metrics
        self._clock = clock
        self._max_request_size = max_request_size
        self._idle_ns = connections_max_idle_ms * 1_000_000
        self._log = log4j.get_logger("kafka.network.Processor")
        self._request_log: KafkaLogger = log4j.get_logger("kafka.request.logger")
        self.new_connections: queue.Queue[tuple[socket.socket, str]] = queue.Queue(maxsize=CONNECTION_QUEUE_SIZE)
        self._responses: collections.deque[tuple[Request, Response]] = collections.deque()
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._conns: collections.OrderedDict[str, _Conn] = collections.OrderedDict()  # LRU order: oldest first
        self._index = 0
        self._running = True
        self._completed_sends: list[_Conn] = []
        self._ready: dict[str, _Conn] = {}  # connections with a buffered frame and nothing in flight
        self._disconnected: list[_Conn] = []
        self.io_wait = IoWaitRatio(clock)
        self.connection_creation_total = 0
        self.connection_close_total = 0
        self.invalid_request_total = 0
        self.idle_expired_total = 0
        self._registry = registry
        self._register_metrics()

    # -- metrics --------------------------------------------------------------------------------------------------
    def _metric_names(self) -> tuple[MetricName, MetricName]:
        idle = MetricName.of("kafka.network", "Processor", "IdlePercent", networkProcessor=self.id)
        sock = MetricName("kafka.server", "socket-server-metrics", "",
                          (("listener", self.listener), ("networkProcessor", str(self.id))))
        return idle, sock

    def _register_metrics(self) -> None:
        idle, sock = self._metric_names()
        self._registry.gauge(idle, self.io_wait.ratio)
        self._registry.gauge(sock, lambda: len(self._conns), "connection-count")
        self._registry.gauge(sock, lambda: self.connection_creation_total, "connection-creation-total")
        self._registry.gauge(sock, lambda: self.connection_close_total, "connection-close-total")
        self._registry.gauge(sock, self.io_wait.ratio, "io-wait-ratio")
        self._registry.gauge(sock, lambda: 0.0, "expired-connections-killed-count")  # KIP-368 re-auth: no SASL here
        self._registry.gauge(sock, lambda: self.invalid_request_total, "invalid-request-total")

    def connection_count(self) -> int:
        """Connections registered with this processor's selector."""
        return len(self._conns)

    def response_queue_size(self) -> int:
        return len(self._responses)

    # -- called from other threads --------------------------------------------------------------------------------
    def accept(self, sock: socket.socket, address: str, may_block: bool, blocked_meter: Meter | None) -> bool:
        """Queue a new connection (Kafka's ``Processor.accept``): non-blocking unless ``may_block``.

        Returns False when the queue is full and ``may_block`` is false (the acceptor then tries the next processor),
        or when the processor stops while the acceptor is blocked.
        """
        try:
            self.new_connections.put_nowait((sock, address))
        except queue.Full:
            if not may_block:
                return False
            start = self._clock()
            try:
                while True:
                    try:
                        self.new_connections.put((sock, address), timeout=PUT_SLICE_S)
                        break
                    except queue.Full:
                        if not self._running:
                            return False
            finally:
                if blocked_meter is not None:
                    blocked_meter.mark(self._clock() - start)
        self.wakeup()
        return True

    def enqueue_response(self, request: Request, response: Response) -> None:
        """Called by handler threads (through the RequestChannel)."""
        self._responses.append((request, response))
        self.wakeup()

    def wakeup(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass  # the pipe is full (a wake-up is pending anyway) or closed at shutdown

    def shutdown(self) -> None:
        """Stop the loop; run() then closes every connection."""
        self._running = False
        self.wakeup()

    # -- the loop -------------------------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            while self._running:
                try:
                    self.configure_new_connections()
                    self.process_new_responses()
                    self.poll()
                    self.process_completed_receives()
                    self.process_completed_sends()
                    self.process_disconnected()
                    self.close_excess_connections()
                except Exception:
                    self._log.error("Processor got uncaught exception.", exc_info=True)
        finally:
            self._close_all()

    def configure_new_connections(self) -> None:
        for _ in range(CONNECTION_QUEUE_SIZE):
            try:
                sock, address = self.new_connections.get_nowait()
            except queue.Empty:
                return
            try:
                local = sock.getsockname()
                remote = sock.getpeername()
                conn_id = f"{local[0]}:{local[1]}-{remote[0]}:{remote[1]}-{self._index}"
                self._index = 0 if self._index >= _INT_MAX else self._index + 1
                conn = _Conn(conn_id, sock, address, FrameDecoder(self._max_request_size), last_active_ns=self._clock())
                self._conns[conn_id] = conn
                self._set_interest(conn)
                self.connection_creation_total += 1
            except Exception as e:
                self._log.error(f"Processor {self.id} closed connection from {address}: {e}")
                self._close_socket(sock, address)

    def process_new_responses(self) -> None:
        while self._responses:
            request, response = self._responses.popleft()
            request.response_dequeue_ns = self._clock()
            conn = self._conns.get(request.connection_id)
            if conn is None:
                continue  # closed meanwhile (Kafka: no open connection for the response)
            if response.frame is None:  # NoOpResponse / CloseConnectionResponse
                self._record(request, response)
                if response.close:
                    self._close(conn)
                else:
                    conn.muted = False
                    self._mark_ready(conn)
                    self._set_interest(conn)
                continue
            conn.inflight = (request, response)
            conn.send_buf = memoryview(response.frame)
            # Try the write now: a response usually fits the socket buffer, which saves a select round trip (and a
            # GIL hand-over) per request; what does not fit is finished by poll() when the socket is writable.
            self._write(conn)
            self._set_interest(conn)

    def _mark_ready(self, conn: _Conn) -> None:
        if conn.frames and not conn.muted and conn.inflight is None:
            self._ready[conn.id] = conn

    def poll(self) -> None:
        pending = bool(self._responses or self._ready or self._completed_sends) or not self.new_connections.empty()
        timeout = 0.0 if pending else POLL_TIMEOUT_S
        start = self._clock()
        events = self._selector.select(timeout)
        self.io_wait.record(self._clock() - start)
        now = self._clock()
        for key, mask in events:
            conn = key.data
            if conn is None:
                self._drain_wakeups()
                continue
            assert isinstance(conn, _Conn)
            if conn.id not in self._conns:
                continue
            self._conns.move_to_end(conn.id)
            conn.last_active_ns = now
            if mask & selectors.EVENT_WRITE:
                self._write(conn)
            if mask & selectors.EVENT_READ and conn.id in self._conns:
                self._read(conn)
        self._expire_idle(now)

    def _drain_wakeups(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _read(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(RECEIVE_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._disconnected.append(conn)
            return
        if not data:
            self._disconnected.append(conn)
            return
        try:
            conn.frames.extend(conn.decoder.feed(data))
        except FrameTooLarge as e:
            self._invalid(conn, e)
            return
        self._mark_ready(conn)
        self._set_interest(conn)

    def _write(self, conn: _Conn) -> None:
        buf = conn.send_buf
        if buf is None:
            return
        try:
            sent = conn.sock.send(buf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._disconnected.append(conn)
            return
        if sent >= len(buf):
            conn.send_buf = None
            self._completed_sends.append(conn)
        else:
            conn.send_buf = buf[sent:]

    def _expire_idle(self, now: int) -> None:
        # Kafka's Selector.maybeCloseOldestConnection: the LRU order makes the check O(expired connections).
        # A connection with a request in flight is not idle (it waits for the broker, not the other way round).
        expired = []
        for conn in self._conns.values():
            if conn.muted or conn.inflight is not None or conn.frames:
                continue
            if now - conn.last_active_ns <= self._idle_ns:
                break
            expired.append(conn)
        for conn in expired:
            self.idle_expired_total += 1
            self._close(conn)

    def process_completed_receives(self) -> None:
        ready, self._ready = self._ready, {}
        for conn in ready.values():
            if conn.id not in self._conns or not conn.frames or conn.muted or conn.inflight is not None:
                continue
            frame = conn.frames.popleft()
            self._handle_frame(conn, frame)

    def _handle_frame(self, conn: _Conn, frame: bytes) -> None:
        try:
            header = parse_request_header(frame)
        except CorruptRequest as e:
            self._invalid(conn, e)
            return
        request = Request(
            self.id, conn.id, self.listener, self.security_protocol, conn.address, frame, header, self._clock()
        )
        supported = SUPPORTED.get(header.api_key)
        if supported is None:
            self._invalid(conn, CorruptRequest(f"Unknown API key {header.api_key}"))
            return
        if not supported[0] <= header.api_version <= supported[1]:
            answer = (error_response(header, ErrorCode.UNSUPPORTED_VERSION) if header.api_key == ApiKey.API_VERSIONS
                      else None)
            if answer is None:
                self._invalid(conn, UnsupportedVersion(header, supported))
                return
            self.invalid_request_total += 1
            request.dequeue_ns = request.api_local_complete_ns = request.response_complete_ns = request.start_ns
            conn.muted = True
            # the request log shows it as Kafka does: an empty request, the v0 answer with ApiVersions' own range
            answer_json = {"errorCode": int(ErrorCode.UNSUPPORTED_VERSION),
                           "apiKeys": [{"apiKey": int(ApiKey.API_VERSIONS), "minVersion": supported[0],
                                        "maxVersion": supported[1]}]}
            self._responses.append((request, Response(answer, error_codes=(int(ErrorCode.UNSUPPORTED_VERSION),),
                                                      request_json={}, response_json=answer_json)))
            return
        if header.api_key == ApiKey.API_VERSIONS and header.api_version >= 3:
            conn.client_software = _client_software(frame, conn.client_software)
        request.client_software_name, request.client_software_version = conn.client_software
        conn.muted = True
        self._set_interest(conn)
        if not self._channel.send_request(request, lambda: self._running):
            return  # shutting down

    def process_completed_sends(self) -> None:
        sends, self._completed_sends = self._completed_sends, []
        for conn in sends:
            if conn.id not in self._conns or conn.inflight is None:
                continue
            request, response = conn.inflight
            conn.inflight = None
            conn.last_active_ns = self._clock()
            self._conns.move_to_end(conn.id)
            self._record(request, response)
            if response.close:
                self._close(conn)
                continue
            conn.muted = False
            self._mark_ready(conn)
            self._set_interest(conn)

    def process_disconnected(self) -> None:
        gone, self._disconnected = self._disconnected, []
        for conn in gone:
            if conn.id in self._conns:
                self._close(conn)

    def close_excess_connections(self) -> None:
        if self._conns and self._quotas.max_connections_exceeded(self.listener):
            oldest = next(iter(self._conns.values()))
            self._close(oldest)

    # -- helpers --------------------------------------------------------------------------------------------------
    def _record(self, request: Request, response: Response) -> None:
        # Metrics and the request log must never leave a connection muted: a handler's unprintable request_json,
        # say, is logged and the connection carries on.
        try:
            self._request_metrics.record(request, response, self._clock(), self._request_log)
        except Exception:
            self._log.error(f"Failed to record metrics for {request.header} on {request.connection_id}", exc_info=True)

    def _invalid(self, conn: _Conn, error: Exception) -> None:
        self.invalid_request_total += 1
        self._log_closing(conn.id, error)
        self._close(conn)

    def _log_closing(self, conn_id: str, error: Exception) -> None:
        # Kafka: error(s"Closing socket for $channelId because of error", e) -- the line, then the exception below it
        # (log4j prints the throwable after the layout; Python's traceback text stands in for Java's stack trace).
        try:
            raise error
        except Exception:
            self._log.error(f"Closing socket for {conn_id} because of error", exc_info=True)

    def _set_interest(self, conn: _Conn) -> None:
        want = 0
        if not conn.muted and conn.inflight is None and not conn.frames:
            want |= selectors.EVENT_READ
        if conn.send_buf is not None:
            want |= selectors.EVENT_WRITE
        if want == conn.events:
            return
        if conn.events == 0:
            self._selector.register(conn.sock, want, conn)
        elif want == 0:
            self._selector.unregister(conn.sock)
        else:
            self._selector.modify(conn.sock, want, conn)
        conn.events = want

    def _close(self, conn: _Conn) -> None:
        if self._conns.pop(conn.id, None) is None:
            return
        self._ready.pop(conn.id, None)
        if conn.events:
            try:
                self._selector.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
            conn.events = 0
        self.connection_close_total += 1
        self._close_socket(conn.sock, conn.address)

    def _close_socket(self, sock: socket.socket, address: str) -> None:
        try:
            sock.close()
        finally:
            self._quotas.dec(self.listener, address)

    def close_unstarted(self) -> None:
        """Release the selector, wake-up pipe and queued sockets of a processor whose thread never ran."""
        if self.ident is None:
            self._running = False
            self._close_all()

    def _close_all(self) -> None:
        for conn in list(self._conns.values()):
            self._close(conn)
        while True:
            try:
                sock, address = self.new_connections.get_nowait()
            except queue.Empty:
                break
            self._close_socket(sock, address)
        self._channel.remove_processor(self.id)
        idle, sock_metrics = self._metric_names()
        self._registry.remove(idle)
        self._registry.remove(sock_metrics)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
