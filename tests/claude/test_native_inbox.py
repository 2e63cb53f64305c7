"""The real Claude Code takes agentcoord's messages through its own cross-session inbox
(docs/claude-code.md "The native inbox"): a plain ``claude``, no launcher, no channel flag.

Against the scripted model API, offline, in a private home and config dir the daemon shares.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.claude import test_real_runner
from tests.claude.conftest import SERVER, Claude, claude_env
from tests.claude.model_api import ModelAPI, Request, Text, ToolUse, tool_results
from tests.claude.test_channels import Tmux, _poll, _seed
from tests.conftest import Daemon, cli_json

WAIT = 60.0
# A daemon with the local package agent ``alpha`` run by the real binary (shared fixtures).
runner_daemon = test_real_runner.runner_daemon
visible_root = test_real_runner.visible_root


def native_agent(d: Daemon) -> str:
    """The session agent the daemon delivers to through its native inbox (from its log)."""
    marker = "messages through its native inbox"

    def found() -> str:
        line = next((ln for ln in d.log().splitlines() if marker in ln), "")
        return line.split("delivering ", 1)[1].split("'s messages", 1)[0] if line else ""

    return _poll(found, "native inbox delivery to start")


def texts_of(req: Request) -> str:
    """Every message of a model request as one JSON text (to count what the model saw)."""
    return json.dumps(req.body.get("messages", []))


def delivered(d: Daemon, agent: str) -> list[dict[str, Any]]:
    """The audit's native deliveries to ``agent``."""
    events = cli_json(d, "audit")["events"]
    return [e for e in events if e["type"] == "MESSAGE_DELIVERED" and e.get("agent") == agent]


def session_status(claude: Claude) -> str:
    """The status (idle/busy) the Claude Code session records in its registry entry."""
    folder = Path(claude.env["CLAUDE_CONFIG_DIR"]) / "sessions"
    for path in folder.glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_text())
            if data.get("cwd") == str(claude.cwd):
                return str(data.get("status"))
    return ""


def send(d: Daemon, claude_bin: Path, to: str, text: str) -> str:
    """``send`` from another agent (a process under a stand-in ``claude``): its name."""
    sent = _calls(d, claude_bin, [("whoami", {}), ("send", {"to": to, "text": text})])
    assert sent[1].get("isError") is not True, sent[1]
    return str(sent[0]["structuredContent"]["agent"])


def test_a_busy_print_session_gets_a_message_with_its_next_request(
    daemon: Daemon, claude: Claude, claude_bin: Path
) -> None:
    """While a `claude -p` turn is held at the model, an agentcoord `send` to its session is
    written to its native inbox and reaches the model in the session's next request, once,
    from the sender; nothing of it is left for the hooks."""
    hold = threading.Event()
    claude.api.script(Text("first done", hold=hold), Text("second done"))
    proc = claude.start("hello")
    try:
        claude.api.wait_requests(1, timeout=WAIT)
        agent = native_agent(daemon)
        sender = send(daemon, claude_bin, agent, "native ping 7f3a")
        _poll(lambda: delivered(daemon, agent), "the native delivery")
    finally:
        hold.set()
    run = claude.finish(proc)
    run.check()
    assert len(run.requests) == 2, [texts_of(r)[-300:] for r in run.requests]
    seen = texts_of(run.requests[1])
    assert seen.count("native ping 7f3a") == 1, seen[-2000:]
    assert f'from-name=\\"{sender}\\"' in seen
    assert "native ping 7f3a" not in texts_of(run.requests[0])


@contextlib.contextmanager
def interactive(claude: Claude, tmp_path: Path, *allowed: str) -> Iterator[Tmux]:
    """A plain interactive `claude` (no launcher, no channel flag) under tmux, offline;
    ``allowed``: more tools it runs with no dialog."""
    from tests.claude.conftest import VERSION

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    _seed(Path(claude.env["CLAUDE_CONFIG_DIR"]), claude.cwd, VERSION)
    env = dict(claude.env, TERM="xterm-256color")
    # agent-coord's tools allowed, as `claude -p` runs them here: no dialog waits for a key.
    launch = [
        str(claude.binary),
        "--permission-mode",
        "default",
        "--allowedTools",
        f"mcp__{SERVER}",
        *allowed,
    ]
    command = "cd {} && exec env -i {} {}".format(
        shlex.quote(str(claude.cwd)),
        " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()),
        " ".join(shlex.quote(a) for a in launch),
    )
    tmux = Tmux(tmp_path / "tmux.sock")
    tmux.run("new-session", "-d", "-s", "s", "-x", "200", "-y", "50", command)
    try:
        yield tmux
    finally:
        tmux.run("kill-server")


def test_an_idle_interactive_session_takes_a_message_with_no_keystroke(
    daemon: Daemon, claude: Claude, claude_bin: Path, tmp_path: Path
) -> None:
    """A `send` to an idle plain `claude` session starts a model request with nobody typing:
    the model sees the text once, from the sender."""
    claude.api.script(Text("Noted."), Text("Noted."))
    with interactive(claude, tmp_path) as tmux:
        agent = native_agent(daemon)
        sender = send(daemon, claude_bin, agent, "idle ping 51c2")
        try:
            first = claude.api.wait_requests(1, timeout=WAIT)[0]
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the session shows:\n{tmux.screen()}") from None
    seen = texts_of(first)
    assert seen.count("idle ping 51c2") == 1, seen[-2000:]
    assert f'from-name=\\"{sender}\\"' in seen


def _seen_once_when_idle(
    d: Daemon, claude: Claude, tmp_path: Path, deliver: Callable[[str], None], text: str
) -> str:
    """Start an idle plain `claude`, ``deliver(agent)`` a message holding ``text`` to its
    agent, and check that it starts a model request with nobody typing, that it is there once,
    and that up to the next message the session takes (a direct one) it came only then: the
    first request's text."""
    from tests.tools.conftest import human_call

    claude.api.script(*[Text("Noted.")] * 3)
    with interactive(claude, tmp_path) as tmux:
        agent = native_agent(d)
        deliver(agent)
        try:
            first = claude.api.wait_requests(1, timeout=WAIT)[0]
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the session shows:\n{tmux.screen()}") from None
        _poll(lambda: session_status(claude) == "idle", "the session idle again")
        human_call(d, "send", to=agent, text="sentinel 0d4e")
        later = _poll(
            lambda: next((r for r in claude.api.requests if "sentinel 0d4e" in texts_of(r)), None),
            "the next message at the session's model",
        )
    seen = texts_of(first)
    assert seen.count(text) == 1, seen[-2000:]
    assert texts_of(later).count(text) == 1, texts_of(later)[-2000:]
    return seen


def test_a_channel_post_reaches_an_idle_session_once(
    daemon: Daemon, claude: Claude, tmp_path: Path
) -> None:
    """A post on a channel the session's agent takes part in starts a model request in the
    idle plain `claude` with nobody typing; the model sees it once, from the poster, in the
    channel."""
    from tests.tools.conftest import human_call

    human = human_call(daemon, "whoami")["agent"]

    def post(agent: str) -> None:
        human_call(daemon, "open_channel", name="crew-9e", participants=[agent])
        human_call(daemon, "send", channel="crew-9e", text="post 9e31")

    seen = _seen_once_when_idle(daemon, claude, tmp_path, post, "post 9e31")
    assert f"from {human} in #crew-9e: post 9e31" in seen, seen[-2000:]
    assert f'from-name=\\"{human}\\"' in seen


def test_a_broadcast_reaches_an_idle_session_once(
    daemon: Daemon, claude: Claude, tmp_path: Path
) -> None:
    """A broadcast starts a model request in the idle plain `claude` with nobody typing; the
    model sees it once, from the sender."""
    from tests.tools.conftest import human_call

    human = human_call(daemon, "whoami")["agent"]

    def broadcast(agent: str) -> None:
        human_call(daemon, "broadcast", text="all hands 3b8d")

    seen = _seen_once_when_idle(daemon, claude, tmp_path, broadcast, "all hands 3b8d")
    assert f'from-name=\\"{human}\\"' in seen


def test_ask_of_a_live_session_returns_the_final_text_of_its_turn(
    daemon: Daemon, claude: Claude, claude_bin: Path, tmp_path: Path
) -> None:
    """`ask` of an idle interactive session that has had a turn before puts the question to it
    through its native inbox and returns the final text of the turn the question started (not
    the earlier one's), with no `reply` call, via "native"."""
    claude.api.script(Text("Earlier."), Text("The answer is 42."))
    with interactive(claude, tmp_path):
        agent = native_agent(daemon)
        send(daemon, claude_bin, agent, "warm up")
        claude.api.wait_requests(1, timeout=WAIT)
        _poll(lambda: session_status(claude) == "idle", "the session idle again")
        question = {"agent": agent, "text": "what is six times seven?", "timeout_secs": WAIT}
        out = _calls(daemon, claude_bin, [("ask", question)])[0]
        assert out.get("isError") is not True, out
        got = out["structuredContent"]
        request = claude.api.requests[1]
    assert got["answered"] is True, got
    assert got["answer"] == "The answer is 42."
    assert got["via"] == "native"
    assert texts_of(request).count("what is six times seven?") == 1


def _records(claude: Claude) -> list[dict[str, Any]]:
    """The registry records in the session's config dir."""
    out = []
    for path in (Path(claude.env["CLAUDE_CONFIG_DIR"]) / "sessions").glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            out.append(json.loads(path.read_text()))
    return out


def _human_inbox(d: Daemon) -> list[dict[str, Any]]:
    from tests.tools.conftest import human_call

    return human_call(d, "inbox")["messages"]  # type: ignore[no-any-return]


def test_send_message_to_the_human_reaches_the_humans_inbox(daemon: Daemon, claude: Claude) -> None:
    """A session's built-in SendMessage to "human" (as ListAgents shows the human) lands in
    the human's agentcoord inbox, from the session's agent."""
    claude.api.script(
        ToolUse(f"mcp__{SERVER}__whoami", {}),
        ToolUse("ListAgents", {}),
        ToolUse("SendMessage", {"to": "human", "message": "for the human a81c"}),
        Text("sent"),
    )
    _poll(lambda: "human" in {r.get("name") for r in _records(claude)}, "the human's record")
    run = claude.run("tell the human")
    run.check()
    agent = json.loads(tool_results(run.requests[1])[-1]["text"])["agent"]
    listed = tool_results(run.requests[2])[-1]["text"]
    assert "human" in listed, listed
    assert "agentcoord" in listed, listed
    sent = tool_results(run.requests[3])[-1]["text"]
    assert '"success":true' in sent, sent

    def arrived() -> list[dict[str, Any]]:
        return [m for m in _human_inbox(daemon) if "for the human a81c" in m.get("text", "")]

    got = _poll(arrived, "the message in the human's inbox")
    assert [m["from"] for m in got] == [agent]


def test_send_message_to_a_channel_posts_on_it(daemon: Daemon, claude: Claude) -> None:
    """A session's built-in SendMessage to a channel's record ("#<name>", as ListAgents shows
    it) is a post on that channel from the session's agent, which the human, taking part,
    reads."""
    from tests.tools.conftest import human_call

    human = human_call(daemon, "whoami")["agent"]

    def when_listed(req: Request) -> ToolUse:
        _poll(lambda: "#crew-5a" in {r.get("name") for r in _records(claude)}, "the record")
        return ToolUse("SendMessage", {"to": "#crew-5a", "message": "to the crew 5a0c"})

    claude.api.script(
        ToolUse(f"mcp__{SERVER}__whoami", {}),
        ToolUse(f"mcp__{SERVER}__open_channel", {"name": "crew-5a", "participants": [human]}),
        when_listed,
        Text("posted"),
    )
    run = claude.run("tell the crew")
    run.check()
    agent = json.loads(tool_results(run.requests[1])[-1]["text"])["agent"]
    sent = tool_results(run.requests[3])[-1]["text"]
    assert '"success":true' in sent, sent

    def arrived() -> list[dict[str, Any]]:
        return [m for m in _human_inbox(daemon) if "to the crew 5a0c" in m.get("text", "")]

    got = _poll(arrived, "the post in the human's inbox")
    assert [(m["from"], m.get("channel")) for m in got] == [(agent, "crew-5a")]


def _reply_to_from(req: Request) -> ToolUse:
    """The model's reply: SendMessage to the `from` of the cross-session message it read."""
    seen = texts_of(req)
    start = seen.index('from=\\"uds:') + len('from=\\"')
    address = seen[start : seen.index('\\"', start)]
    return ToolUse("SendMessage", {"to": address, "message": "pong 6d0e"})


def test_a_reply_to_the_from_address_reaches_the_sender(daemon: Daemon, claude: Claude) -> None:
    """The human's message reaches a busy session natively; the session's SendMessage to the
    message's `from` (as Claude Code tells its model to reply) lands in the human's inbox,
    from the session's agent."""
    from tests.tools.conftest import human_call

    hold = threading.Event()
    claude.api.script(Text("first", hold=hold), _reply_to_from, Text("replied"))
    proc = claude.start("hello")
    try:
        claude.api.wait_requests(1, timeout=WAIT)
        agent = native_agent(daemon)
        human_call(daemon, "send", to=agent, text="ping 6d0e")
        _poll(lambda: delivered(daemon, agent), "the native delivery")
    finally:
        hold.set()
    run = claude.finish(proc)
    run.check()
    assert texts_of(run.requests[1]).count("ping 6d0e") == 1

    def arrived() -> list[dict[str, Any]]:
        return [m for m in _human_inbox(daemon) if "pong 6d0e" in m.get("text", "")]

    got = _poll(arrived, "the reply in the human's inbox")
    assert [m["from"] for m in got] == [agent]


def _runner_session(d: Daemon, real_claude: Path, model_api: ModelAPI, tmp_path: Path) -> Claude:
    """The real binary set up for the runner daemon ``d`` (as the ``claude`` fixture sets it
    up for the plain one), in a fresh project dir, talking to ``model_api``."""
    env = claude_env(d, tmp_path / "home")
    env.update(ANTHROPIC_BASE_URL=model_api.url, ENABLE_TOOL_SEARCH="false")
    setup = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "claude"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr
    project = tmp_path / "project"
    project.mkdir()
    return Claude(real_claude, env, project, model_api)


def test_send_message_to_a_local_package_agent_is_answered_in_the_native_inbox(
    runner_daemon: tuple[Daemon, Path], real_claude: Path, model_api: ModelAPI, tmp_path: Path
) -> None:
    """A session's built-in SendMessage to a local package agent (listed by its id) cold-starts
    that agent as send_message does (its runner's model gets the text, from the session's
    agent), and the runner's final answer comes back to the idle session through its native
    inbox as a new model request from the agent, seen once."""
    from tests.tools.conftest import human_call

    d, _ = runner_daemon
    session = _runner_session(d, real_claude, model_api, tmp_path)

    def turn(req: Request) -> Text | ToolUse:
        if "hello alpha 4e2f" in json.dumps(req.body["messages"][0]):
            return Text("alpha says 9c1d")  # the package agent's runner
        # The latest user message (the hooks' context may follow it as a system one).
        last = json.dumps([m for m in req.body["messages"] if m["role"] == "user"][-1])
        if "alpha says 9c1d" in last:
            return Text("thanks, alpha")
        if "sentinel 77ab" in last:
            return Text("ok")
        if "tool_result" in last:
            return Text("sent")
        return ToolUse("SendMessage", {"to": "alpha", "message": "hello alpha 4e2f"})

    model_api.script(*[turn] * 10)
    _poll(lambda: "alpha" in {r.get("name") for r in _records(session)}, "alpha's record")
    with interactive(session, tmp_path, "SendMessage") as tmux:
        me = native_agent(d)
        human_call(d, "send", to=me, text="please message alpha")

        def answered() -> Request | None:
            return next((r for r in model_api.requests if "alpha says 9c1d" in texts_of(r)), None)

        try:
            back = _poll(answered, "alpha's answer at the session's model")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the session shows:\n{tmux.screen()}") from None
        human_call(d, "send", to=me, text="sentinel 77ab")

        def after() -> Request | None:
            return next((r for r in model_api.requests if "sentinel 77ab" in texts_of(r)), None)

        later = _poll(after, "the next message at the session's model")

    def received() -> list[dict[str, Any]]:
        return [
            e
            for e in cli_json(d, "audit")["events"]
            if e["type"] == "MESSAGE_RECEIVED" and e.get("agent") == "alpha"
        ]

    got = _poll(received, "alpha's message")
    assert me in json.dumps(got[0]), got
    runner_saw = [r for r in model_api.requests if "hello alpha 4e2f" in json.dumps(r.body)]
    assert any("Message from" in json.dumps(r.body["messages"][0]) for r in runner_saw)
    seen = texts_of(back)
    assert seen.count("alpha says 9c1d") == 1, seen[-2000:]
    assert 'from-name=\\"alpha\\"' in seen
    # Up to the next message the session took, the answer reached its model once.
    assert texts_of(later).count("alpha says 9c1d") == 1, texts_of(later)[-2000:]
    returned = [e for e in cli_json(d, "audit")["events"] if e["type"] == "ANSWER_RETURNED"]
    assert [(e.get("agent"), e.get("to")) for e in returned] == [("alpha", me)], returned


def _calls(d: Daemon, claude_bin: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """session_call with room for a model turn inside (its ask waits up to WAIT for one) on a
    loaded machine: the process is bounded at twice that."""
    from tests.tools.session_helpers import CALLS

    out = subprocess.run(
        [str(claude_bin), "--", sys.executable, str(CALLS), str(d.socket), json.dumps(calls)],
        env=d.env,
        cwd=d.root,
        capture_output=True,
        timeout=WAIT * 2,
        check=True,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_a_live_session_asking_back_along_the_chain_is_refused(
    daemon: Daemon, claude: Claude, claude_bin: Path, tmp_path: Path
) -> None:
    """While a live session answers an agent's native `ask`, its own agentcoord `ask` back to
    that agent is refused as a cycle; the asker gets the turn's final text, which reports the
    refusal."""

    def ask_back(req: Request) -> ToolUse:
        seen = texts_of(req)
        start = seen.index('from-name=\\"') + len('from-name=\\"')
        asker = seen[start : seen.index('\\"', start)]
        return ToolUse(f"mcp__{SERVER}__ask", {"agent": asker, "text": "and you?"})

    def report(req: Request) -> Text:
        return Text("back: " + tool_results(req)[-1]["text"][:300])

    claude.api.script(ask_back, report)
    with interactive(claude, tmp_path):
        agent = native_agent(daemon)
        calls = [
            ("whoami", {}),
            ("ask", {"agent": agent, "text": "loop check", "timeout_secs": WAIT}),
        ]
        who, out = _calls(daemon, claude_bin, calls)
    asker = who["structuredContent"]["agent"]
    got = out["structuredContent"]
    assert got["via"] == "native", got
    assert got["answered"] is True, got
    assert got["answer"].startswith("back: "), got
    assert "cycle" in got["answer"], got
    assert asker in got["answer"], got


def test_a_burst_reaches_a_busy_session_whole_and_once(daemon: Daemon, claude: Claude) -> None:
    """40 messages sent at once to a busy session (past the 30 frames Claude Code takes from a
    sender before it paces them) all reach the model, each in exactly one place of the first
    request that carries it."""
    from tests.tools.conftest import human_call

    hold = threading.Event()
    # One answer for every message at most: how the 40 group into requests depends on the
    # pacing and the machine's load, and a scripted API that runs out fails the run.
    claude.api.script(Text("first", hold=hold), *[Text("noted")] * 41)
    proc = claude.start("hello")
    texts = [f"burst {i:02d} c41e" for i in range(40)]
    try:
        claude.api.wait_requests(1, timeout=WAIT)
        agent = native_agent(daemon)
        for text in texts:
            human_call(daemon, "send", to=agent, text=text)
        _poll(lambda: len(delivered(daemon, agent)) >= len(texts), "every native delivery")
    finally:
        hold.set()
    run = claude.finish(proc, timeout=3 * WAIT)  # ten paced frames, each a turn, under load
    run.check()
    for text in texts:
        first = next((r for r in run.requests if text in texts_of(r)), None)
        assert first is not None, text
        assert texts_of(first).count(text) == 1, text


def test_a_refused_message_is_reported_to_its_sender(daemon: Daemon, claude: Claude) -> None:
    """A session whose inbound policy refuses cross-session messages answers the daemon's frame
    with a receipt; the human who sent the message finds a note saying it was refused and
    comes the other way, and the message is put back in the session agent's inbox once."""
    from tests.tools.conftest import human_call

    hold = threading.Event()
    claude.api.script(Text("first", hold=hold), Text("second"))
    refuse = json.dumps({"crossSessionInbound": "refuse"})  # seen to refuse with 2.1.328
    proc = claude.start("hello", "--settings", refuse)
    try:
        claude.api.wait_requests(1, timeout=WAIT)
        agent = native_agent(daemon)
        human_call(daemon, "send", to=agent, text="refuse me 2b7f")
        _poll(lambda: delivered(daemon, agent), "the native delivery")

        def noted() -> list[dict[str, Any]]:
            return [m for m in _human_inbox(daemon) if "was refused" in m.get("text", "")]

        note = _poll(noted, "the note of the refusal")
    finally:
        hold.set()
    run = claude.finish(proc)
    run.check()
    assert note[0]["from"] == agent, note
    assert "the other way" in note[0]["text"], note
    back = [e for e in cli_json(daemon, "audit")["events"] if e["type"] == "NATIVE_HANDED_BACK"]
    assert len(back) == 1, back
    assert all("refuse me 2b7f" not in texts_of(r) for r in run.requests)
