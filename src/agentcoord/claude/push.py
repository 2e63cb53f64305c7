"""Claude Code channels: inbox messages pushed into a live session, and its permission dialogs
relayed to the human (docs/claude-code.md "Channels").

A session whose MCP server (our shim) declares ``experimental["claude/channel"]`` may be sent
``notifications/claude/channel`` ``{content, meta}``, and an idle session takes it to the model
at once (docs/claude-code.md "Channels"). Claude Code says nothing about whether it was started with
channels on (its ``initialize`` is the same either way), so push is opt-in: ``agentcoord claude``
sets :data:`PUSH_ENV` in the environment Claude Code hands the shim, and the daemon reads it from
the shim's process. It only opts into push, never says who the caller is (that still comes from the
peer's ancestry, docs/security.md "By transport"). A session without it keeps getting its messages
from the hooks.

Exactly once across channel, native inbox and hooks: all read the agent's one durable consumer
(:class:`~agentcoord.stores.messagebus.MessageBus`), which returns each message once. The push
reads with ``after`` (what it has written), so a message stays unacknowledged until it was
written whole to the session's socket, and the next read confirms it; a hook read acknowledges
what it takes. A message written but not yet confirmed when the connection drops is given to
the next push reader, or comes back to the hooks after the bus's ``ack_wait``.

:func:`pump_inbox` is that read-write-confirm loop, shared with the native inbox
(claude/inbox/delivery.py).

Waking: the pump does not park in a long pull (that holds the agent's read lock, and a hook's
or the ``inbox`` tool's read would wait behind it); one core NATS subscription per daemon on the
inbox, broadcast and channel subjects wakes the pumps a message may concern, and a slow poll
covers anything a wake-up missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentcoord.kernel import wire
from agentcoord.kernel.tasks import TaskSet
from agentcoord.stores.messagebus import inbox_subject

if TYPE_CHECKING:
    from agentcoord.messaging import Messaging

__all__ = [
    "CHANNEL",
    "CHANNEL_CAPS",
    "CHANNEL_FLAGS",
    "PERMISSION",
    "PERMISSION_KIND",
    "PERMISSION_PREFIX",
    "PERMISSION_REQUEST",
    "PUSH_ENV",
    "ChannelPush",
    "channels_off",
    "context_line",
    "notification",
    "opted_in",
    "pump_inbox",
]

log = logging.getLogger(__name__)

PUSH_ENV = "AGENTCOORD_CHANNELS"  # set by ``agentcoord claude``; "1" opts the session in
CHANNEL = "notifications/claude/channel"
PERMISSION_REQUEST = "notifications/claude/channel/permission_request"
PERMISSION = "notifications/claude/channel/permission"
# What the initialize result declares to a push session: channels, then the relay
# (docs/claude-code.md "Channels").
CHANNEL_CAPS: dict[str, Any] = {"claude/channel": {}, "claude/channel/permission": {}}
# A relayed permission dialog is a "choice" HumanPrompt between allow and deny: the kinds the
# HumanPrompt schema takes (stores/objects/kinds.py), rendered as a choice by the console and
# the CLI; its question starts with PERMISSION_PREFIX so both show what it is.
PERMISSION_KIND = "choice"
PERMISSION_PREFIX = "Claude Code permission"
PERMISSION_CHOICES = ["allow", "deny"]
CLIENT_NAME = "claude-code"  # clientInfo.name of Claude Code: no other client reads channels

_BATCH = 50  # messages per read
_LINGER_S = 0.05  # after a wake-up, wait this long for the stream to store the message
_POLL_S = 2.0  # the slow poll behind the wake-ups
_PERMISSION_WAIT_S = 24 * 3600.0  # an unanswered dialog's prompt stays open this long
_REQUEST_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_PREVIEW_CHARS = 2000
_SHOWN_CHARS = 300  # of the input preview, in the question

Send = Callable[[Any], Awaitable[None]]


def opted_in(pid: int | None) -> bool:
    """Whether the peer process (the shim) was started with :data:`PUSH_ENV` set to 1."""
    if pid is None:
        return False
    import psutil

    try:
        return psutil.Process(pid).environ().get(PUSH_ENV) == "1"
    except (psutil.Error, OSError):
        return False


# Claude Code's remote feature flags for channels and for the permission relay; offline (no
# telemetry) they read false unless the disk cache is honoured (docs/claude-code.md "Channels").
CHANNEL_FLAGS = ("tengu_harbor", "tengu_harbor_permissions")
_TELEMETRY_OFF = ("DISABLE_TELEMETRY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
_GB_DISK_CACHE = "CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF"


def channels_off(environ: Mapping[str, str], config: Mapping[str, Any]) -> str | None:
    """Why Claude Code would ignore our channel, from its environment and its ``.claude.json``
    (read, never written: the flag cache is Claude Code's own); None when channels are on.
    A session whose channel is ignored must not be pushed to: the pushed messages would be
    acknowledged and never seen, where the hooks would have delivered them."""
    cached = config.get("cachedGrowthBookFeatures")
    flags = cached if isinstance(cached, dict) else {}
    if flags.get(CHANNEL_FLAGS[0]) is not True:
        return f"Claude Code's {CHANNEL_FLAGS[0]} feature flag (channels) is not on for you"
    if any(environ.get(k) for k in _TELEMETRY_OFF) and environ.get(_GB_DISK_CACHE) != "1":
        return f"with telemetry off Claude Code reads its feature flags as off ({_GB_DISK_CACHE})"
    return None


def _body(view: dict[str, Any]) -> str:
    return "a handoff offer (see the inbox tool)" if "handoff" in view else view.get("text", "")


def context_line(view: dict[str, Any]) -> str:
    """One message as the model reads it: ``from A in #ch: text`` (hooks and channel alike)."""
    where = f" in #{view['channel']}" if view.get("channel") else ""
    return f"from {view.get('from')}{where}: {_body(view)}"


def notification(view: dict[str, Any]) -> dict[str, Any]:
    """``notifications/claude/channel`` for one inbox message (meta keys become attributes of
    the ``<channel>`` tag the model sees, so they are plain identifiers)."""
    meta = {"from": str(view.get("from", "")), "kind": str(view.get("kind", ""))}
    if view.get("channel"):
        meta["channel"] = str(view["channel"])
    meta["id"] = str(view.get("id") or view.get("seq", ""))
    if view.get("seq") is not None:
        meta["seq"] = str(view["seq"])
    return {
        "jsonrpc": "2.0",
        "method": CHANNEL,
        "params": {"content": context_line(view), "meta": meta},
    }


Write = Callable[[list[Any], int], Awaitable[int]]


async def pump_inbox(
    messaging: Messaging,
    agent: str,
    wake: asyncio.Event,
    stopped: Callable[[], bool],
    write: Write,
    poll: float = _POLL_S,
) -> None:
    """Read, write, confirm, until ``stopped()``: a message is acknowledged only once
    ``write`` (which returns the highest seq it handed over) took it whole. Shared by the
    channel push and the native inbox (claude/inbox), which read the same consumer as the
    hooks: each message goes one way, once."""
    written = 0  # the highest seq written to the session (or skipped as our own)
    batch, linger = _BATCH, 0.0  # first: what queued up while the session was away
    while not stopped():
        wake.clear()
        got = await messaging.read_inbox(agent, batch, linger, after=written)
        # Then one message a read: a wake-up is about one message, a batch costs a second
        # pull for the rest, and a read that finds nothing at once waits for its whole
        # batch (up to 1 s) when the consumer says a message is on its way. A full batch
        # means a backlog: keep taking batches.
        batch, linger = (_BATCH if len(got) >= batch > 1 else 1), 0.0
        written = await write(got, written)
        if got:
            continue  # the next read confirms what was written, and drains the rest
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(poll):
                await wake.wait()
                linger = _LINGER_S
    if written:
        # Confirm what this connection was given; anything the read takes with it stays
        # held for the next reader (the bus gives it again).
        await messaging.read_inbox(agent, 1, 0.0, after=written)


@dataclass(eq=False)
class _Pending:
    """One relayed permission dialog: its prompt, and the task waiting for the answer."""

    prompt: str
    request_id: str
    tool: str
    task: asyncio.Task[Any] | None = None
    done: bool = False


@dataclass(eq=False)
class _Target:
    """The connection an agent's messages are pushed to."""

    agent: str
    session: Any  # McpSession
    send: Send
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    stopped: bool = False
    permissions: dict[str, _Pending] = field(default_factory=dict)


class ChannelPush:
    """Async context manager: one pump per connected push session, and the permission relay.

    At most one connection per agent is pushed to (the newest): two would split the agent's
    messages between them."""

    def __init__(self, messaging: Messaging, *, poll: float = _POLL_S) -> None:
        self._messaging = messaging
        self._poll = poll
        self._targets: dict[str, _Target] = {}
        self._tasks = TaskSet("channel push")
        # Wake-ups are watched only while some session is pushed to: every message sent on
        # the machine is copied into the daemon for them, which costs the sends of everyone
        # else when nobody is listening (docs/messaging.md "Wake-ups").
        self._subs: list[Any] = []
        self._watch_lock = asyncio.Lock()

    async def __aenter__(self) -> ChannelPush:
        await self._tasks.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for target in self._targets.values():
            target.stopped = True
            target.wake.set()
        await self._tasks.__aexit__(*exc)
        await self._unwatch(force=True)

    async def _watch(self) -> None:
        async with self._watch_lock:
            if not self._subs:
                self._subs = await self._messaging.watch(self._on_message)

    async def _unwatch(self, force: bool = False) -> None:
        async with self._watch_lock:
            if self._subs and (force or not self._targets):
                subs, self._subs = self._subs, []
                for sub in subs:
                    with contextlib.suppress(Exception):
                        await sub.unsubscribe()

    # -- sessions ------------------------------------------------------------------------------

    def eligible(self, session: Any) -> bool:
        """A session agent's connection from Claude Code, opted in by its launcher."""
        return (
            self._tasks.running
            and session.caller.kind == "session"
            and session.push_opt_in
            and session.send is not None
            and session.client_info.get("name") == CLIENT_NAME
        )

    def attach(self, session: Any) -> None:
        """Start pushing ``session.caller.agent``'s inbox to this connection."""
        agent = session.caller.agent
        old = self._targets.get(agent)
        if old is not None:
            if old.session is session:
                return
            self._stop(old, "replaced by a newer connection of the session")
        target = _Target(agent, session, session.send)
        self._targets[agent] = target
        self._tasks.spawn(self._pump(target), name=f"push {agent}")
        log.info("pushing %s's messages over its channel", agent)

    def detach(self, session: Any) -> None:
        """The connection ended: stop its pump and close its open permission prompts."""
        target = self._targets.get(session.caller.agent)
        if target is not None and target.session is session:
            del self._targets[target.agent]
            self._stop(target, "the session's connection closed")

    def pushing(self, agent: str) -> bool:
        return agent in self._targets

    def _stop(self, target: _Target, why: str) -> None:
        target.stopped = True
        target.wake.set()
        for pending in list(target.permissions.values()):
            self._close(target, pending, why)

    async def _on_message(self, msg: Any) -> None:
        """A wake-up: an inbox message wakes its agent's pump, a channel post its
        participants' (as the record names them: the send routed it to them), a broadcast or
        a channel without a record every pump. A woken pump that finds nothing holds the
        agent's inbox for the linger, so the others are left to sleep."""
        subject: str = msg.subject
        if not self._targets:
            return
        woken: Any = self._targets.keys()
        if subject.startswith("agents.") and subject.endswith(".inbox"):
            woken = [subject[len("agents.") : -len(".inbox")]]
        elif subject.startswith("channels."):
            try:
                rec = await self._messaging.channel(subject[len("channels.") :])
            except Exception:  # a store hiccup: wake them all, the reads sort it out
                rec = None
            if rec is not None:
                woken = rec.participants
        for agent in list(woken):
            target = self._targets.get(agent)
            if target is not None:
                target.wake.set()

    async def _pump(self, target: _Target) -> None:
        # Watching before the first read: a message sent after that read wakes the pump.
        await self._watch()
        try:
            await pump_inbox(
                self._messaging,
                target.agent,
                target.wake,
                lambda: target.stopped,
                lambda got, written: self._write(target, got, written),
                self._poll,
            )
        finally:
            await self._unwatch()

    async def _write(self, target: _Target, got: list[Any], written: int) -> int:
        """Write ``got`` as notifications until one fails; the highest seq written."""
        mine = inbox_subject(target.agent)
        for r in got:
            if target.stopped:
                break  # left unconfirmed: the next reader gets it
            view = wire.message_view(r.message, r.seq)
            if view.get("from") != target.agent or r.subject == mine:  # not our own post
                try:
                    await target.send(notification(view))
                except (ConnectionError, RuntimeError):
                    target.stopped = True
                    break
            written = max(written, r.seq)
        return written

    # -- permission relay ----------------------------------------------------------------------

    async def permission_request(self, session: Any, params: dict[str, Any]) -> None:
        """``notifications/claude/channel/permission_request``: a HumanPrompt for the human,
        whose answer goes back to this connection (first answer wins, terminal or here)."""
        target = self._targets.get(session.caller.agent)
        if target is None or target.session is not session:
            return
        request_id = params.get("request_id")
        tool = params.get("tool_name")
        if not isinstance(request_id, str) or not _REQUEST_ID.match(request_id):
            log.warning("ignoring a permission request without a usable request_id")
            return
        if request_id in target.permissions or not isinstance(tool, str):
            return
        description = str(params.get("description") or "")
        preview = str(params.get("input_preview") or "")[:_PREVIEW_CHARS]
        from agentcoord.messaging.prompts import new_prompt_id

        pending = _Pending(new_prompt_id(), request_id, tool)
        target.permissions[request_id] = pending
        question = f"{PERMISSION_PREFIX}: allow {tool}?" + (
            f" {description}" if description else ""
        )
        if preview:  # the console shows the question alone: it carries the input's start too
            cut = len(preview) > _SHOWN_CHARS
            question += f" ({preview[: _SHOWN_CHARS - 3] + '...' if cut else preview})"
        # Where the session works, so an answer can grant for its repository
        # (docs/approvals.md "From a permission prompt").
        cwd = session.caller.cwd
        context = (
            f"session {target.agent}, tool {tool}"
            + (f"\ncwd: {cwd}" if isinstance(cwd, str) and cwd else "")
            + (f"\ninput: {preview}" if preview else "")
        )
        pending.task = self._tasks.spawn(
            self._relay(target, pending, question, context), name=f"permission {pending.prompt}"
        )

    async def _relay(self, target: _Target, pending: _Pending, question: str, ctx: str) -> None:
        out = await self._messaging.ask_human(
            target.agent,
            PERMISSION_KIND,
            question,
            context=ctx,
            schema={"enum": PERMISSION_CHOICES},
            choices=PERMISSION_CHOICES,
            timeout=_PERMISSION_WAIT_S,
            prompt_id=pending.prompt,
        )
        if pending.done:
            return
        pending.done = True
        target.permissions.pop(pending.request_id, None)
        behavior = out.get("answer") if out.get("answered") else None
        if behavior not in PERMISSION_CHOICES:
            return
        sent = False
        if not target.stopped:
            note = {"request_id": pending.request_id, "behavior": behavior}
            try:
                await target.send({"jsonrpc": "2.0", "method": PERMISSION, "params": note})
                sent = True
            except (ConnectionError, RuntimeError):
                pass
        self._messaging.emit(
            "PERMISSION_RELAYED",
            target.agent,
            prompt=pending.prompt,
            request_id=pending.request_id,
            tool=pending.tool,
            behavior=behavior,
            delivered=sent,
        )

    def moved_on(self, agent: str, event: str, payload: dict[str, Any]) -> None:
        """A hook says the session went past its dialogs (answered in the terminal: Claude Code
        tells the channel nothing): PostToolUse closes the prompts for that tool,
        UserPromptSubmit all of them."""
        target = self._targets.get(agent)
        if target is None or not target.permissions:
            return
        tool = payload.get("tool_name")
        for pending in list(target.permissions.values()):
            if event == "UserPromptSubmit" or pending.tool == tool:
                self._close(target, pending, f"the session went on ({event})")

    def _close(self, target: _Target, pending: _Pending, why: str) -> None:
        if pending.done:
            return
        pending.done = True
        target.permissions.pop(pending.request_id, None)
        if pending.task is not None:
            pending.task.cancel(why)
        if self._tasks.running:
            self._tasks.spawn(self._closed(target.agent, pending, why), name="permission closed")

    async def _closed(self, agent: str, pending: _Pending, why: str) -> None:
        """Record the dialog as answered elsewhere, so the human is not asked after the fact."""
        from agentcoord.errors import DomainError

        value = f"answered in the session ({why})"
        try:
            await self._messaging.settle_prompt(pending.prompt, value, agent)
        except DomainError:
            return  # the human's answer came first, or the prompt was never created
        self._messaging.emit(
            "PERMISSION_CLOSED",
            agent,
            prompt=pending.prompt,
            request_id=pending.request_id,
            tool=pending.tool,
            why=why,
            ts=time.time(),
        )
