"""Malformed and oversized frames against a real reference broker on 127.0.0.1: each closes only its own connection,
and another connection keeps being answered."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.protocol import REGISTRY, SUPPORTED, encode_request
from broker.server import KafkaServer
from tests.broker.data_plane_helpers import broker
from tests.broker.network_helpers import API_VERSIONS, Client
from tests.fuzz.budget import examples
from tests.fuzz.strategies import body_of

pytestmark = [pytest.mark.fuzz, pytest.mark.integration]

MAX_REQUEST = 65536  # socket.request.max.bytes of the broker under test


def _framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@st.composite
def _truncated_request(draw: st.DrawFn) -> bytes:
    """A valid request of a supported API/version cut short: garbled before its end, whatever the cut."""
    api_key = draw(st.sampled_from(sorted(SUPPORTED)))
    version = draw(st.integers(*SUPPORTED[api_key]))
    payload = encode_request(api_key, version, 1, draw(st.text(max_size=8)),
                             draw(body_of(REGISTRY[api_key][0], version)))[4:]
    return _framed(payload[:draw(st.integers(0, len(payload) - 1))])


def _unsupported_version() -> st.SearchStrategy[bytes]:
    keys = sorted(k for k in SUPPORTED if k != API_VERSIONS)  # ApiVersions answers an unknown version (KIP-511)
    return st.tuples(st.sampled_from(keys), st.integers(-(2**15), 2**15 - 1), st.binary(max_size=32)).filter(
        lambda t: not SUPPORTED[t[0]][0] <= t[1] <= SUPPORTED[t[0]][1]).map(
        lambda t: _framed(struct.pack(">hhih", t[0], t[1], 7, -1) + t[2]))


malformed_frames = st.one_of(
    st.integers(MAX_REQUEST + 1, 2**31 - 1).map(lambda n: struct.pack(">i", n) + b"\x00" * 8),  # oversized
    st.integers(-(2**31), -1).map(lambda n: struct.pack(">i", n)),  # negative size
    st.binary(max_size=7).map(_framed),  # shorter than any request header
    st.tuples(st.integers(-(2**15), 2**15 - 1).filter(lambda k: k not in SUPPORTED), st.binary(max_size=32)).map(
        lambda t: _framed(struct.pack(">hhih", t[0], 0, 7, -1) + t[1])),  # unknown API key
    _unsupported_version(),
    _truncated_request(),
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaServer]:
    tmp: Path = tmp_path_factory.mktemp("fuzz-broker")
    with broker(tmp, socket__request__max__bytes=MAX_REQUEST) as running:
        yield running


@pytest.fixture(scope="module")
def healthy(server: KafkaServer) -> Iterator[Client]:
    client = Client(server.bound_port("PLAINTEXT"))
    try:
        yield client
    finally:
        client.close()


@settings(max_examples=examples(30), deadline=None)  # a connection's close is awaited (polled) within 5 s
@given(wire=malformed_frames)
def test_a_malformed_frame_closes_only_its_connection(server: KafkaServer, healthy: Client, wire: bytes) -> None:
    bad = Client(server.bound_port("PLAINTEXT"))
    try:
        bad.sock.sendall(wire)
        assert bad.closed_by_peer(), f"connection not closed after {wire[:64]!r}"
    finally:
        bad.close()
    assert healthy.call(API_VERSIONS, 3, {"client_software_name": "fuzz", "client_software_version": "1"})[
        "error_code"] == 0
