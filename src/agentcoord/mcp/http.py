"""Routes of the daemon's loopback HTTP port: ``/healthz``, MCP streamable HTTP at ``/mcp`` and
Claude Code's http hooks at ``/hooks/<event>``.

Transport rules (MCP 2025-03-26 .. 2025-11-25, "Streamable HTTP"): POST carries one message or a
batch; notifications-only bodies get 202; ``initialize`` issues ``Mcp-Session-Id`` (an unknown
id is 404, a missing one is tolerated because some clients never echo it: docs/mcp.md "Transports");
GET is 405 (we offer no server-initiated stream); DELETE ends a session; a foreign Origin/Host is
403; an unknown ``MCP-Protocol-Version`` is 400; bodies over the limit are 413.

Hooks (docs/claude-code.md "Hooks"): Claude Code POSTs the hook's JSON input and reads a 2xx
body as the hook's output, an empty one as "no output"; a non-2xx answer, a timeout or a refused
connection is a non-blocking error (the tool runs). The caller is the TCP peer, which for an
http hook is the ``claude`` process itself, never what the body says. A peer that is no agent
gets an empty 200: the hook passes, as it does with no daemon.

Claude Code keeps one connection for a session's hooks but opens a new one after a few idle
seconds (seen with 2.1.328: a new connection after an 8 s model turn), and finding the process
that holds a TCP peer's socket means reading the fd tables of the owner's processes. So a new
hook connection is first looked for among the processes of earlier ones (:class:`HookPeers`):
the process that holds the connection's socket is the peer, as in the full search.

Both lookups are :mod:`agentcoord.identity.procprobe`'s (``peer_among``, ``tcp_peer_pid``):
the peer's socket is found by its exact 4-tuple, never by listing every socket; the server
reads its uid once, when it accepts the connection, and a peer of another uid is refused here
with no search at all (docs/security.md "Limits").
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import os
from typing import Any

from agentcoord.claude.hooks import Hooks
from agentcoord.console.routes import ConsoleRoutes, root_page
from agentcoord.errors import IdentityError, ProtocolError
from agentcoord.identity.callers import IdentityResolver
from agentcoord.identity.procprobe import peer_among, process_started
from agentcoord.kernel.caller import Caller
from agentcoord.kernel.httpserver import HttpRequest, HttpResponse, json_response
from agentcoord.kernel.jsonrpc import INVALID_REQUEST, decode, encode, error_response
from agentcoord.mcp.connections import StatusSource
from agentcoord.mcp.core import SUPPORTED_PROTOCOLS, McpCore, McpSession
from agentcoord.mcp.origin import host_allowed, origin_allowed

__all__ = ["HOOK_EVENTS", "HOOK_PATH", "HttpRoutes"]

log = logging.getLogger(__name__)

_MAX_SESSIONS = 1024
_SESSIONLESS = "-"  # key for callers that never echo Mcp-Session-Id

HOOK_PATH = "/hooks/"
# The events served over http, named as ``agentcoord hook EVENT`` names them. session-start is
# answered too, but Claude Code runs no http hook on SessionStart (it skips them, "HTTP hooks
# are not supported for SessionStart", seen with 2.1.328): setup keeps a command hook there.
HOOK_EVENTS = frozenset(
    {
        "session-start",
        "user-prompt-submit",
        "pre-tool-use",
        "post-tool-use",
        "session-end",
        "permission-request",
        "notification",
    }
)


def _rpc_error(status: int, code: int, message: str) -> HttpResponse:
    return json_response(status, encode(error_response(None, ProtocolError(code, message))))


_PEERS_TRIED = 32
# Tokenless identifications at once: fewer than asyncio's default worker threads (at least 5).
_TOKENLESS_LOOKUPS = 3


class HookPeers:
    """The callers of earlier hook connections, by the process that held them (bounded)."""

    def __init__(self, limit: int = 256) -> None:
        self._limit = limit
        self._by_pid: collections.OrderedDict[int, tuple[float, Caller]] = collections.OrderedDict()

    async def find(self, peer: tuple[str, int], local: tuple[str, int]) -> Caller | None:
        # The most recent first, and a bounded few: each costs a walk of its fd table, and a
        # peer found in none of them still gets the full scan.
        recent = {pid: entry for pid, entry in reversed(self._by_pid.items())}
        tried = list(recent.items())[:_PEERS_TRIED]
        known = [(pid, started, c.uid) for pid, (started, c) in tried if c.uid is not None]
        if not known:
            return None
        pid = await asyncio.to_thread(peer_among, peer, local, known)
        if pid is None:
            return None
        if pid in self._by_pid:
            self._by_pid.move_to_end(pid)
        return recent[pid][1]  # the caller identified on that very process (its start time)

    async def remember(self, caller: Caller) -> None:
        if caller.pid is None or caller.uid is None:
            return
        started = await asyncio.to_thread(process_started, caller.pid)
        if started is None:
            return
        self._by_pid[caller.pid] = (started, caller)
        self._by_pid.move_to_end(caller.pid)  # most recent last
        while len(self._by_pid) > self._limit:
            self._by_pid.popitem(last=False)

    def forget(self, caller: Caller) -> None:
        if caller.pid is not None:
            self._by_pid.pop(caller.pid, None)


class HttpRoutes:
    """The request handler given to :class:`agentcoord.kernel.httpserver.HttpServer`."""

    def __init__(
        self,
        identity: IdentityResolver,
        status: StatusSource,
        core: McpCore,
        console: ConsoleRoutes,
        hooks: Hooks,
    ) -> None:
        self._identity = identity
        self._status = status
        self._core = core
        self._hooks = hooks
        self._hook_peers = HookPeers()
        self._tokenless = asyncio.Semaphore(_TOKENLESS_LOOKUPS)
        self._sessions: collections.OrderedDict[str, McpSession] = collections.OrderedDict()
        self._sessionless: dict[str, McpSession] = {}
        self._console = console

    async def __call__(self, req: HttpRequest) -> HttpResponse:
        if not host_allowed(req.headers.get("host")):
            return HttpResponse(403, b"forbidden: Host is not a loopback name\n")
        if not origin_allowed(req.headers.get("origin")):
            return HttpResponse(403, b"forbidden: Origin is not on loopback\n")
        path = req.path
        if path == "/healthz":
            ok, why = self._status.healthy()
            return HttpResponse(200 if ok else 503, (why + "\n").encode() if not ok else b"ok")
        if path == "/" and req.method == "GET":
            return root_page()  # a pointer to the console, not a bare 404
        if path == "/console" or path.startswith("/console/"):
            return await self._console(req)
        if path == "/mcp":
            if req.method == "POST":
                return await self._post(req)
            if req.method == "DELETE":
                return await self._delete(req)
            return HttpResponse(405, b"method not allowed\n", [("allow", "POST, DELETE")])
        if path.startswith(HOOK_PATH):
            return await self._hook(req, path[len(HOOK_PATH) :])
        return HttpResponse(404, b"not found\n")

    async def _hook(self, req: HttpRequest, event: str) -> HttpResponse:
        """One Claude Code http hook: its JSON in, the hook output JSON (or nothing) out."""
        if event not in HOOK_EVENTS:
            return HttpResponse(404, f"no hook event {event!r}\n".encode())
        if req.method != "POST":
            return HttpResponse(405, b"method not allowed\n", [("allow", "POST")])
        ctype = req.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            return HttpResponse(415, b"hook body must be application/json\n")
        try:
            payload = json.loads(req.body)
        except ValueError as exc:
            return HttpResponse(400, f"hook body is not JSON: {exc}\n".encode())
        if not isinstance(payload, dict):
            return HttpResponse(400, b"hook body is not a JSON object\n")
        try:
            caller = await self._hook_caller(req)
        except IdentityError:
            return HttpResponse(200)  # not an agent: nothing to guard or deliver (fail open)
        output = await self._hooks.run(caller, event, payload)
        if event == "session-end":
            # Its Agent may have ended: the next hook identifies the process afresh.
            self._hook_peers.forget(caller)
            req.conn.values.pop("caller:None", None)
        if output is None:
            return HttpResponse(200)
        return json_response(200, json.dumps(output).encode())

    async def _caller(self, req: HttpRequest) -> Caller:
        auth = req.headers.get("authorization", "")
        bearer = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        return await self._caller_as(req, bearer)

    async def _hook_caller(self, req: HttpRequest) -> Caller:
        """An http hook's caller: the peer alone (no bearer), once per connection, a new
        connection of a known process without the full scan."""
        key = "caller:None"
        cached = req.conn.values.get(key)
        if isinstance(cached, Caller):
            return cached
        caller = await self._hook_peers.find(req.conn.peer, req.conn.local)
        if caller is None:
            caller = await self._caller_as(req, None)
            await self._hook_peers.remember(caller)
        req.conn.values[key] = caller
        return caller

    async def _caller_as(self, req: HttpRequest, bearer: str | None) -> Caller:
        """The caller of ``req`` with ``bearer`` (None: the peer alone), once per connection
        and token (a keep-alive connection is one peer)."""
        key = f"caller:{bearer}"
        cached = req.conn.values.get(key)
        if isinstance(cached, Caller):
            return cached
        owner = os.geteuid()
        if req.conn.uid is not None and req.conn.uid != owner:
            # Read when the connection was accepted: no process search for another user.
            raise IdentityError(f"uid {req.conn.uid} may not use this daemon (owner uid {owner})")
        # The body tells the audit what a refused caller was after (identity/callers.py).
        if bearer is None:
            # Tokenless peers are identified a few at a time, so a crowd of them holds at most
            # that many of the worker threads: a token's caller (the human) and the hooks of
            # known processes never queue behind them (docs/security.md "Limits").
            async with self._tokenless:
                caller = await self._identity.from_tcp(
                    req.conn.peer, req.conn.local, None, body=req.body
                )
        else:
            caller = await self._identity.from_tcp(
                req.conn.peer, req.conn.local, bearer, body=req.body
            )
        req.conn.values[key] = caller
        return caller

    async def _post(self, req: HttpRequest) -> HttpResponse:
        ctype = req.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            return _rpc_error(415, INVALID_REQUEST, "Content-Type must be application/json")
        try:
            caller = await self._caller(req)
        except IdentityError as exc:
            return _rpc_error(401 if "token" in str(exc) else 403, -32001, f"Access denied: {exc}")
        try:
            payload = decode(req.body)
        except ProtocolError as exc:
            return json_response(400, encode(error_response(None, exc)))
        methods = _methods(payload)
        version = req.headers.get("mcp-protocol-version")
        if (
            version is not None
            and version not in SUPPORTED_PROTOCOLS
            and not methods & {"initialize", "server/discover"}
        ):
            return _rpc_error(400, INVALID_REQUEST, f"Unsupported MCP-Protocol-Version: {version}")
        headers: list[tuple[str, str]] = []
        sid = req.headers.get("mcp-session-id")
        if "initialize" in methods:
            session = self._new_session(caller)
            headers.append(("mcp-session-id", session.id))
        elif sid is not None:
            found = self._sessions.get(sid)
            if found is None or found.caller.agent != caller.agent:
                return _rpc_error(404, INVALID_REQUEST, "Unknown or expired Mcp-Session-Id")
            self._sessions.move_to_end(sid)
            session = found
        else:
            session = self._sessionless.setdefault(caller.agent, McpSession(caller=caller))
        # One caller's requests over all its connections run a bounded few at a time
        # (mcp/core.py CallerSlots), so a flood from one cannot stall the others; the slot
        # is given back before the reply is written, so a client that does not read holds
        # back only its own connection (docs/security.md "Limits").
        await self._core.slots.acquire(caller.agent)
        try:
            reply = await self._core.handle_payload(payload, session)
        finally:
            self._core.slots.release(caller.agent)
        if reply is None:
            return HttpResponse(202, b"", headers)
        return json_response(200, self._core.encode_reply(reply), headers)

    def _new_session(self, caller: Caller) -> McpSession:
        session = McpSession(caller=caller)
        self._sessions[session.id] = session
        while len(self._sessions) > _MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session

    async def _delete(self, req: HttpRequest) -> HttpResponse:
        sid = req.headers.get("mcp-session-id")
        if sid is None:
            return HttpResponse(400, b"Mcp-Session-Id header required\n")
        try:
            caller = await self._caller(req)
        except IdentityError as exc:
            return HttpResponse(403, f"access denied: {exc}\n".encode())
        session = self._sessions.get(sid)
        if session is None or session.caller.agent != caller.agent:
            return HttpResponse(404, b"unknown session\n")
        del self._sessions[sid]
        for task in session.inflight.values():
            task.cancel("session deleted")
        return HttpResponse(204)


def _methods(payload: Any) -> set[str]:
    items = payload if isinstance(payload, list) else [payload]
    return {
        m for item in items if isinstance(item, dict) and isinstance(m := item.get("method"), str)
    }
