"""Wiring for the daemon: open the store, serve the kubectl API over mutual TLS on loopback.

``lifecycle._start`` calls :func:`start_objects`; everything it opens is closed by the exit
stack in reverse order (the API's watch streams end before the listener closes).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from agentcoord.config import Config, parse_http_addr
from agentcoord.daemon.http import HttpServer
from agentcoord.stores.objects.api import KubeApi
from agentcoord.stores.objects.store import ObjectStore
from agentcoord.stores.objects.tls import (
    Credentials,
    ensure_credentials,
    kubeconfig,
    server_context,
)

__all__ = ["credentials_dir", "kubeconfig_for", "start_objects", "store_path"]


def store_path(cfg: Config) -> Path:
    return cfg.state_dir / "objects.db"


def credentials_dir(cfg: Config) -> Path:
    return cfg.state_dir / "kube"


def kube_addr_file(cfg: Config) -> Path:
    return cfg.runtime_dir / "kube.addr"


async def start_objects(
    cfg: Config, stack: contextlib.AsyncExitStack
) -> tuple[ObjectStore, HttpServer, str]:
    """Open the store and the API listener on ``stack``; returns (store, server, host:port)."""
    store = await stack.enter_async_context(ObjectStore(store_path(cfg)))
    creds = ensure_credentials(credentials_dir(cfg), cfg.user)
    host, port = parse_http_addr(cfg.kube_addr)
    addr = ""
    api = KubeApi(store, lambda: addr)
    last_port = credentials_dir(cfg) / "port"
    server: HttpServer | None = None
    if port == 0 and last_port.exists():
        # Reuse last run's port when free, so a printed kubeconfig survives a restart.
        with contextlib.suppress(OSError, ValueError):
            server = await stack.enter_async_context(
                _listener(cfg, api, host, int(last_port.read_text()), creds)
            )
    if server is None:
        server = await stack.enter_async_context(_listener(cfg, api, host, port, creds))
    _write_private(last_port, f"{server.port}\n")
    stack.push_async_callback(api.aclose)
    addr = f"[{host}]:{server.port}" if ":" in host else f"{host}:{server.port}"
    path = kube_addr_file(cfg)
    _write_private(path, addr + "\n")
    stack.callback(_unlink, path)
    return store, server, addr


def _listener(cfg: Config, api: KubeApi, host: str, port: int, creds: Credentials) -> HttpServer:
    ssl = server_context(creds)
    return HttpServer(api, host, port, max_body=cfg.max_request_bytes, ssl=ssl, name="kube")


def kubeconfig_for(cfg: Config) -> str:
    """The kubeconfig of the running daemon (reads ``kube.addr`` and the credentials)."""
    from agentcoord.errors import DaemonUnreachable

    try:
        addr = kube_addr_file(cfg).read_text().strip()
    except FileNotFoundError:
        raise DaemonUnreachable(
            f"no daemon is serving the object API ({kube_addr_file(cfg)} is missing)"
        ) from None
    return kubeconfig(ensure_credentials(credentials_dir(cfg), cfg.user), addr)


def _write_private(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
