"""The MCP server core, written by us (docs/mcp.md): methods, sessions, tool dispatch.

Transport-free: a transport decodes bytes with :mod:`agentcoord.kernel.jsonrpc`, resolves the
caller, and hands each decoded payload to :meth:`McpCore.handle_payload`. Every request with an
id is answered, before ``initialize`` too, because the SDK and recent Claude Code probe with
``server/discover`` and wait 30 s on silence (docs/mcp.md "Protocol versions").

What one caller can make the daemon hold is bounded (:class:`McpLimits`, docs/security.md
"Limits"): a batch has at most ``max_batch`` messages; a reply (a batch's replies together) over
``max_reply_bytes`` is an error saying so, and a batch stops running once its replies are over;
each caller has ``max_caller_running`` requests running at once, over all its connections
(:class:`CallerSlots`), so one agent's flood waits its turn instead of stalling the others. A
request gives its caller's slot back once its reply is made: a reply waiting on a client that
does not read holds back that client's connection (the transport's own bounds), not the caller.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentcoord import __version__
from agentcoord.claude.push import CHANNEL_CAPS, PERMISSION_REQUEST, ChannelPush
from agentcoord.errors import DomainError, IdentityMismatch, ProtocolError
from agentcoord.gitguard.commitcheck import COMMIT_CHECK, check_commit, commit_params, is_push
from agentcoord.gitguard.treecheck import TREE_CHECK, check_tree, tree_params
from agentcoord.identity.humanproof import attempt_of
from agentcoord.kernel.caller import Caller
from agentcoord.kernel.jsoncodec import dumps
from agentcoord.kernel.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Notification,
    Request,
    encode,
    error_response,
    parse_message,
    result_response,
)
from agentcoord.tools.arguments import check_arguments
from agentcoord.tools.base import Tool
from agentcoord.tools.registry import READ_ONLY_META, ToolRegistry

if TYPE_CHECKING:
    from agentcoord.approvals import Approvals
    from agentcoord.budgets import Budgets
    from agentcoord.claude.hooks import Hooks
    from agentcoord.identity.callers import IdentityResolver
    from agentcoord.kernel.config import Config
    from agentcoord.leases.leasing import Leases
    from agentcoord.mcp.connections import StatusSource

__all__ = [
    "ACCESS_DENIED",
    "LATEST_PROTOCOL",
    "REPLY_TOO_LARGE",
    "SUPPORTED_PROTOCOLS",
    "CallerSlots",
    "McpCore",
    "McpLimits",
    "McpSession",
]

log = logging.getLogger(__name__)

APPROVALS = "agentcoord/approvals"  # vendor method: the human's standing approvals
BUDGETS = "agentcoord/budgets"  # vendor method: each ceiling and what is used of it
TOKENS = "agentcoord/tokens"  # vendor method: the human's tokens for MCP clients
ACCESS_DENIED = -32001  # JSON-RPC server error: the caller may not use this daemon
REPLY_TOO_LARGE = -32003  # JSON-RPC server error: the answer is over the reply size limit

# Baseline 2025-03-26; newer revisions accepted (docs/mcp.md "Protocol versions").
SUPPORTED_PROTOCOLS = ("2025-11-25", "2025-06-18", "2025-03-26")
LATEST_PROTOCOL = SUPPORTED_PROTOCOLS[0]
SERVER_NAME = "agent-coord"
INSTRUCTIONS = (
    "agent-coord coordinates the coding agents on this machine. Your identity comes from "
    "your connection: call whoami to see it."
)


@dataclass(frozen=True)
class McpLimits:
    """What one caller may have the daemon hold (docs/security.md "Limits")."""

    max_inflight: int = 64  # unanswered requests per unix connection; then it is not read
    max_caller_running: int = 64  # requests of one caller running at once, all connections
    max_batch: int = 64  # messages in one JSON-RPC batch
    max_reply_bytes: int = 16 << 20  # one reply, or a batch's replies together

    @classmethod
    def from_config(cls, cfg: Config) -> McpLimits:
        return cls(
            max_inflight=max(1, cfg.mcp_max_inflight),
            max_caller_running=max(1, cfg.mcp_max_caller_running),
            max_batch=max(1, cfg.mcp_max_batch),
            max_reply_bytes=max(1024, cfg.mcp_max_reply_bytes),
        )


class CallerSlots:
    """At most ``limit`` requests of one caller running at once; the others wait, first come
    first served (asyncio.Semaphore is fair), so a flood from one caller queues behind itself."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._slots: dict[str, tuple[asyncio.Semaphore, int]] = {}

    async def acquire(self, caller: str) -> None:
        sem, users = self._slots.get(caller) or (asyncio.Semaphore(self._limit), 0)
        self._slots[caller] = (sem, users + 1)
        try:
            await sem.acquire()
        except BaseException:
            self._drop(caller)
            raise

    def release(self, caller: str) -> None:
        sem, _ = self._slots[caller]
        sem.release()
        self._drop(caller)

    def _drop(self, caller: str) -> None:
        sem, users = self._slots[caller]
        if users <= 1:
            del self._slots[caller]  # no caller keeps memory once it is idle
        else:
            self._slots[caller] = (sem, users - 1)


@dataclass
class McpSession:
    """State of one MCP session: a unix connection, or one ``Mcp-Session-Id`` over HTTP."""

    caller: Caller
    id: str = field(default_factory=lambda: secrets.token_hex(16))
    protocol_version: str | None = None
    initialized: bool = False
    client_info: dict[str, Any] = field(default_factory=dict)
    created: float = field(default_factory=time.monotonic)
    inflight: dict[str | int, asyncio.Task[Any]] = field(default_factory=dict)
    # Server push (claude/push.py): how the transport writes a line unasked (the unix
    # connection's writer; None over HTTP), whether the peer's launcher opted into channels,
    # and whether this session was told it has them (its initialize declared claude/channel).
    send: Callable[[Any], Awaitable[None]] | None = None
    push_opt_in: bool = False
    channels: bool = False


class McpCore:
    """Answers MCP methods for any transport."""

    def __init__(
        self,
        registry: ToolRegistry,
        identity: IdentityResolver,
        status: StatusSource,
        hooks: Hooks,
        page_size: int = 100,
        *,
        leases: Leases,
        push: ChannelPush | None = None,
        limits: McpLimits | None = None,
        approvals: Approvals | None = None,
        budgets: Budgets | None = None,
        live_cwds: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        # The live sessions' cwds, for the checkout and ref guards (gitguard/treecheck.py).
        self.live_cwds = live_cwds
        self.limits = limits or McpLimits()
        self.slots = CallerSlots(self.limits.max_caller_running)
        self._registry = registry
        self._identity = identity
        self._status = status
        self._hooks = hooks
        self._page_size = max(1, page_size)
        self._leases = leases  # answers agentcoord/commit-check (gitguard/commitcheck.py)
        self._approvals = approvals  # answers agentcoord/approvals (docs/approvals.md)
        self._budgets = budgets  # answers agentcoord/budgets (docs/budgets.md)
        # Pushes inbox messages into channel sessions; entered by the unix listener, the one
        # transport that can write unasked.
        self.push = push

    async def handle_payload(self, value: Any, session: McpSession) -> Any:
        """Answer one decoded payload (a message or a batch); None when nothing is owed."""
        if isinstance(value, list):
            return await self._batch(value, session)
        return await self.handle_message(value, session)

    def encode_reply(self, reply: Any) -> bytes:
        """``reply`` as the transport writes it; a single reply over the size limit becomes the
        error saying so (a batch is bounded as it runs)."""
        data = encode(reply)
        if len(data) > self.limits.max_reply_bytes and isinstance(reply, dict):
            return encode(self._too_large(reply.get("id"), len(data)))
        return data

    async def _batch(self, value: list[Any], session: McpSession) -> Any:
        if not value:
            return error_response(
                None, ProtocolError(INVALID_REQUEST, "Invalid Request: empty batch")
            )
        limit = self.limits.max_batch
        if len(value) > limit:
            why = f"Invalid Request: a batch of {len(value)} messages (limit {limit})"
            return error_response(None, ProtocolError(INVALID_REQUEST, why))
        answered: list[Any] = []
        size = 0
        over = False
        for item in value:
            if over:  # the replies so far fill the limit: the rest is not run
                item_id = item.get("id") if isinstance(item, dict) else None
                if item_id is not None:
                    answered.append(self._too_large(item_id, size))
                continue
            reply = await self.handle_message(item, session)
            if reply is None:
                continue
            n = len(encode(reply))
            if size + n > self.limits.max_reply_bytes:
                over = True
                reply = self._too_large(reply.get("id"), size + n)
                n = len(encode(reply))
            size += n
            answered.append(reply)
        return answered or None

    def _too_large(self, msg_id: Any, size: int) -> dict[str, Any]:
        why = (
            f"Reply too large: {size} bytes (limit {self.limits.max_reply_bytes}); ask for less "
            "(fewer messages in a batch, a narrower query)"
        )
        reply_id = msg_id if isinstance(msg_id, str | int) else None
        return error_response(reply_id, ProtocolError(REPLY_TOO_LARGE, why))

    async def handle_message(self, value: Any, session: McpSession) -> dict[str, Any] | None:
        """Answer one message; exceptions never escape (a bad frame gets an error reply)."""
        try:
            msg = parse_message(value)
        except ProtocolError as exc:
            return error_response(None, exc)
        if msg is None:
            return None
        if isinstance(msg, Notification):
            await self._notify(msg, session)
            return None
        try:
            return result_response(msg.id, await self._dispatch(msg, session))
        except ProtocolError as exc:
            return error_response(msg.id, exc)
        except Exception as exc:  # a bug must not kill the connection; log it whole
            log.exception("method %s failed", msg.method)
            return error_response(msg.id, exc)

    async def _notify(self, msg: Notification, session: McpSession) -> None:
        if msg.method == "notifications/initialized":
            session.initialized = True
            if session.channels and self.push is not None:
                self.push.attach(session)
        elif msg.method == PERMISSION_REQUEST:
            if session.channels and self.push is not None:
                await self.push.permission_request(session, msg.params)
        elif msg.method == "notifications/cancelled":
            task = session.inflight.get(msg.params.get("requestId"))  # type: ignore[arg-type]
            if task is not None:
                task.cancel("cancelled by the client")

    async def _dispatch(self, req: Request, session: McpSession) -> dict[str, Any]:
        method = req.method
        if method == COMMIT_CHECK:  # vendor method for the git pre-commit guard
            # Read-only, and answered for anonymous callers too: the hook in a human's terminal
            # presents no token. Only unix peers of our uid are anonymous here (HTTP refuses
            # them); docs/security.md "The commit check".
            if session.caller.kind == "anonymous" and session.caller.via != "unix":
                raise ProtocolError(ACCESS_DENIED, f"Access denied: {method} is unix-only")
            cwd, paths = commit_params(req.params)
            push = is_push(req.params)  # the pre-push guard asks the same question
            return await check_commit(self._leases, session.caller, cwd, paths, push)
        if method == TREE_CHECK:  # vendor method for the git checkout and ref guards
            # Read-only, answered for anonymous unix callers as the commit check is.
            if session.caller.kind == "anonymous" and session.caller.via != "unix":
                raise ProtocolError(ACCESS_DENIED, f"Access denied: {method} is unix-only")
            cwd, what, refuse = tree_params(req.params)
            cwds = self.live_cwds() if self.live_cwds is not None else {}
            return await check_tree(self._leases, session.caller, cwd, what, refuse, cwds)
        if session.caller.kind == "anonymous":
            # Not an agent, not proven to be the human: nothing, not even the handshake, so
            # a client learns at once why (docs/security.md "Who a caller is").
            self._identity.refused_anonymous(session.caller, method, req.params)
            raise ProtocolError(ACCESS_DENIED, f"Access denied: {self._identity.not_identified}")
        if method == "initialize":
            return self._initialize(req.params, session)
        if method == "ping":
            return {}
        if method == "tools/list":
            return self._tools_list(req.params, session.caller)
        if method == "tools/call":
            return await self._tools_call(req.params, session)
        if method == "agentcoord/status":  # vendor method for ``agentcoord status``
            return self._status.status()
        if method == APPROVALS and self._approvals is not None:  # ``agentcoord allow``
            return await self._approvals_call(session.caller, req.params)
        if method == TOKENS:  # ``agentcoord token``
            return self._tokens_call(session.caller, req.params)
        if method == BUDGETS and self._budgets is not None:  # ``top`` shows the ceilings
            return await self._budgets.report()
        if method == "agentcoord/hook":  # vendor method for ``agentcoord hook EVENT``
            event = req.params.get("event")
            payload = req.params.get("payload")
            if not isinstance(event, str) or not isinstance(payload, dict):
                raise ProtocolError(INVALID_PARAMS, "agentcoord/hook needs event and payload")
            output = await self._hooks.run(session.caller, event, payload)
            return {"output": output}
        raise ProtocolError(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def _approvals_call(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        """``agentcoord/approvals {op: list | grant | revoke | held | answer, ...}``: the
        human's standing approvals and held dialogs (docs/approvals.md); only the human is
        answered."""
        approvals = self._approvals
        assert approvals is not None
        if caller.kind != "human":
            raise ProtocolError(ACCESS_DENIED, "Access denied: only the human manages approvals")
        op = params.get("op")
        try:
            if op == "list":
                return {"approvals": await approvals.listing()}
            if op == "grant":
                rule = params.get("rule")
                if not isinstance(rule, str):
                    raise ProtocolError(INVALID_PARAMS, "grant needs a rule (a string)")
                text = {k: params.get(k) for k in ("repo", "session", "duration")}
                if any(v is not None and not isinstance(v, str) for v in text.values()):
                    raise ProtocolError(INVALID_PARAMS, "repo, session and duration are strings")
                granted = await approvals.grant(
                    rule,
                    caller,
                    repo=text["repo"],
                    session=text["session"],
                    duration=text["duration"],
                )
                return {"approval": granted}
            if op == "revoke":
                approval_id = params.get("id")
                if not isinstance(approval_id, str):
                    raise ProtocolError(INVALID_PARAMS, "revoke needs an id (a string)")
                return {"approval": await approvals.revoke(approval_id, caller)}
            # Dialogs held for the human (docs/approvals.md "Answering an open dialog").
            if op == "held":
                return {"held": approvals.held.listing()}
            if op == "answer":
                session, verdict = params.get("session"), params.get("answer")
                if not isinstance(session, str) or not isinstance(verdict, str):
                    raise ProtocolError(INVALID_PARAMS, "answer needs a session and an answer")
                return {"held": approvals.answer_held(session, verdict, caller)}
        except DomainError as exc:  # the service's refusal, its text as the error's message
            raise ProtocolError(INVALID_PARAMS, str(exc)) from None
        raise ProtocolError(
            INVALID_PARAMS, f"op must be list, grant, revoke, held or answer, not {op!r}"
        )

    def _tokens_call(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        """``agentcoord/tokens {op: list | mint | revoke, ...}``: the tokens that make a
        generic MCP client an agent (docs/tokens.md); only the human is answered."""
        if caller.kind != "human":
            raise ProtocolError(ACCESS_DENIED, "Access denied: only the human manages tokens")
        tokens = self._identity.agent_tokens
        op = params.get("op")
        try:
            if op == "list":
                return {"tokens": tokens.listing()}
            if op == "mint":
                duration = params.get("duration")
                if duration is not None and not isinstance(duration, str):
                    raise ProtocolError(INVALID_PARAMS, "duration is a string (e.g. 8h)")
                return {"token": tokens.mint(params.get("agent"), duration, caller.agent)}
            if op == "revoke":
                return {"token": tokens.revoke(params.get("id"), caller.agent)}
        except DomainError as exc:
            raise ProtocolError(INVALID_PARAMS, str(exc)) from None
        raise ProtocolError(INVALID_PARAMS, f"op must be list, mint or revoke, not {op!r}")

    def _initialize(self, params: dict[str, Any], session: McpSession) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        version = asked if asked in SUPPORTED_PROTOCOLS else LATEST_PROTOCOL
        session.protocol_version = version
        info = params.get("clientInfo")
        session.client_info = info if isinstance(info, dict) else {}
        capabilities: dict[str, Any] = {"tools": {"listChanged": False}}
        # Channels ride the 2025 protocols: server/discover (2026-07-28) is answered -32601
        # below, which keeps Claude Code on them (docs/mcp.md "Protocol versions").
        session.channels = self.push is not None and self.push.eligible(session)
        if session.channels:
            capabilities["experimental"] = dict(CHANNEL_CAPS)
        return {
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {"name": SERVER_NAME, "version": __version__},
            "instructions": INSTRUCTIONS,
            # The tools a client may send again when their answer was lost (the shim does,
            # across a daemon restart). Here rather than as readOnlyHint in an agent's
            # tools/list, which the model reads in every request (docs/claude-code.md "When the
            # daemon restarts").
            "_meta": {READ_ONLY_META: self._registry.read_only_names()},
        }

    def closed(self, session: McpSession) -> None:
        """The transport's connection for ``session`` ended."""
        if session.channels and self.push is not None:
            self.push.detach(session)

    def _tools_list(self, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        # Human-only tools are listed to the human alone: they would cost every agent tokens
        # and invite it to try (docs/security.md "Who a caller is").
        tools = self._registry.listed_for(caller.kind)
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            if not isinstance(cursor, str) or not cursor.isdigit() or int(cursor) > len(tools):
                raise ProtocolError(INVALID_PARAMS, f"Invalid cursor: {cursor!r}")
            start = int(cursor)
        page = tools[start : start + self._page_size]
        full = caller.kind == "human"  # the human's listing keeps every argument
        result: dict[str, Any] = {"tools": [t.listing(full=full) for t in page]}
        if start + self._page_size < len(tools):
            result["nextCursor"] = str(start + self._page_size)
        return result

    async def _tools_call(self, params: dict[str, Any], session: McpSession) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise ProtocolError(INVALID_PARAMS, 'Invalid params: "name" must be a string')
        tool = self._registry.get(name)
        if tool is None:
            raise ProtocolError(INVALID_PARAMS, f"Unknown tool: {name}")
        refusal = self._registry.refusal(name, session.caller.kind)
        if refusal is not None:  # unlisted to agents, and still refused if called anyway
            _, _, prompt = attempt_of({"method": "tools/call", "params": params})
            self._identity.refused(session.caller, name, "human-only", prompt=prompt)
            return {"content": [{"type": "text", "text": refusal}], "isError": True}
        if session.caller.kind == "session":  # a session that calls a tool is kept when it ends
            await self._identity.directory.mark_used(session.caller.agent)
        try:
            args = check_arguments(tool.input_schema, params.get("arguments"))
            result = await tool.handler(session.caller, args)
        except DomainError as exc:
            # The one place a store's or a service's error becomes what the model reads: its
            # text, as an isError result (errors.py). An agent naming the human as itself is
            # also a refusal to record.
            if isinstance(exc, IdentityMismatch) and exc.claimed == self._identity.human:
                self._identity.refused(session.caller, name, "borrowed-name")
            return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:
            log.exception("tool %s failed", name)
            text = f"internal error in {name}: {type(exc).__name__}"
            return {"content": [{"type": "text", "text": text}], "isError": True}
        text = _render(tool, result)
        return {
            "content": [{"type": "text", "text": text}],
            "structuredContent": result,
            "isError": False,
        }


def _render(tool: Tool, result: dict[str, Any]) -> str:
    """The text half of a result; a renderer bug degrades to JSON instead of failing the call."""
    if tool.render is not None:
        try:
            return tool.render(result)
        except Exception:
            log.exception("rendering %s failed; sending JSON", tool.name)
    return dumps(result, default=str).decode()
