"""The daemon's lifecycle: ``serve()`` is an AsyncExitStack of parts plus a TaskGroup.

Start order: dirs and locks, NATS (embedded or external), our NATS client, identity, HTTP,
unix socket, then READY. Stop runs the stack backwards (stop accepting first), under a
deadline, logging rather than raising cleanup failures (STYLE.md 5, 6).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import stat
from pathlib import Path
from typing import Any

from agentcoord.config import Config
from agentcoord.console.sections import install_sections
from agentcoord.daemon.app import App
from agentcoord.daemon.directory import MemoryDirectory
from agentcoord.daemon.http import HttpServer
from agentcoord.daemon.httpmcp import HttpRoutes
from agentcoord.daemon.identity import IdentityResolver, TokenStore, write_private
from agentcoord.daemon.locks import DirLock
from agentcoord.daemon.mcp import McpCore
from agentcoord.daemon.natsusers import ScopedNatsSupervisor
from agentcoord.daemon.notify import sd_notify
from agentcoord.daemon.procprobe import PsutilProbe
from agentcoord.daemon.unix import UnixListener
from agentcoord.errors import ConfigError
from agentcoord.tools.registry import default_registry

__all__ = ["prepare_dirs", "serve"]

log = logging.getLogger(__name__)

_STOP_DEADLINE = 4.5  # SIGTERM to exit within 5 s (issue: the spine)


def prepare_dirs(cfg: Config) -> None:
    """Create the state and runtime dirs 0700 and refuse ones another user owns."""
    for path in (cfg.state_dir, cfg.runtime_dir):
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = path.stat()
        if info.st_uid != os.getuid():
            raise ConfigError(f"{path} belongs to uid {info.st_uid}, not to us")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(path, 0o700)


async def _connect_nats(url: str, user: str | None, password: str | None) -> Any:
    import nats

    async def on_error(exc: Exception) -> None:
        log.debug("nats client: %s", exc)

    async def on_disconnect() -> None:
        log.info("nats client disconnected; reconnecting")

    async def on_reconnect() -> None:
        log.info("nats client reconnected")

    return await nats.connect(
        url,
        user=user,
        password=password,
        name="agentcoord-daemon",
        allow_reconnect=True,
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.05,
        connect_timeout=2,
        error_cb=on_error,
        disconnected_cb=on_disconnect,
        reconnected_cb=on_reconnect,
    )


def _install_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    interrupts = 0

    def on_term() -> None:
        stop.set()

    def on_int() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1:
            os._exit(130)  # a second Ctrl-C forces exit (STYLE.md 6)
        stop.set()

    loop.add_signal_handler(signal.SIGTERM, on_term)
    loop.add_signal_handler(signal.SIGINT, on_int)


async def serve(cfg: Config, *, stop: asyncio.Event | None = None) -> None:
    """Run the daemon until ``stop`` is set (SIGTERM/SIGINT set it)."""
    stop = stop or asyncio.Event()
    prepare_dirs(cfg)
    with DirLock(cfg.state_dir), DirLock(cfg.runtime_dir):
        _install_signals(stop)
        async with contextlib.AsyncExitStack() as stack:
            app = await _start(cfg, stack)
            sd_notify(cfg.notify_socket, "READY=1")
            log.info(
                "agentcoord ready: socket %s, http %s, nats %s",
                cfg.socket_path,
                app.config.http_addr,
                app.nats_url,
            )
            async with asyncio.TaskGroup() as tg:
                background = []
                if cfg.watchdog_interval and cfg.notify_socket:
                    background.append(tg.create_task(_watchdog(cfg), name="watchdog"))
                await stop.wait()
                for task in background:
                    task.cancel("daemon stopping")
            sd_notify(cfg.notify_socket, "STOPPING=1")
            log.info("stopping")
            stack.push_async_callback(_log_stopped)
            await _close_with_deadline(stack)


async def _watchdog(cfg: Config) -> None:
    """Ping systemd's watchdog while the event loop runs (WatchdogSec in the unit)."""
    assert cfg.watchdog_interval is not None
    while True:
        sd_notify(cfg.notify_socket, "WATCHDOG=1")
        await asyncio.sleep(cfg.watchdog_interval)  # a timer, not polling for state


async def _log_stopped() -> None:
    log.info("stopped")


async def _close_with_deadline(stack: contextlib.AsyncExitStack) -> None:
    moved = stack.pop_all()
    try:
        async with asyncio.timeout(_STOP_DEADLINE):
            await moved.aclose()
    except TimeoutError:
        log.error("shutdown took longer than %.1fs; exiting anyway", _STOP_DEADLINE)
    except Exception:
        log.exception("error during shutdown")


async def _start(cfg: Config, stack: contextlib.AsyncExitStack) -> App:
    directory = MemoryDirectory()
    tokens = TokenStore(cfg.state_dir / "tokens.json")
    # The human's bearer token for HTTP (CLI, console login link), kept 0600 in the state dir.
    tokens.ensure_file(cfg.state_dir / "human.token", f"human:{cfg.user}")
    identity = IdentityResolver(
        uid=os.getuid(),
        user=cfg.user,
        claude_dir=cfg.claude_dir,
        probe=PsutilProbe(),
        directory=directory,
        tokens=tokens,
    )
    app = App(config=cfg, identity=identity)
    if cfg.nats_url:
        app.nats_url = cfg.nats_url
        app.nc = await _connect_nats(cfg.nats_url, None, None)
    else:
        # issue 5: the supervisor also renders per-agent NATS users (daemon/natsusers.py).
        app.nats = await stack.enter_async_context(
            ScopedNatsSupervisor(cfg.state_dir, cfg.nats_server_bin, cfg.nats_sync)
        )
        app.nats_url = app.nats.url
        app.nc = await _connect_nats(app.nats.url, app.nats.user, app.nats.password)
    stack.push_async_callback(_close_nats, app)
    await _start_coordination(app, stack, directory)

    # Issue 6: the package index watcher and local jobs; closed after the listeners stop.
    from agentcoord.localagents import LocalAgents

    app.local_agents = await stack.enter_async_context(
        LocalAgents.from_config(cfg, runners=identity.runners, base_env=dict(os.environ))
    )

    # issue 5: JetStream inboxes, channels, handoff offers, human prompts.
    from agentcoord.daemon.messaging import Messaging

    access = app.nats if isinstance(app.nats, ScopedNatsSupervisor) else None
    app.messaging = await stack.enter_async_context(
        Messaging(app.nc, access=access, nats_url=app.nats_url)
    )

    install_sections(app)
    core = McpCore(default_registry(), app, cfg.tools_page_size)
    http = await stack.enter_async_context(
        HttpServer(
            HttpRoutes(app, core), cfg.http_host, cfg.http_port, max_body=cfg.max_request_bytes
        )
    )
    host = cfg.http_host if ":" not in cfg.http_host else f"[{cfg.http_host}]"
    addr = f"{host}:{http.port}"
    app.config = _with_addr(cfg, addr)
    app.http_server = http
    write_private(cfg.http_addr_file, addr + "\n")
    stack.callback(_unlink, cfg.http_addr_file)
    inherited = _inherited_socket(cfg)
    await stack.enter_async_context(
        UnixListener(cfg.socket_path, core, app, cfg.max_request_bytes, inherited=inherited)
    )
    return app


def _inherited_socket(cfg: Config) -> socket.socket | None:
    """The unix socket systemd passed us (agentcoord.socket), if any."""
    for fd, name in cfg.listen_fds:
        if name in ("agentcoord.sock", "unknown"):
            sock = socket.socket(fileno=fd)
            if sock.family == socket.AF_UNIX:
                log.info("using the socket passed by systemd (fd %d)", fd)
                return sock
            sock.detach()
    return None


async def _start_coordination(
    app: App, stack: contextlib.AsyncExitStack, directory: MemoryDirectory
) -> None:
    """Issue 4: the audit stream, then the claim and focus buckets with their watchers.

    Entered after the NATS client, so they close before it: the audit queue drains last.
    """
    from agentcoord.stores.agentsource import DirectoryAgents
    from agentcoord.stores.audit import AuditLog
    from agentcoord.stores.kv import ClaimStore, FocusStore

    assert app.nc is not None
    js = app.nc.jetstream()
    app.audit = await stack.enter_async_context(AuditLog(js))
    app.claims = await stack.enter_async_context(ClaimStore(js, app.audit))
    app.focus = await stack.enter_async_context(FocusStore(js, app.audit))
    app.agents = DirectoryAgents(directory)


def _with_addr(cfg: Config, addr: str) -> Config:
    from agentcoord.config import with_overrides

    return with_overrides(cfg, http_addr=addr)


async def _close_nats(app: App) -> None:
    if app.nc is not None and not app.nc.is_closed:
        try:
            async with asyncio.timeout(1):
                await app.nc.close()
        except Exception:
            log.warning("closing the nats client failed", exc_info=True)


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
