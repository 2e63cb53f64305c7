"""An existing NATS server or cluster instead of the embedded one
(docs/one-host-to-many.md "What runs where").

``nats_url`` holds one or more comma-separated seed URLs; the client learns the rest of a
cluster from the servers. Credentials are one of: user/password (in the URL or the config), an
nkey seed file, or a ``.creds`` file; TLS takes a CA bundle and optionally a client certificate
and key. :func:`check_nats_config` turns every bad combination into a :class:`ConfigError`
naming the config key, before anything connects; :func:`nats_target` builds the keyword
arguments for ``nats.connect`` and a display URL with secrets removed, the only form that is
ever logged or shown in ``status``.

Per-agent NATS users (:mod:`agentcoord.daemon.natsusers`) need the daemon to own the server's
config, so they exist only with the embedded server; with an external one the
``nats_credentials`` tool says so, and agents reach messages only through the daemon's tools.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentcoord.errors import ConfigError

if TYPE_CHECKING:
    import ssl

__all__ = [
    "MAX_REPLICAS",
    "NatsSettings",
    "NatsTarget",
    "check_nats_config",
    "host_qualifier",
    "nats_target",
    "redact",
    "split_seeds",
]

MAX_REPLICAS = 5  # JetStream's limit on stream and KV replicas
_SCHEMES = ("nats", "tls", "ws", "wss")
# A DNS label (session agents are Agent objects) that is also one NATS subject token.
_HOST_ID = re.compile(r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$")
_HOST_BAD = re.compile(r"[^a-z0-9-]+")
# Fields that only mean something for an external server (the embedded one makes its own).
_EXTERNAL_ONLY = (
    "nats_user",
    "nats_password",
    "nats_nkey_seed",
    "nats_creds",
    "nats_tls_ca",
    "nats_tls_cert",
    "nats_tls_key",
)


@dataclass(frozen=True)
class NatsTarget:
    """Where and how to connect: seed URLs (may hold secrets), display form, extra options."""

    servers: list[str]
    display: str
    options: dict[str, Any] = field(default_factory=dict)


class NatsSettings(Protocol):
    """The settings read here (:class:`agentcoord.kernel.config.Config` has them): the kernel names
    what it needs instead of importing the config module above it."""

    @property
    def nats_url(self) -> str | None: ...
    @property
    def nats_replicas(self) -> int: ...
    @property
    def nats_user(self) -> str | None: ...
    @property
    def nats_password(self) -> str | None: ...
    @property
    def nats_nkey_seed(self) -> Path | None: ...
    @property
    def nats_creds(self) -> Path | None: ...
    @property
    def nats_tls_ca(self) -> Path | None: ...
    @property
    def nats_tls_cert(self) -> Path | None: ...
    @property
    def nats_tls_key(self) -> Path | None: ...
    @property
    def host_id(self) -> str | None: ...


def split_seeds(url: str) -> list[str]:
    """The seed URLs of ``nats_url`` (comma-separated); a bare ``host:port`` gets ``nats://``."""
    from urllib.parse import urlsplit  # lazily: load_config (every CLI command) imports us

    seeds = []
    for part in url.split(","):
        part = part.strip()
        if not part:
            continue
        if "://" not in part:
            part = "nats://" + part
        seeds.append(part)
    if not seeds:
        raise ConfigError("nats_url has no server URL in it")
    for seed in seeds:
        try:
            parts = urlsplit(seed)
            parts.port  # noqa: B018 - parsing the port is the check
        except ValueError:
            raise ConfigError(f"nats_url entry {redact(seed)!r} is not a valid URL") from None
        if parts.scheme not in _SCHEMES:
            raise ConfigError(
                f"nats_url entry {redact(seed)!r}: scheme must be one of {', '.join(_SCHEMES)}"
            )
        if not parts.hostname:
            raise ConfigError(f"nats_url entry {redact(seed)!r} has no host")
    return seeds


def redact(url: str) -> str:
    """``url`` with any password (or token) in its user part replaced by ``***``."""
    from urllib.parse import urlsplit, urlunsplit

    out = []
    for seed in url.split(","):
        try:
            parts = urlsplit(seed.strip())
        except ValueError:
            out.append("<unparsable URL>")
            continue
        if "@" not in parts.netloc:
            out.append(seed.strip())
            continue
        userinfo, host = parts.netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0] if ":" in userinfo else "***"
        netloc = f"{user}:***@{host}" if ":" in userinfo else f"***@{host}"
        out.append(urlunsplit(parts._replace(netloc=netloc)))
    return ",".join(out)


def _url_has_user(seeds: list[str]) -> bool:
    from urllib.parse import urlsplit

    return any(urlsplit(s).username for s in seeds)


def _check_file(key: str, path: os.PathLike[str] | None) -> None:
    if path is None:
        return
    try:
        with open(path, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {os.fspath(path)}: {exc.strerror}") from None


def check_nats_config(cfg: NatsSettings) -> None:
    """Refuse bad NATS settings with a message naming the config key (called by load_config)."""
    if not 1 <= cfg.nats_replicas <= MAX_REPLICAS:
        raise ConfigError(f"nats_replicas must be between 1 and {MAX_REPLICAS}")
    if cfg.host_id is not None and not _HOST_ID.match(cfg.host_id):
        raise ConfigError(
            f"host_id {cfg.host_id!r} must be 1-32 lowercase letters, digits or '-' "
            "(no dots), starting and ending with a letter or digit"
        )
    if not cfg.nats_url:
        if cfg.nats_replicas > 1:
            raise ConfigError("nats_replicas > 1 needs nats_url (an existing NATS cluster)")
        for key in _EXTERNAL_ONLY:
            if getattr(cfg, key) is not None:
                raise ConfigError(f"{key} only applies with nats_url (an external NATS server)")
        return
    seeds = split_seeds(cfg.nats_url)
    methods = [
        name
        for name, used in (
            ("user/password", cfg.nats_user is not None or cfg.nats_password is not None),
            ("user in nats_url", _url_has_user(seeds)),
            ("nats_nkey_seed", cfg.nats_nkey_seed is not None),
            ("nats_creds", cfg.nats_creds is not None),
        )
        if used
    ]
    if len(methods) > 1:
        raise ConfigError(f"choose one NATS credential, not {' and '.join(methods)}")
    if cfg.nats_password is not None and cfg.nats_user is None:
        raise ConfigError("nats_password is set but nats_user is not")
    if (cfg.nats_tls_cert is None) != (cfg.nats_tls_key is None):
        raise ConfigError("nats_tls_cert and nats_tls_key go together (mutual TLS)")
    for key in ("nats_nkey_seed", "nats_creds", "nats_tls_ca", "nats_tls_cert", "nats_tls_key"):
        _check_file(key, getattr(cfg, key))


def _tls_context(cfg: NatsSettings, seeds: list[str]) -> ssl.SSLContext | None:
    import ssl  # only when connecting: load_config (every CLI command) imports this module
    from urllib.parse import urlsplit

    wants_tls = any(urlsplit(s).scheme in ("tls", "wss") for s in seeds)
    if not (wants_tls or cfg.nats_tls_ca or cfg.nats_tls_cert):
        return None
    try:
        ctx = ssl.create_default_context(
            cafile=os.fspath(cfg.nats_tls_ca) if cfg.nats_tls_ca else None
        )
        if cfg.nats_tls_cert and cfg.nats_tls_key:
            ctx.load_cert_chain(os.fspath(cfg.nats_tls_cert), os.fspath(cfg.nats_tls_key))
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"NATS TLS files are not usable: {exc}") from None
    return ctx


def nats_target(cfg: NatsSettings) -> NatsTarget:
    """Seed URLs and ``nats.connect`` options for ``cfg.nats_url`` (checked already)."""
    assert cfg.nats_url, "nats_target is for an external server"
    seeds = split_seeds(cfg.nats_url)
    options: dict[str, Any] = {}
    if cfg.nats_user is not None:
        options["user"] = cfg.nats_user
        options["password"] = cfg.nats_password
    if cfg.nats_nkey_seed is not None:
        options["nkeys_seed"] = os.fspath(cfg.nats_nkey_seed)
    if cfg.nats_creds is not None:
        options["user_credentials"] = os.fspath(cfg.nats_creds)
    tls = _tls_context(cfg, seeds)
    if tls is not None:
        options["tls"] = tls
    return NatsTarget(servers=seeds, display=redact(",".join(seeds)), options=options)


def host_qualifier(cfg: NatsSettings, hostname: str | None = None) -> str | None:
    """The suffix that keeps session agent names unique across hosts sharing one NATS:
    ``host_id``, else the hostname made subject-safe; None with the embedded server."""
    if not cfg.nats_url:
        return None
    if cfg.host_id:
        return cfg.host_id
    if hostname is None:
        import socket

        hostname = socket.gethostname()
    name = hostname
    safe = _HOST_BAD.sub("-", name.split(".", 1)[0].lower())[:32].strip("-")
    return safe or "host"
