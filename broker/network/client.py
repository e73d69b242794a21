"""A blocking Kafka client connection: one request in flight, used by the broker's own outbound channels (and by the
roll probe's DescribeQuorum, :mod:`api.kafka_admin`).

The controller's channel to each broker (:mod:`broker.controller.channel`) and each replica fetcher's connection to
its leader (:mod:`broker.fetcher.thread`) talk to a single peer, one request at a time, from one thread. A
:class:`BlockingClient` is that connection:

* :meth:`~BlockingClient.connect` opens a TCP connection (``TCP_NODELAY``; TLS when given a context) with the
  client's timeout, which is also the timeout of every later send and receive on it;
* :meth:`~BlockingClient.encode` frames a request (header with the client id and the caller's correlation id);
  :meth:`~BlockingClient.round_trip` sends a framed request (connecting first when needed), reads the size-prefixed
  response, refuses a size above :data:`MAX_RESPONSE_BYTES`, decodes it with :mod:`broker.protocol` and checks its
  correlation id; the caller picks the correlation ids;
* any failure (connect, send, receive, timeout, a peer that closes, an oversized, malformed or mismatched response,
  a body that cannot be encoded) closes the connection and raises :class:`ClientError`; the next call reconnects.
  Retries, backoff and logging are the caller's.

:meth:`~BlockingClient.abort` may be called from another thread to wake a send or receive blocked on the socket;
:meth:`~BlockingClient.close` may be too (it also releases the socket).
"""

from __future__ import annotations

import socket
import ssl
import struct
from typing import Any, Protocol

from broker.protocol import ProtocolError, decode_response, encode_request

__all__ = ["MAX_RESPONSE_BYTES", "BlockingClient", "ClientError", "HostPort", "with_correlation_id"]

# The largest response frame (without its 4-byte size prefix) a BlockingClient reads; a larger (or negative) size
# prefix is a corrupt stream: the connection is closed. The biggest response asked for is a follower's Fetch: at most
# replica.fetch.response.max.bytes (FetchSettings.max_bytes, 10 MiB) of batches, or, when the first partition's next
# batch is larger, that one batch (KIP-74). A batch is at most as large as the produce request that brought it, and
# the broker refuses requests above socket.request.max.bytes (100 MiB by default), so a Fetch response stays below
# 110 MiB plus per-partition headers. 256 MiB leaves room for that (the controller's 100 MiB would not); control
# responses are far smaller. The frame is read as it arrives: a bogus size prefix does not allocate its size up front.
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
# Largest single recv() while reading a response frame.
_RECV_CHUNK_BYTES = 1 << 20
_I32 = struct.Struct(">i")
# Offsets of the correlation id in a framed request: size(4) api_key(2) api_version(2) correlation_id(4).
_CORRELATION_START, _CORRELATION_END = 8, 12


class HostPort(Protocol):
    """Where a :class:`BlockingClient` connects: a controller's ``BrokerNode``, a follower's ``BrokerEndPoint``."""

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...


class ClientError(ConnectionError):
    """A request over a :class:`BlockingClient` failed; the connection is closed (the next call reconnects)."""


def with_correlation_id(frame: bytes, correlation_id: int) -> bytes:
    """A framed request with another correlation id: size(4) api_key(2) api_version(2) correlation_id(4) ...

    Every request header version starts this way, so one serialized request (the cached UpdateMetadata payload
    shared by all brokers) can go to many connections with their own correlation ids.
    """
    if len(frame) < _CORRELATION_END:
        raise ValueError("not a framed request")
    return frame[:_CORRELATION_START] + _I32.pack(correlation_id) + frame[_CORRELATION_END:]


def _error(exc: Exception) -> ClientError:
    return ClientError(str(exc) or type(exc).__name__)


class BlockingClient:
    """A blocking connection to one Kafka listener, one request at a time (see the module docstring).

    Args:
        endpoint: the peer's listener.
        peer: how error messages name the peer (``broker 1``, ``leader 2``).
        client_id: the ``client_id`` of every request header.
        timeout_s: connect timeout, and timeout of each send and receive.
        tls: when given, the connection is TLS (an SSL listener) with this context.
    """

    def __init__(self, endpoint: HostPort, *, peer: str, client_id: str, timeout_s: float,
                 tls: ssl.SSLContext | None = None) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be > 0")
        self.host = endpoint.host
        self.port = endpoint.port
        self.peer = peer
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.tls = tls
        self._sock: socket.socket | None = None

    @property
    def connected(self) -> bool:
        """True while a connection is open (it may still turn out dead on the next request)."""
        return self._sock is not None

    def connect(self) -> bool:
        """Open the connection unless it is open; True when this call opened it.

        Raises:
            ClientError: the connection could not be made in time.
        """
        if self._sock is not None:
            return False
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        except OSError as exc:
            raise _error(exc) from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_hostname=self.host)
        except OSError as exc:
            sock.close()
            raise _error(exc) from exc
        self._sock = sock
        return True

    def encode(self, api_key: int, version: int, correlation_id: int, body: dict[str, Any]) -> bytes:
        """The framed request (header with this client's id).

        Raises:
            ClientError: ``body`` does not fit the request schema (the connection is closed, as for any failure).
        """
        try:
            return encode_request(api_key, version, correlation_id, self.client_id, body)
        except ProtocolError as exc:
            self.close()
            raise _error(exc) from exc

    def round_trip(self, api_key: int, version: int, correlation_id: int, frame: bytes) -> dict[str, Any]:
        """Send a framed request (connecting first when needed) and return the decoded response body.

        Args:
            frame: the request with its size prefix, whose header carries ``api_key``, ``version`` and
                ``correlation_id``.

        Raises:
            ClientError: see the module docstring; the connection is closed.
        """
        self.connect()
        try:
            payload = self._exchange(frame)
            corr, body = decode_response(api_key, version, payload)
        except ClientError:
            self.close()
            raise
        except (OSError, ProtocolError) as exc:
            self.close()
            raise _error(exc) from exc
        if corr != correlation_id:
            self.close()
            raise ClientError(f"correlation id {corr} does not match the request's {correlation_id}")
        return body

    def _exchange(self, frame: bytes) -> bytes:
        sock = self._sock  # a local: close() from another thread must not pull the socket out mid-read
        if sock is None:
            raise ClientError(f"connection to {self.peer} closed")
        sock.sendall(frame)
        size = _I32.unpack(self._read(sock, 4))[0]
        if not 0 <= size <= MAX_RESPONSE_BYTES:
            raise ClientError(f"invalid response size {size}")
        return self._read(sock, size)

    def _read(self, sock: socket.socket, n: int) -> bytes:
        chunks: list[bytes] = []
        left = n
        while left:
            chunk = sock.recv(min(left, _RECV_CHUNK_BYTES))
            if not chunk:
                raise ClientError(f"connection closed by {self.peer}")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def abort(self) -> None:
        """Wake a send or receive blocked in another thread; it fails, and that thread closes the connection.

        A shutdown, not a close: closing a socket does not interrupt a ``recv`` blocked on it.
        """
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        """Close the connection (no-op when closed); safe to call from another thread, which it wakes."""
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
