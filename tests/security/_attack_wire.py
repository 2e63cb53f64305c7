"""The raw wire side of the attack suite (docs/reliability.md "Attack suite"): one frame on a
unix connection or one HTTP request on loopback, bytes in and what came back out, and the
judgement of a reply (a clear answer, or an internal error, a drop, silence). Used in the test
process (the human) and in ``_attack_agent.py`` (an agent), so both judge alike.

Every read is bounded in bytes and in time; only loopback and the daemon's own socket are
ever dialled.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "PING_ID",
    "Exchange",
    "UnixLine",
    "http_exchange",
    "judge_reply",
    "judge_tool_result",
    "wants_reply",
]

PING_ID = "attack-ping"
INTERNAL_ERROR = -32603
MAX_READ = 64 << 20  # a reply bigger than this is itself a finding (no bound on replies)


@dataclass
class Exchange:
    """What one frame got back: its replies (decoded lines), whether the ping after it was
    answered, and how the connection ended (``closed`` by the daemon, ``timeout``)."""

    replies: list[Any] = field(default_factory=list)
    pinged: bool = False
    closed: bool = False
    timeout: bool = False
    garbage: list[bytes] = field(default_factory=list)  # lines that were not JSON


def wants_reply(frame: bytes) -> bool | None:
    """Whether JSON-RPC owes ``frame`` an answer: False for a notification (or a batch of
    them), True for anything else, None when either is right (a notification whose other
    fields are wrong may be answered with an error or not at all)."""
    try:
        value = json.loads(frame)
    except (ValueError, RecursionError):  # no JSON (or too deep for us): an error is owed
        return True
    items = value if isinstance(value, list) and value else [value]
    if all(isinstance(v, dict) and "id" not in v and "method" in v for v in items):
        good = all(
            v.get("jsonrpc") == "2.0"
            and isinstance(v["method"], str)
            and isinstance(v.get("params", {}), dict)
            for v in items
        )
        return False if good else None
    return True


def judge_reply(reply: Any) -> str | None:
    """None when ``reply`` is a clear JSON-RPC answer (a result, or an error with a code other
    than internal error and a message), else what is wrong with it."""
    items = reply if isinstance(reply, list) else [reply]
    if not items:
        return "an empty batch reply"
    for item in items:
        if not isinstance(item, dict) or item.get("jsonrpc") != "2.0":
            return f"not a JSON-RPC reply: {str(item)[:200]}"
        if "result" in item:
            if isinstance(item["result"], dict) and "content" in item["result"]:
                bad = judge_tool_result(item["result"])
                if bad:
                    return bad
            continue
        err = item.get("error")
        if not isinstance(err, dict) or not isinstance(err.get("message"), str):
            return f"neither result nor error: {str(item)[:200]}"
        if err.get("code") == INTERNAL_ERROR or err["message"].lower().startswith("internal"):
            return f"an internal error instead of a clear one: {err['message'][:300]}"
    return None


def judge_tool_result(result: dict[str, Any]) -> str | None:
    """None for a tool result that succeeded or failed saying why; else what is wrong."""
    content = result.get("content") or [{}]
    text = str(content[0].get("text", "")) if isinstance(content[0], dict) else ""
    if result.get("isError") and (not text or text.lower().startswith("internal error")):
        return f"a tool error that does not say why: {text[:300]!r}"
    return None


class UnixLine:
    """One newline-framed connection to the daemon's socket, optionally logged in as the human
    (``agentcoord/login`` with the token, as the CLI does)."""

    def __init__(self, path: str, token: str | None = None, timeout: float = 30.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.buf = b""
        try:
            self.sock.settimeout(timeout)
            self.sock.connect(path)
            if token is not None:
                login = {"jsonrpc": "2.0", "id": "login", "method": "agentcoord/login"}
                frame = json.dumps({**login, "params": {"token": token}}).encode()
                self.sock.sendall(frame + b"\n")
                line = self.read_line(time.monotonic() + timeout)
                if line is None or "result" not in json.loads(line):
                    raise ConnectionError(f"login refused: {line!r}")
        except BaseException:
            self.sock.close()
            raise

    def read_line(self, deadline: float) -> bytes | None:
        """The next line, or None when the daemon closed the connection."""
        while b"\n" not in self.buf:
            self.sock.settimeout(max(deadline - time.monotonic(), 0.01))
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return None
            self.buf += chunk
            if len(self.buf) > MAX_READ:
                raise ValueError(f"a reply line over {MAX_READ} bytes")
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> Any:
        """One request and its reply (other lines before it are skipped)."""
        req = {"jsonrpc": "2.0", "id": "call", "method": method, "params": params or {}}
        self.sock.sendall(json.dumps(req).encode() + b"\n")
        deadline = time.monotonic() + timeout
        while (line := self.read_line(deadline)) is not None:
            reply = json.loads(line)
            if isinstance(reply, dict) and reply.get("id") == "call":
                return reply
        raise ConnectionError(f"the daemon closed the connection before answering {method}")

    def exchange(self, frame: bytes, timeout: float = 15.0) -> Exchange:
        """Send ``frame`` then a ping; read until the ping is answered and the frame's reply
        (when one is owed) is in, the daemon closes, or ``timeout`` passes."""
        out = Exchange()
        owed = wants_reply(frame)
        ping = json.dumps({"jsonrpc": "2.0", "id": PING_ID, "method": "ping"}).encode()
        try:
            self.sock.sendall(frame + b"\n" + ping + b"\n")
        except OSError:
            out.closed = True
            return out
        deadline = time.monotonic() + timeout
        try:
            while not (out.pinged and (owed is not True or out.replies)):
                line = self.read_line(deadline)
                if line is None:
                    out.closed = True
                    break
                try:
                    value = json.loads(line)
                except ValueError:
                    out.garbage.append(line[:200])
                    continue
                if isinstance(value, dict) and value.get("id") == PING_ID:
                    out.pinged = "result" in value
                else:
                    out.replies.append(value)
        except TimeoutError:
            out.timeout = True
        except OSError:
            out.closed = True
        return out

    def close(self) -> None:
        self.sock.close()


def http_exchange(
    addr: str,
    body: bytes,
    headers: dict[str, str] | None = None,
    *,
    method: str = "POST",
    path: str = "/mcp",
    raw: bytes | None = None,
    timeout: float = 15.0,
) -> tuple[int, bytes, str]:
    """One HTTP/1.1 request on a fresh loopback connection: (status, body, note). ``raw``
    sends those bytes instead of a request built here. Status 0 means no response: ``note``
    says whether the daemon closed or the read timed out."""
    host, port = addr.rsplit(":", 1)
    assert host in ("127.0.0.1", "::1", "localhost"), addr  # loopback only
    if raw is None:
        hdrs = {
            "host": addr,
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "content-length": str(len(body)),
            "connection": "close",
            **(headers or {}),
        }
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
        raw = head.encode("latin-1") + b"\r\n" + body
    data = b""
    note = ""
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as s:
            s.sendall(raw)
            deadline = time.monotonic() + timeout
            while len(data) < MAX_READ:
                s.settimeout(max(deadline - time.monotonic(), 0.01))
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
                if _complete(data):
                    break
        if len(data) >= MAX_READ:
            note = f"the response outgrew the {MAX_READ >> 20} MiB a client is asked to read"
    except TimeoutError:
        note = "no complete response before the read timed out"
    except OSError as exc:
        note = f"connection error: {exc}"
    if not data.startswith(b"HTTP/1."):
        return 0, data[:200], note or "the daemon closed the connection without a response"
    top, _, rest = data.partition(b"\r\n\r\n")
    return int(top.split(b" ", 2)[1]), rest, note


def _complete(data: bytes) -> bool:
    """Whether ``data`` holds a whole response with a Content-Length (else read to EOF)."""
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return len(rest) >= int(value.strip())
    return False
