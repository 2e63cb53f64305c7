"""The official MCP SDK client talks to the daemon over stdio (through the shim) and HTTP,
and the daemon names the caller from its process ancestry, never from an argument."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import FAKES, Daemon


def _shim_env(d: Daemon, **extra: str) -> dict[str, str]:
    env = {
        "AGENTCOORD_RUNTIME_DIR": str(d.runtime_dir),
        "CLAUDE_CONFIG_DIR": d.env["CLAUDE_CONFIG_DIR"],
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    env.update(extra)
    return env


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_through_shim_names_session_from_env(
    daemon: Daemon, claude_bin: Path, tmp_path: Path, mode: str
) -> None:
    """stdio via `agentcoord mcp` under a `claude` parent: whoami gives that session and cwd."""
    project = tmp_path / "My Project"
    project.mkdir()
    params = StdioServerParameters(
        command=str(claude_bin),
        args=["--", sys.executable, "-m", "agentcoord", "mcp"],
        env=_shim_env(daemon, CLAUDE_CODE_SESSION_ID="sess-env-1"),
        cwd=str(project),
    )
    async with Client(params, mode=mode) as client:
        tools = await client.list_tools()
        assert "whoami" in {t.name for t in tools.tools}
        result = await client.call_tool("whoami", {})
    assert not result.is_error
    who = result.structured_content
    assert who is not None
    assert who["kind"] == "session"
    assert who["session"] == "sess-env-1"
    assert who["cwd"] == str(project)
    assert who["agent"] == "my-project-1"
    assert who["via"] == "unix"


async def test_stdio_session_id_from_sessions_file(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """Without CLAUDE_CODE_SESSION_ID the session id comes from ~/.claude/sessions/<pid>.json."""
    project = tmp_path / "proj"
    project.mkdir()
    params = StdioServerParameters(
        command=str(claude_bin),
        args=["--session-file", "sess-file-7", "--", sys.executable, "-m", "agentcoord", "mcp"],
        env=_shim_env(daemon),
        cwd=str(project),
    )
    async with Client(params, mode="legacy") as client:
        result = await client.call_tool("whoami", {})
    assert result.structured_content is not None
    assert result.structured_content["session"] == "sess-file-7"
    assert result.structured_content["agent"] == "proj-1"


async def test_whoami_ignores_claimed_identity(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """An `agent` argument cannot change who you are: whoami takes none and rejects it."""
    params = StdioServerParameters(
        command=str(claude_bin),
        args=["--", sys.executable, "-m", "agentcoord", "mcp"],
        env=_shim_env(daemon, CLAUDE_CODE_SESSION_ID="s-x"),
        cwd=str(tmp_path),
    )
    async with Client(params, mode="legacy") as client:
        result = await client.call_tool("whoami", {"agent": "someone-else"})
    assert result.is_error
    assert "unknown argument `agent`" in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_http_client_named_by_loopback_peer_ancestry(
    daemon: Daemon, claude_bin: Path, tmp_path: Path, mode: str
) -> None:
    """HTTP from a process under `claude`: the daemon maps the TCP peer to its pid and session."""
    project = tmp_path / "webapp"
    project.mkdir()
    out = subprocess.run(
        [
            str(claude_bin),
            "--session-file",
            f"sess-http-{mode}",
            "--",
            sys.executable,
            str(FAKES / "sdk_client.py"),
            f"{daemon.url}/mcp",
            mode,
        ],
        env=daemon.env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert "whoami" in seen["tools"]
    assert not seen["is_error"]
    assert seen["whoami"]["session"] == f"sess-http-{mode}"
    assert seen["whoami"]["cwd"] == str(project)
    assert seen["whoami"]["via"] == "http-peer"
    assert seen["whoami"]["agent"] == "webapp-1"
