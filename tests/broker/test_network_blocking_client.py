"""The broker's blocking client against a scripted peer: answers, and every way a response can go wrong."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from broker.network.client import MAX_RESPONSE_BYTES, BlockingClient, ClientError
from broker.protocol import ApiKey, encode_request
from broker.protocol.api import encode_response
from broker.protocol.headers import RequestHeader
from broker.state.model import BrokerEndPoint
from tests.polling import wait_until

_I32 = struct.Struct(">i")
API_VERSIONS = int(ApiKey.API_VERSIONS)
REQUEST = {"client_software_name": "t", "client_software_version": "1"}

# Given the request frame (without size prefix), the bytes to write back (None: write nothing, keep the socket open;
# b"": close the connection).
Script = Callable[[bytes], bytes | None]


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


@contextmanager
def peer(script: Script) -> Iterator[tuple[int, list[socket.socket]]]:
    """A listener on 127.0.0.1 answering each request of each connection with ``script``."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        try:
            while True:
                request = _recv_exact(conn, _I32.unpack(_recv_exact(conn, 4))[0])
                answer = script(request)
                if answer == b"":
                    conn.close()
                    return
                if answer is not None:
                    conn.sendall(answer)
        except OSError:
            pass

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn)
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield server.getsockname()[1], accepted
    finally:
        stop.set()
        acceptor.join(5)
        for conn in accepted:
            conn.close()
        server.close()


def api_versions_answer(request: bytes, correlation_shift: int = 0) -> bytes:
    corr = _I32.unpack_from(request, 4)[0] + correlation_shift
    header = RequestHeader(API_VERSIONS, 0, corr, None)
    return encode_response(header, {"error_code": 0, "api_keys": []})


def client(port: int, timeout_s: float = 2.0) -> BlockingClient:
    return BlockingClient(BrokerEndPoint(9, "127.0.0.1", port), peer="broker 9", client_id="test", timeout_s=timeout_s)


def test_round_trips_with_the_callers_correlation_ids_and_reconnects_after_close() -> None:
    seen: list[bytes] = []

    def script(request: bytes) -> bytes:
        seen.append(request)
        return api_versions_answer(request)

    with peer(script) as (port, accepted):
        c = client(port)
        assert c.connect() is True
        assert c.connect() is False
        for corr in (0, 1):
            frame = c.encode(API_VERSIONS, 0, corr, {})
            assert c.round_trip(API_VERSIONS, 0, corr, frame) == {"error_code": 0, "api_keys": []}
        c.close()
        assert not c.connected
        assert c.round_trip(API_VERSIONS, 0, 7, c.encode(API_VERSIONS, 0, 7, {}))["error_code"] == 0  # reconnects
        c.close()
        assert len(accepted) == 2
    assert [_I32.unpack_from(r, 4)[0] for r in seen] == [0, 1, 7]
    assert seen[0] == encode_request(API_VERSIONS, 0, 0, "test", {})[4:]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (_I32.pack(MAX_RESPONSE_BYTES + 1), f"invalid response size {MAX_RESPONSE_BYTES + 1}"),
        (_I32.pack(-1), "invalid response size -1"),
        (_I32.pack(3) + b"\x00\x00\x00", "Error reading response header"),
        (_I32.pack(6) + b"\x00\x00\x00\x00\xff\xff", "Error reading ApiVersionsResponse"),
        (_I32.pack(11) + bytes(11), "1 unexpected trailing bytes"),
    ],
)
def test_oversized_or_malformed_responses_close_the_connection(answer: bytes, message: str) -> None:
    with peer(lambda _request: answer) as (port, _):
        c = client(port)
        with pytest.raises(ClientError, match=message):
            c.round_trip(API_VERSIONS, 0, 0, c.encode(API_VERSIONS, 0, 0, {}))
        assert not c.connected


def test_mismatched_correlation_id_closes_the_connection() -> None:
    with peer(lambda request: api_versions_answer(request, correlation_shift=1)) as (port, _):
        c = client(port)
        with pytest.raises(ClientError, match="correlation id 6 does not match the request's 5"):
            c.round_trip(API_VERSIONS, 0, 5, c.encode(API_VERSIONS, 0, 5, {}))
        assert not c.connected


def test_a_peer_that_stops_mid_response_times_out() -> None:
    with peer(lambda request: api_versions_answer(request)[:3]) as (port, _):  # 3 of the 4 size bytes, then silence
        c = client(port, timeout_s=0.3)
        started = time.monotonic()
        with pytest.raises(ClientError, match="timed out"):
            c.round_trip(API_VERSIONS, 0, 0, c.encode(API_VERSIONS, 0, 0, {}))
        assert time.monotonic() - started < 2
        assert not c.connected


def test_a_peer_that_closes_fails_the_request() -> None:
    with peer(lambda _request: b"") as (port, _):
        c = client(port)
        with pytest.raises(ClientError, match="connection closed by broker 9"):
            c.round_trip(API_VERSIONS, 0, 0, c.encode(API_VERSIONS, 0, 0, {}))
        assert not c.connected


def test_connect_failures_and_unencodable_bodies_raise_the_one_error_type() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        with pytest.raises(ClientError, match="refused"):
            client(port).connect()
    with peer(api_versions_answer) as (port, _):
        c = client(port)
        c.connect()
        with pytest.raises(ClientError):
            c.encode(API_VERSIONS, 3, 0, {"client_software_name": 5})
        assert not c.connected


@pytest.mark.parametrize("stop", ["abort", "close"])
def test_abort_and_close_wake_a_receive_blocked_in_another_thread(stop: str) -> None:
    requests: list[bytes] = []
    with peer(lambda request: requests.append(request)) as (port, _):  # None: never answered
        c = client(port, timeout_s=60)
        c.connect()
        errors: list[BaseException] = []

        def call() -> None:
            try:
                c.round_trip(API_VERSIONS, 0, 0, c.encode(API_VERSIONS, 0, 0, {}))
            except BaseException as exc:
                errors.append(exc)

        t = threading.Thread(target=call)
        t.start()
        wait_until(lambda: requests, what="the request at the peer (the call now waits for its answer)")
        started = time.monotonic()
        getattr(c, stop)()
        t.join(5)
        assert not t.is_alive()
        assert time.monotonic() - started < 3
        assert len(errors) == 1
        assert isinstance(errors[0], ClientError)
        assert not c.connected
