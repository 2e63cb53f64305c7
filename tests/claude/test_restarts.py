"""The real Claude Code keeps its agent-coord tools across a restart of the daemon, without
``/mcp`` (docs/claude-code.md "When the daemon restarts"): one ``claude -p`` session calls a
tool, the daemon stops and starts again while the model is thinking, and the same session's
next call is answered as the same agent; a message sent after the restart reaches the model
through the http hooks, which post to the address the daemon keeps across restarts."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import psutil

from tests.claude.conftest import NO_NATIVE_INBOX, SERVER, Claude
from tests.claude.model_api import Text, ToolUse, context_texts, tool_results
from tests.claude.test_channels import WAIT, _channel_session, _channel_texts, _send
from tests.conftest import Daemon
from tests.tools.session_helpers import own_call

WHOAMI = f"mcp__{SERVER}__whoami"


def test_a_session_calls_again_after_the_daemon_restarts(daemon: Daemon, claude: Claude) -> None:
    """whoami, then SIGTERM and a new start of the daemon, then whoami again in the same
    session: the second answer is no error and names the same agent, the HTTP address is the
    same, and a message the human sent after the restart arrives with that tool call."""
    # The hooks' path: a session without a native inbox (docs/claude-code.md "The native inbox").
    claude.env[NO_NATIVE_INBOX] = "0"
    go = threading.Event()
    claude.api.script(ToolUse(WHOAMI, {}), ToolUse(WHOAMI, {}, hold=go), Text("done"))
    addr = daemon.http_addr
    proc = claude.start("check in twice")
    try:
        _, second = claude.api.wait_requests(2, timeout=90)
        (before,) = tool_results(second)
        assert not before.get("is_error"), before
        me = json.loads(before["text"])["agent"]
        (shim,) = _shims(proc.pid)
        assert daemon.stop() == 0, daemon.log()
        daemon.start()
        assert daemon.http_addr == addr, daemon.log()
        # The session's own shim lives on and reconnects: Claude Code 2.1.328 in -p mode would
        # start a new one for the next call by itself, so the answer alone proves less.
        assert shim.is_running(), "the shim exited with the daemon"
        sent = own_call(daemon, "send", {"to": me, "text": "the daemon was restarted"})
        assert not sent["isError"], sent
    finally:
        go.set()
    run = claude.finish(proc, timeout=120)
    run.check()
    third = run.requests[2]
    after = tool_results(third)[-1]
    assert not after.get("is_error"), (after, run.stderr, daemon.log())
    assert json.loads(after["text"])["agent"] == me
    (context,) = context_texts(third, "PostToolUse")
    assert re.search(r"- from human:\S*: the daemon was restarted", context), context


def test_an_interactive_session_gets_a_message_pushed_after_the_restart(
    daemon: Daemon, claude: Claude, claude_bin: Path, tmp_path: Path
) -> None:
    """An interactive session (`agentcoord claude`, under tmux) whose daemon restarts gets a
    message sent after the restart pushed over its channel, with no /mcp and no keystroke:
    the shim replayed the session's initialize, channel capability included."""
    claude.api.script(Text("Noted."), Text("Noted."))
    with _channel_session(daemon, claude, tmp_path) as ch:
        pushing = f"pushing {ch.agent}'s messages over its channel"
        assert daemon.stop() == 0, daemon.log()
        before = daemon.log().count(pushing)
        daemon.start()
        deadline = time.monotonic() + WAIT
        while daemon.log().count(pushing) == before:  # the replayed initialize opted in again
            assert time.monotonic() < deadline, daemon.log() + ch.tmux.screen()
            time.sleep(0.05)  # polling the daemon's log: it is a file, with no event to await
        sender = _send(daemon, claude_bin, ch.agent, "pushed after the restart")
        first = claude.api.wait_requests(1, timeout=WAIT)[0]
        texts = _channel_texts(first)
        assert texts, first.body.get("messages")
        assert f'from="{sender}"' in texts[-1]
        assert "pushed after the restart" in texts[-1]
        assert "/mcp" not in ch.tmux.screen()


def _shims(claude_pid: int) -> list[psutil.Process]:
    """The ``agentcoord mcp`` processes under the ``claude`` process ``claude_pid``."""
    found = []
    for child in psutil.Process(claude_pid).children(recursive=True):
        try:
            if child.cmdline()[-2:] == ["agentcoord", "mcp"] or child.cmdline()[-1:] == ["mcp"]:
                found.append(child)
        except psutil.Error:
            continue
    return found
