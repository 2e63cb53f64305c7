"""The real Claude Code's terminal UI under tmux, and what ``agentcoord agents`` says of it: a
permission dialog shows the session waiting for permission with the tool and its input (from
the PermissionRequest http hook); answering it in the terminal shows it working, then idle
when its turn ends (the session registry's status); with a standing approval the dialog
closes by itself and the session never shows waiting (docs/activity.md, docs/approvals.md)."""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.claude.conftest import Claude
from tests.claude.model_api import Text, ToolUse, tool_results
from tests.claude.test_channels import WAIT, Tmux, _poll, _seed
from tests.conftest import Daemon, cli_json


@contextlib.contextmanager
def _tui(claude: Claude, tmp_path: Path) -> Iterator[Tmux]:
    """``claude --permission-mode default`` in a tmux pane, ready for a prompt."""
    from tests.claude.conftest import VERSION

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    _seed(Path(claude.env["CLAUDE_CONFIG_DIR"]), claude.cwd, VERSION)
    env = dict(claude.env, TERM="xterm-256color")
    launch = [str(claude.binary), "--permission-mode", "default"]
    command = "cd {} && exec env -i {} {}".format(
        shlex.quote(str(claude.cwd)),
        " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()),
        " ".join(shlex.quote(a) for a in launch),
    )
    tmux = Tmux(tmp_path / "tmux.sock")
    tmux.run("new-session", "-d", "-s", "s", "-x", "200", "-y", "50", command)
    try:
        tmux.wait_screen("? for shortcuts")
        yield tmux
    finally:
        tmux.run("kill-server")


def _type(tmux: Tmux, text: str) -> None:
    tmux.run("send-keys", "-t", "s", "-l", text)
    tmux.run("send-keys", "-t", "s", "Enter")


def _state(d: Daemon, agent: str) -> str:
    [row] = [r for r in cli_json(d, "agents")["agents"] if r["name"] == agent]
    return str(row.get("state") or "")


def _agent_in(d: Daemon, cwd: Path) -> str:
    """The session agent whose working directory is ``cwd`` (the one session there)."""

    def found() -> str:
        out = subprocess.run(
            [sys.executable, "-m", "agentcoord", "agents", "--json"],
            env=d.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        for row in json.loads(out.stdout or "{}").get("agents", []):
            if row["name"].startswith(cwd.name + "-"):
                return str(row["name"])
        return ""

    return _poll(found, f"the session agent of {cwd}")


def _press_yes(tmux: Tmux, marker: Path) -> bool:
    """Whether the command ran; while the dialog is still on screen, press Enter (its first
    choice, Yes) again: a key that arrives while the dialog is still being drawn is dropped on
    a loaded machine, and one Enter more in the emptied prompt box does nothing."""
    if marker.exists():
        return True
    if "Do you want to proceed?" in tmux.screen():
        tmux.run("send-keys", "-t", "s", "Enter")
    return False


def test_a_dialog_shows_waiting_for_permission_until_it_is_answered(
    daemon: Daemon, claude: Claude, tmp_path: Path
) -> None:
    """While the Bash dialog is open the session is "waiting for permission: Bash touch
    marker"; Enter on "Yes" runs it and the session works, then is idle after its turn."""
    claude.api.script(
        ToolUse("Bash", {"command": "touch marker", "description": "Mark"}), Text("Done.")
    )
    with _tui(claude, tmp_path) as tmux:
        _type(tmux, "make the marker")
        agent = _agent_in(daemon, claude.cwd)
        try:
            _poll(
                lambda: _state(daemon, agent) == "waiting for permission: Bash touch marker",
                "the waiting state",
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {_state(daemon, agent)!r}\n{tmux.screen()}") from None
        tmux.wait_screen("Do you want to proceed?")
        _poll(lambda: _press_yes(tmux, claude.cwd / "marker"), "the command to run")
        _poll(lambda: _state(daemon, agent) == "idle", "idle after the turn")
        after = claude.api.wait_requests(2, timeout=WAIT)[1]
        assert not any(r.get("is_error") for r in tool_results(after))


def test_a_standing_approval_closes_the_dialog_with_no_key(
    daemon: Daemon, claude: Claude, tmp_path: Path
) -> None:
    """With ``allow 'Bash(touch:*)'`` the terminal's dialog closes by itself, the command runs,
    and the approval counts one use."""
    granted = subprocess.run(
        [sys.executable, "-m", "agentcoord", "allow", "Bash(touch:*)"],
        env=claude.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert granted.returncode == 0, granted.stderr
    claude.api.script(
        ToolUse("Bash", {"command": "touch marker", "description": "Mark"}), Text("Done.")
    )
    with _tui(claude, tmp_path) as tmux:
        _type(tmux, "make the marker")
        try:
            _poll(lambda: (claude.cwd / "marker").exists(), "the command to run with no key")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{tmux.screen()}") from None
        claude.api.wait_requests(2, timeout=WAIT)
    [row] = cli_json(daemon, "allow", "--list")
    assert row["uses"] == 1
    assert not cli_json(daemon, "audit", "--type", "SESSION_WAITING")["events"]
