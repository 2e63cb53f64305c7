"""`agentcoord doctor` reports each check with a fix, against a real daemon and real files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
    for name in ("daemon", "socket", "runtime dir", "mcp server", "hooks"):
        assert checks[name]["ok"] is True, checks[name]
    # bubblewrap is a system package: where it is missing the check says how to install it
    # (test_doctor_without_bubblewrap_names_the_package), and no trial start is made.
    has_bwrap = shutil.which("bwrap") is not None
    assert checks["bubblewrap"]["ok"] is has_bwrap, checks["bubblewrap"]
    if has_bwrap:
        assert checks["sandbox"]["ok"] is True, checks["sandbox"]
        assert "state and runtime dirs hidden" in str(checks["sandbox"]["detail"])
    else:
        assert "sandbox" not in checks


def test_doctor_without_bubblewrap_names_the_package(tmp_path: Path) -> None:
    """With no bwrap on PATH, the bubblewrap check fails with the install command, and the
    sandbox trial is not claimed to pass."""
    from tests.conftest import make_env

    empty = tmp_path / "empty-bin"
    empty.mkdir()
    _, checks = _doctor(make_env(tmp_path, HOME=str(tmp_path), PATH=str(empty)))
    assert checks["bubblewrap"]["ok"] is False
    assert checks["bubblewrap"]["fix"] == "sudo apt-get install -y bubblewrap"
    assert "sandbox" not in checks


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_sandbox_trial_fails_when_the_interpreter_cannot_start_inside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runner interpreter the sandbox cannot start is reported as a failed trial, with the
    reason from inside, not as fine."""
    import os

    from agentcoord.localagents.sandbox import Sandbox, trial_run

    state = tmp_path / "state"
    state.mkdir()
    (state / "human.token").write_text("secret\n")
    sandbox = Sandbox(shutil.which("bwrap"), (state,))
    ok, detail = trial_run(sandbox, os.environ)
    assert ok, detail
    monkeypatch.setattr(sys, "executable", str(tmp_path / "gone" / "python"))
    ok, detail = trial_run(sandbox, os.environ)
    assert not ok
    assert "python" in detail
