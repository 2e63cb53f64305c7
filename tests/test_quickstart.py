"""The README's quick start as a new user runs it: CI runs its test command verbatim, and a
venv whose bin is not on PATH still gets its own ``agentcoord`` registered with Claude Code."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Quick start") :]
    section = section[: section.index("\n## ", 3)]
    return re.findall(r"```sh\n(.*?)\n```", section, re.S)


def test_ci_runs_the_readmes_test_command_verbatim() -> None:
    """The quick start's test command makes its own venv, and .ci/run runs exactly that line."""
    commands = _quick_start_commands()
    test_command = next(c for c in commands if "pytest" in c)
    assert test_command.startswith("python3 -m venv .venv && ")
    assert " pip " not in f" {test_command} "  # never the system pip (externally managed)
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines
    serve = next(c for c in commands if " serve" in c)
    assert serve.startswith("python3 -m venv .venv && .venv/bin/pip install -e . && ")
    assert ".venv/" in (ROOT / ".gitignore").read_text().splitlines()  # inside the checkout


def test_setup_claude_registers_this_installs_agentcoord_off_path(tmp_path: Path) -> None:
    """With this interpreter's bin dir off PATH (an unactivated venv), ``setup claude`` registers
    the agentcoord beside the interpreter by its full path, not a bare name Claude Code cannot
    find."""
    own = Path(sys.executable).parent / "agentcoord"
    assert own.is_file(), "the package is installed with its console script"
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    claude_dir = tmp_path / ".claude"
    env = {**os.environ, "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(claude_dir)}
    env["PATH"] = str(empty)
    subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "claude"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    server = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["agent-coord"]
    assert server["command"] == str(own)
    hooks = json.dumps(json.loads((claude_dir / "settings.json").read_text())["hooks"])
    assert f"{own} hook session-start" in hooks
