"""The composition root: every service built once, in dependency order, on one exit stack
(docs/architecture.md "Services").

Order: the object store and nats-server (together), our NATS client, the audit stream; then
claims, focus, local agents and messaging (together); the operator, desktop notices and the
session watch; last the listeners (HTTP, then the unix socket), so a client that finds
``http.addr`` finds a daemon that serves. The stack closes them backwards: the listeners
stop accepting first. Each step is a named, bounded phase (:mod:`.startup`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcoord.daemon.natsd import NatsSupervisor
from agentcoord.daemon.natslink import NatsLink, js_timeout
from agentcoord.daemon.natsusers import ScopedNatsSupervisor
from agentcoord.daemon.services import Services
from agentcoord.daemon.startup import Phases
from agentcoord.daemon.status import DaemonStatus
from agentcoord.errors import ConfigError
from agentcoord.identity.agenttokens import AGENT_TOKENS_FILE, AgentTokens
from agentcoord.identity.callers import IdentityResolver, TokenStore
from agentcoord.identity.kinds import configured as session_kinds
from agentcoord.identity.procprobe import PsutilProbe, listener_limits
from agentcoord.kernel.config import Config
from agentcoord.kernel.files import write_private
from agentcoord.kernel.natsremote import host_qualifier
from agentcoord.mcp.connections import Connections
from agentcoord.stores.objects.serve import open_store
from agentcoord.stores.objects.tables import LiveCells

if TYPE_CHECKING:
    from agentcoord.agentops import AgentOps
    from agentcoord.approvals import Approvals
    from agentcoord.budgets import Budgets
    from agentcoord.claude.inbox import NativeInboxes
    from agentcoord.identity.kinds import SessionKind
    from agentcoord.kernel.caller import Caller
    from agentcoord.kernel.httpserver import HttpServer
    from agentcoord.leases.filekeys import FileKeys
    from agentcoord.localagents import LocalAgents
    from agentcoord.mcp.http import HttpRoutes
    from agentcoord.mcp.unix import UnixListener
    from agentcoord.messaging import Messaging, Recipients
    from agentcoord.stores.agentsource import StoreAgents
    from agentcoord.stores.audit import AuditLog
    from agentcoord.stores.objects.backend import ObjectBackend

__all__ = ["Daemon", "compose"]

# Imported while nats-server boots (its own process), not before it starts: the services'
# and listeners' modules are most of the daemon's import time (bench/startup.py).
_SERVICE_MODULES = (
    "agentcoord.daemon.toolset",  # the tools, and with them every service's module
    "agentcoord.mcp.http",
    "agentcoord.mcp.unix",
    "agentcoord.claude.hooks",
    "agentcoord.claude.push",
    "agentcoord.claude.inbox",
    "agentcoord.console.desktop",
    "agentcoord.stores.audit",
    "agentcoord.stores.objects.repository",
    "agentcoord.stores.objects.agentdirectory",
    "agentcoord.localagents.session_end",
)


async def _preload() -> None:
    """Import the services' modules once nats-server has been started (the supervisor's
    task runs first), so the import overlaps its boot."""
    import importlib

    await asyncio.sleep(0)
    for name in _SERVICE_MODULES:
        importlib.import_module(name)


log = logging.getLogger(__name__)


class Daemon:
    """A started daemon: its services and what the listeners report."""

    def __init__(
        self, services: Services, status: DaemonStatus, unix: UnixListener | None = None
    ) -> None:
        self.services = services
        self.status = status
        self.unix = unix  # rebound when its runtime dir is removed (daemon/rundir.py)


def _js_phase(cfg: Config) -> float:
    """Bound of a phase of JetStream requests: one request's timeout and a retry's worth."""
    return js_timeout(cfg) + 2


async def compose(cfg: Config, stack: contextlib.AsyncExitStack, phases: Phases) -> Daemon:
    """Build and start every service on ``stack``; the listeners last."""
    services = await _services(cfg, stack, phases)
    phases.begin("the listeners", 3, "the socket dir or the HTTP port is in the way")
    status, unix = await _listeners(services, stack)
    phases.mark("listeners")
    log.info("started in %s", phases.summary())
    return Daemon(services, status, unix)


async def _services(cfg: Config, stack: contextlib.AsyncExitStack, phases: Phases) -> Services:
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
    supervisor: NatsSupervisor | None = None
    ns = cfg.kube_namespace  # where the daemon keeps its objects, on either store
    # kubectl's Agent table reads the focus view (tables.py), which the focus store fills.
    from agentcoord.stores.kv.focus import FocusView

    focus_view = FocusView()
    live = LiveCells(ns, {"focus": focus_view.intent})
    async with asyncio.TaskGroup() as tg:
        # The kube API's listener has the loopback port's per-uid budgets.
        objects = tg.create_task(open_store(cfg, stack, live=live, listener=listener_limits(cfg)))
        if not cfg.nats_url:
            # The supervisor also renders per-agent NATS users (natsusers.py; docs/messaging.md
            # "Direct NATS access (per-agent users)").
            started = tg.create_task(
                stack.enter_async_context(
                    ScopedNatsSupervisor(cfg.state_dir, cfg.nats_server_bin, cfg.nats_sync)
                )
            )
        # Last: its first step runs after the supervisor's, which forks nats-server.
        tg.create_task(_preload())
    store = objects.result()
    if not cfg.nats_url:
        supervisor = started.result()
    phases.mark("store+nats-server")
    phases.begin("the NATS client", 5 if not cfg.nats_url else 10, nats_hint)
    from agentcoord.stores.agentsource import StoreAgents
    from agentcoord.stores.objects.agentdirectory import StoreDirectory
    from agentcoord.stores.objects.repository import (
        StoreAgentRecords,
        StoreChannelRecords,
        StoreJobRecords,
        StorePromptRecords,
        StoreTaskRecords,
    )

    host = host_qualifier(cfg)  # claim holders' and session agents' host
    directory = StoreDirectory(store, ns, host=host)
    nats = await stack.enter_async_context(NatsLink(cfg, supervisor))
    phases.mark("nats client")
    phases.begin("the audit stream", _js_phase(cfg), f"JetStream did not answer; {nats_hint}")

    from agentcoord.leases import EditLeases
    from agentcoord.leases.filekeys import FileKeys
    from agentcoord.leases.leasing import Leases
    from agentcoord.localagents import LocalAgents
    from agentcoord.messaging import Messaging, NoAgentUsers, Recipients
    from agentcoord.stores.audit import AuditLog
    from agentcoord.stores.kv import ClaimStore, FocusStore
    from agentcoord.stores.kv.approvalstore import ApprovalStore

    nc = nats.client
    js = nc.jetstream(timeout=js_timeout(cfg))
    r = cfg.nats_replicas
    # The audit stream first: claims, focus and messaging report into it (docs/claims.md).
    audit = await stack.enter_async_context(
        AuditLog(js, replicas=r, max_age=cfg.audit_max_age, max_bytes=cfg.audit_max_bytes)
    )
    access = supervisor if isinstance(supervisor, ScopedNatsSupervisor) else None
    phases.begin(
        "claims, focus, local agents and messaging", _js_phase(cfg) + 3, f"JetStream: {nats_hint}"
    )
    # Who a message may be addressed to (docs/messaging.md "Recipients"): Agent objects, the
    # local package agents (the index the local agents service watches) and the human.
    from agentcoord.localagents.index import PackageIndex
    from agentcoord.localagents.paths import resolve_agentihub_dir

    index = PackageIndex(
        resolve_agentihub_dir(cfg.agentihub_dir) if cfg.local_agents_enabled else None
    )
    # The human's tokens for generic MCP clients: each names an agent (docs/tokens.md).
    agent_tokens = AgentTokens(cfg.state_dir / AGENT_TOKENS_FILE, audit)
    recipients = Recipients(
        store, ns, packages=index, human=f"human:{cfg.user}", host=host, also=agent_tokens.names
    )
    # Messaging (docs/messaging.md): JetStream inboxes, channels, handoff offers, prompts.
    messaging = Messaging(
        nc,
        channels=StoreChannelRecords(store, ns),
        prompts=StorePromptRecords(store, ns),
        tasks=StoreTaskRecords(store, ns),
        access=access if access is not None else NoAgentUsers(),
        nats_url=nats.url,
        audit_log=audit,
        replicas=r,
        js_timeout=js_timeout(cfg),
        retention=_inbox_retention(cfg),
        recipients=recipients,
    )
    # Local agents (docs/localagents.md): the package index watcher, local jobs, and the
    # launcher whose AgentProfiles drive every start (docs/profiles.md).
    local_agents = LocalAgents.from_config(
        cfg,
        base_env=dict(os.environ),
        records=StoreAgentRecords(store, ns),
        tasks=StoreJobRecords(store, ns),
        store=store,
        nc=nc,
        inboxes=messaging,
        index=index,
    )
    identity = IdentityResolver(
        uid=os.getuid(),
        user=cfg.user,
        kinds=session_kinds(cfg),  # the agent CLIs whose sessions are agents (identity/kinds)
        runners=local_agents.runners,  # local agents own the runners; identity reads them
        probe=PsutilProbe(),
        # session agents are Agent objects, named host-qualified with nats_url
        # (docs/one-host-to-many.md "What runs where")
        directory=directory,
        tokens=tokens,
        audit=audit,  # refused attempts to act as the human (docs/security.md)
        agent_tokens=agent_tokens,
    )
    async with asyncio.TaskGroup() as tg:
        claims_t = tg.create_task(
            stack.enter_async_context(ClaimStore(js, audit, replicas=r, host=host))
        )
        focus_t = tg.create_task(
            stack.enter_async_context(FocusStore(js, audit, replicas=r, view=focus_view))
        )
        local_t = tg.create_task(stack.enter_async_context(local_agents))
        messaging_t = tg.create_task(stack.enter_async_context(messaging))
        approvals_t = tg.create_task(stack.enter_async_context(ApprovalStore(js, replicas=r)))
    claims, focus = claims_t.result(), focus_t.result()
    local, messaging = local_t.result(), messaging_t.result()
    phases.mark("claims, focus, audit, local agents, messaging")
    phases.begin("the operator and session watch", 5, "the store or nats-server stalled")
    # The Agent controller (adopts or reaps runners first), ask and send_message
    # (docs/ask-and-operator.md): entered after local agents and messaging, so it stops its
    # runners first.
    from agentcoord.budgets import Budgets, Ceilings

    # Ceilings on sessions, started agents and spend (docs/budgets.md).
    ceilings = Ceilings(cfg.max_sessions, cfg.max_agents, cfg.max_spend_usd)

    # A session past max_sessions: the human hears of it as a notice prompt, which the
    # desktop notifier shows (docs/budgets.md "Sessions past the ceiling").
    def tell_human(session: str, text: str) -> Any:
        return messaging.ask_human(session, "notify", text, timeout=0)

    budgets = await stack.enter_async_context(
        Budgets(ceilings, store, audit, ns, tell_human=tell_human)
    )
    local.budgets = budgets  # local jobs are admitted under the ceilings too
    operator = await _operator(cfg, stack, store, local, messaging, recipients, audit, budgets)
    # A desktop notification for each new prompt, where notify-send exists (README
    # "What the human gets").
    from agentcoord.activity import SessionActivity
    from agentcoord.activity.notices import parse_quiet_hours
    from agentcoord.console.desktop import DesktopNotifier

    # Every session's state (docs/activity.md); a new wait is a desktop notice too.
    quiet = parse_quiet_hours(cfg.notify_quiet_hours)
    desktop = await stack.enter_async_context(DesktopNotifier(nc, quiet_hours=quiet))
    # Files' keys: git's answers per directory, kept for the daemon's life; the leases service
    # owns them, and the approvals, the activity and the console name repositories with them.
    file_keys = FileKeys()
    activity = SessionActivity(
        cfg.claude_dir, audit, file_keys=file_keys, on_wait=[desktop.session_waiting]
    )
    # Session agents end with their claude process; ended ones go after the retention.
    from agentcoord.localagents.session_end import SessionWatch

    forget = (messaging.drop_inbox, focus.forget, activity.forget)
    sessions = await stack.enter_async_context(
        SessionWatch(store, directory, ns, retention=cfg.session_retention, forget=forget)
    )
    # Files two live worktrees both change, followed from filesystem events; their sessions
    # are told through their inboxes (docs/claims.md "Conflicts between worktrees").
    from agentcoord.leases.conflictwatch import ConflictWatch

    conflicts = await stack.enter_async_context(ConflictWatch(sessions.live_cwds, messaging))
    sessions.on_live_change.append(conflicts.sessions_changed)
    return Services(
        config=cfg,
        identity=identity,
        nats=nats,
        store=store,
        audit=audit,
        claims=claims,
        focus=focus,
        # Claims, the write guard, edit leases, the commit check (docs/claims.md "The leases
        # service"): its holders' sites and its file keys live as long as this daemon.
        leases=Leases(claims, focus, file_keys, EditLeases.from_config(cfg)),
        agents=StoreAgents(store, ns, states=activity),
        messaging=messaging,
        local_agents=local,
        operator=operator,
        sessions=sessions,
        approvals=_approvals(cfg, approvals_t.result(), audit, StoreAgents(store, ns), file_keys),
        activity=activity,
        budgets=budgets,
        conflicts=conflicts,
    )


def _approvals(
    cfg: Config, kv: Any, audit: AuditLog, agents: StoreAgents, file_keys: FileKeys
) -> Approvals:
    """Standing approvals (docs/approvals.md): a session scope must name a known agent."""
    from pathlib import Path

    from agentcoord.approvals import Approvals

    async def exists(name: str) -> bool:
        return await agents.get_agent(name) is not None

    return Approvals(
        kv,
        audit,
        home=Path.home(),
        claude_dir=cfg.claude_dir,
        file_keys=file_keys,
        agent_exists=exists,
        hold_s=float(cfg.permission_hold),
    )


async def _operator(
    cfg: Config,
    stack: contextlib.AsyncExitStack,
    store: ObjectBackend,
    local: LocalAgents,
    messaging: Messaging,
    recipients: Recipients,
    audit: AuditLog,
    budgets: Budgets,
) -> AgentOps:
    """The operator (docs/ask-and-operator.md "The operator")."""
    from agentcoord.agentops import AgentController, AgentOps
    from agentcoord.agentops.answerback import AnswersBack
    from agentcoord.agentops.checkpoints import BundleRetention, prune

    controller = await stack.enter_async_context(
        AgentController(
            store=store,
            runners=local.runners,
            spec=local.spec,
            sandbox=local.sandbox,
            state_dir=cfg.state_dir,
            runtime_dir=cfg.runtime_dir,
            claude_dir=cfg.claude_dir,
            base_env=dict(os.environ),
            audit=audit,
            user=cfg.user,
            namespace=cfg.kube_namespace,
            launcher=local.launcher,
        )
    )
    kept = BundleRetention(keep=cfg.checkpoint_keep, max_bytes=cfg.checkpoint_max_bytes)
    # entered after the controller, so it stops first: no answer goes out for a turn the stop
    # cancels
    answers = await stack.enter_async_context(AnswersBack(messaging))
    operator = AgentOps(
        controller,
        messaging=messaging,
        recipients=recipients,
        local_agents=local,
        bundle_retention=kept,
        budgets=budgets,
        answers=answers,
    )
    if (cfg.state_dir / "checkpoints").is_dir():  # limits changed since, or older state
        await prune(store, cfg.kube_namespace, cfg.state_dir, kept)
    return operator


def _inbox_retention(cfg: Config) -> dict[str, Any]:
    """The message stream's limits (docs/reliability.md "State retention")."""
    return {
        "max_age": cfg.inbox_max_age,
        "max_msgs": cfg.inbox_max_msgs,
        "max_bytes": cfg.inbox_max_bytes,
    }


def _claim_site(s: Services) -> Callable[[str, int | None], tuple[str | None, str | None] | None]:
    """A file claim's holder worktree and branch, as the claim tools noted them (the console
    shows them with the key: docs/architecture.md "Times and keys shown to people")."""
    leases = s.leases

    def site(key: str, token: int | None) -> tuple[str | None, str | None] | None:
        found = leases.site(key, token)
        return None if found is None else (found.worktree, found.branch)

    return site


async def _listeners(
    s: Services, stack: contextlib.AsyncExitStack
) -> tuple[DaemonStatus, UnixListener]:
    """The MCP core, hooks and console over the services, then HTTP and the unix socket."""
    from agentcoord.claude.hooks import HookDeps, Hooks
    from agentcoord.claude.push import ChannelPush
    from agentcoord.console.conflictsource import TrackedConflicts
    from agentcoord.console.routes import ConsoleRoutes
    from agentcoord.console.sections import ConsoleSections
    from agentcoord.daemon.toolset import build_registry
    from agentcoord.identity.humanproof import read_human_token
    from agentcoord.mcp.core import McpCore, McpLimits
    from agentcoord.mcp.http import HttpRoutes
    from agentcoord.mcp.unix import UnixListener

    cfg = s.config
    connections = Connections(http_addr=cfg.http_addr)
    status = DaemonStatus(s, connections)
    # channel push (docs/claude-code.md "Channels")
    push = await stack.enter_async_context(ChannelPush(s.messaging))
    # native inboxes (docs/claude-code.md "The native inbox"); ask prompts live sessions there
    native = await stack.enter_async_context(_native_inboxes(s, push.pushing))
    s.operator.inbox.live = native
    hooks = Hooks(
        HookDeps(
            leases=s.leases,
            messaging=s.messaging,
            directory=s.identity.directory,
            sessions=s.sessions,
            push=push,
            approvals=s.approvals,
            activity=s.activity,
            budgets=s.budgets,
        )
    )
    core = McpCore(
        build_registry(s),
        s.identity,
        status,
        hooks,
        cfg.tools_page_size,
        leases=s.leases,
        push=push,
        limits=McpLimits.from_config(cfg),
        approvals=s.approvals,
        budgets=s.budgets,
        live_cwds=s.sessions.live_cwds,  # the checkout and ref guards (docs/claims.md)
    )
    sections = ConsoleSections(
        claims=s.claims,
        focus=s.focus,
        agents=s.agents,
        local_agents=s.local_agents,
        messaging=s.messaging,
        audit=s.audit,
        site=_claim_site(s),
        approvals=s.approvals,
        budgets=s.budgets,
        claude_dir=cfg.claude_dir,
        file_keys=s.leases.keys,
        conflicts=TrackedConflicts(s.conflicts),
    )
    # The console's sessions are signed with the human token (docs/security.md "Console
    # login"), the one _services wrote; unreadable, a random key: no console login works.
    key = read_human_token(cfg.state_dir) or secrets.token_urlsafe(32)
    console = ConsoleRoutes(
        s.identity,
        status.status,
        sections,
        s.nats.client,
        human_token=key,
        login_ttl=cfg.console_login_ttl,
    )
    http = await _http_listener(cfg, stack, HttpRoutes(s.identity, status, core, console, hooks))
    host = cfg.http_host if ":" not in cfg.http_host else f"[{cfg.http_host}]"
    addr = f"{host}:{http.port}"
    connections.http_addr = addr
    connections.http = lambda: http.open_connections
    inherited = _inherited_socket(cfg)
    unix = await stack.enter_async_context(
        UnixListener(
            cfg.socket_path,
            core,
            s.identity,
            connections,
            cfg.max_request_bytes,
            inherited=inherited,
        )
    )
    stack.callback(http.stop_accepting)  # at stop both listeners drain at once
    # Last: clients take http.addr to mean "the daemon serves", the unix socket included.
    write_private(cfg.http_addr_file, addr + "\n", durable=False)
    stack.callback(_unlink, cfg.http_addr_file)
    return status, unix


def _native_inboxes(s: Services, pushing: Callable[[str], bool]) -> NativeInboxes:
    """Delivery through Claude Code's own inboxes: the sessions' socket dir is where Claude
    Code puts it (``$XDG_RUNTIME_DIR``, else ``$CLAUDE_CODE_TMPDIR``, else the temp dir, then
    ``cc-socks``); the live session agents come from the store; a session the channel push
    serves (``pushing``) keeps its channel."""
    import tempfile

    from agentcoord.claude.inbox import NativeInboxes, channel_of
    from agentcoord.stores.objects.agentdirectory import PROC_LABEL, StoreDirectory, parse_proc
    from agentcoord.stores.records import effective_phase

    base = (
        os.environ.get("XDG_RUNTIME_DIR")
        or os.environ.get("CLAUDE_CODE_TMPDIR")
        or tempfile.gettempdir()
    )
    directory = s.identity.directory
    selector = directory.selector if isinstance(directory, StoreDirectory) else PROC_LABEL
    store, ns = s.store, s.config.kube_namespace

    async def running_keys() -> dict[tuple[int, float], str]:
        objs, _ = await store.list("agents", ns, selector)
        out: dict[tuple[int, float], str] = {}
        for obj in objs:
            if (obj.get("status") or {}).get("phase") != "Running":
                continue
            key = parse_proc((obj["metadata"].get("labels") or {}).get(PROC_LABEL))
            if key is not None:
                out[(key[0], key[1])] = str(obj["metadata"]["name"])
        return out

    async def running() -> dict[int, str]:
        return {key[0]: agent for key, agent in (await running_keys()).items()}

    async def identify(sock: socket.socket) -> Caller | None:
        """The writer of a frame as the daemon identifies any unix peer (never the human:
        that takes the login the CLI makes)."""
        from agentcoord.errors import AgentCoordError
        from agentcoord.identity.procprobe import peer_cred

        cred = peer_cred(sock)
        try:
            return await s.identity.from_unix(cred)
        except AgentCoordError:
            return None
        finally:
            cred.close()

    human = s.identity.human

    async def route(caller: Caller, to: str, text: str) -> dict[str, Any]:
        """A session's message to an agent that is no Claude Code session: to the human's
        inbox, or as ``send_message`` does (a local package agent is started for it, and its
        final answer comes back to the session as a message)."""
        from agentcoord.proto.agent.v1 import agent_pb2 as pb

        if to == human:
            out = await s.messaging.send(caller.agent, to, pb.MESSAGE_TEXT, text)
            return {**out, "via": "inbox"}
        channel = channel_of(to)
        if channel is not None:  # a post, as `post` does: the writer must take part in it
            out = await s.messaging.post(caller.agent, channel, pb.MESSAGE_TEXT, text)
            return {**out, "via": "channel"}
        return await s.operator.deliver(caller, to, text, wait=False, timeout=0.0, answer_back=True)

    from agentcoord.claude.inbox import channel_box

    kinds, probe = session_kinds(s.config), PsutilProbe()
    # A session process's CLI, looked up once (None: no kind recognises it).
    kind_of: dict[tuple[int, float], SessionKind | None] = {}

    def session_kind(key: tuple[int, float]) -> SessionKind | None:
        if key not in kind_of:
            chain = probe.chain(key[0])
            proc = chain[0] if chain else None
            kind_of[key] = next((k for k in kinds if proc and k.recognise(proc)), None)
        return kind_of[key]

    async def published() -> dict[str, str]:
        """Who gets a record (docs/claude-code.md "Who sessions can message"): the local
        package agents and registered HTTP agents by their id, each live channel as
        ``#<name>``, the sessions of the other CLIs by their agent name, the human as
        "human"."""
        names = {pkg.agent_id: pkg.agent_id for pkg in s.local_agents.index.packages()}
        for rec in s.local_agents.records.list():
            if rec.transport == "http":
                names[rec.agent_id] = rec.agent_id
        now = time.time()
        for ch in await s.messaging.all_channels():
            if effective_phase(ch, now) in ("Pending", "Open"):
                names[channel_box(ch.name)] = channel_box(ch.name)
        sessions = await running_keys()
        for key in [k for k in kind_of if k not in sessions]:
            del kind_of[key]  # ended: its pid may come back as another process
        for key, agent in sessions.items():
            kind = (
                await asyncio.to_thread(session_kind, key) if key not in kind_of else kind_of[key]
            )
            if kind is not None and not kind.has_native_inbox:
                names[agent] = agent
        names[human] = "human"
        return names

    return NativeInboxes(
        s.messaging,
        claude_dir=s.config.claude_dir,
        socks_dir=Path(base) / "cc-socks",
        sessions=running,
        identify=identify,
        route=route,
        published=published,
        elsewhere=pushing,
    )


LAST_HTTP_ADDR = "http.last"  # in the state dir: the address to serve on again after a restart


async def _http_listener(
    cfg: Config, stack: contextlib.AsyncExitStack, routes: HttpRoutes
) -> HttpServer:
    """The loopback HTTP listener (README "Where things live", docs/daemon.md "The HTTP
    address").

    A port the user chose (flag, environment, config file) is used or the start fails with
    one line. Otherwise the address this state served on last (``<state>/http.last``) comes
    first, so the http hooks set up for it reach the daemon after a restart; then the
    default port; then any free one. Whatever is served is written to ``http.addr`` (what
    every client reads) and remembered."""
    from agentcoord.kernel.httpserver import HttpServer

    host = cfg.http_host
    if cfg.http_addr_chosen and cfg.http_port != 0:
        try:
            return await stack.enter_async_context(
                HttpServer(
                    routes,
                    host,
                    cfg.http_port,
                    max_body=cfg.max_request_bytes,
                    **listener_limits(cfg),
                )
            )
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            raise ConfigError(
                f"HTTP address {cfg.http_addr} is in use (another agentcoord daemon, or another "
                "program): choose a free one with --http-addr HOST:PORT (or :0 for any free port)"
            ) from None
    remembered = cfg.state_dir / LAST_HTTP_ADDR
    last = _last_port(remembered, host)
    ports = [p for p in (last, cfg.http_port) if p]
    default_taken = False
    for port in dict.fromkeys([*ports, 0]):  # in order, once each
        try:
            server = await stack.enter_async_context(
                HttpServer(
                    routes, host, port, max_body=cfg.max_request_bytes, **listener_limits(cfg)
                )
            )
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or port == 0:
                raise
            if port == last:
                log.warning(
                    "%s:%d, where this daemon served before its restart, is in use by another "
                    "program: serving elsewhere, so http hooks set up for it miss this daemon "
                    "until `agentcoord setup claude` is run again",
                    host,
                    port,
                )
            else:
                default_taken = True
            continue
        if default_taken:
            log.warning(
                "%s is in use (another daemon?): serving HTTP on port %d instead (see %s)",
                cfg.http_addr,
                server.port,
                cfg.http_addr_file,
            )
        if server.port != last:
            try:
                write_private(remembered, f"{host}:{server.port}\n")
            except OSError as exc:
                log.warning("cannot remember the HTTP address in %s: %s", remembered, exc)
        return server
    raise AssertionError("port 0 always binds or raises")  # pragma: no cover


def _last_port(path: Path, host: str) -> int | None:
    """The port this state served HTTP on last, if it was on ``host``."""
    try:
        last_host, _, port = path.read_text().strip().rpartition(":")
        return int(port) if last_host == host and 0 < int(port) < 65536 else None
    except (OSError, ValueError):
        return None


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


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
