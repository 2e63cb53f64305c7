"""Argument fuzzing over ``tools/list``: every string argument of every tool a caller is shown
(array items of strings included) at a set of sizes, each call followed by a check that the
daemon's NATS link still works (a ``claim`` and its ``release``).

Reusable by other suites; standard library only, so it also runs as a script in a process of
its own (under a stand-in ``claude``, to fuzz as an agent)::

    python tests/security/_fuzz.py SOCKET OUT_JSON [--token-file FILE] [--workers N]
        [--sizes 0,1024,...] [--seed N]

API:

- :data:`SIZES`: the default sizes (characters): 0, 1 KiB, 8 KiB, 64 KiB, 1 MiB.
- :func:`fuzz_text` ``(size, seed)``: a deterministic string of ``size`` characters mixing
  what escaping and subjects care about (letters, digits, ``.``, ``/``, ``*``, ``>``, ``:``, ``=``,
  non-ASCII).
- :func:`string_arguments` ``(schema)``: ``[(argument, "string" | "item")]``.
- :func:`cases` ``(tools, sizes, seed)``: one :class:`Case` per (tool, string argument, size),
  its other arguments from :data:`BASELINE` (what keeps a call short and non-blocking).
- :class:`Conn`: one unix-socket JSON-RPC connection (logged in with a token, or not).
- :func:`run` ``(socket, cases, token, workers)``: the cases over ``workers`` connections at
  once; one :class:`Outcome` dict per case.
- :func:`problems` ``(outcomes)``: what an outcome list shows wrong (an unanswered or dropped
  call, an internal error, a failed link check), as lines.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BASELINE",
    "SIZES",
    "Case",
    "Conn",
    "Outcome",
    "cases",
    "fuzz_text",
    "problems",
    "run",
    "string_arguments",
]

SIZES = (0, 1 << 10, 8 << 10, 64 << 10, 1 << 20)

# Arguments that keep each call short: nothing waits for a human, an agent or a message.
BASELINE: dict[str, dict[str, Any]] = {
    "escalate": {"timeout_secs": 0},
    "request_approval": {"timeout_secs": 0},
    "ask_choice": {"timeout_secs": 0, "choices": ["a", "b"]},
    "request_input": {"timeout_secs": 0},
    "ask": {"timeout_secs": 0.1},
    "handoff": {"timeout_secs": 0.1},
    "inbox": {"wait_secs": 0},
    "run_agent": {"wait": False},
    "dispatch_to_agent": {"wait": False},
}

_ALPHABET = "abcXYZ019-_/.*>:=é✓€"


def fuzz_text(size: int, seed: int = 0) -> str:
    """``size`` characters, the same for the same seed."""
    if size <= 0:
        return ""
    rng = random.Random(seed * 1_000_003 + size)
    unit = "".join(rng.choice(_ALPHABET) for _ in range(min(size, 4096)))
    return (unit * (size // len(unit) + 1))[:size]


def _is_string(spec: dict[str, Any]) -> bool:
    kind = spec.get("type")
    return kind == "string" or (isinstance(kind, list) and "string" in kind)


def string_arguments(schema: dict[str, Any]) -> list[tuple[str, str]]:
    """The string arguments of a tool's input schema: (name, "string") for a string, or one
    that may be given as a string; (name, "item") for an array of strings."""
    out = []
    for name, spec in (schema.get("properties") or {}).items():
        if _is_string(spec):
            out.append((name, "string"))
        elif spec.get("type") == "array" and _is_string(spec.get("items") or {}):
            out.append((name, "item"))
    return out


def _filler(spec: dict[str, Any]) -> Any:
    """A small valid value for a required argument that is not the one fuzzed."""
    if "enum" in spec:
        return spec["enum"][0]
    kind = spec.get("type")
    kind = str(kind[0] if isinstance(kind, list) else kind)
    return {
        "string": "fuzz",
        "integer": 1,
        "number": 1,
        "boolean": False,
        "array": ["fuzz"],
        "object": {},
    }.get(kind, "fuzz")


@dataclass(frozen=True)
class Case:
    """One call: ``tool`` with ``argument`` at ``size`` characters."""

    tool: str
    argument: str
    size: int
    arguments: dict[str, Any]


def cases(tools: list[dict[str, Any]], sizes: tuple[int, ...] = SIZES, seed: int = 0) -> list[Case]:
    """One case per (tool, string argument, size) of a ``tools/list`` result's tools."""
    out = []
    for tool in tools:
        schema = tool.get("inputSchema") or {}
        props = schema.get("properties") or {}
        base = dict(BASELINE.get(tool["name"], {}))
        for name in schema.get("required", []):
            base.setdefault(name, _filler(props.get(name, {})))
        for name, shape in string_arguments(schema):
            for size in sizes:
                text = fuzz_text(size, seed)
                args = {**base, name: [text] if shape == "item" else text}
                out.append(Case(tool["name"], name, size, args))
    return out


@dataclass
class Outcome:
    """What one case got: ``reply`` is ``ok``, ``error`` (a tool error), ``rpc`` (a JSON-RPC
    error) or ``dropped`` (no reply); ``text`` the first 300 characters of what it said;
    ``link`` whether the claim and release after it worked (and why not)."""

    tool: str
    argument: str
    size: int
    reply: str
    text: str
    link: str


class Conn:
    """One JSON-RPC connection on the daemon's unix socket."""

    def __init__(self, path: str, token: str | None = None, timeout: float = 120.0) -> None:
        self._path, self._token, self._timeout = path, token, timeout
        self._ids = 0
        self._open()

    def _open(self) -> None:
        self._sock = socket.socket(socket.AF_UNIX)
        self._sock.settimeout(self._timeout)
        self._sock.connect(self._path)
        self._reader = self._sock.makefile("rb")
        if self._token is not None:
            reply = self.request("agentcoord/login", {"token": self._token})
            if "result" not in reply:
                raise RuntimeError(f"login refused: {reply}")

    def reopen(self) -> None:
        self.close()
        self._open()

    def close(self) -> None:
        self._reader.close()
        self._sock.close()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request, read its reply (``{}`` when the connection ended first)."""
        self._ids += 1
        frame = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        self._sock.sendall(json.dumps(frame).encode() + b"\n")
        while True:
            line = self._reader.readline()
            if not line:
                return {}
            reply: dict[str, Any] = json.loads(line)
            if reply.get("id") == self._ids:  # skip pushed notifications
                return reply

    def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments})


def _classify(reply: dict[str, Any]) -> tuple[str, str]:
    if not reply:
        return "dropped", ""
    if "error" in reply:
        return "rpc", json.dumps(reply["error"])[:300]
    result = reply.get("result") or {}
    text = " ".join(c.get("text", "") for c in result.get("content", []))[:300]
    return ("error" if result.get("isError") else "ok"), text


def _link(conn: Conn, key: str) -> str:
    """``ok`` when a claim on ``key`` and its release both work, else what went wrong."""
    got = conn.tool("claim", {"resource_key": key, "ttl": "1m"})
    out = (got.get("result") or {}).get("structuredContent") or {}
    if not out.get("acquired"):
        return f"claim failed: {_classify(got)[1] or got}"
    done = conn.tool("release", {"resource_key": key, "token": out["token"]})
    if _classify(done)[0] != "ok":
        return f"release failed: {_classify(done)[1]}"
    return "ok"


def run(path: str, todo: list[Case], token: str | None = None, workers: int = 4) -> list[Outcome]:
    """Every case over ``workers`` connections at once, each followed by the link check on
    the same connection (reopened after a dropped call)."""
    outcomes: list[Outcome | None] = [None] * len(todo)
    lock = threading.Lock()
    it = iter(enumerate(todo))

    def worker(w: int) -> None:
        conn = Conn(path, token)
        try:
            while True:
                with lock:
                    nxt = next(it, None)
                if nxt is None:
                    return
                i, case = nxt
                try:
                    reply, text = _classify(conn.tool(case.tool, case.arguments))
                except OSError as exc:
                    reply, text = "dropped", repr(exc)
                if reply == "dropped":
                    conn.reopen()
                try:
                    link = _link(conn, f"fuzz/link-{os.getpid()}-{w}")
                except OSError as exc:
                    link = f"check failed: {exc!r}"
                    conn.reopen()
                outcomes[i] = Outcome(case.tool, case.argument, case.size, reply, text, link)
        finally:
            conn.close()

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [o for o in outcomes if o is not None]


def problems(outcomes: list[Outcome]) -> list[str]:
    """Lines naming each case that was dropped, failed inside the daemon, or broke the link."""
    out = []
    for o in outcomes:
        where = f"{o.tool}.{o.argument} at {o.size}"
        if o.reply == "dropped":
            out.append(f"{where}: no reply ({o.text})")
        elif "internal error" in o.text.lower() or '"code": -32603' in o.text:
            out.append(f"{where}: {o.text}")
        if o.link != "ok":
            out.append(f"{where}: NATS link check after it: {o.link}")
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("socket")
    parser.add_argument("out")
    parser.add_argument("--token-file")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args(argv)
    token = Path(opts.token_file).read_text().strip() if opts.token_file else None
    conn = Conn(opts.socket, token)
    listing = conn.request("tools/list", {})["result"]["tools"]
    conn.close()
    sizes = tuple(int(s) for s in opts.sizes.split(","))
    todo = cases(listing, sizes, opts.seed)
    outcomes = run(opts.socket, todo, token, opts.workers)
    body = {"tools": [t["name"] for t in listing], "outcomes": [asdict(o) for o in outcomes]}
    Path(opts.out).write_text(json.dumps(body))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
