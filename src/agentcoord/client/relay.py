"""The shim's relay: MCP messages between the client's stdio and the daemon's socket, across
daemon restarts (docs/claude-code.md "When the daemon restarts").

The client's stdio stays open for the session's life. When the daemon's connection ends while
stdin is still open (a stop, an upgrade, ``systemctl --user restart``, a crash), the relay:

* answers each request in flight with a JSON-RPC error saying it may or may not have taken
  effect and may be retried, except those that are safe to send again (``ping``, the list
  methods, reads, the ``initialize`` not yet answered, and a ``tools/call`` of a tool the daemon
  marks ``readOnlyHint``), which are sent again on the next connection;
* reconnects with a bounded backoff, following the daemon wherever its pointer says it serves
  now, and after a grace period starts it on demand as the first connect does;
* replays the session's ``initialize`` (under an id of its own, its reply swallowed: the client
  has one) and ``notifications/initialized``, so the daemon knows the client's capabilities
  again; the caller is this process, as before, so the session keeps its agent name;
* holds requests that arrive meanwhile for :data:`WAIT_S` at most, then answers each with an
  error saying the daemon is not reachable.

Threads and blocking sockets only: the shim starts with every session, and asyncio would cost
more than the whole relay.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["READ_ONLY_META", "RETRY_ERROR", "UNREACHABLE_ERROR", "WAIT_ENV", "Relay", "retryable"]

# The key of the initialize result's _meta naming the read-only tools (tools/registry.py; kept
# here too, as the shim imports nothing of the daemon's).
READ_ONLY_META = "agentcoord/readOnlyTools"
WAIT_ENV = "AGENTCOORD_RECONNECT_WAIT"  # seconds a request waits for the daemon (default 30)
WAIT_S = 30.0
GRACE_S = 2.0  # a supervisor (systemd, the user) restarts it first; then we start it
_AUTOSTART_EVERY_S = 30.0
_BACKOFF = (0.05, 0.1, 0.2, 0.4, 0.8, 1.0)  # seconds between connect attempts, then 1.0
_REPLAY_TIMEOUT_S = 30.0
_FLAP_S = 2.0
_FLAP_PAUSE_S = 1.0  # between connections a daemon keeps dropping unanswered
RETRY_ERROR = -32001  # the daemon went away with the request in flight: maybe applied
UNREACHABLE_ERROR = -32002  # the daemon was not reachable within the wait
_SAFE = frozenset(
    {
        "ping",
        "initialize",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
    }
)


def _say(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"agentcoord mcp: {text}\n")  # Claude Code's MCP log keeps it
        sys.stderr.flush()


def retryable(method: str, tool: str | None, read_only: set[str]) -> bool:
    """Whether a request lost with the connection is sent again rather than failed."""
    return method in _SAFE or (method == "tools/call" and tool is not None and tool in read_only)


class _ClientGone(Exception):
    """Writing to the client (stdout) failed: it is gone."""


@dataclass
class _Pending:
    line: bytes
    key: str | None  # the request's id as JSON; None: a notification
    rid: Any = None
    method: str = ""
    tool: str | None = None
    since: float = field(default_factory=time.monotonic)


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _error(rid: Any, code: int, message: str) -> bytes:
    body = {"code": code, "message": message, "data": {"retryable": True}}
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": body}).encode() + b"\n"


# (may start the daemon) -> (a connection or None, why not, whether a start was tried)
Connector = Callable[[bool], "tuple[socket.socket | None, str, bool]"]


class Relay:
    """Bytes between stdio and the daemon, one connection at a time (see the module)."""

    def __init__(self, connect: Connector, where: Callable[[], str], env: Mapping[str, str]):
        self._connect = connect
        self._where = where
        try:
            self._wait = float(env.get(WAIT_ENV) or WAIT_S)
        except ValueError:
            self._wait = WAIT_S
        self._lock = threading.Condition()
        self._send_lock = threading.Lock()
        self._sock: socket.socket | None = None  # set while attached
        self._inflight: dict[str, _Pending] = {}
        self._queue: list[_Pending] = []
        self._init: _Pending | None = None
        self._init_answered = False
        self._answered = False  # the current connection answered a request of the client
        self._initialized: bytes | None = None
        self._read_only: set[str] = set()
        self._stdin_done = threading.Event()
        self._replays = 0

    # -- client -> daemon (the stdin thread) ------------------------------------------------

    def _pump_in(self) -> None:
        buf = b""
        try:
            while data := os.read(0, 65536):
                buf += data
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._from_client(line + b"\n")
        except OSError:
            pass
        finally:
            if buf.strip():
                self._from_client(buf)
            with self._lock:
                self._stdin_done.set()
                sock = self._sock
                self._lock.notify_all()
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_WR)

    def _from_client(self, line: bytes) -> None:
        msg = _parse(line)
        item = _Pending(line, None)
        if isinstance(msg, dict):
            method = msg.get("method")
            if isinstance(method, str) and "id" in msg:
                params = msg.get("params")
                tool = params.get("name") if isinstance(params, dict) else None
                item = _Pending(line, json.dumps(msg["id"]), msg["id"], method, tool)
                if method == "initialize":
                    self._init = item
            elif method == "notifications/initialized":
                self._initialized = line
            elif method is None:
                item.method = "reply"  # to a request of the daemon's
        with self._lock:
            sock = self._sock
            if sock is None:
                if item.method != "reply":  # a reply belongs to the daemon that asked
                    self._queue.append(item)
                return
            if item.key is not None:
                self._inflight[item.key] = item
        with self._send_lock, contextlib.suppress(OSError):
            sock.sendall(line)  # a failure: the reader sees the loss and settles it

    # -- daemon -> client (the main thread) -------------------------------------------------

    def _to_client(self, line: bytes) -> None:
        if line.startswith(b"{"):
            msg = _parse(line)
            if isinstance(msg, dict) and "id" in msg and "method" not in msg:
                key = json.dumps(msg["id"])
                with self._lock:
                    pending = self._inflight.pop(key, None)
                if pending is not None:
                    self._answered = True
                    self._learn(pending, msg)
        self._write(line)

    def _learn(self, pending: _Pending, reply: dict[str, Any]) -> None:
        if pending.method == "initialize":
            self._init_answered = "result" in reply
            result = reply.get("result")
            meta = result.get("_meta") if isinstance(result, dict) else None
            names = meta.get(READ_ONLY_META) if isinstance(meta, dict) else None
            if isinstance(names, list):  # the daemon's read-only tools (mcp/core.py)
                self._read_only.update(str(n) for n in names)
        elif pending.method == "tools/list" and isinstance(reply.get("result"), dict):
            for tool in reply["result"].get("tools") or ():
                notes = tool.get("annotations") if isinstance(tool, dict) else None
                if isinstance(notes, dict) and notes.get("readOnlyHint") is True:
                    self._read_only.add(str(tool.get("name")))

    @staticmethod
    def _write(data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(1, view) :]
        except OSError as exc:
            raise _ClientGone(exc.strerror or str(exc)) from None

    def _pump_out(self, sock: socket.socket, buf: bytes) -> str:
        """Relay the daemon's lines until its connection ends; why it ended."""
        while True:
            *lines, buf = buf.split(b"\n")
            for line in lines:
                self._to_client(line + b"\n")
            try:
                data = sock.recv(65536)
            except OSError as exc:
                return f"the connection to the daemon failed: {exc.strerror or exc}"
            if not data:
                if buf:
                    self._write(buf)
                return "the daemon closed the connection"
            buf += data

    # -- the connection's life --------------------------------------------------------------

    def run(self, sock: socket.socket) -> int:
        """Relay until stdin ends; 0 then (a daemon that is away is no failure of ours), 74
        (EX_IOERR) when the client's stdout fails."""
        threading.Thread(target=self._pump_in, daemon=True, name="stdin").start()
        try:
            return self._relay(sock)
        except _ClientGone as exc:
            _say(f"cannot write to the client: {exc}")
            return 74

    def _relay(self, sock: socket.socket) -> int:
        buf = b""
        # Connections in a row that ended soon after they began with nothing answered on them:
        # a daemon that accepts and drops us. A restart is no flap (its connection answered,
        # or it was long), however many come in a row.
        flaps = 0
        while True:
            self._attach(sock)
            began = time.monotonic()
            self._answered = False
            why = self._pump_out(sock, buf)
            short = time.monotonic() - began < _FLAP_S
            flaps = flaps + 1 if short and not self._answered else 0
            with self._lock:
                self._sock = None
                lost = list(self._inflight.values())
                self._inflight.clear()
            sock.close()
            if self._stdin_done.is_set():
                return 0
            self._settle(lost)
            _say(
                f"{why} (stopped or restarting); reconnecting to {self._where()}, holding "
                f"new requests up to {self._wait:g} s"
            )
            # A daemon that keeps closing a fresh connection (it refuses us): a pause between
            # tries, so it is not asked twenty times a second.
            found = self._reconnect(_FLAP_PAUSE_S if flaps > 2 else 0.0)
            if found is None:
                return 0
            sock, buf = found
            _say(f"reconnected to the daemon on {self._where()}")

    def _settle(self, lost: list[_Pending]) -> None:
        """Requests the lost connection took with it: sent again, or failed as retryable."""
        again = []
        for item in lost:
            if retryable(item.method, item.tool, self._read_only):
                item.since = time.monotonic()
                again.append(item)
            else:
                self._write(
                    _error(
                        item.rid,
                        RETRY_ERROR,
                        "agentcoord: the daemon stopped or restarted while this request was in "
                        "flight, so it may or may not have taken effect; check, then retry it "
                        "(the session reconnects by itself)",
                    )
                )
        with self._lock:
            self._queue[:0] = again

    def _reconnect(self, hold: float) -> tuple[socket.socket, bytes] | None:
        away = time.monotonic()
        attempt = 0
        next_start = away + GRACE_S
        said = ""
        while hold > 0 and not self._stdin_done.is_set():
            self._expire("the daemon keeps closing the connection")
            with self._lock:
                self._lock.wait(min(hold, 1.0))
            hold -= 1.0
        while not self._stdin_done.is_set():
            now = time.monotonic()
            may_start = now >= next_start
            sock, why, tried = self._connect(may_start)
            if sock is not None:
                replayed = self._replay(sock)
                if replayed is not None:
                    return sock, replayed
                sock.close()
            elif why and why != said:
                _say(why)
                said = why
            if tried:
                next_start = time.monotonic() + _AUTOSTART_EVERY_S
            self._expire(why)
            with self._lock:
                self._lock.wait(_BACKOFF[min(attempt, len(_BACKOFF) - 1)])
            attempt += 1
        return None

    def _expire(self, why: str) -> None:
        """Answer what has waited its bound with an error; drop stale notifications."""
        now = time.monotonic()
        with self._lock:
            late = [p for p in self._queue if now - p.since >= self._wait]
            self._queue = [p for p in self._queue if now - p.since < self._wait]
        for item in late:
            if item.key is None:
                continue
            because = f" ({why})" if why else ""
            self._write(
                _error(
                    item.rid,
                    UNREACHABLE_ERROR,
                    f"agentcoord: the daemon has not been reachable for {self._wait:g} s"
                    f"{because}; retry later, or start it with `agentcoord serve`",
                )
            )

    def _replay(self, sock: socket.socket) -> bytes | None:
        """Tell a new daemon what the client told the old one; bytes read past its reply, or
        None when the new connection failed (the caller tries again)."""
        if self._init is None or not self._init_answered:
            return b""  # nothing answered yet: the client's own initialize goes in the queue
        msg = _parse(self._init.line)
        if not isinstance(msg, dict):
            return b""
        self._replays += 1
        rid = f"agentcoord-shim-replay-{self._replays}"
        msg["id"] = rid
        sock.settimeout(_REPLAY_TIMEOUT_S)
        buf = b""
        try:
            sock.sendall(json.dumps(msg).encode() + b"\n")
            while True:
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    reply = _parse(line)
                    if isinstance(reply, dict) and reply.get("id") == rid:
                        if "error" in reply:
                            _say(f"the daemon refused the replayed initialize: {reply['error']}")
                        rest = b"".join(ln + b"\n" for ln in lines[lines.index(line) + 1 :])
                        if self._initialized is not None:
                            sock.sendall(self._initialized)
                        sock.settimeout(None)
                        return rest + buf
                    self._to_client(line + b"\n")
                data = sock.recv(65536)
                if not data:
                    return None
                buf += data
        except OSError:
            return None

    def _attach(self, sock: socket.socket) -> None:
        """Make ``sock`` the connection: what waited is sent first, in arrival order."""
        with self._send_lock:
            with self._lock:
                self._sock = sock
                waiting, self._queue = self._queue, []
                for item in waiting:
                    if item.key is not None:
                        self._inflight[item.key] = item
                done = self._stdin_done.is_set()
            for item in waiting:
                with contextlib.suppress(OSError):
                    sock.sendall(item.line)
            if done:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_WR)
