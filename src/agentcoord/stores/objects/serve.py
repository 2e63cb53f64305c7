"""Wiring for the daemon: open the store, serve the kubectl API over mutual TLS on loopback.

``lifecycle._start`` calls :func:`open_store`, which picks the backend from ``cfg.store``:
``sqlite`` opens the daemon's own store and its kubectl API (:func:`start_objects`);
``kubernetes`` opens :class:`~agentcoord.stores.objects.kube.KubeObjectStore` and serves no
kube API (kubectl talks to the real API server; a second, partial API would only mislead).
Either way, the records' legacy annotations are moved into spec and status once, here
(:func:`~agentcoord.stores.objects.repository.migrate_legacy_records`, docs/store.md "Older
objects"). Everything opened is closed by the exit stack in reverse order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentcoord.errors import ConfigError
from agentcoord.kernel.config import Config, parse_http_addr
from agentcoord.kernel.files import write_private
from agentcoord.kernel.httpserver import HttpServer
from agentcoord.stores.objects.api import KubeApi
from agentcoord.stores.objects.backend import ObjectBackend
from agentcoord.stores.objects.repository import migrate_legacy_records
from agentcoord.stores.objects.store import ObjectStore
from agentcoord.stores.objects.tables import LiveCells
from agentcoord.stores.objects.tls import (
    Credentials,
    ensure_credentials,
    kubeconfig,
    server_context,
)

__all__ = [
    "credentials_dir",
    "default_kubeconfig_file",
    "kubeconfig_for",
    "open_store",
    "start_objects",
    "store_path",
    "write_kubeconfig",
]


def store_path(cfg: Config) -> Path:
    return cfg.state_dir / "objects.db"


def credentials_dir(cfg: Config) -> Path:
    return cfg.state_dir / "kube"


def kube_addr_file(cfg: Config) -> Path:
    return cfg.runtime_dir / "kube.addr"


def kube_external_file(cfg: Config) -> Path:
    """Written instead of ``kube.addr`` with ``--store kubernetes``: the kubeconfig the daemon
    uses, so ``agentcoord kubeconfig`` can say which one (the flag is the daemon's, not ours)."""
    return cfg.runtime_dir / "kube.external"


async def open_store(
    cfg: Config,
    stack: contextlib.AsyncExitStack,
    *,
    live: LiveCells | None = None,
    listener: Mapping[str, Any] | None = None,
) -> ObjectBackend:
    """The daemon's object store, as ``cfg.store`` says, open on ``stack``; ``live`` supplies
    the kubectl Tables' cells kept in the daemon's views (the Agent's focus); ``listener``,
    the API listener's connection limits (docs/security.md "Limits")."""
    if cfg.store != "kubernetes":
        store, _, _ = await start_objects(cfg, stack, live=live, listener=listener)
        await migrate_legacy_records(store, cfg.kube_namespace)
        return store
    try:  # lazily: the default start does not pay for the client
        from agentcoord.stores.objects.kube import KubeObjectStore
    except ImportError as exc:
        raise ConfigError(
            f"--store kubernetes needs lightkube ({exc}): pip install 'agentcoord[kubernetes]'"
        ) from None
    kube = await stack.enter_async_context(
        KubeObjectStore(cfg.kubeconfig, namespace=cfg.kube_namespace)
    )
    await migrate_legacy_records(kube, cfg.kube_namespace)
    marker = kube_external_file(cfg)
    _write_private(marker, f"{cfg.kubeconfig or ''}\n")
    stack.callback(_unlink, marker)
    return kube


async def start_objects(
    cfg: Config,
    stack: contextlib.AsyncExitStack,
    *,
    live: LiveCells | None = None,
    listener: Mapping[str, Any] | None = None,
) -> tuple[ObjectStore, HttpServer, str]:
    """Open the store and the API listener on ``stack``; returns (store, server, host:port)."""
    store = await stack.enter_async_context(
        ObjectStore(store_path(cfg), retention=cfg.object_log_keep)
    )
    creds = ensure_credentials(credentials_dir(cfg), cfg.user)
    host, port = parse_http_addr(cfg.kube_addr)
    addr = ""
    api = KubeApi(store, lambda: addr, live=live, max_object_bytes=cfg.kube_max_object_bytes)
    last_port = credentials_dir(cfg) / "port"
    server: HttpServer | None = None
    if port == 0 and last_port.exists():
        # Reuse last run's port when free, so a printed kubeconfig survives a restart.
        with contextlib.suppress(OSError, ValueError):
            server = await stack.enter_async_context(
                _listener(cfg, api, host, int(last_port.read_text()), creds, listener)
            )
    if server is None:
        server = await stack.enter_async_context(_listener(cfg, api, host, port, creds, listener))
    _write_private(last_port, f"{server.port}\n")
    stack.push_async_callback(api.aclose)
    addr = f"[{host}]:{server.port}" if ":" in host else f"{host}:{server.port}"
    path = kube_addr_file(cfg)
    _write_private(path, addr + "\n")
    stack.callback(_unlink, path)
    return store, server, addr


def _listener(
    cfg: Config,
    api: KubeApi,
    host: str,
    port: int,
    creds: Credentials,
    limits: Mapping[str, Any] | None,
) -> HttpServer:
    ssl = server_context(creds)
    return HttpServer(
        api, host, port, max_body=cfg.max_request_bytes, ssl=ssl, name="kube", **(limits or {})
    )


def _external_mode(kubeconfig: str) -> ConfigError:
    given = f" ({kubeconfig})" if kubeconfig else " ($KUBECONFIG, else ~/.kube/config)"
    return ConfigError(
        "the daemon runs with --store kubernetes: it uses a real API server and serves no "
        "kube API of its own; use your cluster's kubeconfig, the one given with --kubeconfig"
        + given
    )


def kubeconfig_for(cfg: Config) -> str:
    """The kubeconfig of the running daemon (reads ``kube.addr`` and the credentials)."""
    from agentcoord.errors import DaemonUnreachable

    if cfg.store == "kubernetes":
        raise _external_mode(str(cfg.kubeconfig or ""))
    try:
        addr = kube_addr_file(cfg).read_text().strip()
    except FileNotFoundError:
        # The daemon may have been started with --store kubernetes on its command line,
        # which this command's config does not see: it leaves kube.external instead.
        try:
            external = kube_external_file(cfg).read_text().strip()
        except FileNotFoundError:
            raise DaemonUnreachable(
                f"no daemon is running for {cfg.runtime_dir} (no {kube_addr_file(cfg).name} "
                "there): start it with `agentcoord serve`"
            ) from None
        raise _external_mode(external) from None
    return kubeconfig(ensure_credentials(credentials_dir(cfg), cfg.user), addr)


def default_kubeconfig_file(home: Path) -> Path:
    """Where ``agentcoord kubeconfig --write`` puts the file when given no path (docs/store.md)."""
    return home / ".kube" / "agentcoord"


def write_kubeconfig(text: str, path: Path) -> Path:
    """Write ``text`` (a client credential) to ``path`` mode 0600, creating missing parent
    dirs 0700 as kubectl's ``~/.kube`` is; returns the absolute path."""
    path = path.expanduser().absolute()
    missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    try:
        for parent in reversed(missing):
            parent.mkdir(mode=0o700)
        _write_private(path, text)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def _write_private(path: Path, text: str) -> None:
    write_private(path, text)


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
