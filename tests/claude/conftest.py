"""The real Claude Code binary (npm package ``@anthropic-ai/claude-code``, pinned in
``CLAUDE_CODE_VERSION``), run offline in a private home against a real daemon.

``.ci/run`` installs the pinned version under ``/opt/claude-code-<version>`` (kept between
runs); ``AGENTCOORD_TEST_CLAUDE`` may name another binary of the same version. Where neither is
there the tests skip as a missing dependency, which fails a CI run.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Daemon

VERSION = (Path(__file__).parent / "CLAUDE_CODE_VERSION").read_text().strip()
INSTALL = f"npm install -g --prefix /opt/claude-code-{VERSION} @anthropic-ai/claude-code@{VERSION}"

# FACTS.md "The real Claude Code, offline": no telemetry, no updater, no side requests.
OFFLINE = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "ANTHROPIC_API_KEY": "sk-test-offline",
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",  # nothing listens: no model is asked here
}


@pytest.fixture(scope="session")
def real_claude() -> Path:
    """The pinned Claude Code binary."""
    path = Path(
        os.environ.get("AGENTCOORD_TEST_CLAUDE") or f"/opt/claude-code-{VERSION}/bin/claude"
    )
    if not os.access(path, os.X_OK):
        pytest.skip(f"Claude Code {VERSION} is not installed ({INSTALL})")
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60)
    if not out.stdout.startswith(VERSION):
        pytest.skip(f"Claude Code {VERSION} is not installed ({path} is {out.stdout.strip()!r})")
    return path


def claude_env(d: Daemon, home: Path) -> dict[str, str]:
    """The daemon's environment (its ``CLAUDE_CONFIG_DIR``, so Claude Code's config dir is
    moved out of HOME, and the daemon reads the same sessions dir) with a private HOME and the
    offline switches."""
    home.mkdir(parents=True, exist_ok=True)
    return {**d.env, "HOME": str(home), **OFFLINE}


def mcp_list_line(claude: Path, env: dict[str, str], cwd: Path) -> str:
    """``claude mcp list``'s line for agent-coord (its health check of the server)."""
    listed = subprocess.run(
        [str(claude), "mcp", "list"], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    line = [ln for ln in listed.stdout.splitlines() if ln.startswith("agent-coord:")]
    assert line, listed.stdout + listed.stderr
    return line[0]
