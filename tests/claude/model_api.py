"""A scripted stand-in for the Anthropic Messages API on loopback, for the real Claude Code.

``claude -p`` with ``ANTHROPIC_BASE_URL=http://127.0.0.1:PORT`` sends only ``POST
/v1/messages?beta=true`` with ``stream: true`` (docs/claude-code.md; seen with 2.1.328, no side
requests). The stand-in answers each request with the next turn of its script as the API's
server-sent events (``message_start``, ``content_block_start``/``_delta``/ ``_stop``,
``message_delta`` with the ``stop_reason``, ``message_stop``; the Messages API's "Streaming
Messages"), a non-streaming request with the same Message as JSON, and records every request, so a
test asserts on what the binary sent the model: the system prompt, the tools
(``mcp__agent-coord__<tool>`` with ``ENABLE_TOOL_SEARCH=false``), the ``tool_result`` blocks
(:func:`tool_results`) and the hooks' additional context (:func:`context_texts`).

A turn is :class:`Text` (the model answers and ends its turn), :class:`ToolUse` (it calls a
tool; Claude Code runs it and sends the result in its next request), or a callable that gets
the :class:`Request` and returns one of those (e.g. "answer with the tool result you got").
``hold=event`` on a turn keeps the binary's request open until ``event`` is set, so a test can
act while Claude Code is mid-turn (:meth:`ModelAPI.wait_requests` tells it the request came). A
request to another path or past the end of the script is answered with an API error and noted
in :attr:`ModelAPI.unexpected`; the ``model_api`` fixture (tests/claude/conftest.py) fails the
test on any.

The ``claude`` fixture there runs the pinned binary as a user would after ``agentcoord setup
claude`` (private HOME and ``CLAUDE_CONFIG_DIR``, the offline switches, ``--permission-mode
acceptEdits --allowedTools mcp__agent-coord``) against the real daemon::

    def test_x(daemon, claude):
        claude.api.script(ToolUse("mcp__agent-coord__whoami"), Text("done"))
        run = claude.run("who am I?")   # or claude.start(...) ... claude.finish(proc)
        run.check()                     # exit 0 and no is_error in the result JSON
        tool_results(run.requests[-1])  # what the daemon's tool answered, as the model saw it
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "ModelAPI",
    "Request",
    "Text",
    "ToolUse",
    "Turn",
    "context_texts",
    "tool_results",
]

MODEL = "claude-sonnet-4-5"


@dataclass(frozen=True)
class Text:
    """The model answers ``text`` and ends its turn."""

    text: str
    hold: threading.Event | None = None


@dataclass(frozen=True)
class ToolUse:
    """The model calls tool ``name`` with ``input``."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    hold: threading.Event | None = None


Turn = Text | ToolUse | Callable[["Request"], Text | ToolUse]


@dataclass(frozen=True)
class Request:
    """One request the binary made: its path, headers and JSON body."""

    path: str
    method: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def system(self) -> str:
        """The system prompt as one text (a string or a list of text blocks on the wire)."""
        system = self.body.get("system", "")
        if isinstance(system, str):
            return system
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))

    @property
    def tool_names(self) -> list[str]:
        return [t["name"] for t in self.body.get("tools", [])]

    def tool(self, name: str) -> dict[str, Any]:
        """The tool definition named ``name`` the binary offered the model."""
        for t in self.body.get("tools", []):
            if t["name"] == name:
                return t  # type: ignore[no-any-return]
        raise KeyError(f"{name} not offered; tools: {self.tool_names}")


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content", [])
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(b.get("text", b.get("content", ""))) for b in content)
    return ""


def tool_results(req: Request) -> list[dict[str, Any]]:
    """Every ``tool_result`` block in the request's messages, oldest first, each with its
    content flattened to ``text``."""
    out = []
    for message in req.body.get("messages", []):
        for block in _blocks(message):
            if block.get("type") == "tool_result":
                out.append({**block, "text": _text_of(block.get("content", ""))})
    return out


def context_texts(req: Request, event: str) -> list[str]:
    """The hook additional context of ``event`` in the request's messages, each from its label
    on: Claude Code 2.1.328 sends it as role-``system`` text labelled ``<Event> hook additional
    context:``, for tool events ``<Event>:<tool name> hook additional context:``."""
    label = re.compile(rf"(?:^|\n)({re.escape(event)}(?::\S+)? hook additional context:)")
    out = []
    for message in req.body.get("messages", []):
        for block in _blocks(message):
            text = block.get("text") if block.get("type") == "text" else None
            found = label.search(text) if isinstance(text, str) else None
            if found and isinstance(text, str):
                out.append(text[found.start(1) :])
    return out


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def message_of(turn: Text | ToolUse, n: int) -> dict[str, Any]:
    """The API's Message for one answer (what a non-streaming request gets back)."""
    block: dict[str, Any]
    if isinstance(turn, Text):
        block, stop_reason = {"type": "text", "text": turn.text}, "end_turn"
    else:
        block = {"type": "tool_use", "id": f"toolu_{n:020d}", "name": turn.name}
        block["input"], stop_reason = turn.input, "tool_use"
    return {
        "id": f"msg_{n:024d}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [block],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def stream_of(message: dict[str, Any]) -> bytes:
    """``message`` as the API's streaming events: the message with no content, each block
    started empty and filled by deltas (text as one ``text_delta``, a tool's input JSON as
    ``input_json_delta`` pieces the client concatenates), then the stop reason and the end."""
    head = {**message, "content": [], "stop_reason": None, "usage": {"input_tokens": 10}}
    out = [_sse("message_start", {"type": "message_start", "message": head})]
    for i, block in enumerate(message["content"]):
        start: dict[str, Any]
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"]}]
        else:
            start = {**block, "input": {}}
            raw = json.dumps(block["input"])
            cut = len(raw) // 2
            deltas = [
                {"type": "input_json_delta", "partial_json": p} for p in (raw[:cut], raw[cut:])
            ]
        out.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": start},
            )
        )
        for delta in deltas:
            out.append(
                _sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": i, "delta": delta},
                )
            )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    out.append(_sse("message_delta", {"type": "message_delta", "delta": stop, "usage": usage}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


class ModelAPI:
    """The stand-in server; :meth:`start` binds 127.0.0.1 on an ephemeral port."""

    def __init__(self, hold_timeout: float = 60.0) -> None:
        self.requests: list[Request] = []
        self.unexpected: list[str] = []
        self._script: list[Turn] = []
        self._next = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._hold_timeout = hold_timeout
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.changed = threading.Condition(self._lock)

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *turns: Turn) -> None:
        """Replace the script: the next request gets ``turns[0]``, and so on."""
        with self._lock:
            self._script = list(turns)
            self._next = 0

    def wait_requests(self, n: int, timeout: float = 30.0) -> list[Request]:
        """Wait until ``n`` requests have arrived; the requests so far."""
        with self.changed:
            if not self.changed.wait_for(lambda: len(self.requests) >= n, timeout):
                raise AssertionError(f"{len(self.requests)} of {n} model requests in {timeout}s")
            return list(self.requests)

    def _answer(self, req: Request) -> tuple[int, str, bytes]:
        with self.changed:
            self.requests.append(req)
            self.changed.notify_all()
            turn = self._script[self._next] if self._next < len(self._script) else None
            self._next += 1
        if req.method != "POST" or req.path.split("?")[0] != "/v1/messages":
            self.unexpected.append(f"{req.method} {req.path}")
            return 404, "application/json", _error("not_found_error", "unexpected path")
        if turn is None:
            self.unexpected.append(f"request {len(self.requests)} past the end of the script")
            return 400, "application/json", _error("invalid_request_error", "script exhausted")
        answer = turn if isinstance(turn, Text | ToolUse) else turn(req)
        if answer.hold is not None and not answer.hold.wait(self._hold_timeout):
            self.unexpected.append(f"request {len(self.requests)} held past its timeout")
        message = message_of(answer, next(self._ids))
        if not req.body.get("stream"):
            return 200, "application/json", json.dumps(message).encode()
        return 200, "text/event-stream", stream_of(message)

    def start(self) -> ModelAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {"_raw": raw.decode(errors="replace")}
                req = Request(self.path, self.command, dict(self.headers.items()), body)
                status, ctype, payload = api._answer(req)
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(payload)))
                self.send_header("request-id", f"req_{len(api.requests)}")
                self.end_headers()
                self.wfile.write(payload)

            do_POST = do_GET = do_PUT = do_DELETE = do_HEAD = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="model-api")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(10)


def _error(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
