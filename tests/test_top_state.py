"""``agentcoord top`` under tmux against the real daemon, with two sessions in two worktrees
of one repository: the budgets line flags a reached ceiling, the claims table shows a claim
with its holder and mode, and "Conflicts between worktrees" shows the overlap the daemon
tracks (the rows the console shows), with both sessions and git's verdict; a dialog held for
the human is answered with ``a`` (docs/top.md)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.approvals.hooksession import ALLOW
from tests.approvals.hooksession import Session as HookSession
from tests.conftest import Daemon
from tests.test_top import Top
from tests.tools.test_repo_claims import Session, sessions, wt

__all__ = ["sessions", "wt"]  # the fixtures


@pytest.fixture
def daemon(daemon_factory: Any) -> Daemon:
    """A daemon with a ceiling of one live session (and five dollars a day)."""
    return daemon_factory(  # type: ignore[no-any-return]
        AGENTCOORD_MAX_SESSIONS="1", AGENTCOORD_MAX_SPEND_USD="5"
    ).start()


@pytest.fixture
def top(daemon: Daemon, tmp_path: Path) -> Iterator[Top]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    view = Top(daemon, tmp_path)
    try:
        yield view
    finally:
        view.close()


def test_top_shows_budgets_claims_and_tracked_conflicts(
    daemon: Daemon, wt: tuple[Path, Path], sessions: Callable[[Path], Session], top: Top
) -> None:
    """Two sessions over max_sessions 1: "sessions 2/1!"; A's claim of src/app.py is a row
    (key, A, write); both changing src/app.py is a conflict row naming both worktrees, their
    branches and sessions, the file and that git cannot tell yet."""
    w1, w2 = wt
    a, b = sessions(w1), sessions(w2)
    assert a.call("claim", resource_key="file:src/app.py", ttl="5m")["acquired"] is True
    (w1 / "src" / "app.py").write_text("a's change\n")
    (w2 / "src" / "app.py").write_text("b's change\n")

    screen = top.shows("budgets: sessions 2/1!", "spend $0.00/$5.00")
    assert "1 claims" in screen
    claims = top.shows("Claims", "app:src/app.py", "write")
    [row] = [line for line in claims.splitlines() if "app:src/app.py" in line]
    assert a.name in row
    conflicts = top.shows("Conflicts between worktrees", "git cannot tell yet")
    [line] = [ln for ln in conflicts.splitlines() if "git cannot tell yet" in ln]
    assert f"app (main) {a.name} and app-feature (feature) {b.name}" in line
    assert "src/app.py" in line
    assert "1 conflicts" in top.screen()


def test_a_answers_a_held_dialog(daemon_factory: Any, claude_bin: Path, tmp_path: Path) -> None:
    """With permission_hold set, the waiting session is marked held; ``a`` offers "allow"
    and Enter answers the session's hook "allow"."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    d = daemon_factory("held", AGENTCOORD_PERMISSION_HOLD="300").start()
    s = HookSession(d, claude_bin, tmp_path / "shop")
    view = Top(d, tmp_path)
    try:
        s.send("permission-request", {"tool_name": "Bash", "tool_input": {"command": "make"}})
        view.shows("waiting for permission: Bash make (held for you: a answers)")
        view.keys("a")
        view.shows(f"answer {s.name}'s dialog (allow or deny)")  # the box, "allow" in it
        view.keys("Enter")
        assert s.reply() == ALLOW
        view.shows(f"answered {s.name}'s dialog: allow")
    finally:
        view.close()
        s.close()
