"""An idle OpenCode session is woken by a message (docs/opencode.md "Wake-ups"): the daemon's
``inbox-wait`` hook event waits for the caller's messages and takes them once; the plugin
`agentcoord setup opencode` installs waits while its session is idle and starts a turn with
what the wait returns, the real binary against a scripted model API."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from tests.agentops.conftest import wait_for
from tests.clis.model_apis import Call, Say, Scripted
from tests.clis.test_real_opencode import OFFLINE, opencode_config
from tests.clis.test_states_live import _WAIT_S, _http, _serve, _stop, _until
from tests.conftest import Daemon
from tests.tools.conftest import AgentProc
from tests.tools.session_helpers import finish
from tests.tools.test_channels_push import WAIT, ShimSession, _send


def _session(daemon: Daemon, claude_bin: Path) -> ShimSession:
    s = ShimSession(daemon, claude_bin, push=False)
    s.initialize()
    return s


def _close(s: ShimSession) -> None:
    finish(s.proc)
    assert s.proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        s.proc.stdin.close()


def test_inbox_wait_returns_a_message_sent_while_it_waits_once(
    daemon: Daemon, claude_bin: Path
) -> None:
    """inbox-wait on an empty inbox keeps waiting (the session's other hooks are answered
    meanwhile); a message sent then is returned as PostToolUse context, and no later hook sees
    it again."""
    s = _session(daemon, claude_bin)
    try:
        me = s.whoami()
        got: list[Any] = []
        waiter = threading.Thread(
            target=lambda: got.append(s.hook("inbox-wait", {"hook_event_name": "InboxWait"}))
        )
        waiter.start()
        # Answered while the wait holds its request: the inbox's lock is not held by it.
        assert s.hook("user-prompt-submit", {"hook_event_name": "UserPromptSubmit"}) is None
        assert waiter.is_alive()  # an empty inbox: it can only end at its 10-minute bound
        sender = _send(daemon, claude_bin, me, "please rebase")
        waiter.join(WAIT)
        assert not waiter.is_alive()
        spec = got[0]["hookSpecificOutput"]
        assert spec["hookEventName"] == "PostToolUse"
        assert f"- from {sender}: please rebase" in spec["additionalContext"]
        after = {"hook_event_name": "PostToolUse", "tool_name": "Read"}
        assert s.hook("post-tool-use", after) is None
    finally:
        _close(s)


def test_inbox_wait_returns_nothing_at_its_bound(daemon: Daemon, claude_bin: Path) -> None:
    """A wait bounded by its payload (``wait``) on an empty inbox ends with no output; a
    message sent afterwards is still there for the next hook."""
    s = _session(daemon, claude_bin)
    try:
        me = s.whoami()
        assert s.hook("inbox-wait", {"hook_event_name": "InboxWait", "wait": 0.2}) is None
        sender = _send(daemon, claude_bin, me, "still here")
        out = s.hook("post-tool-use", {"hook_event_name": "PostToolUse", "tool_name": "Read"})
        assert f"- from {sender}: still here" in out["hookSpecificOutput"]["additionalContext"]
    finally:
        _close(s)


def test_a_cancelled_wait_returns_empty_and_leaves_later_messages(
    daemon: Daemon, claude_bin: Path
) -> None:
    """inbox-wait-cancel ends the caller's wait with nothing taken; a message sent afterwards
    is left for the turn's own hook, which gets it once."""
    s = _session(daemon, claude_bin)
    try:
        me = s.whoami()
        got: list[Any] = []
        waiter = threading.Thread(
            target=lambda: got.append(s.hook("inbox-wait", {"hook_event_name": "InboxWait"}))
        )
        waiter.start()
        cancel = {"hook_event_name": "InboxWaitCancel"}

        def ended() -> bool:
            # The wait may not be registered yet when the first cancel arrives: asked again
            # until it ends (an empty inbox holds it up to its 10-minute bound otherwise).
            assert s.hook("inbox-wait-cancel", cancel) is None
            waiter.join(0.2)
            return not waiter.is_alive()

        wait_for(ended, WAIT, "the cancelled wait to end")
        assert got == [None]
        sender = _send(daemon, claude_bin, me, "for the turn")
        out = s.hook("post-tool-use", {"hook_event_name": "PostToolUse", "tool_name": "Read"})
        assert f"- from {sender}: for the turn" in out["hookSpecificOutput"]["additionalContext"]
        again = {"hook_event_name": "PostToolUse", "tool_name": "Read"}
        assert s.hook("post-tool-use", again) is None
    finally:
        _close(s)


def _turns(api: Scripted) -> list[str]:
    """The messages of each of the session's own model requests (not side requests), as JSON."""
    return [
        json.dumps(body.get("messages", []))
        for path, body in api.requests
        if api.is_turn(path, body)
    ]


def _opencode(
    daemon: Daemon, real_opencode: Path, api: Scripted, tmp_path: Path
) -> tuple[Any, str, str]:
    """`opencode serve` in a project `wake` set up by `agentcoord setup opencode --project`;
    its process, its address and a new session's id."""
    project = tmp_path / "wake"
    project.mkdir()
    bin_dir = str(Path(sys.executable).parent)
    env = {**daemon.env, **OFFLINE, "HOME": str(tmp_path / "opencode-home"), "PWD": str(project)}
    env = {k: v for k, v in env.items() if not k.startswith("XDG_") or k == "XDG_RUNTIME_DIR"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    opencode_config(project, api, env)
    argv = [str(real_opencode), "serve", "--port", "0"]
    serve, url = _serve(argv, env, project, tmp_path / "serve.log")
    try:
        return serve, url, _http(f"{url}/session", "POST", {})["id"]
    except BaseException:
        _stop(serve)
        raise


def _prompt(url: str, session: str, text: str) -> None:
    prompt = {
        "parts": [{"type": "text", "text": text}],
        "model": {"providerID": "standin", "modelID": "m"},
    }
    _http(f"{url}/session/{session}/prompt_async", "POST", prompt)


def _agent(peer: AgentProc) -> str:
    [name] = [
        r["name"] for r in peer.call("list_agents")["agents"] if r["name"].startswith("wake-")
    ]
    return str(name)


def test_a_prompt_first_cancels_the_wait_and_its_turn_takes_the_message(
    daemon: Daemon, real_opencode: Path, chat_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """When the user prompts an idle OpenCode session first, its wait ends: a message sent
    during that turn reaches the model once, in the output of the turn's tool call, and starts
    no turn of its own."""
    chat_api.script(
        Say("first done"),
        Call("bash", {"command": "cat go", "description": "wait"}),  # a pipe in the project
        Say("took it"),
    )
    peer = AgentProc(daemon, claude_bin, tmp_path / "work" / "peer")
    serve, url, session = _opencode(daemon, real_opencode, chat_api, tmp_path)
    fifo = tmp_path / "wake" / "go"
    os.mkfifo(fifo)
    try:
        _prompt(url, session, "say hello")
        assert _until(peer, "wake", "idle") == "idle"
        _prompt(url, session, "run the command")

        def reading() -> int | None:  # the bash call is running: its cat opened the pipe
            try:
                return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                return None

        fd = wait_for(reading, _WAIT_S, "the bash call to read the pipe")
        peer.call("send", to=_agent(peer), text="please rebase onto main")
        os.write(fd, b"ran\n")
        os.close(fd)
        wait_for(lambda: len(_turns(chat_api)) >= 3, _WAIT_S, "the turn after the tool call")
        assert _until(peer, "wake", "idle") == "idle"
        outputs = [o for o in chat_api.tool_outputs() if "please rebase onto main" in o]
        assert len(outputs) == 1
        turns = _turns(chat_api)
        assert len(turns) == 3
        assert not any("delivered these messages while you were idle" in t for t in turns)
    finally:
        _stop(serve)
        peer.close()


def test_an_idle_opencode_session_is_woken_by_a_message_once(
    daemon: Daemon, real_opencode: Path, chat_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """An OpenCode session (`opencode serve`) that finished its turn and is idle gets a model
    request with another agent's message and no input from the user, the message in it once,
    and is idle again after that turn."""
    project = tmp_path / "wake"
    project.mkdir()
    bin_dir = str(Path(sys.executable).parent)
    env = {**daemon.env, **OFFLINE, "HOME": str(tmp_path / "opencode-home"), "PWD": str(project)}
    env = {k: v for k, v in env.items() if not k.startswith("XDG_") or k == "XDG_RUNTIME_DIR"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    opencode_config(project, chat_api, env)
    chat_api.script(Say("first done"), Say("rebased"))
    peer = AgentProc(daemon, claude_bin, tmp_path / "work" / "peer")
    serve, url = _serve(
        [str(real_opencode), "serve", "--port", "0"], env, project, tmp_path / "serve.log"
    )
    try:
        session = _http(f"{url}/session", "POST", {})["id"]
        prompt = {
            "parts": [{"type": "text", "text": "say hello"}],
            "model": {"providerID": "standin", "modelID": "m"},
        }
        _http(f"{url}/session/{session}/prompt_async", "POST", prompt)
        assert _until(peer, "wake", "idle") == "idle"
        assert len(_turns(chat_api)) == 1
        [name] = [
            r["name"] for r in peer.call("list_agents")["agents"] if r["name"].startswith("wake-")
        ]
        peer.call("send", to=name, text="please rebase onto main")
        woken = wait_for(
            lambda: [t for t in _turns(chat_api) if "please rebase onto main" in t],
            _WAIT_S,
            "a model request with the message",
        )
        assert len(woken) == 1
        assert woken[0].count("please rebase onto main") == 1
        assert "agentcoord delivered these messages while you were idle" in woken[0]
        assert woken[0].count("say hello") == 1  # the one user prompt: no new input
        messages = _http(f"{url}/session/{session}/message")
        users = [m for m in messages if m["info"]["role"] == "user"]
        assert len(users) == 2
        assert _until(peer, "wake", "idle") == "idle"
        assert len(_turns(chat_api)) == 2
    finally:
        _stop(serve)
        peer.close()
