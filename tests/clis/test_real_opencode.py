"""The real OpenCode (``opencode run``), offline against a scripted Chat Completions API: the
local MCP server `agentcoord setup opencode --project` put in its opencode.json is
``agentcoord mcp``, and whoami answers an OpenCode
session agent of the user's one daemon (docs/opencode.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.agentops.conftest import stored
from tests.clis.model_apis import Call, Say, Scripted
from tests.conftest import Daemon
from tests.tools.conftest import AgentProc

# OpenCode's switches that keep it offline (no update, model list, LSP download, sharing, or
# default plugins, which it would try to install from npm).
OFFLINE = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
}


def opencode_config(project: Path, api: Scripted, env: dict[str, str]) -> None:
    """opencode.json in ``project``: an openai-compatible provider at ``api`` and every
    permission allowed (``run`` cannot ask); `agentcoord setup opencode --project` then adds
    agent-coord as a local MCP server."""
    config = {
        "$schema": "https://opencode.ai/config.json",
        "model": "standin/m",
        "small_model": "standin/m",
        "provider": {
            "standin": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "stand-in",
                "options": {"baseURL": f"{api.url}/v1", "apiKey": "offline"},
                "models": {"m": {"name": "m", "tool_call": True}},
            }
        },
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow"},
        "autoupdate": False,
        "share": "disabled",
    }
    (project / "opencode.json").write_text(json.dumps(config))
    setup = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "opencode", "--project"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr


def test_opencode_run_calls_whoami_as_an_opencode_session(
    daemon: Daemon, real_opencode: Path, chat_api: Scripted, tmp_path: Path
) -> None:
    """opencode run calls whoami through agentcoord mcp and is answered as a session of kind
    opencode, named after its project dir, by the test's daemon."""
    project = tmp_path / "api"
    project.mkdir()
    chat_api.script(Call("whoami"), Say("done"))
    # OpenCode takes its directory from PWD when set, as a shell would have set it. The
    # project's file runs `agentcoord` from PATH, as a teammate's would.
    bin_dir = str(Path(sys.executable).parent)
    env = {**daemon.env, **OFFLINE, "HOME": str(tmp_path / "opencode-home"), "PWD": str(project)}
    env = {k: v for k, v in env.items() if not k.startswith("XDG_") or k == "XDG_RUNTIME_DIR"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    opencode_config(project, chat_api, env)
    out = subprocess.run(
        [str(real_opencode), "run", "--format", "json", "-m", "standin/m", "who am I?"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    outputs = chat_api.tool_outputs()
    assert len(outputs) == 1, (outputs, out.stdout[-3000:])
    assert f"(opencode session, via unix); cwd {project}" in outputs[0], outputs
    agent = outputs[0].split("you are ", 1)[1].split(" ", 1)[0]
    assert agent.startswith("api-"), outputs
    assert stored(daemon, "agents", agent) is not None


def test_opencode_plugin_from_setup_denies_a_write_to_a_claimed_file(
    daemon: Daemon, real_opencode: Path, chat_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """After `agentcoord setup opencode --project`, its plugin stops a write to a file a Claude
    Code session holds a write claim on, naming the holder, and the file is not written."""
    project = tmp_path / "api"
    project.mkdir()
    target = project / "routes.py"
    holder = AgentProc(daemon, claude_bin, tmp_path / "work" / "planner")
    try:
        claimed = holder.call("claim", resource_key=f"file:{target}", mode="write", ttl="5m")
        assert claimed["acquired"] is True
        chat_api.script(Call("write", {"filePath": str(target), "content": "x = 1\n"}), Say("ok"))
        bin_dir = str(Path(sys.executable).parent)
        env = {**daemon.env, **OFFLINE, "HOME": str(tmp_path / "oc-home"), "PWD": str(project)}
        env = {k: v for k, v in env.items() if not k.startswith("XDG_") or k == "XDG_RUNTIME_DIR"}
        env["PATH"] = f"{bin_dir}:{env['PATH']}"
        opencode_config(project, chat_api, env)
        assert (project / ".opencode" / "plugin" / "agentcoord.js").exists()
        out = subprocess.run(
            [str(real_opencode), "run", "--format", "json", "-m", "standin/m", "save routes"],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=180,
        )
        outputs = chat_api.tool_outputs()
        assert len(outputs) == 1, (outputs, out.stdout[-3000:], out.stderr[-3000:])
        assert holder.name in outputs[0], outputs
        assert not target.exists()
    finally:
        holder.close()


def test_opencode_plugin_says_who_it_is_and_hands_the_inbox_to_the_first_prompt(
    daemon: Daemon, real_opencode: Path, chat_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """After `agentcoord setup opencode --project`, its plugin puts which agent the session is
    in the system prompt of its first model request and the message a Claude Code session
    queued for it before it started in that request's prompt, with no tool call before."""
    sender = AgentProc(daemon, claude_bin, tmp_path / "work" / "planner")
    try:
        suffix = sender.name.removeprefix("planner-1")
        me = f"api-1{suffix}"  # the name the OpenCode session in api/ will take
        sent = sender.call("send", to=me, text="take the billing module", queue_unknown=True)
        assert sent["delivery"] == "queued", sent
    finally:
        sender.close()
    project = tmp_path / "api"
    project.mkdir()
    chat_api.script(Say("done"))
    bin_dir = str(Path(sys.executable).parent)
    env = {**daemon.env, **OFFLINE, "HOME": str(tmp_path / "oc-home"), "PWD": str(project)}
    env = {k: v for k, v in env.items() if not k.startswith("XDG_") or k == "XDG_RUNTIME_DIR"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    opencode_config(project, chat_api, env)
    out = subprocess.run(
        [str(real_opencode), "run", "--format", "json", "-m", "standin/m", "what next?"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    turns = [body for _, body in chat_api.requests if chat_api.is_turn("", body)]
    assert turns, (chat_api.extra, out.stdout[-3000:])
    first = turns[0]["messages"]
    system = json.dumps([m for m in first if m.get("role") == "system"])
    prompt = json.dumps([m for m in first if m.get("role") == "user"])
    assert f"you are agent `{me}`" in system, system[-3000:]
    assert "take the billing module" in prompt, prompt[-3000:]
    assert "what next?" in prompt
