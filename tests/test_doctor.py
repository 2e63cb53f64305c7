"""`agentcoord doctor` reports each check with a fix, against a real daemon and real files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agentcoord.claude_setup import setup_claude
from tests.conftest import Daemon


def _doctor(env: dict[str, str]) -> tuple[int, dict[str, dict[str, object]]]:
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "doctor", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return out.returncode, {c["name"]: c for c in json.loads(out.stdout)}


def test_doctor_without_daemon_or_setup(tmp_path: Path) -> None:
    """No daemon and no Claude setup: those checks fail and each names its fix."""
    from tests.conftest import make_env

    env = make_env(tmp_path, HOME=str(tmp_path))
    code, checks = _doctor(env)
    assert code == 1
    assert checks["daemon"]["ok"] is False
    assert "agentcoord serve" in str(checks["daemon"]["fix"])
    assert checks["hooks"]["ok"] is False
    assert checks["hooks"]["fix"] == "agentcoord setup claude"
    assert checks["nats"]["ok"] is True


def test_doctor_sees_daemon_socket_and_hooks(daemon: Daemon, tmp_path: Path) -> None:
    """With a running daemon and setup done, the daemon, socket, server and hooks checks pass."""
    home = tmp_path / "home"
    claude_dir = Path(daemon.env["CLAUDE_CONFIG_DIR"])
    setup_claude(home, claude_dir, "agentcoord")
    _, checks = _doctor(dict(daemon.env, HOME=str(home)))
    for name in ("daemon", "socket", "runtime dir", "mcp server", "hooks", "bubblewrap"):
        assert checks[name]["ok"] is True, checks[name]
