"""The real Claude Code's health check of the MCP server (``claude mcp list``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.agentops.conftest import wait_for
from tests.claude.conftest import claude_env, mcp_list_line
from tests.conftest import Daemon
from tests.tools.session_helpers import own_call


def _session_agents(d: Daemon) -> list[str]:
    res = own_call(d, "list_agents", {"status": "all"})
    assert not res["isError"], res
    return [a["name"] for a in res["structuredContent"]["agents"]]


def test_claude_mcp_list_connects_and_leaves_no_agent(
    daemon: Daemon, real_claude: Path, tmp_path: Path
) -> None:
    """After `agentcoord setup claude` (Claude Code's config dir moved by CLAUDE_CONFIG_DIR),
    the real `claude mcp list` shows agent-coord connected, and its health-check session
    leaves no agent behind."""
    env = claude_env(daemon, tmp_path / "home")
    project = tmp_path / "project"
    project.mkdir()
    setup = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "claude"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr
    line = mcp_list_line(real_claude, env, project)
    assert "✔ Connected" in line, line
    wait_for(lambda: not _session_agents(daemon), what="no agent left")
