"""The daemon's lifecycle: ``serve()`` is an AsyncExitStack of parts plus a TaskGroup.

Start order: dirs and locks, NATS (embedded or external), our NATS client, identity, HTTP,
unix socket, then READY. Stop runs the stack backwards (stop accepting first), under a
deadline, logging rather than raising cleanup failures (STYLE.md 5, 6).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import logging
import os
import signal
import socket
import stat
from pathlib import Path
from typing import Any

from agentcoord._lazy import load_deferred
from agentcoord.config import DEFAULT_HTTP_ADDR, Config
from agentcoord.console.sections import install_sections
from agentcoord.daemon.app import App
from agentcoord.daemon.httpmcp import HttpRoutes
from agentcoord.daemon.identity import IdentityResolver, TokenStore
from agentcoord.daemon.locks import DirLock
from agentcoord.daemon.mcp import McpCore
from agentcoord.daemon.natsd import NatsSupervisor
from agentcoord.daemon.natsusers import ScopedNatsSupervisor
from agentcoord.daemon.notify import sd_notify
from agentcoord.daemon.procprobe import PsutilProbe
from agentcoord.daemon.startup import Phases, write_failure
from agentcoord.daemon.statefmt import ensure_format
from agentcoord.daemon.toolset import build_registry
from agentcoord.daemon.unix import UnixListener
from agentcoord.errors import (
    AgentCoordError,
    ConfigError,
    DaemonAlreadyRunning,
    StateFormatError,
)
from agentcoord.kernel.files import write_private
from agentcoord.kernel.httpserver import HttpServer
from agentcoord.kernel.natsremote import host_qualifier
from agentcoord.stores.agentsource import StoreAgents
from agentcoord.stores.objects.directory import StoreDirectory
from agentcoord.stores.objects.records import (
    StoreChannelRecords,
    StorePromptRecords,
    StoreTaskRecords,
)
from agentcoord.stores.objects.registry_records import StoreAgentRecords, StoreJobRecords
from agentcoord.stores.objects.serve import open_store
from agentcoord.stores.objects.tables import LiveCells

__all__ = ["prepare_dirs", "serve"]

log = logging.getLogger(__name__)

_GC_GEN0 = 10_000  # allocations between young collections (default 700); see _tune_gc

_STOP_DEADLINE = 4.5  # a SIGTERM stop ends within 5 s, inside the unit's TimeoutStopSec=10
_START_CANCEL_S = 0.8  # a stop during start-up: cancel, then close, each this long at most


def _js_phase(cfg: Config) -> float:
    """Bound of a phase of JetStream requests: one request's timeout and a retry's worth."""
    return js_timeout(cfg) + 2


def prepare_dirs(cfg: Config) -> None:
    """Create the state and runtime dirs 0700 and refuse ones another user owns."""
    for path in (cfg.state_dir, cfg.runtime_dir):
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = path.stat()
        if info.st_uid != os.getuid():
            raise ConfigError(f"{path} belongs to uid {info.st_uid}, not to us")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(path, 0o700)


async def _connect_nats(
    url: str | list[str],
    user: str | None,
    password: str | None,
    seen: list[Exception] | None = None,
    first_attempts: int = -1,
    **options: Any,
) -> Any:
    import nats

    async def on_error(exc: Exception) -> None:
        log.debug("nats client: %s", exc)
        if seen is not None:
            seen.append(exc)

    client: list[Any] = []  # the connection, once made: its callbacks ask whether it closed

    async def on_disconnect() -> None:
        # nats-py calls this from close() too; a close is the daemon stopping (or a failed
        # start), not a lost server, so it is no news at INFO.
        if client and client[0].is_closed:
            log.debug("nats client closed")
            return
        log.info("nats client disconnected; reconnecting")

    async def on_reconnect() -> None:
        log.info("nats client reconnected")

    nc = await nats.connect(
        url,
        user=user,
        password=password,
        name="agentcoord-daemon",
        allow_reconnect=True,
        max_reconnect_attempts=first_attempts,
        reconnect_time_wait=0.05,
        connect_timeout=2,
        error_cb=on_error,
        disconnected_cb=on_disconnect,
        reconnected_cb=on_reconnect,
        **options,
    )
    client.append(nc)
    # A bounded first connect, then reconnect forever (nats-py reads this option
    # at each reconnect; it retries a first connect forever when it is -1).
    nc.options["max_reconnect_attempts"] = -1
    return nc


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
    """Run the daemon until ``stop`` is set (SIGTERM/SIGINT set it, during start-up too)."""
    stop = stop or asyncio.Event()
    prepare_dirs(cfg)
    with DirLock(cfg.state_dir), DirLock(cfg.runtime_dir):
        _install_signals(stop)
        async with contextlib.AsyncExitStack() as stack:
            app = await _start_or_stop(cfg, stack, stop)
            if app is None:
                return
            _tune_gc()
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
                # What start-up left to first use (protobuf, psutil: ~18 ms), loaded now in a
                # thread, so neither ready nor the first request waits for it.
                tg.create_task(asyncio.to_thread(load_deferred), name="load-deferred")
                await stop.wait()
                if app.nats is not None:
                    app.nats.prepare_stop()
                for task in background:
                    task.cancel("daemon stopping")
            sd_notify(cfg.notify_socket, "STOPPING=1")
            log.info("stopping")
            await _close_with_deadline(stack)
            log.info("stopped")  # after every part has closed (the stack ran backwards)


async def _start_or_stop(
    cfg: Config, stack: contextlib.AsyncExitStack, stop: asyncio.Event
) -> App | None:
    """Start every part, within each phase's bound; None when a stop came first.

    A stop during start-up (SIGTERM from systemd, Ctrl-C) is honoured at once: the start is
    cancelled and what it opened is closed within ~2 s. A failed start leaves one line for
    the CLI (the phase and what to do), the traceback in ``<state>/startup-error.log``, and
    the reason in systemd's ``STATUS=``.
    """
    phases = Phases()
    started = asyncio.ensure_future(_bounded_start(cfg, stack, phases))
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({started, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if not started.done():
            log.info("stop requested during start-up (%s): stopping", phases.current)
            return None
    finally:
        stopped.cancel()
        if not started.done():  # a stop came first, or serve() itself was cancelled
            started.cancel("stop requested during start-up")
            await asyncio.wait({started}, timeout=_START_CANCEL_S)
            if not started.done():
                log.error("the start did not end within %.1fs of its cancel", _START_CANCEL_S)
            await _close_cancelled_start(stack)
    exc = started.exception()
    if exc is not None:
        where = write_failure(cfg.state_dir, exc)
        log.debug("start-up failed", exc_info=exc)
        # One line everywhere (the CLI, STATUS=): a part's own detail (nats-server's last
        # lines) stays in the log file with the traceback.
        text = str(exc).strip()
        line = text.splitlines()[0] if text else repr(exc)
        said = [t.strip() for t in getattr(exc, "last_lines", ()) if t.strip()]
        if said:  # the child's last word is usually the reason (NatsStartError)
            line += f"; it said: {said[-1][:300]}"
        sd_notify(cfg.notify_socket, f"STATUS=start-up failed: {line}")
        # A bad setting already says all there is; a failed part points to its traceback.
        if isinstance(exc, AgentCoordError) and not _is_setting(exc):
            exc.args = (f"{line} (details: {where})" if where else line,)
        raise exc
    return started.result()


async def _close_cancelled_start(stack: contextlib.AsyncExitStack) -> None:
    """Close what a cancelled start had opened, within its own bound."""
    moved = stack.pop_all()
    try:
        async with asyncio.timeout(_START_CANCEL_S):
            await moved.aclose()
    except TimeoutError:
        log.error("closing a cancelled start took longer than %.1fs", _START_CANCEL_S)
    except Exception:
        log.exception("error while closing a cancelled start")


def _is_setting(exc: BaseException) -> bool:
    return isinstance(exc, ConfigError | StateFormatError | DaemonAlreadyRunning)


async def _bounded_start(cfg: Config, stack: contextlib.AsyncExitStack, phases: Phases) -> App:
    phases.begin("the state dir", 2, f"check {cfg.state_dir} (permissions, disk space)")
    async with phases.bounded():
        ensure_format(cfg.state_dir)
        return await _start(cfg, stack, phases)


def _tune_gc() -> None:
    """Collect cycles less often, and never look at what start-up built again.

    Every request allocates many short-lived objects, so with the default gen0 threshold (700)
    a collection ran every few requests, and each full one walked every module, class and
    cached object loaded at start. Freezing moves those to the permanent generation; a higher
    gen0 threshold makes the young collections rarer. Under 16 claim clients this took the
    daemon's p99 from about 17 ms to 9-13 ms (bench/claims.py).
    """
    gc.freeze()
    gc.set_threshold(_GC_GEN0, 10, 10)


async def _watchdog(cfg: Config) -> None:
    """Ping systemd's watchdog while the event loop runs (WatchdogSec in the unit)."""
    assert cfg.watchdog_interval is not None
    while True:
        sd_notify(cfg.notify_socket, "WATCHDOG=1")
        await asyncio.sleep(cfg.watchdog_interval)  # a timer, not polling for state


async def _close_with_deadline(stack: contextlib.AsyncExitStack) -> None:
    moved = stack.pop_all()
    try:
        async with asyncio.timeout(_STOP_DEADLINE):
            await moved.aclose()
    except TimeoutError:
        log.error("shutdown took longer than %.1fs; exiting anyway", _STOP_DEADLINE)
    except Exception:
        log.exception("error during shutdown")


async def _start(cfg: Config, stack: contextlib.AsyncExitStack, phases: Phases) -> App:
    from agentcoord.kernel.natsremote import redact

    nats_hint = (  # the URL as shown everywhere else: without its password
        f"is the NATS server at {redact(cfg.nats_url)} up and reachable?"
        if cfg.nats_url
        else f"the log has nats-server's last lines; check {cfg.state_dir / 'nats'}"
    )
    phases.begin(
        "the object store and nats-server", 6, f"{nats_hint}; check {cfg.state_dir} (disk space)"
    )
    tokens = TokenStore(cfg.state_dir / "tokens.json")
    # The human's bearer token for HTTP (CLI, console login link), kept 0600 in the state dir.
    tokens.ensure_file(cfg.state_dir / "human.token", f"human:{cfg.user}")
    # Independent parts start together (start-up is a goal: ready <= 300 ms): the object store
    # (SQLite with its kubectl API, or a real Kubernetes API server: docs/store.md; nothing
    # below knows which) and NATS (embedded server, then our client).
    nats: NatsSupervisor | None = None
    ns = cfg.kube_namespace  # where the daemon keeps its objects, on either store
    live = LiveCells(ns)  # kubectl's Agent table reads the focus view, bound below (tables.py)
    async with asyncio.TaskGroup() as tg:
        objects = tg.create_task(open_store(cfg, stack, live=live))
        if not cfg.nats_url:
            # The supervisor also renders per-agent NATS users (natsusers.py; docs/messaging.md
            # "Direct NATS access (per-agent users)").
            supervisor = tg.create_task(
                stack.enter_async_context(
                    ScopedNatsSupervisor(cfg.state_dir, cfg.nats_server_bin, cfg.nats_sync)
                )
            )
    store = objects.result()
    if not cfg.nats_url:
        nats = supervisor.result()
    phases.mark("store+nats-server")
    phases.begin("the NATS client", 5 if not cfg.nats_url else 10, nats_hint)
    identity = IdentityResolver(
        uid=os.getuid(),
        user=cfg.user,
        claude_dir=cfg.claude_dir,
        probe=PsutilProbe(),
        # session agents are Agent objects, named host-qualified with nats_url
        # (docs/one-host-to-many.md "What runs where")
        directory=StoreDirectory(store, ns, host=host_qualifier(cfg)),
        tokens=tokens,
    )
    app = App(config=cfg, identity=identity, store=store, nats=nats)
    if nats is None:
        assert cfg.nats_url is not None
        app.nc = await _connect_external(cfg, app)
    else:
        app.nats_url = nats.url
        # A bounded first connect: the embedded server is already up (its ready line).
        app.nc = await _connect_nats(nats.url, nats.user, nats.password, first_attempts=40)
    stack.push_async_callback(_close_nats, app)
    phases.mark("nats client")
    phases.begin("the audit stream", _js_phase(cfg), f"JetStream did not answer; {nats_hint}")

    from agentcoord.daemon.messaging import Messaging
    from agentcoord.localagents import LocalAgents
    from agentcoord.stores.audit import AuditLog
    from agentcoord.stores.kv import ClaimStore, FocusStore

    js = app.nc.jetstream(timeout=js_timeout(cfg))
    r, host = cfg.nats_replicas, host_qualifier(cfg)  # replicas, claim holders' host
    # The audit stream first: claims, focus and messaging report into it (docs/claims.md).
    app.audit = await stack.enter_async_context(
        AuditLog(js, replicas=r, max_age=cfg.audit_max_age, max_bytes=cfg.audit_max_bytes)
    )
    identity.audit = app.audit  # refused attempts to act as the human (docs/security.md)
    access = nats if isinstance(nats, ScopedNatsSupervisor) else None
    phases.begin(
        "claims, focus, local agents and messaging", _js_phase(cfg) + 3, f"JetStream: {nats_hint}"
    )
    async with asyncio.TaskGroup() as tg:
        claims = tg.create_task(
            stack.enter_async_context(ClaimStore(js, app.audit, replicas=r, host=host))
        )
        focus = tg.create_task(stack.enter_async_context(FocusStore(js, app.audit, replicas=r)))
        # Local agents (docs/localagents.md): the package index watcher and local jobs.
        local = tg.create_task(
            stack.enter_async_context(
                LocalAgents.from_config(
                    cfg,
                    runners=identity.runners,
                    base_env=dict(os.environ),
                    records=StoreAgentRecords(store, ns),
                    tasks=StoreJobRecords(store, ns),
                )
            )
        )
        # Messaging (docs/messaging.md): JetStream inboxes, channels, handoff offers, prompts.
        messaging = tg.create_task(
            stack.enter_async_context(
                Messaging(
                    app.nc,
                    channels=StoreChannelRecords(store, ns),
                    prompts=StorePromptRecords(store, ns),
                    tasks=StoreTaskRecords(store, ns),
                    access=access,
                    nats_url=app.nats_url,
                    audit_log=app.audit,
                    replicas=r,
                    js_timeout=js_timeout(cfg),
                    retention=_inbox_retention(cfg),
                )
            )
        )
    app.claims, app.focus = claims.result(), focus.result()
    view = app.focus  # the intent each agent published with annotate, as `agents` shows it
    live.provide("focus", lambda name: getattr(view.get(name), "intent", None))
    app.local_agents, app.messaging = local.result(), messaging.result()
    app.agents = StoreAgents(store, ns)
    phases.mark("claims, focus, audit, local agents, messaging")
    phases.begin("the operator and session watch", 5, "the store or nats-server stalled")
    # AgentProfiles drive every start (docs/profiles.md); the default profile is created on
    # first start.
    await app.local_agents.attach_launcher(store, nc=app.nc, bus=app.messaging.bus, namespace=ns)

    # The Agent controller (adopts or reaps runners first), ask and send_message
    # (docs/ask-and-operator.md).
    await _start_agentops(app, stack)

    # A desktop notification for each new prompt, where notify-send exists (README
    # "What the human gets").
    from agentcoord.daemon.desktop import DesktopNotifier

    await stack.enter_async_context(DesktopNotifier(app.nc))
    # Session agents end with their claude process; ended ones go after the retention.
    from agentcoord.localagents.session_end import SessionWatch

    assert isinstance(identity.directory, StoreDirectory)
    forget = (app.messaging.bus.drop_inbox, app.focus.forget)
    app.sessions = await stack.enter_async_context(
        SessionWatch(store, identity.directory, ns, retention=cfg.session_retention, forget=forget)
    )
    phases.begin("the listeners", 3, "the socket dir or the HTTP port is in the way")
    install_sections(app)
    core = McpCore(build_registry(app), app, cfg.tools_page_size)
    http = await _http_listener(cfg, stack, HttpRoutes(app, core))
    host = cfg.http_host if ":" not in cfg.http_host else f"[{cfg.http_host}]"
    addr = f"{host}:{http.port}"
    app.config = _with_addr(cfg, addr)
    app.http_server = http
    inherited = _inherited_socket(cfg)
    await stack.enter_async_context(
        UnixListener(cfg.socket_path, core, app, cfg.max_request_bytes, inherited=inherited)
    )
    stack.callback(http.stop_accepting)  # at stop both listeners drain at once (STYLE.md 5)
    # Last: clients take http.addr to mean "the daemon serves", the unix socket included.
    write_private(cfg.http_addr_file, addr + "\n", durable=False)
    stack.callback(_unlink, cfg.http_addr_file)
    phases.mark("listeners")
    log.info("started in %s", phases.summary())
    return app


def _inbox_retention(cfg: Config) -> dict[str, Any]:
    """The message stream's limits (docs/reliability.md "State retention")."""
    return {
        "max_age": cfg.inbox_max_age,
        "max_msgs": cfg.inbox_max_msgs,
        "max_bytes": cfg.inbox_max_bytes,
    }


# --- an existing NATS server or cluster (docs/one-host-to-many.md) -------------------------
def js_timeout(cfg: Config) -> float:
    """JetStream request timeout: on a cluster a leader election after a node loss takes a few
    seconds, and a request that waits it out beats one that fails ambiguously."""
    return 15.0 if cfg.nats_url else 5.0


# A dead node drops the TCP connection at once; a lost host does not, so ping often enough to
# notice within ~15 s and move to another seed (the default is minutes).
_EXTERNAL_PING_INTERVAL = 5
_EXTERNAL_MAX_PINGS = 2
# Tries per seed before a first connect gives up and says why (a wrong password included);
# reconnects later are unlimited. Cancelling nats-py's connect is not reliable (its
# wait_for can swallow the cancellation), so the attempts are bounded instead of timed.
_EXTERNAL_FIRST_ATTEMPTS = 20


async def _connect_external(cfg: Config, app: App) -> Any:
    """Connect to ``cfg.nats_url``; only the redacted URL is kept, logged or shown."""
    import nats.errors

    from agentcoord.kernel.natsremote import nats_target

    target = nats_target(cfg)
    app.nats_url = target.display
    options = dict(target.options)
    seen: list[Exception] = []
    try:
        return await _connect_nats(
            target.servers,
            options.pop("user", None),
            options.pop("password", None),
            seen,
            _EXTERNAL_FIRST_ATTEMPTS,
            ping_interval=_EXTERNAL_PING_INTERVAL,
            max_outstanding_pings=_EXTERNAL_MAX_PINGS,
            **options,
        )
    except (OSError, TimeoutError, nats.errors.Error) as exc:
        # nats-py's errors do not carry the URL's password; ours names the redacted URL.
        why = seen[-1] if seen else exc
        raise ConfigError(f"cannot connect to NATS at {target.display}: {why!r}") from None


# --- end existing NATS ----------------------------------------------------------------------


async def _http_listener(
    cfg: Config, stack: contextlib.AsyncExitStack, routes: HttpRoutes
) -> HttpServer:
    """The loopback HTTP listener. When the default port is taken (a second daemon with its
    own dirs, README "Where things live"), another free port is used and written to
    ``http.addr`` (what every client reads); a port the user chose is never replaced."""
    try:
        return await stack.enter_async_context(
            HttpServer(routes, cfg.http_host, cfg.http_port, max_body=cfg.max_request_bytes)
        )
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        if cfg.http_addr != DEFAULT_HTTP_ADDR:
            raise ConfigError(
                f"HTTP address {cfg.http_addr} is in use (another agentcoord daemon, or another "
                "program): choose a free one with --http-addr HOST:PORT (or :0 for any free port)"
            ) from None
    server = await stack.enter_async_context(
        HttpServer(routes, cfg.http_host, 0, max_body=cfg.max_request_bytes)
    )
    log.warning(
        "%s is in use (another daemon?): serving HTTP on port %d instead (see %s)",
        DEFAULT_HTTP_ADDR,
        server.port,
        cfg.http_addr_file,
    )
    return server


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


async def _start_agentops(app: App, stack: contextlib.AsyncExitStack) -> None:
    """The operator (docs/ask-and-operator.md "The operator"): entered after local agents and
    messaging, so it stops its runners first."""
    from agentcoord.agentops import AgentController, AgentOps

    assert app.store is not None
    assert app.local_agents is not None
    la = app.local_agents
    controller = await stack.enter_async_context(
        AgentController(
            store=app.store,
            runners=app.identity.runners,
            spec=la.spec,
            sandbox=la.sandbox,
            state_dir=app.config.state_dir,
            runtime_dir=app.config.runtime_dir,
            claude_dir=app.config.claude_dir,
            base_env=dict(os.environ),
            audit=app.audit,
            user=app.config.user,
            namespace=app.config.kube_namespace,
            launcher=la.launcher,
        )
    )
    from agentcoord.agentops.checkpoints import BundleRetention, prune

    cfg = app.config
    kept = BundleRetention(keep=cfg.checkpoint_keep, max_bytes=cfg.checkpoint_max_bytes)
    app.agentops = AgentOps(
        controller, messaging=app.messaging, local_agents=la, bundle_retention=kept
    )
    if (cfg.state_dir / "checkpoints").is_dir():  # limits changed since, or older state
        await prune(app.store, cfg.kube_namespace, cfg.state_dir, kept)


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
