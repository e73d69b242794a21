"""Certificates a secured logging cluster's tests make (the `cryptography` package): a CA, the broker's key and chain
in one PEM file (Kafka's PEM keystore), and a client's certificate and key (mTLS). Every certificate names
127.0.0.1 and localhost, as clients verify the broker's address."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Tls", "make_tls"]

# Certificates hold for a day: a test's lifetime, and nothing made here outlives it.
VALID = dt.timedelta(days=1)


@dataclass(frozen=True)
class Tls:
    """The files of one CA and what it signed."""

    ca: Path  # the CA certificate (a truststore, PEM)
    broker: Path  # the broker's key (PKCS#8, unencrypted) then its certificate then the CA's (Kafka's PEM keystore)
    client_cert: Path
    client_key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_tls(directory: Path, ca_name: str = "planewatch test CA") -> Tls:
    """A CA and its broker and client certificates under `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name(ca_name)).issuer_name(_name(ca_name))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now).not_valid_after(now + VALID)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))

    def issue(cn: str, usage: x509.ObjectIdentifier) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now).not_valid_after(now + VALID)
                .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                            x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                               critical=False)
                .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        return key, cert

    pem = serialization.Encoding.PEM
    tls = Tls(directory / "ca.pem", directory / "broker.pem", directory / "client.pem", directory / "client.key")
    tls.ca.write_bytes(ca.public_bytes(pem))
    bkey, bcert = issue("localhost", ExtendedKeyUsageOID.SERVER_AUTH)
    tls.broker.write_bytes(_pem_key(bkey) + bcert.public_bytes(pem) + ca.public_bytes(pem))
    ckey, ccert = issue("planewatch", ExtendedKeyUsageOID.CLIENT_AUTH)
    tls.client_cert.write_bytes(ccert.public_bytes(pem))
    tls.client_key.write_bytes(_pem_key(ckey))
    return tls
