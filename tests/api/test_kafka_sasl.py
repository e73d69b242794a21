"""The SASL login of the DescribeQuorum connection, pure: SCRAM against RFC 7677's exchange, PLAIN's token, and the
refusals a broker gives (against Apache Kafka 4.4.0 itself: tests/kafka/test_secure_logging_cluster.py)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from api.kafka_sasl import SaslError, Scram, authenticate, plain_token

# RFC 7677 section 3: SCRAM-SHA-256, user "user", password "pencil", iteration count 4096
NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_sha_256_makes_rfc_7677s_messages() -> None:
    scram = Scram("SCRAM-SHA-256", "user", "pencil", nonce=NONCE)
    assert scram.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert scram.final(SERVER_FIRST) == CLIENT_FINAL
    scram.verify(SERVER_FINAL)


def test_a_server_that_does_not_know_the_password_is_caught() -> None:
    scram = Scram("SCRAM-SHA-256", "user", "pencil", nonce=NONCE)
    scram.first()
    scram.final(SERVER_FIRST)
    with pytest.raises(SaslError, match="signature does not match"):
        scram.verify(b"v=" + base64.b64encode(b"\0" * 32))
    with pytest.raises(SaslError, match="refused the SCRAM proof: invalid-proof"):
        scram.verify(b"e=invalid-proof")


def test_a_server_first_message_that_is_not_scram_or_not_ours_is_refused() -> None:
    scram = Scram("SCRAM-SHA-512", "user", "pencil", nonce=NONCE)
    scram.first()
    with pytest.raises(SaslError, match="not a SCRAM server-first"):
        scram.final(b"r=someone-elses-nonce,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(SaslError, match="not a SCRAM server-first"):
        scram.final(b"hello")


def test_a_username_with_scram_separators_is_escaped() -> None:
    assert Scram("SCRAM-SHA-512", "a=b,c", "p", nonce="n").first() == b"n,,n=a=3Db=2Cc,r=n"


def test_plain_sends_the_username_and_password() -> None:
    assert plain_token("planewatch", "s3cret") == b"\0planewatch\0s3cret"


class _Refusing:
    """A broker that answers the handshake with `handshake_error`, the login with `auth_error`."""

    def __init__(self, handshake_error: int = 0, auth_error: int = 0) -> None:
        self.handshake_error, self.auth_error = handshake_error, auth_error
        self.sent: list[tuple[int, dict[str, Any]]] = []

    def encode(self, api_key: int, version: int, correlation_id: int, body: dict[str, Any]) -> bytes:
        self.sent.append((api_key, body))
        return b""

    def round_trip(self, api_key: int, version: int, correlation_id: int, frame: bytes) -> dict[str, Any]:
        if api_key == 17:
            return {"error_code": self.handshake_error, "mechanisms": ["SCRAM-SHA-512"]}
        return {"error_code": self.auth_error, "error_message": "Authentication failed during authentication due to "
                "invalid credentials with SASL mechanism SCRAM-SHA-512", "auth_bytes": b""}


def test_refusals_say_why() -> None:
    props = {"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "u", "sasl.password": "p"}
    with pytest.raises(SaslError, match=r"does not enable SCRAM-SHA-256 \(error code 33; it offers SCRAM-SHA-512\)"):
        authenticate(_Refusing(handshake_error=33), props)
    with pytest.raises(SaslError, match=r"error code 58.*invalid credentials"):
        authenticate(_Refusing(auth_error=58), {**props, "sasl.mechanism": "SCRAM-SHA-512"})
    with pytest.raises(SaslError, match="OAUTHBEARER and GSSAPI need their own clients"):
        authenticate(_Refusing(), {**props, "sasl.mechanism": "GSSAPI"})
    with pytest.raises(SaslError, match=r"sasl\.username and sasl\.password are required"):
        authenticate(_Refusing(), {"sasl.mechanism": "PLAIN"})
    plain = _Refusing()
    authenticate(plain, {"sasl.username": "u", "sasl.password": "p"})  # librdkafka's default mechanism: PLAIN
    assert plain.sent == [(17, {"mechanism": "PLAIN"}), (36, {"auth_bytes": b"\0u\0p"})]
