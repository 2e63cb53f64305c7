"""Console endpoints under ``/console``: the page (the overview and each agent's page) and its
files, the login link, the state snapshot, an agent's page as data, answers, standing approvals
and the audit as server-sent events (docs/console.md "Pages").

Auth is the HTTP API's: the human's bearer token in a header, or the console's session cookie
(HttpOnly, SameSite=Strict, scoped to ``/console``) that ``/console/login?code=...`` sets for a
one-time code the CLI got with the token (docs/security.md "Console login"); no URL carries the
token. State-changing requests also need the ``X-Agentcoord`` header, which a cross-site form
cannot set (CSRF).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote

from agentcoord.console.auditrows import audit_row
from agentcoord.console.logins import ConsoleLogins
from agentcoord.errors import AgentCoordError, IdentityError, NotFound
from agentcoord.kernel.caller import Caller
from agentcoord.kernel.httpserver import HttpRequest, HttpResponse, json_response

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient

    from agentcoord.console.sections import ConsoleSections

__all__ = ["COOKIE", "ConsoleRoutes", "HumanAuth", "root_page"]

log = logging.getLogger(__name__)

COOKIE = "agentcoord_console"
_SSE_QUEUE = 256
# The page's own files (docs/console.md "Front end"): plain modules and a style sheet, no build
# step, nothing fetched from elsewhere.
_STATIC = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
# Scripts and styles from the daemon only, no inline script or style, no frames, no plugins
# (docs/security.md "Console login" and docs/console.md "Front end").
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_SSE_KEEPALIVE = 15.0
_LOGIN_PAGE = b"""<!doctype html><meta charset="utf-8"><title>agentcoord</title>
<body style="font-family:system-ui;background:#0f1115;color:#d7dbe3;padding:40px">
<h1>agentcoord console</h1><p>Run <code>agentcoord console</code> in a terminal and open the
login link it prints.</p></body>"""

# What a browser pointed at the daemon's bare address sees (the console is served on the daemon's
# HTTP port: docs/security.md "Console login"). It never carries the token: the login link comes
# from the CLI, which reads the 0600 token file.
_ROOT_PAGE = b"""<!doctype html><meta charset="utf-8"><title>agentcoord daemon</title>
<body style="font-family:system-ui;background:#0f1115;color:#d7dbe3;padding:40px;max-width:46em">
<h1>agentcoord</h1>
<p>This is the agentcoord daemon: it coordinates the Claude Code sessions and agents on this
machine (MCP at <code>POST /mcp</code>, health at <a href="/healthz">/healthz</a>).</p>
<h2>Open the web console</h2>
<p>Run <code>agentcoord console</code> in a terminal and open the login link it prints
(<code>agentcoord console --open</code> opens it in your browser). The link logs this browser
in; then the console is at <a href="/console/">/console/</a>.</p></body>"""


def root_page() -> HttpResponse:
    """The page at ``/``: what this is and how to open the console (never the token)."""
    return HttpResponse(200, _ROOT_PAGE, [("content-type", "text/html; charset=utf-8")])


def _cookie(headers: dict[str, str]) -> str | None:
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            return unquote(value)
    return None


class HumanAuth(Protocol):
    """Who calls over TCP (the daemon's identity resolver): the console serves the human only."""

    async def from_tcp(
        self, peer: tuple[str, int], local: tuple[str, int], bearer: str | None
    ) -> Caller: ...


class ConsoleRoutes:
    """Handles every path under ``/console``."""

    def __init__(
        self,
        auth: HumanAuth,
        status: Callable[[], dict[str, Any]],
        sections: ConsoleSections,
        nc: NatsClient,
        *,
        human_token: str,
        login_ttl: float,
    ) -> None:
        self._auth = auth
        self._human_token = human_token
        self.logins = ConsoleLogins(human_token, login_ttl)
        self._status = status
        self._sections = sections
        self._nc = nc
        static = resources.files("agentcoord.console") / "static"
        self._page = (static / "index.html").read_bytes()
        self._static = {name: (static / name).read_bytes() for name in _STATIC}

    async def _human(self, req: HttpRequest, *, cookie: bool = True) -> Caller | None:
        """The human, by the bearer token or (``cookie``) a session cookie; else None."""
        auth = req.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            token: str | None = auth[7:].strip()
        elif cookie and self.logins.session_ok(_cookie(req.headers) or ""):
            token = self._human_token
        else:
            token = None
        return await self._as_human(req, token) if token else None

    async def _as_human(self, req: HttpRequest, token: str) -> Caller | None:
        """The human token's caller, checked against the process behind the connection (an
        agent's process is refused, token or not: docs/security.md)."""
        try:
            caller = await self._auth.from_tcp(req.conn.peer, req.conn.local, token)
        except IdentityError:
            return None
        # The console's own decisions are audited as coming from the console.
        return replace(caller, via="console") if caller.kind == "human" else None

    async def __call__(self, req: HttpRequest) -> HttpResponse:
        path = req.path.removeprefix("/console")
        if path == "/login" and req.method == "GET":
            return await self._login(req)
        if path == "/api/login-code":
            if req.method != "POST":
                return HttpResponse(405, b"", [("allow", "POST")])
            return await self._login_code(req)
        human = await self._human(req)
        page = path in ("", "/", "/index.html") or _agent_path(path) is not None
        if page and req.method == "GET":
            if human is None:
                return HttpResponse(
                    401, _LOGIN_PAGE, [("content-type", "text/html; charset=utf-8")]
                )
            if path == "":
                return HttpResponse(308, b"", [("location", "/console/")])
            # One page: the script shows the overview or, at /console/agents/<name>, that
            # agent's page (docs/console.md "Pages").
            return HttpResponse(200, self._page, _page_headers("text/html; charset=utf-8"))
        if path.startswith("/static/") and req.method == "GET" and human is not None:
            name = path.removeprefix("/static/")
            if name in _STATIC:
                return HttpResponse(200, self._static[name], _page_headers(_STATIC[name]))
        if human is None:
            return json_response(401, b'{"error":"log in with the link from `agentcoord console`"}')
        if path == "/api/state" and req.method == "GET":
            with_audit = req.query.get("audit") == ["1"]
            return json_response(200, json.dumps(await self.snapshot(with_audit)).encode())
        if path.startswith("/api/agents/") and req.method == "GET":
            return await self._agent(unquote(path.removeprefix("/api/agents/")))
        if path == "/api/events" and req.method == "GET":
            return await self._events()
        if path == "/api/approvals" or path.startswith("/api/approvals/"):
            if req.method != "POST":
                return HttpResponse(405, b"", [("allow", "POST")])
            return await self._approval(req, path, human)
        if path.startswith("/api/prompts/") and path.endswith("/answer"):
            if req.method != "POST":
                return HttpResponse(405, b"", [("allow", "POST")])
            return await self._answer(req, path.split("/")[3], human)
        # A relayed permission prompt allowed with the grant it offers; a held dialog answered
        # (docs/console.md "The queue").
        if path.startswith("/api/prompts/") and path.endswith("/allow-for"):
            if req.method != "POST":
                return HttpResponse(405, b"", [("allow", "POST")])
            return await self._write(req, self._sections.allow_for, path.split("/")[3], human)
        if path.startswith("/api/held/") and path.count("/") == 3:
            if req.method != "POST":
                return HttpResponse(405, b"", [("allow", "POST")])
            return await self._write(req, self._sections.answer_held, path.split("/")[3], human)
        return HttpResponse(404, b"not found\n")

    async def _login_code(self, req: HttpRequest) -> HttpResponse:
        """A one-time login code, for the bearer of the human token only (the CLI): a cookie
        never mints one."""
        if await self._human(req, cookie=False) is None:
            return json_response(401, b'{"error":"the human token is needed (Authorization)"}')
        code, expires = self.logins.issue_code()
        return json_response(200, json.dumps({"code": code, "expires_at": expires}).encode())

    async def _login(self, req: HttpRequest) -> HttpResponse:
        """Trade a one-time code for the session cookie (docs/security.md "Console login")."""
        code = (req.query.get("code") or [""])[0]
        if not code or not self.logins.redeem(code):
            return HttpResponse(
                403,
                b"this login link is used or expired: run `agentcoord console` for a new one\n",
                [("content-type", "text/plain; charset=utf-8")],
            )
        if await self._as_human(req, self._human_token) is None:
            return HttpResponse(403, b"this browser's process may not act as the human\n")
        value, max_age = self.logins.new_session()
        cookie = f"{COOKIE}={value}; Path=/console; Max-Age={max_age}; HttpOnly; SameSite=Strict"
        return HttpResponse(
            303,
            b"",
            [
                ("location", "/console/"),
                ("set-cookie", cookie),
                ("cache-control", "no-store"),
                ("referrer-policy", "no-referrer"),
            ],
        )

    async def snapshot(self, with_audit: bool = False) -> dict[str, Any]:
        """Every section the daemon's parts contribute, plus the daemon's status; the recent
        audit only on request (the page loads it once, then follows the live stream)."""
        out: dict[str, Any] = {"status": self._status()}
        for name, provider in self._sections.providers.items():
            if name == "audit" and not with_audit:
                continue
            try:
                out[name] = await provider()
            except Exception:
                log.exception("console section %s failed", name)
                out[name] = []
        return out

    async def _agent(self, name: str) -> HttpResponse:
        """One agent's page as data (docs/console.md "An agent's page")."""
        if not name or "/" in name:
            return json_response(404, b'{"error":"no such agent"}')
        try:
            page = await self._sections.agent_page(name)
        except NotFound as exc:
            return json_response(404, json.dumps({"error": str(exc)}).encode())
        return json_response(200, json.dumps(page).encode())

    async def _answer(self, req: HttpRequest, prompt_id: str, human: Caller) -> HttpResponse:
        if req.headers.get("x-agentcoord") != "1":
            return json_response(403, b'{"error":"missing X-Agentcoord header"}')
        try:
            body = json.loads(req.body or b"{}")
            answer = body["answer"]
        except (ValueError, KeyError, TypeError):
            return json_response(400, b'{"error":"body must be {\\"answer\\": ...}"}')
        try:
            await self._sections.answer(unquote(prompt_id), answer, human)
        except NotFound as exc:
            return json_response(404, json.dumps({"error": str(exc)}).encode())
        except AgentCoordError as exc:
            return json_response(409, json.dumps({"error": str(exc)}).encode())
        return json_response(200, b'{"answered":true}')

    async def _write(
        self,
        req: HttpRequest,
        act: Callable[[str, dict[str, Any], Caller], Awaitable[None]],
        name: str,
        human: Caller,
    ) -> HttpResponse:
        """One of the human's writes on ``name`` with a JSON object body."""
        if req.headers.get("x-agentcoord") != "1":
            return json_response(403, b'{"error":"missing X-Agentcoord header"}')
        try:
            body = json.loads(req.body or b"{}")
        except ValueError:
            return json_response(400, b'{"error":"body is not JSON"}')
        if not isinstance(body, dict):
            return json_response(400, b'{"error":"body must be a JSON object"}')
        try:
            await act(unquote(name), body, human)
        except NotFound as exc:
            return json_response(404, json.dumps({"error": str(exc)}).encode())
        except AgentCoordError as exc:
            return json_response(409, json.dumps({"error": str(exc)}).encode())
        return json_response(200, b'{"done":true}')

    async def _approval(self, req: HttpRequest, path: str, human: Caller) -> HttpResponse:
        """``POST api/approvals`` grants (``{rule, repo?, session?, duration?}``), ``POST
        api/approvals/<id>/revoke`` revokes (docs/approvals.md)."""
        if req.headers.get("x-agentcoord") != "1":
            return json_response(403, b'{"error":"missing X-Agentcoord header"}')
        parts = path.split("/")  # ["", "api", "approvals", <id>, "revoke"]
        try:
            if len(parts) == 3:
                body = json.loads(req.body or b"{}")
                if not isinstance(body, dict):
                    return json_response(400, b'{"error":"body must be a JSON object"}')
                row = await self._sections.grant(body, human)
            elif len(parts) == 5 and parts[4] == "revoke":
                row = await self._sections.revoke(unquote(parts[3]), human)
            else:
                return HttpResponse(404, b"not found\n")
        except ValueError:
            return json_response(400, b'{"error":"body is not JSON"}')
        except NotFound as exc:
            return json_response(404, json.dumps({"error": str(exc)}).encode())
        except AgentCoordError as exc:
            return json_response(400, json.dumps({"error": str(exc)}).encode())
        return json_response(200, json.dumps({"approval": row}).encode())

    async def _events(self) -> HttpResponse:
        nc = self._nc
        queue: asyncio.Queue[bytes] = asyncio.Queue(_SSE_QUEUE)

        async def on_msg(msg: Any) -> None:
            with contextlib.suppress(asyncio.QueueFull):  # a slow browser drops, never blocks NATS
                queue.put_nowait(_sse_data(msg.subject, msg.data))

        sub = await nc.subscribe("events.>", cb=on_msg)

        async def stream() -> AsyncIterator[bytes]:
            try:
                yield b": connected\n\n"
                while True:
                    try:
                        async with asyncio.timeout(_SSE_KEEPALIVE):
                            yield await queue.get()
                    except TimeoutError:
                        yield b": keepalive\n\n"
            finally:
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()

        return HttpResponse(200, headers=[("content-type", "text/event-stream")], stream=stream())


def _agent_path(path: str) -> str | None:
    """The name in ``/agents/<name>``, else None."""
    name = path.removeprefix("/agents/")
    return unquote(name) if name != path and name and "/" not in name else None


def _page_headers(content_type: str) -> list[tuple[str, str]]:
    return [
        ("content-type", content_type),
        ("content-security-policy", _CSP),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("cache-control", "no-store"),
    ]


def _sse_data(subject: str, data: bytes) -> bytes:
    try:
        event = json.loads(data)
        if not isinstance(event, dict):
            event = {"data": event}
    except ValueError:
        event = {"data": data.decode("utf-8", "replace")}
    event.setdefault("subject", subject)
    # The page shows the CLI's line (agentcoord.text.events) and filters on the rest.
    event.update(audit_row(event))
    return b"data: " + json.dumps(event).encode() + b"\n\n"
