"""The real Claude Code with no daemon running (docs/claude-code.md "Daemon on demand"): set up
as a user would, its first MCP connection starts the daemon; with a daemon that cannot start,
the server still connects and the model is told why coordination is off.

No test starts a daemon itself; every daemon started on demand is stopped at the end.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcoord.client.shim import STATUS_TOOL
from agentcoord.kernel.locate import default_runtime_dir, default_state_dir
from tests.claude.conftest import OFFLINE, SERVER, mcp_list_line
from tests.claude.model_api import ModelAPI, Text
from tests.daemon.test_on_demand import assert_one_daemon, daemons_on, stop_daemons


@pytest.fixture
def user_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A user's environment with a fresh private HOME and runtime dir (no agentcoord or
    Claude variables, so every path is the default one under them), after `agentcoord setup
    claude`; whatever daemon starts there is stopped at the end."""
    home, run = tmp_path / "h", tmp_path / "r"
    for path in (home, run, home / "claude-tmp"):
        path.mkdir(mode=0o700)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENTCOORD_", "CLAUDE", "XDG_", "KUBE"))
    }
    env.update(
        HOME=str(home),
        XDG_RUNTIME_DIR=str(run),
        CLAUDE_CODE_TMPDIR=str(home / "claude-tmp"),
        # Any free port: the default 7420 belongs to this machine's own daemon, if any.
        AGENTCOORD_HTTP_ADDR="127.0.0.1:0",
        **OFFLINE,
    )
    setup = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "claude"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr
    (tmp_path / "project").mkdir()
    try:
        yield env
    finally:
        stop_daemons(default_state_dir(env))


def _texts(message: dict[str, Any]) -> str:
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))


def test_cold_claude_mcp_list_starts_the_daemon(
    real_claude: Path, user_env: dict[str, str], tmp_path: Path
) -> None:
    """With no daemon running, the real `claude mcp list` shows agent-coord connected, and
    afterwards one daemon runs on the user's state dir and its socket answers."""
    state = default_state_dir(user_env)
    assert daemons_on(state) == []
    line = mcp_list_line(real_claude, user_env, tmp_path / "project")
    assert "✔ Connected" in line, line
    assert_one_daemon(state)
    probe = socket.socket(socket.AF_UNIX)
    try:
        probe.connect(str(default_runtime_dir(user_env, os.getuid()) / "agentcoord.sock"))
    finally:
        probe.close()


def test_a_daemon_that_cannot_start_is_told_to_the_model(
    real_claude: Path, user_env: dict[str, str], tmp_path: Path, model_api: ModelAPI
) -> None:
    """With a state dir the daemon cannot create, `claude mcp list` still shows agent-coord
    connected (degraded), and `claude -p` sends the model the server's instructions saying
    coordination is off and why, and offers its one status tool."""
    (tmp_path / "a-file").write_text("")
    user_env["AGENTCOORD_STATE_DIR"] = str(tmp_path / "a-file" / "state")
    project = tmp_path / "project"
    assert "✔ Connected" in mcp_list_line(real_claude, user_env, project)
    model_api.script(Text("noted"))
    env = dict(user_env, ANTHROPIC_BASE_URL=model_api.url, ENABLE_TOOL_SEARCH="false")
    run = subprocess.run(
        [str(real_claude), "-p", "hi", "--output-format", "json"],
        env=env,
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert run.returncode == 0, run.stderr
    (request,) = model_api.requests
    # Claude Code puts the servers' instructions under "# MCP Server Instructions" in a
    # system-role message after the prompt, not in the system prompt (seen with 2.1.328).
    context = "\n".join(_texts(m) for m in request.body["messages"])
    _, found, told = context.partition("## agent-coord\n")
    assert found, context[-3000:]
    assert told.startswith("agentcoord coordination is OFF"), told[:500]
    assert "could not start" in told.split("\n")[0]
    assert "Not a directory" in told.split("\n")[0]
    assert f"mcp__{SERVER}__{STATUS_TOOL}" in request.tool_names
