"""Scripted stand-ins for the model APIs of Codex, Gemini CLI and OpenCode, on loopback.

Each CLI is pointed at one (docs/other-clis.md "Testing offline"): Codex at an OpenAI
Responses API (``POST /v1/responses``, server-sent events ``response.created``,
``response.output_item.done``, ``response.completed``), Gemini CLI at the Gemini API
(``POST /v1beta/models/M:streamGenerateContent?alt=sse``, each event a
``GenerateContentResponse``), OpenCode at an OpenAI-compatible Chat Completions API (``POST
/v1/chat/completions``, ``chat.completion.chunk`` events ending in ``[DONE]``). The script is
a list of turns: :class:`Call` (the model calls the tool whose name ends with ``tool``: each
CLI prefixes MCP tools its own way, so the stand-in picks the name from the request's tools)
or :class:`Say` (the model answers and ends its turn). Every request is recorded; one past the
script is answered ``Say("done")`` and noted in :attr:`Scripted.extra` (CLIs make side requests,
a title or a check, that the tests do not script), never an error; with
:attr:`Scripted.hold_side`, not before that event is set.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Call", "ChatCompletions", "GeminiAPI", "Patch", "Responses", "Say", "Scripted"]


@dataclass(frozen=True)
class Call:
    """The model calls the offered tool whose name ends with ``tool``, with ``args``."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Say:
    """The model answers ``text`` and ends its turn; with ``hold``, not before it is set (the
    CLI's process waits at the model meanwhile, holding what it holds)."""

    text: str
    hold: threading.Event | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Patch:
    """Codex only: the model calls its freeform ``apply_patch`` tool with ``text``."""

    text: str


Turn = Call | Say | Patch


def _pick(names: list[str], tool: str) -> str:
    """The offered tool name that ends with ``tool`` (after a separator), else ``tool``."""
    for name in names:
        if name == tool or name.endswith(("_" + tool, "__" + tool, "." + tool)):
            return name
    raise AssertionError(f"no offered tool ends with {tool!r}: {names}")


class Scripted:
    """A loopback HTTP server answering the CLI's model requests from a script."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.extra: list[str] = []
        # Set: side requests are answered only once it is set (the CLI waits meanwhile).
        self.hold_side: threading.Event | None = None
        self._turns: list[Turn] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(size) or b"{}")
                except ValueError:
                    body = {}
                outer._answer(self, body)

            def do_GET(self) -> None:
                outer.extra.append(f"GET {self.path}")
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Scripted:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def script(self, *turns: Turn) -> None:
        with self._lock:
            self._turns.extend(turns)

    def _next(self, path: str, body: dict[str, Any]) -> Turn:
        with self._lock:
            self.requests.append((path, body))
            if self._turns and self.is_turn(path, body):
                return self._turns.pop(0)
        self.extra.append(path)
        return Say("done", hold=self.hold_side)

    def is_turn(self, path: str, body: dict[str, Any]) -> bool:
        """Whether the request is the agent's own turn (it offers tools), not a side request."""
        return bool(self.tool_names(body))

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        turn = self._next(handler.path, body)
        if isinstance(turn, Say) and turn.hold is not None:
            turn.hold.wait(timeout=300)
        events = self.events(turn, body)
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("cache-control", "no-cache")
        handler.end_headers()
        for event in events:
            handler.wfile.write(event.encode())
        handler.wfile.flush()
        handler.close_connection = True

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def events(self, turn: Turn, body: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def tool_outputs(self) -> list[str]:
        """Every tool result the CLI sent back to the model, as text."""
        raise NotImplementedError


def _sse(data: dict[str, Any], event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


class Responses(Scripted):
    """OpenAI's Responses API, as Codex's ``wire_api = "responses"`` provider speaks it."""

    # Codex offers an MCP server's tools as one ``namespace`` tool (``mcp__agent_coord``)
    # holding them; the model calls one by its name with the namespace beside it.
    def tool_names(self, body: dict[str, Any]) -> list[str]:
        names = []
        for tool in body.get("tools", []):
            if not isinstance(tool, dict):
                continue
            if tool.get("type") == "namespace":
                names += [f"{tool['name']}/{t.get('name', '')}" for t in tool.get("tools", [])]
            else:
                names.append(tool.get("name", ""))
        return names

    def events(self, turn: Turn, body: dict[str, Any]) -> list[str]:
        if isinstance(turn, Call):
            picked = _pick([n.replace("/", "__") for n in self.tool_names(body)], turn.tool)
            space, _, name = next(
                n.rpartition("/") for n in self.tool_names(body) if n.replace("/", "__") == picked
            )
            item: dict[str, Any] = {
                "type": "function_call",
                "id": "fc_1",
                "call_id": f"call_{len(self.requests)}",
                "name": name,
                "arguments": json.dumps(turn.args),
            }
            if space:
                item["namespace"] = space
        elif isinstance(turn, Patch):
            item = {
                "type": "custom_tool_call",
                "id": "ctc_1",
                "call_id": f"call_{len(self.requests)}",
                "name": "apply_patch",
                "input": turn.text,
            }
        else:
            item = {
                "type": "message",
                "role": "assistant",
                "id": "msg_1",
                "content": [{"type": "output_text", "text": turn.text}],
            }
        rid = f"resp_{len(self.requests)}"
        usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
        return [
            _sse({"type": "response.created", "response": {"id": rid}}, "response.created"),
            _sse(
                {"type": "response.output_item.done", "output_index": 0, "item": item},
                "response.output_item.done",
            ),
            _sse(
                {"type": "response.completed", "response": {"id": rid, "usage": usage}},
                "response.completed",
            ),
        ]

    def tool_outputs(self) -> list[str]:
        out = []
        for _, body in self.requests:
            for item in body.get("input", []):
                outputs = ("function_call_output", "custom_tool_call_output")
                if isinstance(item, dict) and item.get("type") in outputs:
                    output = item.get("output")
                    out.append(output if isinstance(output, str) else json.dumps(output))
        return out


class GeminiAPI(Scripted):
    """The Gemini API's streamGenerateContent, as Gemini CLI's API-key auth speaks it."""

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        return [
            d.get("name", "")
            for t in body.get("tools", [])
            if isinstance(t, dict)
            for d in t.get("functionDeclarations", [])
        ]

    def events(self, turn: Turn, body: dict[str, Any]) -> list[str]:
        if isinstance(turn, Call):
            part: dict[str, Any] = {
                "functionCall": {"name": _pick(self.tool_names(body), turn.tool), "args": turn.args}
            }
        else:
            part = {"text": turn.text}
        response = {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 1,
                "candidatesTokenCount": 1,
                "totalTokenCount": 2,
            },
        }
        return [_sse(response)]

    def tool_outputs(self) -> list[str]:
        out = []
        for _, body in self.requests:
            for content in body.get("contents", []):
                for part in content.get("parts", []) if isinstance(content, dict) else []:
                    if isinstance(part, dict) and "functionResponse" in part:
                        out.append(json.dumps(part["functionResponse"]))
        return out


class ChatCompletions(Scripted):
    """An OpenAI-compatible Chat Completions API, as OpenCode's provider speaks it."""

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        return [
            t.get("function", {}).get("name", "")
            for t in body.get("tools", [])
            if isinstance(t, dict)
        ]

    def events(self, turn: Turn, body: dict[str, Any]) -> list[str]:
        base = {"id": f"c{len(self.requests)}", "object": "chat.completion.chunk", "model": "m"}
        if isinstance(turn, Call):
            call = {
                "index": 0,
                "id": f"call_{len(self.requests)}",
                "type": "function",
                "function": {
                    "name": _pick(self.tool_names(body), turn.tool),
                    "arguments": json.dumps(turn.args),
                },
            }
            delta: dict[str, Any] = {"role": "assistant", "tool_calls": [call]}
            finish = "tool_calls"
        else:
            delta, finish = {"role": "assistant", "content": turn.text}, "stop"
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        return [
            _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            _sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
            _sse({**base, "choices": [], "usage": usage}),
            "data: [DONE]\n\n",
        ]

    def tool_outputs(self) -> list[str]:
        out = []
        for _, body in self.requests:
            for msg in body.get("messages", []):
                if isinstance(msg, dict) and msg.get("role") == "tool":
                    content = msg.get("content")
                    out.append(content if isinstance(content, str) else json.dumps(content))
        return out
