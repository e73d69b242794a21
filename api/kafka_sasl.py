"""SASL authentication of a blocking Kafka connection (KIP-152: SaslHandshake v1, then SaslAuthenticate frames), for
the requests librdkafka does not offer (DescribeQuorum, :mod:`api.kafka_admin`) on a cluster whose listeners require
SASL: the PLAIN mechanism (RFC 4616) and SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677; KIP-84), the ones Apache
Kafka's brokers offer with a username and password.

The SCRAM exchange is pure (:class:`Scram`: messages in, messages out); :func:`authenticate` sends it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from broker.protocol.api_keys import ApiKey

__all__ = ["MECHANISMS", "SaslError", "Scram", "authenticate", "plain_token"]

# SaslHandshake v1: the SASL tokens then travel in SaslAuthenticate requests (KIP-152), not as raw frames.
HANDSHAKE_VERSION = 1
# SaslAuthenticate v2 is flexible; v0 is what every broker since 1.0 answers: enough for one token each way.
AUTHENTICATE_VERSION = 0
# The mechanisms spoken here, each with its hash (None: PLAIN, the password itself).
MECHANISMS: dict[str, str | None] = {"PLAIN": None, "SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# Bytes of the client nonce (RFC 5802 asks for an unpredictable printable string; 24 random bytes as base64).
NONCE_BYTES = 24
# Correlation ids of the exchange (one connection, one request at a time).
_HANDSHAKE_ID, _FIRST_ID, _FINAL_ID = 1, 2, 3


class SaslError(Exception):
    """The broker refused the login (wrong password, a mechanism it does not enable) or answered outside SCRAM."""


class _Client(Protocol):
    """What the exchange needs of a connection (broker.network.client.BlockingClient)."""

    def encode(self, api_key: int, version: int, correlation_id: int, body: dict[str, object]) -> bytes: ...

    def round_trip(self, api_key: int, version: int, correlation_id: int, frame: bytes) -> dict[str, object]: ...


def _attributes(message: str) -> dict[str, str]:
    """A SCRAM message's `k=v` attributes (the value keeps any `=`)."""
    out = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            out[key] = value
    return out


def _saslname(user: str) -> str:
    """RFC 5802's escaping of `=` and `,` in a username."""
    return user.replace("=", "=3D").replace(",", "=2C")


@dataclass
class Scram:
    """One SCRAM exchange (RFC 5802, no channel binding): :meth:`first`, then :meth:`final` of the server's first
    message, then :meth:`verify` of the server's final one."""

    mechanism: str
    user: str
    password: str
    nonce: str = field(default_factory=lambda: base64.b64encode(secrets.token_bytes(NONCE_BYTES)).decode())
    _bare: str = ""
    _server_key: bytes = b""
    _auth_message: str = ""

    @property
    def _hash(self) -> str:
        algorithm = MECHANISMS.get(self.mechanism)
        if algorithm is None:
            raise SaslError(f"{self.mechanism} is not a SCRAM mechanism ({', '.join(MECHANISMS)})")
        return algorithm

    def first(self) -> bytes:
        """The client-first message."""
        self._bare = f"n={_saslname(self.user)},r={self.nonce}"
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        """The client-final message with the proof, from the server-first message (nonce, salt, iterations).

        Raises:
            SaslError: the server's message is not SCRAM's, or its nonce does not extend ours.
        """
        text = server_first.decode("utf-8", "replace")
        attrs = _attributes(text)
        if "e" in attrs:
            raise SaslError(f"the broker ended the SCRAM exchange: {attrs['e']}")
        if not attrs.get("r", "").startswith(self.nonce) or "s" not in attrs or not attrs.get("i", "").isdigit():
            raise SaslError(f"not a SCRAM server-first message: {text[:200]!r}")
        salted = hashlib.pbkdf2_hmac(self._hash, self.password.encode(), base64.b64decode(attrs["s"]),
                                     int(attrs["i"]))
        client_key = hmac.digest(salted, b"Client Key", self._hash)
        self._server_key = hmac.digest(salted, b"Server Key", self._hash)
        without_proof = f"c=biws,r={attrs['r']}"
        self._auth_message = f"{self._bare},{text},{without_proof}"
        signature = hmac.digest(hashlib.new(self._hash, client_key).digest(), self._auth_message.encode(),
                                self._hash)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        """Check the server's signature: a server that does not know the password cannot make it.

        Raises:
            SaslError: an error from the server, or a signature that does not match.
        """
        attrs = _attributes(server_final.decode("utf-8", "replace"))
        if "e" in attrs:
            raise SaslError(f"the broker refused the SCRAM proof: {attrs['e']}")
        expected = hmac.digest(self._server_key, self._auth_message.encode(), self._hash)
        if not hmac.compare_digest(base64.b64decode(attrs.get("v", "")), expected):
            raise SaslError("the broker's SCRAM signature does not match: it is not the server the password is for")


def plain_token(user: str, password: str) -> bytes:
    """PLAIN's one message (RFC 4616): no authorization id, the username, the password."""
    return b"\0" + user.encode() + b"\0" + password.encode()


def _authenticate_once(client: _Client, correlation_id: int, token: bytes) -> bytes:
    body = client.round_trip(ApiKey.SASL_AUTHENTICATE, AUTHENTICATE_VERSION, correlation_id,
                             client.encode(ApiKey.SASL_AUTHENTICATE, AUTHENTICATE_VERSION, correlation_id,
                                           {"auth_bytes": token}))
    if body["error_code"]:
        raise SaslError(f"authentication failed (error code {body['error_code']}): {body.get('error_message')}")
    got = body.get("auth_bytes")
    return bytes(got) if isinstance(got, (bytes, bytearray, memoryview)) else b""


def authenticate(client: _Client, props: Mapping[str, str]) -> None:
    """Log `client`'s connection in with the connection's librdkafka properties (`sasl.mechanism` or
    `sasl.mechanisms`, `sasl.username`, `sasl.password`). PLAIN when no mechanism is named: librdkafka's own default
    is GSSAPI, which it cannot speak without Kerberos either, so a connection without a mechanism fails the Admin API's
    calls first (api.kafka_admin.describe_cluster) and reaches this only through describe_quorum alone.

    Raises:
        SaslError: a mechanism not spoken here or not enabled by the broker, missing credentials, or a refused
            login; the message says which.
        broker.network.client.ClientError: the connection failed.
    """
    mechanism = props.get("sasl.mechanism", props.get("sasl.mechanisms", "PLAIN")).upper()
    if mechanism not in MECHANISMS:
        raise SaslError(f"SASL mechanism {mechanism} is not spoken here ({', '.join(MECHANISMS)}): OAUTHBEARER and "
                        "GSSAPI need their own clients")
    user, password = props.get("sasl.username"), props.get("sasl.password")
    if not user or password is None:
        raise SaslError("sasl.username and sasl.password are required")
    body = client.round_trip(ApiKey.SASL_HANDSHAKE, HANDSHAKE_VERSION, _HANDSHAKE_ID,
                             client.encode(ApiKey.SASL_HANDSHAKE, HANDSHAKE_VERSION, _HANDSHAKE_ID,
                                           {"mechanism": mechanism}))
    if body["error_code"]:
        offered = body.get("mechanisms") or []
        raise SaslError(f"the broker does not enable {mechanism} (error code {body['error_code']}; it offers "
                        f"{', '.join(str(m) for m in offered) if isinstance(offered, list) else offered})")
    if MECHANISMS[mechanism] is None:
        _authenticate_once(client, _FIRST_ID, plain_token(user, password))
        return
    scram = Scram(mechanism, user, password)
    server_first = _authenticate_once(client, _FIRST_ID, scram.first())
    scram.verify(_authenticate_once(client, _FINAL_ID, scram.final(server_first)))
