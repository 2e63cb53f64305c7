"""`agentcoord doctor` reports each check with a fix, against a real daemon and real files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentcoord.claude.configure import setup_claude
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
    setup_claude(home, claude_dir, "agentcoord", http_addr=daemon.http_addr)
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


def test_profile_backend_missing_is_info_while_local_agents_are_off(
    daemon_factory: Callable[..., Daemon],
) -> None:
    """With local agents off, a profile whose backend is not installed is info, not a
    failure (and it names what to do when they are turned on); with them on, it fails."""
    runner = {"AGENTCOORD_RUNNER_COMMAND": "agentcoord-test-no-such-runner -p"}
    off = daemon_factory("off", **runner).start()
    code, checks = _doctor(off.env)
    profile = checks["profile default"]
    assert profile["ok"] is True, profile
    assert profile["info"] is True
    assert "local agents are off" in str(profile["detail"])
    assert "agentcoord-test-no-such-runner is not installed" in str(profile["detail"])
    assert "AGENTCOORD_LOCAL_AGENTS_ENABLED=1" in str(profile["fix"])
    text = subprocess.run(
        [sys.executable, "-m", "agentcoord", "doctor"],
        env=off.env,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert any(line.startswith("info  profile default") for line in text.splitlines()), text
    on = daemon_factory("on", AGENTCOORD_LOCAL_AGENTS_ENABLED="1", **runner).start()
    code, checks = _doctor(on.env)
    assert code == 1
    assert checks["profile default"]["ok"] is False, checks["profile default"]
    assert checks["profile default"]["info"] is False


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_doctor_says_restart_when_bubblewrap_came_after_the_daemon(
    daemon_factory: Callable[..., Daemon],
) -> None:
    """A daemon started where bwrap was not on PATH runs with sandbox none; once bwrap is
    there, doctor's bubblewrap check passes and a failing check says a restart is needed."""
    bare = str(Path(sys.executable).parent)  # the interpreter and nats-server, no bwrap
    d = daemon_factory("d", PATH=bare).start()
    status = subprocess.run(
        [sys.executable, "-m", "agentcoord", "status", "--json"],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert json.loads(status.stdout)["local_agents"]["sandbox"] == "none"
    code, checks = _doctor(dict(d.env, PATH=os.environ["PATH"]))
    assert code == 1
    assert checks["bubblewrap"]["ok"] is True
    running = checks["daemon sandbox"]
    assert running["ok"] is False, running
    assert "sandbox none" in str(running["detail"])
    assert "restart is needed" in str(running["detail"])
    assert "restart" in str(running["fix"])
    # Same machine as at its start: the daemon's sandbox agrees, and says which.
    _, same = _doctor(d.env)
    assert same["daemon sandbox"]["ok"] is True, same["daemon sandbox"]
