"""``agentcoord top`` under tmux against the real daemon: it shows who waits on the human (a
prompt, a session waiting for permission with the tool and input), the agents with their
states and the claims; keys answer the prompt, grant a standing approval (the waiting call is
offered as the rule), open an agent's detail and revoke the approval (docs/top.md)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.approvals.hooksession import Session
from tests.conftest import Daemon, cli_json
from tests.tools.conftest import AgentProc

T = TypeVar("T")
WAIT = 60.0


def _poll(pred: Callable[[], T | None], what: str, screen: Callable[[], str]) -> T:
    """Poll ``pred`` until truthy (bounded; the pause only paces it); fails with the screen."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if value := pred():
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; the screen:\n{screen()}")


class Top:
    """``agentcoord top`` in a tmux pane on a private tmux server."""

    def __init__(self, d: Daemon, tmp_path: Path) -> None:
        self.sock = tmp_path / "tmux.sock"
        env = dict(d.env, TERM="xterm-256color")
        command = "exec env -i {} {}".format(
            " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()),
            " ".join(shlex.quote(a) for a in (sys.executable, "-m", "agentcoord", "top")),
        )
        self.tmux("new-session", "-d", "-s", "top", "-x", "200", "-y", "60", command)

    def tmux(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-S", str(self.sock), *args], capture_output=True, text=True, timeout=20
        )
        return out.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "top")

    def shows(self, *texts: str) -> str:
        def found() -> str:
            screen = self.screen()
            return screen if all(t in screen for t in texts) else ""

        return _poll(found, f"{texts} on the screen", self.screen)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "top", *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "top", "-l", text)

    def close(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def top(daemon: Daemon, tmp_path: Path) -> Iterator[Top]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    view = Top(daemon, tmp_path)
    try:
        yield view
    finally:
        view.close()


def _prompt_id(d: Daemon) -> Any:
    prompts = cli_json(d, "prompts")["prompts"]
    return prompts[0]["id"] if prompts else None


def test_top_shows_who_waits_and_its_keys_act(
    daemon: Daemon, top: Top, claude_bin: Path, tmp_path: Path
) -> None:
    """The prompt and the waiting session are at the top with what they wait for; ``a``
    answers the prompt (the asker gets the answer); ``g`` on the waiting session offers its
    call as the rule and grants it; ``d`` opens the agent's detail; ``x`` revokes."""
    asker = AgentProc(daemon, claude_bin, tmp_path / "asker")
    waiting = Session(daemon, claude_bin, tmp_path / "shop")
    try:
        ask = {"tool_name": "Bash", "tool_input": {"command": "make test"}}
        assert waiting.post("permission-request", ask) is None
        question = asker.start("escalate", question="Ship it?", approval=True, timeout_secs=120)
        _poll(lambda: _prompt_id(daemon), "the prompt", top.screen)
        top.shows("Waiting on you", "Ship it?", "waiting for permission: Bash make test")
        top.shows(asker.name, waiting.name)

        # The prompt is the first row of the focused table: answer it.
        top.keys("a")
        top.shows(f"answer {asker.name}: Ship it?")  # the answer box, not the key's label
        top.type("yes")
        top.keys("Enter")
        assert asker.result(question)["answered"] is True
        top.shows("answered")

        # The waiting session is now the first row: grant its call for every session.
        _poll(lambda: "Ship it?" not in top.screen(), "the prompt to leave", top.screen)
        top.keys("g")
        top.shows("Bash(make test:*)")  # its call offered as the rule
        top.type(" --for 30m")
        top.keys("Enter")
        [row] = _poll(lambda: cli_json(daemon, "allow", "--list"), "the grant", top.screen)
        assert row["rule"] == "Bash(make test:*)"
        assert 1790 <= row["expires_at"] - row["granted_at"] <= 1800
        top.shows("Standing approvals", row["id"])
        assert waiting.post("permission-request", ask) is not None  # now answered "allow"

        # The agent's detail, from the Agents table (asker-1, then shop-1: by name).
        top.keys("Tab")
        top.keys("Down")
        top.keys("d")
        detail = top.shows("(escape or q closes)")
        assert "phase: Running" in detail
        assert f'"fastverk.savvifi.com/dir": "{waiting.cwd.name}"' in detail
        top.keys("q")  # closes the detail (Escape would wait for a key sequence)
        _poll(lambda: "(escape or q closes)" not in top.screen(), "the detail to close", top.screen)

        # Revoke from the approvals table (after the claims and the conflicts).
        top.keys("Tab", "Tab", "Tab")
        top.keys("x")
        _poll(lambda: not cli_json(daemon, "allow", "--list"), "the revoke", top.screen)
        top.shows(f"revoked {row['id']}")
        top.keys("q")
    finally:
        waiting.close()
        asker.close()
