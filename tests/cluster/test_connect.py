"""The daemon on an external nats-server with nkey, creds-file and mutual-TLS credentials, and
the secrets it must never print."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nkeys
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.cluster.natscluster import NatsCluster
from tests.conftest import Daemon
from tests.tools.session_helpers import own_call


@pytest.fixture
def single(tmp_path: Path) -> Iterator[Callable[[str], NatsCluster]]:
    """Start one external nats-server with JetStream and the given auth/TLS config."""
    made: list[NatsCluster] = []

    def start(extra: str) -> NatsCluster:
        server = NatsCluster(tmp_path / f"nats{len(made)}", size=1, extra_config=extra)
        made.append(server)
        return server.start()

    yield start
    for server in made:
        server.stop()


def _status(d: Daemon) -> dict[str, Any]:
    from agentcoord.client.rpc import call_unix

    token = (d.state_dir / "human.token").read_text().strip()  # the human asks
    return call_unix(d.socket, "agentcoord/status", {}, token=token)  # type: ignore[no-any-return]


def _claim_roundtrip(d: Daemon) -> None:
    status = _status(d)
    assert status["healthy"], status
    out = own_call(d, "claim", {"resource_key": "conn/x", "ttl": "1m"})["structuredContent"]
    assert out["acquired"]


def test_nkey_seed_file(
    single: Callable[[str], NatsCluster], daemon_factory: Callable[..., Daemon], tmp_path: Path
) -> None:
    """With ``nats_nkey_seed`` the daemon authenticates by signing the server's nonce."""
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    public = nkeys.from_seed(seed).public_key.decode()
    seed_file = tmp_path / "user.nk"
    seed_file.write_bytes(seed + b"\n")
    seed_file.chmod(0o600)
    server = single(f"authorization {{ users = [ {{ nkey: {public} }} ] }}")
    d = daemon_factory(
        "nk", AGENTCOORD_NATS_URL=server.seeds, AGENTCOORD_NATS_NKEY_SEED=str(seed_file)
    ).start()
    _claim_roundtrip(d)


def test_wrong_password_fails_start_without_printing_it(
    single: Callable[[str], NatsCluster], daemon_factory: Callable[..., Daemon]
) -> None:
    """A refused login stops the daemon with a clear error showing the URL, not the password."""
    server = single('authorization { users = [ { user: "u", password: "right-one" } ] }')
    url = server.seeds.replace("nats://", "nats://u:wrong-secret-7@")
    d = daemon_factory("pw", AGENTCOORD_NATS_URL=url)
    with pytest.raises(RuntimeError, match="daemon exited 1"):
        d.start()
    log = d.log()
    assert "cannot connect to NATS at nats://u:***@127.0.0.1" in log
    assert "wrong-secret-7" not in log


def test_password_is_not_shown_in_status_or_log(
    single: Callable[[str], NatsCluster], daemon_factory: Callable[..., Daemon]
) -> None:
    """The status tool and the log name the NATS URL with its password replaced by ***."""
    server = single('authorization { users = [ { user: "u", password: "hidden-pw-42" } ] }')
    url = server.seeds.replace("nats://", "nats://u:hidden-pw-42@")
    d = daemon_factory("st", AGENTCOORD_NATS_URL=url, AGENTCOORD_LOG_LEVEL="DEBUG").start()
    _claim_roundtrip(d)
    status = _status(d)
    assert status["nats_url"] == server.seeds.replace("nats://", "nats://u:***@")
    assert "hidden-pw-42" not in json.dumps(status)
    assert "hidden-pw-42" not in d.log()


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool = False,
    ip: str | None = None,
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_name, issuer_key = issuer if issuer else (name, key)
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ip:
        san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))])
        builder = builder.add_extension(san, critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write_pem(path: Path, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
    path.with_suffix(".crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.with_suffix(".key").write_bytes(key_pem)


def test_mutual_tls(
    single: Callable[[str], NatsCluster], daemon_factory: Callable[..., Daemon], tmp_path: Path
) -> None:
    """Mutual TLS: with CA and client certificate the daemon connects; without one, refused."""
    # The server requires TLS and verifies clients (verify: true).
    pki = tmp_path / "pki"
    pki.mkdir()
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("test-ca", ca_key, None, ca=True)
    _write_pem(pki / "ca", ca, ca_key)
    for name, ip in (("server", "127.0.0.1"), ("client", None)):
        key = ec.generate_private_key(ec.SECP256R1())
        _write_pem(pki / name, _cert(name, key, (ca.subject, ca_key), ip=ip), key)
    server = single(
        "tls {\n"
        f"  cert_file: {json.dumps(str(pki / 'server.crt'))}\n"
        f"  key_file: {json.dumps(str(pki / 'server.key'))}\n"
        f"  ca_file: {json.dumps(str(pki / 'ca.crt'))}\n"
        "  verify: true\n"
        "}"
    )
    url = server.seeds.replace("nats://", "tls://")
    tls = {"AGENTCOORD_NATS_URL": url, "AGENTCOORD_NATS_TLS_CA": str(pki / "ca.crt")}
    refused = daemon_factory("no-cert", **tls)
    with pytest.raises(RuntimeError, match="daemon exited 1"):
        refused.start()
    assert "cannot connect to NATS" in refused.log()
    d = daemon_factory(
        "mtls",
        AGENTCOORD_NATS_TLS_CERT=str(pki / "client.crt"),
        AGENTCOORD_NATS_TLS_KEY=str(pki / "client.key"),
        **tls,
    ).start()
    _claim_roundtrip(d)


def _jwt(signer: bytes, claims: dict[str, Any]) -> str:
    """A NATS JWT (ed25519-nkey) signed by the seed ``signer``."""
    import base64
    import time

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    kp = nkeys.from_seed(signer)
    body = {
        "jti": base64.b32encode(os.urandom(20)).decode(),
        "iat": int(time.time()),
        "iss": kp.public_key.decode(),
        **claims,
    }
    head = b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    signing_input = f"{head}.{b64(json.dumps(body).encode())}"
    return f"{signing_input}.{b64(kp.sign(signing_input.encode()))}"


def test_creds_file(
    single: Callable[[str], NatsCluster], daemon_factory: Callable[..., Daemon], tmp_path: Path
) -> None:
    """A .creds login works in operator mode (JetStream on); a forged user JWT is refused."""
    # Operator, system and agentcoord accounts are JWTs preloaded into a MEMORY resolver.
    seeds = {
        kind: nkeys.encode_seed(os.urandom(32), prefix)
        for kind, prefix in (
            ("operator", nkeys.PREFIX_BYTE_OPERATOR),
            ("account", nkeys.PREFIX_BYTE_ACCOUNT),
            ("system", nkeys.PREFIX_BYTE_ACCOUNT),  # JetStream needs a system account
            ("user", nkeys.PREFIX_BYTE_USER),
        )
    }
    pub = {k: nkeys.from_seed(s).public_key.decode() for k, s in seeds.items()}
    operator = _jwt(
        seeds["operator"],
        {"sub": pub["operator"], "name": "op", "nats": {"type": "operator", "version": 2}},
    )
    limits = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1}
    limits |= {"wildcards": True, "conn": -1, "leaf": -1}
    limits |= {"mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}
    account = _jwt(
        seeds["operator"],
        {
            "sub": pub["account"],
            "name": "agentcoord",
            "nats": {"limits": limits, "type": "account", "version": 2},
        },
    )
    system = _jwt(
        seeds["operator"],
        {"sub": pub["system"], "name": "SYS", "nats": {"type": "account", "version": 2}},
    )
    user = _jwt(
        seeds["account"],
        {
            "sub": pub["user"],
            "name": "daemon",
            "nats": {"pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1}
            | {"type": "user", "version": 2},
        },
    )

    def creds_file(name: str, jwt: str) -> Path:
        path = tmp_path / name
        path.write_text(
            f"-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n"
            f"-----BEGIN USER NKEY SEED-----\n{seeds['user'].decode()}\n"
            "------END USER NKEY SEED------\n"
        )
        path.chmod(0o600)
        return path

    creds = creds_file("daemon.creds", user)
    # The same user signed by an account the operator never issued: must be refused.
    stranger = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_ACCOUNT)
    forged = creds_file(
        "forged.creds", _jwt(stranger, {"sub": pub["user"], "nats": {"type": "user", "version": 2}})
    )
    server = single(
        f"operator: {operator}\nsystem_account: {pub['system']}\nresolver: MEMORY\n"
        f"resolver_preload: {{ {pub['account']}: {account}, {pub['system']}: {system} }}"
    )
    refused = daemon_factory(
        "forged", AGENTCOORD_NATS_URL=server.seeds, AGENTCOORD_NATS_CREDS=str(forged)
    )
    with pytest.raises(RuntimeError, match="daemon exited 1"):
        refused.start()
    d = daemon_factory("creds", AGENTCOORD_NATS_URL=server.seeds, AGENTCOORD_NATS_CREDS=str(creds))
    d.start()
    _claim_roundtrip(d)
