"""Only the human answers as the human (docs/security.md "Who a caller is"): an agent that raised a
prompt cannot answer it itself by detaching from its session (``setsid``), by speaking HTTP
without the token, by running ``agentcoord answer`` under a session's or a runner's
environment, or by naming the human in a tool's ``agent``/``from``. Each attempt is refused
with a clear error, the prompt stays open, and it leaves one ``HUMAN_REFUSED`` audit event
saying what was tried, how, and by which process. The human's own answers are each audited
once."""

from __future__ import annotations

import getpass
import http.client
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcoord.text.events import render_event
from tests.conftest import Daemon, console_link
from tests.security.conftest import Tally
from tests.security.test_impersonation import _args, _identity_tools
from tests.tools.conftest import AgentProc, ToolFailed, cli, human_call
from tests.tools.session_helpers import unix_request

# What Claude Code puts in the environment of every command it runs (docs/mcp.md).
SESSION_ENV = {
    "CLAUDECODE": "1",
    "CLAUDE_CODE_SESSION_ID": "0b6c8f0e-5f4e-4d8e-9d3e-2f1c7a1b9e10",
    "CLAUDE_CODE_ENTRYPOINT": "cli",
}
# What Codex, Gemini CLI and OpenCode put in their shell commands' environment
# (docs/other-clis.md): each shell child is an agent's, never the human.
OTHER_CLIS_ENV = [
    ({"CODEX_THREAD_ID": "019a7c1e-0000-7000-8000-000000000001"}, "CODEX_THREAD_ID"),
    ({"GEMINI_CLI": "1"}, "GEMINI_CLI"),
    ({"OPENCODE": "1", "OPENCODE_PID": "4242", "AGENT": "1"}, "OPENCODE"),
]
# What the daemon's runners carry (localagents/runner.py), and other harnesses' convention.
RUNNER_ENV = {"AGENTCOORD_JOB_ID": "job-1", "AGENT_ID": "worker"}


@pytest.fixture
def agent(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> Iterator[AgentProc]:
    """An agent session (under a stand-in ``claude``) that will try to approve itself."""
    proc = AgentProc(daemon, claude_bin, tmp_path / "work" / "hostile")
    try:
        yield proc
    finally:
        proc.close()


def _raise_prompt(agent: AgentProc) -> str:
    """The agent asks the human to approve something dangerous; the prompt stays open."""
    out = agent.call("request_approval", question="rm -rf prod?", timeout_secs=0)
    assert out["answered"] is False
    return str(out["prompt"])


def _refusals(daemon: Daemon, want: int = 1) -> list[dict[str, Any]]:
    """The HUMAN_REFUSED events, read as the human once ``want`` of them are there (the
    audit append is batched) or 10 s have passed."""
    deadline = time.monotonic() + 60
    while True:
        events = human_call(daemon, "audit", type="HUMAN_REFUSED")["events"]
        if len(events) >= want or time.monotonic() > deadline:
            return events  # type: ignore[no-any-return]


def _refused_once(daemon: Daemon, **want: Any) -> dict[str, Any]:
    """The one HUMAN_REFUSED event the attack left; it has ``want``'s fields and the process."""
    events = _refusals(daemon)
    assert len(events) == 1, events
    (event,) = events
    assert {k: event.get(k) for k in want} == want, event
    assert isinstance(event["pid"], int), event
    assert event["exe"], event
    return event


def _still_open(daemon: Daemon, prompt: str) -> bool:
    prompts = {p["id"]: p for p in human_call(daemon, "list_prompts", all=True)["prompts"]}
    return prompts[prompt]["phase"] == "Open" and prompts[prompt].get("answer") is None


def _detached(
    claude_bin: Path | None, daemon: Daemon, script: str, env: dict[str, str]
) -> tuple[str, int]:
    """Run ``sh -c script`` through ``setsid -f`` (under the stand-in ``claude`` when given),
    so its ancestry no longer reaches the session; its output and exit code, read from a pipe
    it inherits until the detached process closes it."""
    read_end, write_end = os.pipe()
    wrapped = f'( {script} ) 2>&1; echo "rc=$?"'
    argv = ["setsid", "-f", "sh", "-c", wrapped]
    if claude_bin is not None:
        argv = [str(claude_bin), "--", *argv]
    try:
        subprocess.run(
            argv,
            env={**daemon.env, **env},
            stdout=write_end,
            stderr=write_end,
            check=True,
            timeout=30,
        )
    finally:
        os.close(write_end)
    out = b""
    deadline = time.monotonic() + 30
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([pipe], [], [], left)
            chunk = pipe.read(65536) if ready else b""
            if not chunk:
                break
            out += chunk
    text = out.decode()
    assert "rc=" in text, f"the detached process did not finish: {text!r}"
    body, _, rc = text.rpartition("rc=")
    return body.strip(), int(rc.strip())


def _curl_answer(daemon: Daemon, prompt: str, token: str | None = None) -> str:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "answer_prompt", "arguments": {"prompt": prompt, "answer": "yes"}},
    }
    auth = f"-H 'authorization: Bearer {token}' " if token else ""
    return (
        f"curl -s -w ' http=%{{http_code}}' -H 'content-type: application/json' {auth}"
        f"-d '{json.dumps(body)}' {daemon.url}/mcp"
    )


def test_detached_tokenless_http_answer_is_refused(
    daemon: Daemon, agent: AgentProc, claude_bin: Path, tally: Tally
) -> None:
    """`setsid -f curl .../mcp answer_prompt` without a token from a session: 401, still open."""
    prompt = _raise_prompt(agent)
    out, _ = _detached(claude_bin, daemon, _curl_answer(daemon, prompt), SESSION_ENV)
    refused = "http=401" in out and "neither an agent nor the human" in out
    assert tally("self-approval: detached tokenless HTTP", refused), out
    assert "human.token" in out  # the error names how the human gets access
    assert _still_open(daemon, prompt)
    event = _refused_once(
        daemon, what="answer_prompt", prompt=prompt, how="http", reason="not-identified"
    )
    assert event["agent"] == "anonymous", event
    assert "CLAUDECODE" in event["markers"], event
    assert event["exe"].endswith("curl"), event


def test_detached_http_answer_with_the_token_from_a_session_is_refused(
    daemon: Daemon, agent: AgentProc, claude_bin: Path, tally: Tally
) -> None:
    """Even holding the human token (read from disk), a session-marked process is refused."""
    prompt = _raise_prompt(agent)
    token = (daemon.state_dir / "human.token").read_text().strip()
    out, _ = _detached(claude_bin, daemon, _curl_answer(daemon, prompt, token), SESSION_ENV)
    refused = "http=403" in out and "CLAUDECODE" in out
    assert tally("self-approval: detached HTTP with the stolen token", refused), out
    assert _still_open(daemon, prompt)
    want = {"what": "answer_prompt", "prompt": prompt, "how": "http", "token": "human"}
    _refused_once(daemon, **want, reason="agent-markers", kind="anonymous")


@pytest.mark.parametrize(
    ("env", "marker"),
    [
        (SESSION_ENV, "CLAUDECODE"),
        (RUNNER_ENV, "AGENTCOORD_JOB_ID"),
        *OTHER_CLIS_ENV,
    ],
    ids=["session", "runner", "codex", "gemini", "opencode"],
)
def test_detached_cli_answer_from_an_agent_is_refused(
    daemon: Daemon,
    agent: AgentProc,
    claude_bin: Path,
    tally: Tally,
    env: dict[str, str],
    marker: str,
) -> None:
    """`setsid -f agentcoord answer ID yes` under a session's or a runner's environment
    presents the human token (the CLI reads it) and is still refused: the markers win."""
    prompt = _raise_prompt(agent)
    script = f"{sys.executable} -m agentcoord answer {prompt} yes"
    out, rc = _detached(claude_bin, daemon, script, env)
    refused = rc == 1 and marker in out and "refused to act as the human" in out
    assert tally("self-approval: detached agentcoord answer", refused), out
    assert len(out.splitlines()) == 1, out  # one clear line, no traceback
    assert _still_open(daemon, prompt)
    # The refused login and the request behind it (sent together) are one event.
    want = {"what": "answer_prompt", "prompt": prompt, "how": "unix", "token": "human"}
    event = _refused_once(daemon, **want, reason="agent-markers", login=True)
    assert marker in event["markers"], event


def test_tokenless_unattributed_socket_caller_is_refused(
    daemon: Daemon, agent: AgentProc, tally: Tally
) -> None:
    """A same-uid process that maps to no agent and presents no token is nobody: refused."""
    prompt = _raise_prompt(agent)
    req = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    req["params"] = {"name": "answer_prompt", "arguments": {"prompt": prompt, "answer": "yes"}}
    reply = unix_request(daemon, req, human=False)
    message = reply.get("error", {}).get("message", "")
    assert tally("self-approval: tokenless socket", "neither an agent nor the human" in message)
    assert reply["error"]["code"] == -32001
    assert "human.token" in message
    assert _still_open(daemon, prompt)
    want = {"what": "answer_prompt", "prompt": prompt, "how": "unix", "reason": "not-identified"}
    _refused_once(daemon, **want, agent="anonymous", pid=os.getpid())


def test_a_session_presenting_the_token_on_the_socket_is_refused(
    daemon: Daemon, agent: AgentProc, tally: Tally
) -> None:
    """A session's own connection that logs in with the human token stays the session."""
    token = (daemon.state_dir / "human.token").read_text().strip()
    login = {"jsonrpc": "2.0", "id": 99, "method": "agentcoord/login", "params": {"token": token}}
    message = _raw(agent, login).get("error", {}).get("message", "")
    assert tally("self-approval: session login with the token", "never the human" in message)
    assert agent.call("whoami")["agent"] == agent.name  # still itself, not the human
    want = {"what": "agentcoord/login", "how": "unix", "token": "human", "kind": "session"}
    _refused_once(daemon, **want, reason="agent-process", agent=agent.name)


def test_no_tool_takes_the_humans_name(daemon: Daemon, agent: AgentProc, tally: Tally) -> None:
    """Every agent/from-taking tool given ``human:<user>`` by an agent: "identity mismatch"."""
    human = f"human:{getpass.getuser()}"
    prompt = _raise_prompt(agent)
    tools = _identity_tools(daemon)
    assert len(tools) >= 15, [t[0] for t in tools]
    failures = []
    for name, key, schema in tools:
        try:
            agent.call(name, **_args(schema, human, key, to=human))
            text = "accepted"
        except ToolFailed as exc:
            text = str(exc)
        if not tally("impersonating the human", "identity mismatch" in text):
            failures.append((name, key, text))
    assert failures == []
    assert _still_open(daemon, prompt)
    # One event per tool tried (the key is the process and what it tried).
    events = _refusals(daemon, want=len(tools))
    assert sorted(e["what"] for e in events) == sorted(name for name, _, _ in tools)
    assert {(e["agent"], e["reason"], e["how"]) for e in events} == {
        (agent.name, "borrowed-name", "unix")
    }


def test_human_only_tools_are_listed_to_the_human_alone(
    daemon: Daemon, agent: AgentProc, tally: Tally
) -> None:
    """An agent's tools/list omits answer_prompt (and only the tools not offered to models);
    called anyway it gives the same clear error."""
    agent_tools = _listed(lambda req: _raw(agent, req))
    human_tools = _listed(lambda req: unix_request(daemon, req))
    assert "answer_prompt" in human_tools
    assert "answer_prompt" not in agent_tools
    # The rest of the difference is the tools a model is not offered, callable by anyone
    # (docs/claude-code.md "Results for the model").
    not_offered = {"request_approval", "ask_choice", "request_input", "nats_credentials"}
    not_offered |= {"list_channels", "audit"}
    assert set(agent_tools) == set(human_tools) - {"answer_prompt"} - not_offered
    prompt = _raise_prompt(agent)
    with pytest.raises(ToolFailed, match="only the human answers prompts") as err:
        agent.call("answer_prompt", prompt=prompt, answer="yes")
    assert tally("self-approval: unlisted tool called anyway", bool(err))
    assert _still_open(daemon, prompt)
    want = {"what": "answer_prompt", "prompt": prompt, "how": "unix", "reason": "human-only"}
    _refused_once(daemon, **want, agent=agent.name, kind="session")


def _raw(agent: AgentProc, req: dict[str, Any]) -> dict[str, Any]:
    """Send one JSON-RPC request (any method) on the agent's own connection; its reply."""
    assert agent.proc.stdin is not None
    agent.proc.stdin.write(json.dumps(req).encode() + b"\n")
    agent.proc.stdin.flush()
    with agent._cond:
        assert agent._cond.wait_for(lambda: req["id"] in agent._replies, 60)
        return agent._replies.pop(req["id"])  # type: ignore[no-any-return]


def _listed(send: Any) -> list[str]:
    names: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"cursor": cursor} if cursor else {}
        result = send({"jsonrpc": "2.0", "id": 700, "method": "tools/list", "params": params})
        result = result["result"]
        names += [t["name"] for t in result["tools"]]
        cursor = result.get("nextCursor")
        if not cursor:
            return names


@pytest.mark.parametrize("command", ["console", "kubeconfig"])
def test_credentials_are_not_printed_to_an_agent(
    daemon: Daemon, command: str, tally: Tally
) -> None:
    """`agentcoord console` (login link) and `kubeconfig` refuse a process with agent markers."""
    token = (daemon.state_dir / "human.token").read_text().strip()
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", command],
        env={**daemon.env, **SESSION_ENV},
        capture_output=True,
        text=True,
        timeout=30,
    )
    refused = out.returncode == 1 and out.stdout == "" and "CLAUDECODE" in out.stderr
    assert tally("credential printed to an agent", refused), out
    assert len(out.stderr.splitlines()) == 1
    assert token not in out.stderr
    assert cli(daemon, command).returncode == 0  # the human at their terminal still may


def _console_answer(daemon: Daemon, prompt: str, answer: str) -> int:
    host, port = daemon.http_addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", console_link(daemon).split(daemon.http_addr, 1)[1])
    cookie = conn.getresponse().getheader("set-cookie", "").split(";")[0]
    conn.close()
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    headers = {"cookie": cookie, "content-type": "application/json", "x-agentcoord": "1"}
    body = json.dumps({"answer": answer})
    conn.request("POST", f"/console/api/prompts/{prompt}/answer", body=body, headers=headers)
    status = conn.getresponse().status
    conn.close()
    return status


def _mcp_answer(daemon: Daemon, prompt: str, answer: str) -> dict[str, Any]:
    from tests.daemon.test_http_transport import post

    token = (daemon.state_dir / "human.token").read_text().strip()
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "answer_prompt", "arguments": {"prompt": prompt, "answer": answer}},
    }
    status, _, raw = post(daemon, body, {"authorization": f"Bearer {token}"})
    assert status == 200, raw
    return json.loads(raw)["result"]  # type: ignore[no-any-return]


def test_every_human_answer_is_audited_once_with_how_and_process(
    daemon: Daemon, agent: AgentProc
) -> None:
    """CLI, console and MCP answers: one HUMAN_ANSWERED each, saying how it came and the
    sending process; `agentcoord audit`, the audit tool and the console render it alike."""
    by_cli, by_console, by_mcp = (_raise_prompt(agent) for _ in range(3))
    done = cli(daemon, "answer", by_cli, "no")
    assert done.returncode == 0, done.stderr
    assert _console_answer(daemon, by_console, "approve") == 200
    assert _mcp_answer(daemon, by_mcp, "yes")["isError"] is False
    deadline = time.monotonic() + 60
    events: list[dict[str, Any]] = []
    while time.monotonic() < deadline and len(events) < 3:  # the audit append is batched
        events = human_call(daemon, "audit", type="HUMAN_ANSWERED")["events"]
    by_prompt = {e["prompt"]: e for e in events}
    assert len(events) == 3
    assert set(by_prompt) == {by_cli, by_console, by_mcp}
    assert by_prompt[by_cli]["how"] == "cli"
    assert by_prompt[by_cli]["answer"] == "denied"
    assert by_prompt[by_console]["how"] == "console"
    assert by_prompt[by_mcp]["how"] == "mcp"
    assert by_prompt[by_mcp]["answer"] == "approved"
    for e in events:
        assert e["agent"] == f"human:{getpass.getuser()}"
        assert e["asker"] == agent.name
        assert isinstance(e["pid"], int), e  # the process that sent it
        assert e["exe"], e
    # One rendering: the CLI view prints exactly the lines the shared renderer makes.
    view = cli(daemon, "audit", "--type", "HUMAN_ANSWERED")
    assert view.stdout.splitlines() == [render_event(e) for e in events]
    assert f"prompt={by_cli}" in view.stdout
    assert "how=console" in view.stdout
