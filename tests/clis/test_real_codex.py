"""The real Codex CLI (``codex exec``), offline against a scripted Responses API: the MCP
server it starts is ``agentcoord mcp``, which finds the user's one daemon from Codex's
stripped environment (through the per-user pointer) and is a Codex session agent
(docs/codex.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.agentops.conftest import stored
from tests.clis.model_apis import Call, Say, Scripted
from tests.conftest import Daemon
from tests.tools.conftest import AgentProc


def codex_home(tmp_path: Path, api: Scripted, *, server: bool = True) -> Path:
    """A CODEX_HOME whose provider is ``api`` (remote plugin features off: they reach GitHub)
    and, with ``server``, whose MCP server ``agent-coord`` is ``agentcoord mcp`` with no env of
    its own and its tools allowed (``codex exec`` cannot ask)."""
    home = tmp_path / "codex-home"
    home.mkdir()
    config = f"""model = "stand-in"
model_provider = "stand_in"

[model_providers.stand_in]
name = "stand-in"
base_url = "{api.url}/v1"
wire_api = "responses"
env_key = "STAND_IN_KEY"

[features]
plugins = false
remote_plugin = false
apps = false
"""
    if server:
        config += f"""
[mcp_servers.agent-coord]
command = "{sys.executable}"
args = ["-m", "agentcoord", "mcp"]
default_tools_approval_mode = "approve"
"""
    (home / "config.toml").write_text(config)
    return home


def test_codex_exec_calls_whoami_as_a_codex_session(
    daemon: Daemon, real_codex: Path, responses_api: Scripted, tmp_path: Path
) -> None:
    """codex exec calls whoami through agentcoord mcp and is answered as a session of kind
    codex, named after its project dir, stored by the test's daemon (not refused, not a second
    daemon)."""
    project = tmp_path / "shop"
    project.mkdir()
    responses_api.script(Call("whoami"), Say("done"))
    env = {
        "HOME": daemon.env["HOME"],
        "PATH": daemon.env["PATH"],
        "CODEX_HOME": str(codex_home(tmp_path, responses_api)),
        "STAND_IN_KEY": "sk-offline",
    }
    out = subprocess.run(
        [str(real_codex), "exec", "--json", "--skip-git-repo-check", "who am I?"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, (out.stdout, out.stderr)
    outputs = responses_api.tool_outputs()
    assert len(outputs) == 1, (outputs, out.stdout[-3000:])
    me = answer(outputs[0])
    assert (me["kind"], me["session_kind"], me["cwd"]) == ("session", "codex", str(project)), me
    assert me["agent"].startswith("shop-"), me
    # The test's daemon (found through the pointer: Codex passed no AGENTCOORD_* and no
    # XDG_RUNTIME_DIR) is the one that knows the agent.
    assert stored(daemon, "agents", me["agent"]) is not None


def answer(output: str) -> dict[str, Any]:
    """The JSON a tool answered, from Codex's function output (a header, then the text)."""
    return json.loads(output[output.index("{") :])  # type: ignore[no-any-return]


def test_codex_hooks_from_setup_say_who_it_is_and_deliver_its_inbox(
    daemon: Daemon, real_codex: Path, responses_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """After `agentcoord setup codex`, codex exec's SessionStart hook tells the model which
    agent it is and its UserPromptSubmit hook hands it the message a Claude Code session sent
    before it started (docs/codex.md)."""
    sender = AgentProc(daemon, claude_bin, tmp_path / "work" / "planner")
    try:
        suffix = sender.name.removeprefix("planner-1")
        me = f"shop-1{suffix}"  # the name the Codex session in shop/ will take
        sent = sender.call("send", to=me, text="take the cart module", queue_unknown=True)
        assert sent["delivery"] == "queued", sent
    finally:
        sender.close()
    project = tmp_path / "shop"
    project.mkdir()
    home = codex_home(tmp_path, responses_api, server=False)
    env = {
        "HOME": daemon.env["HOME"],
        "PATH": daemon.env["PATH"],
        "CODEX_HOME": str(home),
        "STAND_IN_KEY": "sk-offline",
    }
    setup = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "codex"],
        env={**daemon.env, "CODEX_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr
    responses_api.script(Say("done"))
    # Codex skips hooks it was not told to trust; headless runs say so with this flag.
    argv = [str(real_codex), "exec", "--json", "--skip-git-repo-check"]
    out = subprocess.run(
        [*argv, "--dangerously-bypass-hook-trust", "what next?"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    sent_to_model = json.dumps([body for _, body in responses_api.requests])
    assert "take the cart module" in sent_to_model, sent_to_model[-3000:]
    assert me in sent_to_model


def test_a_message_from_a_codex_session_reaches_a_claude_code_session(
    daemon: Daemon, real_codex: Path, responses_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """codex exec sends through agentcoord mcp to a Claude Code session, which reads it in its
    inbox from the Codex session's agent: the CLI makes no difference to the coordination."""
    reader = AgentProc(daemon, claude_bin, tmp_path / "work" / "planner")
    try:
        project = tmp_path / "shop"
        project.mkdir()
        responses_api.script(Call("send", {"to": reader.name, "text": "cart done"}), Say("done"))
        env = {
            "HOME": daemon.env["HOME"],
            "PATH": daemon.env["PATH"],
            "CODEX_HOME": str(codex_home(tmp_path, responses_api)),
            "STAND_IN_KEY": "sk-offline",
        }
        out = subprocess.run(
            [str(real_codex), "exec", "--json", "--skip-git-repo-check", "report"],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
        assert len(responses_api.tool_outputs()) == 1, responses_api.tool_outputs()
        got = reader.call("inbox")["messages"]
        assert [(m["from"].split("-")[0], m["text"]) for m in got] == [("shop", "cart done")], got
    finally:
        reader.close()
