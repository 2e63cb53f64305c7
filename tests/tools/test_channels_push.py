"""Claude Code channels against the real daemon (docs/claude-code.md "Channels"): inbox
messages pushed unasked into a session's own MCP connection, exactly once across channel and
hooks, and permission dialogs relayed to the human and answered back.

Each session is the real shim (``python -m agentcoord mcp``) under a stand-in ``claude``
process, spoken to over its stdio as Claude Code does; ``AGENTCOORD_CHANNELS=1`` in its
environment is what ``agentcoord claude`` sets.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcoord.claude.push import (
    CHANNEL,
    PERMISSION,
    PERMISSION_PREFIX,
    PUSH_ENV,
    notification,
)
from tests.conftest import Daemon, cli_json
from tests.tools.session_helpers import finish, session_call

WAIT = 15.0  # bound on every wait for the daemon


class ShimSession:
    """A stand-in Claude Code session: requests and notifications on the shim's stdio."""

    def __init__(self, d: Daemon, claude: Path, *, push: bool) -> None:
        env = dict(d.env, **({PUSH_ENV: "1"} if push else {}))
        self.proc = subprocess.Popen(
            [str(claude), "--", sys.executable, "-m", "agentcoord", "mcp"],
            env=env,
            cwd=d.root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        self.notes: queue.Queue[dict[str, Any]] = queue.Queue()
        self._replies: dict[Any, queue.Queue[dict[str, Any]]] = {}
        self._ids = iter(range(1, 1 << 30))
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            msg = json.loads(line)
            if "id" in msg and "method" not in msg:
                with self._lock:
                    box = self._replies.setdefault(msg["id"], queue.Queue())
                box.put(msg)
            else:
                self.notes.put(msg)

    def _write(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def reply(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The whole JSON-RPC reply to one request."""
        msg_id = next(self._ids)
        with self._lock:
            box = self._replies.setdefault(msg_id, queue.Queue())
        self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}})
        return box.get(timeout=WAIT)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = self.reply(method, params)
        assert "result" in reply, reply
        return reply["result"]  # type: ignore[no-any-return]

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params or {}})

    def initialize(self) -> dict[str, Any]:
        """The handshake as Claude Code 2.1.328 sends it (its clientInfo name)."""
        result = self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"roots": {"listChanged": True}},
                "clientInfo": {"name": "claude-code", "version": "2.1.328"},
            },
        )
        self.notify("notifications/initialized")
        return result

    def whoami(self) -> str:
        out = self.request("tools/call", {"name": "whoami", "arguments": {}})
        return str(out["structuredContent"]["agent"])

    def hook(self, event: str, payload: dict[str, Any]) -> Any:
        """A hook of this session (the vendor method ``agentcoord hook`` sends)."""
        return self.request("agentcoord/hook", {"event": event, "payload": payload})["output"]

    def next_note(self, method: str) -> dict[str, Any]:
        """The next notification the daemon wrote; fails if it is another one."""
        note = self.notes.get(timeout=WAIT)
        assert note["method"] == method, note
        return note["params"]  # type: ignore[no-any-return]


@pytest.fixture
def sessions(daemon: Daemon, claude_bin: Path) -> Iterator[list[ShimSession]]:
    made: list[ShimSession] = []
    yield made
    for s in made:
        finish(s.proc)
        assert s.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            s.proc.stdin.close()


def _session(d: Daemon, claude: Path, made: list[ShimSession], *, push: bool) -> ShimSession:
    s = ShimSession(d, claude, push=push)
    made.append(s)
    return s


def _send(d: Daemon, claude: Path, to: str, text: str) -> str:
    """Send ``text`` to ``to`` from a fresh session; the sender's agent name."""
    out = session_call(d, claude, [("whoami", {}), ("send", {"to": to, "text": text})])
    return str(out[0]["structuredContent"]["agent"])


def test_a_message_reaches_an_idle_push_session_as_a_notification_exactly_once(
    daemon: Daemon, claude_bin: Path, sessions: list[ShimSession]
) -> None:
    """A message to an initialized push session is written on its own connection as
    notifications/claude/channel without any request from it, only to that agent's connection,
    once: the next hook injects nothing and the next notification is the next message."""
    a = _session(daemon, claude_bin, sessions, push=True)
    b = _session(daemon, claude_bin, sessions, push=True)
    # Claude Code's probe first: -32601 keeps it on a protocol that has channels (docs/mcp.md).
    assert a.reply("server/discover")["error"]["code"] == -32601
    caps = a.initialize()["capabilities"]
    assert set(caps["experimental"]) == {"claude/channel", "claude/channel/permission"}
    b.initialize()
    me, other = a.whoami(), b.whoami()

    sender = _send(daemon, claude_bin, me, "the build is green")
    params = a.next_note(CHANNEL)
    assert params["content"] == f"from {sender}: the build is green"
    assert params["meta"]["from"] == sender
    assert params["meta"]["kind"] == "text"

    assert a.hook("post-tool-use", {"tool_name": "Read", "hook_event_name": "PostToolUse"}) is None
    assert (
        a.request("tools/call", {"name": "inbox", "arguments": {}})["structuredContent"]["count"]
        == 0
    )
    _send(daemon, claude_bin, me, "second")
    assert a.next_note(CHANNEL)["content"].endswith(": second")

    _send(daemon, claude_bin, other, "for b only")
    assert b.next_note(CHANNEL)["content"].endswith(": for b only")
    assert a.notes.empty()


def test_messages_queued_before_the_handshake_arrive_once_it_is_done(
    daemon: Daemon, claude_bin: Path, sessions: list[ShimSession]
) -> None:
    """What waited in the inbox before the session finished its handshake is pushed, in order,
    as soon as it has (nothing is pushed before notifications/initialized)."""
    s = _session(daemon, claude_bin, sessions, push=True)
    me = s.whoami()  # before initialize: the session is not pushed to yet
    _send(daemon, claude_bin, me, "first")
    _send(daemon, claude_bin, me, "second")
    assert s.notes.empty()
    s.initialize()
    assert s.next_note(CHANNEL)["content"].endswith(": first")
    assert s.next_note(CHANNEL)["content"].endswith(": second")


def test_a_session_without_channels_gets_its_messages_from_the_hook(
    daemon: Daemon, claude_bin: Path, sessions: list[ShimSession]
) -> None:
    """Without the launcher's opt-in the initialize declares no channel, and a message waits
    for the next hook, which injects it as before."""
    s = _session(daemon, claude_bin, sessions, push=False)
    assert "experimental" not in s.initialize()["capabilities"]
    me = s.whoami()
    sender = _send(daemon, claude_bin, me, "please rebase")
    out = s.hook("user-prompt-submit", {"prompt": "hi", "hook_event_name": "UserPromptSubmit"})
    context = out["hookSpecificOutput"]["additionalContext"]
    assert f"- from {sender}: please rebase" in context
    assert s.notes.empty()


def _poll(pred: Callable[[], Any], what: str) -> Any:
    """Poll ``pred`` until it returns something truthy (bounded; the pause only paces it)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if value := pred():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _open_prompts(d: Daemon, agent: str) -> list[dict[str, Any]]:
    """``agent``'s open permission prompts, as `agentcoord prompts` lists them."""
    listed = cli_json(d, "prompts")["prompts"]
    return [
        p for p in listed if p["agent"] == agent and p["question"].startswith(PERMISSION_PREFIX)
    ]


def _open_prompt(d: Daemon, agent: str) -> dict[str, Any]:
    """The open permission prompt of ``agent``, once the daemon has created it."""
    return _poll(lambda: _open_prompts(d, agent), f"a permission prompt from {agent}")[0]  # type: ignore[no-any-return]


def _answer(d: Daemon, prompt: str, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcoord", "answer", prompt, text],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=20,
    )


_REQUEST = {
    "request_id": "kqzvb",
    "tool_name": "Bash",
    "description": "List the files",
    "input_preview": '{"command": "ls -la"}',
}


def test_a_permission_request_becomes_a_prompt_whose_first_answer_goes_back(
    daemon: Daemon, claude_bin: Path, sessions: list[ShimSession]
) -> None:
    """A permission_request from a push session is a permission prompt in `agentcoord
    prompts` (tool and input preview); the human's answer comes back on that connection as
    notifications/claude/channel/permission, a second answer is refused, and both the answer
    and the relay are audited."""
    s = _session(daemon, claude_bin, sessions, push=True)
    s.initialize()
    me = s.whoami()
    s.notify("notifications/claude/channel/permission_request", _REQUEST)
    prompt = _open_prompt(daemon, me)
    assert "Bash" in prompt["question"]
    assert "ls -la" in prompt["question"]  # the console shows the question alone
    assert "ls -la" in prompt["context"]

    first = _answer(daemon, prompt["id"], "deny")
    assert first.returncode == 0, first.stderr
    assert s.next_note(PERMISSION) == {"request_id": "kqzvb", "behavior": "deny"}
    second = _answer(daemon, prompt["id"], "allow")
    assert second.returncode != 0
    assert "already answered" in second.stderr

    def audited() -> set[str]:
        types = {e["type"] for e in cli_json(daemon, "audit")["events"]}
        return types if "PERMISSION_RELAYED" in types else set()

    types = _poll(audited, "the relay's audit event")
    assert {"HUMAN_ANSWERED", "PERMISSION_RELAYED"} <= types


def test_a_dialog_answered_in_the_terminal_closes_its_prompt(
    daemon: Daemon, claude_bin: Path, sessions: list[ShimSession]
) -> None:
    """Claude Code tells the channel nothing when the terminal answers: the PostToolUse hook
    for that tool closes the prompt, so a later human answer is refused and nothing is sent."""
    s = _session(daemon, claude_bin, sessions, push=True)
    s.initialize()
    me = s.whoami()
    s.notify("notifications/claude/channel/permission_request", _REQUEST)
    prompt = _open_prompt(daemon, me)
    s.hook("post-tool-use", {"tool_name": "Bash", "hook_event_name": "PostToolUse"})

    _poll(lambda: not _open_prompts(daemon, me), "the prompt to close")
    late = _answer(daemon, prompt["id"], "allow")
    assert late.returncode != 0
    assert "already answered" in late.stderr
    with contextlib.suppress(queue.Empty):
        note = s.notes.get_nowait()
        raise AssertionError(f"unexpected notification {note}")


def test_a_notification_carries_the_hook_line_and_meta_keys_claude_code_takes() -> None:
    """The channel content is the hooks' line, and every meta key is an identifier (Claude
    Code makes them attributes of the <channel> tag)."""
    import re

    view = {"from": "a-1", "kind": "text", "channel": "ops", "seq": 7, "text": "deploy done"}
    note = notification(view)
    assert note["method"] == CHANNEL
    assert note["params"]["content"] == "from a-1 in #ops: deploy done"
    meta = note["params"]["meta"]
    assert meta == {"from": "a-1", "kind": "text", "channel": "ops", "id": "7", "seq": "7"}
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) for k in meta)
    offer = notification({"from": "b", "kind": "offer", "handoff": {}, "seq": 8})
    assert offer["params"]["content"] == "from b: a handoff offer (see the inbox tool)"


def test_a_channel_post_reaches_a_participating_push_session(
    daemon: Daemon, claude_bin: Path, sessions: list[ShimSession]
) -> None:
    """A post on a channel the push session takes part in is pushed with the channel named in
    the content and the meta; a session outside the channel gets nothing of it."""
    a = _session(daemon, claude_bin, sessions, push=True)
    out = _session(daemon, claude_bin, sessions, push=True)
    a.initialize()
    out.initialize()
    me, outsider = a.whoami(), out.whoami()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("whoami", {}),
        ("open_channel", {"name": "ops", "participants": [me]}),
        ("send", {"channel": "ops", "text": "deploy at noon"}),
    ]
    sent = session_call(daemon, claude_bin, calls)
    assert not sent[2].get("isError"), sent[2]
    sender = sent[0]["structuredContent"]["agent"]
    params = a.next_note(CHANNEL)
    assert params["content"] == f"from {sender} in #ops: deploy at noon"
    assert params["meta"]["channel"] == "ops"
    _send(daemon, claude_bin, outsider, "only for you")
    assert out.next_note(CHANNEL)["content"].endswith(": only for you")
