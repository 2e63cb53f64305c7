"""The real Claude Code runs the project-scope server `setup claude --project` writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.claude.conftest import claude_env, mcp_list_line
from tests.conftest import Daemon


@pytest.mark.parametrize("how", ["AGENTCOORD_BIN", "PATH"])
def test_project_server_connects_through_path_or_the_variable(
    daemon: Daemon, real_claude: Path, tmp_path: Path, how: str
) -> None:
    """The committed `.mcp.json` names `${AGENTCOORD_BIN:-agentcoord}`: the real `claude mcp
    list` in the project connects agent-coord with AGENTCOORD_BIN naming the script and no
    agentcoord on PATH, or with the variable unset and agentcoord on PATH."""
    env = claude_env(daemon, tmp_path / "home")
    project = tmp_path / "project"
    project.mkdir()
    setup = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "claude", "--project"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr
    # Approve the project's servers as a person would at the prompt (Claude Code settings).
    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"enableAllProjectMcpServers": True}))
    script = Path(sys.executable).parent / "agentcoord"
    assert script.is_file()
    node_dir = str(Path(real_claude).resolve().parent)
    # No agentcoord on this PATH (pyenv shims and the venv's bin dropped)
    path_dirs = [
        d
        for d in os.environ["PATH"].split(os.pathsep)
        if d and not (Path(d) / "agentcoord").exists()
    ]
    if how == "AGENTCOORD_BIN":
        run_env = dict(env, AGENTCOORD_BIN=str(script), PATH=os.pathsep.join(path_dirs))
    else:
        run_env = dict(env, PATH=os.pathsep.join([str(script.parent), *path_dirs]))
        run_env.pop("AGENTCOORD_BIN", None)
    run_env["PATH"] = os.pathsep.join([run_env["PATH"], node_dir])
    line = mcp_list_line(real_claude, run_env, project)
    assert "✔ Connected" in line, line
