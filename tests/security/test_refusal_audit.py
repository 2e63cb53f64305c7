"""Refused attempts to act as the human are audited (docs/security.md "Every human decision is
audited"): one ``HUMAN_REFUSED`` event per process, transport and thing tried within a window,
the rest counted, so a loop of attempts cannot flood the audit stream; rendered one way by
``agentcoord audit``. The attacks themselves are in test_human_proof.py and
test_sandboxed_attacks.py."""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any

from agentcoord.identity.humanproof import Admitted, RefusalLimiter, attempt_of
from agentcoord.text.events import render_event
from tests.conftest import Daemon
from tests.tools.conftest import cli, human_call


def test_one_event_per_key_per_window_and_the_rest_counted() -> None:
    """Inside the window a key is counted, not recorded; its next event reports the count."""
    limiter = RefusalLimiter(window=10.0)
    assert limiter.admit((1, "unix", "answer_prompt"), 100.0) == Admitted(0, 0)
    for t in range(1, 8):
        assert limiter.admit((1, "unix", "answer_prompt"), 100.0 + t) is None
    assert limiter.admit((1, "unix", "agentcoord/login"), 101.0) == Admitted(0, 0)  # other key
    assert limiter.admit((2, "unix", "answer_prompt"), 101.0) == Admitted(0, 0)  # other pid
    assert limiter.admit((1, "unix", "answer_prompt"), 110.0) == Admitted(7, 0)
    assert limiter.admit((1, "unix", "answer_prompt"), 115.0) is None


def test_the_global_cap_counts_what_it_leaves_out() -> None:
    """A loop spawning a new process per attempt meets the cap; the next event says how many
    refusals it left out."""
    limiter = RefusalLimiter(window=10.0, burst=3)
    assert [limiter.admit(pid, 0.0) is not None for pid in range(5)] == [True] * 3 + [False] * 2
    assert limiter.admit(99, 10.0) == Admitted(0, 2)
    assert limiter.admit(100, 10.5) == Admitted(0, 0)


def test_the_limiter_forgets_old_keys_and_keeps_their_counts() -> None:
    """Past ``max_keys`` the oldest keys go; what they had counted is reported as dropped."""
    limiter = RefusalLimiter(window=10.0, burst=100, max_keys=2)
    limiter.admit("a", 0.0)
    assert limiter.admit("a", 1.0) is None
    limiter.admit("b", 2.0)
    assert limiter.admit("c", 3.0) == Admitted(0, 1)  # "a" forgotten, its one repeat kept
    assert limiter.admit("d", 4.0) == Admitted(0, 0)
    assert limiter.admit("c", 5.0) is None  # the newest keys stay


def test_attempt_of_reads_what_a_request_was_after() -> None:
    """Method, tool and prompt from a body or a decoded message; nothing from garbage."""
    call: dict[str, Any] = {
        "method": "tools/call",
        "params": {"name": "answer_prompt", "arguments": {}},
    }
    call["params"]["arguments"] = {"prompt": "prompt-1", "answer": "yes"}
    assert attempt_of(json.dumps(call).encode()) == ("tools/call", "answer_prompt", "prompt-1")
    assert attempt_of([{"method": "initialize"}]) == ("initialize", None, None)
    assert attempt_of({"method": "tools/call", "params": {"name": 3}}) == ("tools/call", None, None)
    for junk in (b"not json", b"[]", None, {"method": 1}, "[1]"):
        assert attempt_of(junk) == (None, None, None)


def _anonymous(daemon: Daemon, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send ``lines`` on one unix connection from this process without the human token."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(daemon.socket))
        s.sendall(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        buf = b""
        while buf.count(b"\n") < len(lines):
            chunk = s.recv(65536)
            assert chunk, buf
            buf += chunk
    return [json.loads(raw) for raw in buf.splitlines()]


def test_a_loop_of_attempts_leaves_one_event(daemon: Daemon) -> None:
    """Sixty refused answer_prompt calls from one process (two connections) are one event;
    a refused login from it after them is its own; `agentcoord audit` prints the shared
    rendering of each."""
    call: dict[str, Any] = {"jsonrpc": "2.0", "method": "tools/call"}
    call["params"] = {"name": "answer_prompt", "arguments": {"prompt": "p-1", "answer": "yes"}}
    for _ in range(2):
        replies = _anonymous(daemon, [{**call, "id": i} for i in range(30)])
        assert {r["error"]["code"] for r in replies} == {-32001}
    login = {"jsonrpc": "2.0", "id": 0, "method": "agentcoord/login"}
    (reply,) = _anonymous(daemon, [{**login, "params": {"token": "guessed"}}])
    assert "not the human token" in reply["error"]["message"]
    # The audit keeps order: once the login's event shows, the loop's are all there.
    deadline = time.monotonic() + 60
    events: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not any(e["what"] == "agentcoord/login" for e in events):
        events = human_call(daemon, "audit", type="HUMAN_REFUSED")["events"]
    by_what = {e["what"]: e for e in events}
    assert len(events) == 2, events
    assert by_what["answer_prompt"]["prompt"] == "p-1"
    assert by_what["answer_prompt"]["reason"] == "not-identified"
    assert by_what["agentcoord/login"]["reason"] == "not-the-human-token"
    assert by_what["agentcoord/login"]["token"] == "other"
    for e in events:
        assert e["pid"] == os.getpid()
        assert e["how"] == "unix"
    view = cli(daemon, "audit", "--type", "HUMAN_REFUSED")
    assert view.returncode == 0, view.stderr
    assert view.stdout.splitlines() == [render_event(e) for e in events]
    assert "what=answer_prompt prompt=p-1 how=unix reason=not-identified" in view.stdout
