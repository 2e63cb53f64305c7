"""Through the real daemon, an MCP server started by a process of each other CLI's shape (a
stand-in named ``codex``, ``gemini`` or ``opencode``) is that CLI's session agent, not refused;
it ends when that process exits; one under ``codex app-server`` is refused with the switch that
avoids it (docs/other-clis.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agentops.conftest import stored, wait_for
from tests.conftest import FAKES, Daemon
from tests.tools.conftest import AgentProc


def _standin(tmp_path: Path, name: str) -> Path:
    """An executable named ``name`` (its process name) that runs what follows ``--``."""
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!{sys.executable}\n" + (FAKES / "cli_standin.py").read_text())
    path.chmod(0o755)
    return path


@pytest.fixture
def opened() -> Iterator[list[AgentProc]]:
    made: list[AgentProc] = []
    yield made
    for agent in made:
        agent.close()


@pytest.mark.parametrize("cli", ["codex", "gemini", "opencode"])
def test_each_cli_is_a_session_of_its_kind_that_ends_with_its_process(
    daemon: Daemon, tmp_path: Path, opened: list[AgentProc], cli: str
) -> None:
    """whoami under the CLI's process answers a session agent of that kind, named after its
    cwd; when the process exits the agent is Ended."""
    agent = AgentProc(daemon, _standin(tmp_path, cli), tmp_path / "work" / f"{cli}-app")
    opened.append(agent)
    me = agent.call("whoami")
    assert (me["kind"], me["session_kind"]) == ("session", cli), me
    assert me["agent"].startswith(f"{cli}-app-"), me
    assert me["cwd"] == str(tmp_path / "work" / f"{cli}-app")
    agent.close()
    wait_for(
        lambda: (
            (stored(daemon, "agents", me["agent"]) or {}).get("status", {}).get("phase") == "Ended"
        ),
        what=f"{me['agent']} to end",
    )


def test_an_mcp_server_under_codex_app_server_is_refused(daemon: Daemon, tmp_path: Path) -> None:
    """Codex's shared app-server may serve several sessions: its MCP server is refused with
    -32001 naming ``--disable daemon_auto_start``, never taken for one session."""
    codex = _standin(tmp_path, "codex")
    proxy = [sys.executable, str(FAKES / "mcp_proxy.py"), str(daemon.socket)]
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami"}}
    proc = subprocess.Popen(
        [str(codex), "app-server", "--", *proxy],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=daemon.env,
        cwd=tmp_path,
        text=True,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(call) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())  # the answer, before the input ends
    finally:
        proc.stdin.close()
        proc.wait(30)
        proc.stdout.close()
    assert reply["error"]["code"] == -32001, reply
    assert "shared app-server" in reply["error"]["message"], reply
    assert "--disable daemon_auto_start" in reply["error"]["message"], reply
