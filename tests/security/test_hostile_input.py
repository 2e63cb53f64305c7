"""Hostile ids, paths and frames (the security pass): traversal, separators, NUL and very
long values in every id-taking tool; oversize and malformed frames on the unix socket and
HTTP. Each is refused with a clear error (never an internal error), nothing is written outside
the daemon's dirs, and the daemon goes on answering."""

from __future__ import annotations

import http.client
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.daemon.test_http_transport import post
from tests.security.conftest import Tally
from tests.tools.session_helpers import unix_request

# Values hostile to a filesystem path (traversal, separators, NUL, length, empty).
PATH_HOSTILE = [
    "../x",
    "../../../../tmp/agentcoord-escape",
    "/",
    "/etc/passwd",
    "\\",
    "..\\..\\x",
    "a\x00b",
    "x" * 5000,
    "..",
    ".",
    "",
]
# Values hostile to a NATS subject token (ids that become ``agents.<id>.inbox`` etc.).
SUBJECT_HOSTILE = ["a.b", "agents.*.inbox", ">", "*", " ", "a b"]
HOSTILE = PATH_HOSTILE + SUBJECT_HOSTILE

# (tool, the argument that carries an id or a path, other required arguments, values):
# ids that become NATS subject tokens refuse both kinds; registry ids are names that become
# file names in a file-backed registry, so they must be path-safe (dots and spaces are fine there).
TARGETS: list[tuple[str, str, dict[str, Any], list[str]]] = [
    ("send", "to", {"text": "hi"}, HOSTILE),
    ("send", "channel", {"text": "hi"}, HOSTILE),
    ("open_channel", "name", {"participants": ["someone"]}, HOSTILE),
    ("open_channel", "participants", {"name": "room"}, HOSTILE),
    ("close_channel", "name", {}, HOSTILE),
    ("handoff", "to", {"task": "t", "timeout_secs": 1}, HOSTILE),
    ("answer_handoff", "offer", {"accept": False}, HOSTILE),
    ("answer_prompt", "prompt", {"answer": "yes"}, HOSTILE),
    ("register_agent", "agent_id", {"endpoint": "http://127.0.0.1:9/x"}, PATH_HOSTILE),
    ("heartbeat_agent", "agent_id", {}, PATH_HOSTILE),
    ("deregister_agent", "agent_id", {}, PATH_HOSTILE),
    ("run_agent", "agent_id", {"task": "t"}, PATH_HOSTILE),
    ("get_agent", "agent_id", {}, HOSTILE),
]


def _tool(d: Daemon, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    req = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    req["params"] = {"name": name, "arguments": arguments}
    return unix_request(d, req)


def _refused(reply: dict[str, Any]) -> tuple[bool, str]:
    """An isError result or a JSON-RPC error, with a clear text that is not an internal error
    (a lookup that finds nothing counts: it discloses nothing and touches nothing)."""
    if "error" in reply:
        text = reply["error"]["message"]
        return reply["error"]["code"] != -32603, text
    result = reply["result"]
    text = result["content"][0]["text"]
    if not result.get("isError"):
        return result.get("structuredContent") == {"found": False}, text
    return not text.startswith("internal error"), text


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_hostile_ids_are_refused(daemon: Daemon, tally: Tally) -> None:
    """Every id- or path-taking tool refuses every hostile value; no file lands outside."""
    outside = daemon.root.parent
    before = {p.name for p in outside.iterdir()}
    failures = []
    for tool, key, rest, values in TARGETS:
        for bad in values:
            value: Any = [bad] if key == "participants" else bad
            ok, text = _refused(_tool(daemon, tool, {**rest, key: value}))
            if not tally(f"hostile id ({tool}.{key})", ok):
                failures.append((tool, key, bad[:40], text[:120]))
    assert failures == [], "\n".join(map(str, failures))
    assert {p.name for p in outside.iterdir()} == before
    assert not Path("/tmp/agentcoord-escape").exists()
    assert unix_request(daemon, {"jsonrpc": "2.0", "id": 9, "method": "ping"})["result"] == {}


def test_hostile_claim_keys_round_trip_or_are_refused(daemon: Daemon, tally: Tally) -> None:
    """A hostile claim key is refused, or kept verbatim as a distinct name (an absolute path:
    as its canonical file key, docs/claims.md "Claiming files"), never a path the daemon uses."""
    from agentcoord.leases.filekeys import FileKeys

    resolve_file_key = FileKeys().file_key

    state_before = _tree(daemon.state_dir)
    granted: dict[str, int] = {}
    for bad in HOSTILE:
        reply = _tool(daemon, "claim", {"resource_key": bad, "ttl": "1m"})
        ok, text = _refused(reply)
        if ok:
            tally("hostile claim key", True, "refused or kept verbatim as a name")
            continue
        sc = reply["result"].get("structuredContent", {})
        # A bare absolute path names a file: it is kept under its canonical file key.
        expected = resolve_file_key(bad, None).key if bad.startswith("/") else bad
        stored = sc.get("acquired") and sc["claim"]["resource_key"] == expected
        tally("hostile claim key", bool(stored), "refused or kept verbatim as a name")
        assert stored, (bad[:40], text)
        granted[expected] = sc["token"]
    rows = _tool(daemon, "check_claims", {"limit": 1000})["result"]["structuredContent"]
    keys = [r["resource_key"] for r in rows["claims"]]
    assert sorted(keys) == sorted(granted)  # each exactly once, none merged with another
    for key, token in granted.items():
        out = _tool(daemon, "release", {"resource_key": key, "token": token})
        assert out["result"]["structuredContent"]["released"] is True
    new_files = {p for p in _tree(daemon.state_dir) - state_before if "nats" not in p}
    assert new_files == set()


def _unix_frames(d: Daemon, frames: list[bytes]) -> list[dict[str, Any]]:
    """Each frame's reply on one connection of the human's (logged in with the token first)."""
    token = (d.state_dir / "human.token").read_text().strip()
    login = {"jsonrpc": "2.0", "id": 0, "method": "agentcoord/login", "params": {"token": token}}
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(20)
        s.connect(str(d.socket))
        reader = s.makefile("rb")
        s.sendall(json.dumps(login).encode() + b"\n")
        assert "result" in json.loads(reader.readline())
        replies = []
        for frame in frames:
            s.sendall(frame + b"\n")
            replies.append(json.loads(reader.readline()))
        s.sendall(b'{"jsonrpc":"2.0","id":"after","method":"ping"}\n')
        replies.append(json.loads(reader.readline()))
    return replies


MALFORMED = [
    b"{",
    b"[]",
    b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":7}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"claim"}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"claim","arguments":[]}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}',
    b"\xef\xbb\xbf\xff\xfe garbage",
    b'{"jsonrpc":"2.0","id":1,"method":"' + b"[" * 10000 + b'"}',
    b'{"a":' * 5000 + b"1" + b"}" * 5000,
]


def test_malformed_frames_on_the_socket(daemon: Daemon, tally: Tally) -> None:
    """Malformed JSON-RPC frames each get an error reply; the connection stays usable."""
    replies = _unix_frames(daemon, MALFORMED)
    for frame, reply in zip(MALFORMED, replies, strict=False):
        ok = _refused(reply)[0]
        assert tally("malformed frame (unix)", ok), (frame[:60], reply)
    assert replies[-1] == {"jsonrpc": "2.0", "id": "after", "result": {}}


def test_oversize_frame_on_the_socket(daemon: Daemon, tally: Tally) -> None:
    """A frame over the 4 MiB limit is refused; the next request on the link is answered."""
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * (5 << 20) + b'"}}'
    reply, after = _unix_frames(daemon, [big])
    assert tally("oversize frame (unix)", "error" in reply), reply
    assert after["result"] == {}


def test_malformed_and_oversize_http(daemon: Daemon, tally: Tally) -> None:
    """Over HTTP: malformed bodies get a JSON-RPC error, an oversize body 413, bad framing 400."""
    token = (daemon.state_dir / "human.token").read_text().strip()
    auth = {"authorization": f"Bearer {token}"}  # the human's, so the body is what is judged
    for body in MALFORMED:
        status, _, raw = post(daemon, None, auth, raw=body)
        reply = json.loads(raw) if raw.strip().startswith(b"{") else {}
        ok = status in (200, 400) and bool(reply) and _refused(reply)[0]
        assert tally("malformed body (http)", ok), (body[:60], status, raw[:200])
    status, _, _ = post(daemon, None, raw=b"x" * (5 << 20))
    assert tally("oversize body (http)", status == 413), status
    host, port = daemon.http_addr.rsplit(":", 1)
    for raw_request in (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(64),  # a TLS hello
    ):
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(raw_request)
            got = s.recv(4096)
        status_ok = got.startswith(b"HTTP/1.1 4") or got == b""
        assert tally("malformed HTTP framing", status_ok), (raw_request[:40], got[:100])
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", "/healthz")
    assert conn.getresponse().read() == b"ok"
    conn.close()


@pytest.mark.parametrize("transport", ["unix"])
def test_unknown_tool_and_method(daemon: Daemon, tally: Tally, transport: str) -> None:
    """An unknown method is -32601 and an unknown tool -32602, at once."""
    r1 = unix_request(daemon, {"jsonrpc": "2.0", "id": 1, "method": "admin/shutdown"})
    r2 = _tool(daemon, "shutdown_daemon", {})
    assert tally("unknown method/tool", r1["error"]["code"] == -32601), r1
    assert tally("unknown method/tool", r2["error"]["code"] == -32602), r2
