"""A private CA for the kubectl-facing API: server and client certificates, and a kubeconfig.

kubectl sends no credentials over plain http and has no unix-socket transport
(docs/store.md "HTTP API and TLS"), so the API speaks TLS on loopback and requires a client
certificate signed by this CA (mutual TLS: only holders of the 0600 key files under the state dir
get in). Files are made once and reused, so a printed kubeconfig stays valid across daemon restarts.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentcoord.kernel.files import write_private

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

__all__ = ["Credentials", "client_context", "ensure_credentials", "kubeconfig", "server_context"]

_FILES = ("ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key")
_YEARS = 10


@dataclass(frozen=True)
class Credentials:
    """Paths of the PEM files in ``dir``."""

    dir: Path

    def path(self, name: str) -> Path:
        return self.dir / name

    def pem(self, name: str) -> bytes:
        return self.path(name).read_bytes()


def _write_private(path: Path, data: bytes) -> None:
    write_private(path, data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Certificate | None,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    usage: str,
    org: str | None = None,
) -> x509.Certificate:
    # Imported here: only a first start creates certificates, and cryptography costs ~25 ms of
    # import time that every daemon start would otherwise pay (start-up is a goal).
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC)
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, subject)]
    if org:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    name = x509.Name(attrs)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer.subject if issuer else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=365 * _YEARS))
    )
    if usage == "ca":
        builder = builder.add_extension(
            x509.BasicConstraints(ca=True, path_length=0), critical=True
        ).add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    else:
        builder = builder.add_extension(
            x509.BasicConstraints(ca=False, path_length=None), critical=True
        ).add_extension(
            x509.ExtendedKeyUsage(
                [
                    ExtendedKeyUsageOID.SERVER_AUTH
                    if usage == "server"
                    else ExtendedKeyUsageOID.CLIENT_AUTH
                ]
            ),
            critical=False,
        )
    if usage == "server":
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.IPAddress(ipaddress.ip_address("::1")),
                ]
            ),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


def ensure_credentials(directory: Path, user: str = "user") -> Credentials:
    """Create the CA, server and client key pairs in ``directory`` (0700) unless all exist."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    creds = Credentials(directory)
    if all(creds.path(f).exists() for f in _FILES):
        return creds
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("agentcoord-ca", ca_key, None, ca_key, usage="ca")
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _cert("agentcoord", server_key, ca, ca_key, usage="server")
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = _cert(user, client_key, ca, ca_key, usage="client", org="agentcoord:owner")
    pem = serialization.Encoding.PEM
    for name, data in (
        ("ca.key", _key_pem(ca_key)),
        ("server.key", _key_pem(server_key)),
        ("client.key", _key_pem(client_key)),
        ("ca.crt", ca.public_bytes(pem)),
        ("server.crt", server.public_bytes(pem)),
        ("client.crt", client.public_bytes(pem)),
    ):
        _write_private(creds.path(name), data)
    return creds


def server_context(creds: Credentials) -> ssl.SSLContext:
    """TLS 1.2+ server context that requires a client certificate from our CA."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(creds.path("server.crt"), creds.path("server.key"))
    ctx.load_verify_locations(cafile=str(creds.path("ca.crt")))
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def client_context(creds: Credentials) -> ssl.SSLContext:
    """The matching client context (tests, the CLI)."""
    ctx = ssl.create_default_context(cafile=str(creds.path("ca.crt")))
    ctx.load_cert_chain(creds.path("client.crt"), creds.path("client.key"))
    return ctx


def kubeconfig(creds: Credentials, addr: str, namespace: str = "default") -> str:
    """A kubeconfig (YAML) for ``https://addr`` with the CA and client credentials inlined."""

    def b64(name: str) -> str:
        return base64.b64encode(creds.pem(name)).decode()

    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "agentcoord",
                "cluster": {
                    "server": f"https://{addr}",
                    "certificate-authority-data": b64("ca.crt"),
                },
            }
        ],
        "users": [
            {
                "name": "agentcoord",
                "user": {
                    "client-certificate-data": b64("client.crt"),
                    "client-key-data": b64("client.key"),
                },
            }
        ],
        "contexts": [
            {
                "name": "agentcoord",
                "context": {"cluster": "agentcoord", "user": "agentcoord", "namespace": namespace},
            }
        ],
        "current-context": "agentcoord",
        "preferences": {},
    }
    import yaml  # here: only the CLI prints YAML

    return yaml.safe_dump(doc, sort_keys=False)
