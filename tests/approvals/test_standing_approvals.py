"""Standing approvals against the real daemon: ``agentcoord allow`` grants, lists and revokes;
the PermissionRequest http hook answers "allow" for every session a rule covers (all, one
repository's worktrees, one session), never past the session's own deny rules, and each
grant, use and revoke is audited (docs/approvals.md)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.approvals.hooksession import ALLOW, Session
from tests.conftest import Daemon, cli_json
from tests.tools.conftest import cli


def _git_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    for args in (
        ["init", "-q", "-b", "main"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "0"],
    ):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, timeout=30)
    return path


def _allow(d: Daemon, *args: str) -> Any:
    return cli_json(d, "allow", *args)


def _events(d: Daemon, kind: str) -> list[dict[str, Any]]:
    return cli_json(d, "audit", "--type", kind)["events"]  # type: ignore[no-any-return]


def test_allow_grants_lists_and_revokes_from_the_cli(daemon: Daemon) -> None:
    """A grant is listed with its rule, scope, expiry and granter, and the plain output names
    how to revoke it; a revoke removes it; both are audited as the human's, from the CLI."""
    out = cli(daemon, "allow", "Bash(npm test:*)", "--for", "10m")
    assert out.returncode == 0, out.stderr
    approval_id = re.search(r"--revoke (\w+)", out.stdout)
    assert approval_id, out.stdout
    assert "allowed Bash(npm test:*) for all sessions until" in out.stdout
    [row] = _allow(daemon, "--list")
    assert row["id"] == approval_id.group(1)
    assert (row["rule"], row["scope"], row["uses"]) == ("Bash(npm test:*)", "all", 0)
    assert row["granted_by"].startswith("human:")
    assert 590 <= row["expires_at"] - row["granted_at"] <= 600
    listed = cli(daemon, "allow", "--list")
    assert "Bash(npm test:*)" in listed.stdout
    assert "all sessions" in listed.stdout
    revoked = cli(daemon, "allow", "--revoke", row["id"])
    assert revoked.returncode == 0, revoked.stderr
    assert f"revoked {row['id']}" in revoked.stdout
    assert _allow(daemon, "--list") == []
    [granted] = _events(daemon, "APPROVAL_GRANTED")
    [gone] = _events(daemon, "APPROVAL_REVOKED")
    for event in (granted, gone):
        assert event["id"] == row["id"]
        assert event["how"] == "cli"
        assert event["agent"].startswith("human:")


def test_bad_grants_are_refused_with_a_reason(daemon: Daemon, tmp_path: Path) -> None:
    """A rule not in Claude Code's syntax, a bad duration, a directory outside git, an
    unknown session and an unknown id are each refused with a line that says why."""
    outside = tmp_path / "plain"
    outside.mkdir()
    for args, said in (
        (["Bash("], "not a permission rule"),
        (["Bash(ls)", "--for", "soon"], "duration"),
        (["Bash(ls)", "--repo", str(outside)], "is not in a git repository"),
        (["Bash(ls)", "--session", "nobody-9"], "no session named 'nobody-9'"),
        (["--revoke", "feedbeef"], "no approval 'feedbeef'"),
        (["--list", "--for", "1h"], "go with a PATTERN"),
    ):
        out = cli(daemon, "allow", *args)
        assert out.returncode == 1, (args, out.stdout)
        assert said in out.stderr, (args, out.stderr)
    assert _allow(daemon, "--list") == []


def test_one_grant_answers_every_session_until_it_is_revoked(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """With one grant for all sessions, two sessions' matching requests are allowed with no
    dialog, a request the rule does not cover gets no decision; each use is counted and
    audited with the session's name; after the revoke, nobody's request is answered."""
    one = Session(daemon, claude_bin, tmp_path / "one")
    two = Session(daemon, claude_bin, tmp_path / "two")
    try:
        assert one.asks("Bash", command="npm test") is None  # nothing granted yet
        [row] = [_allow(daemon, "Bash(npm test:*)")]
        assert one.asks("Bash", command="npm test") == ALLOW
        assert two.asks("Bash", command="npm test -- --grep x") == ALLOW
        assert two.asks("Bash", command="npm test && rm -rf /") is None
        assert one.asks("Write", file_path=str(one.cwd / "x")) is None
        [listed] = _allow(daemon, "--list")
        assert listed["uses"] == 2
        assert listed["last_used"]
        used = _events(daemon, "APPROVAL_USED")
        assert sorted(e["agent"] for e in used) == sorted([one.name, two.name])
        assert {e["input"] for e in used} == {"npm test", "npm test -- --grep x"}
        assert all(e["id"] == row["id"] and e["tool"] == "Bash" for e in used)
        _allow(daemon, "--revoke", row["id"])
        assert one.asks("Bash", command="npm test") is None
        assert two.asks("Bash", command="npm test") is None
    finally:
        one.close()
        two.close()


def test_a_repository_grant_covers_its_worktrees_and_no_other_repository(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """``--repo DIR`` covers sessions anywhere in that repository, in any of its worktrees,
    and no session of another repository or outside git; path rules start at its top."""
    app = _git_repo(tmp_path / "app")
    other = _git_repo(tmp_path / "other")
    tree = tmp_path / "app-fix"
    subprocess.run(
        ["git", "worktree", "add", "-q", "-b", "fix", str(tree)],
        cwd=app,
        check=True,
        capture_output=True,
        timeout=30,
    )
    (app / "sub").mkdir()
    _allow(daemon, "Bash(make:*)", "--repo", str(app / "sub"))  # a subdirectory names it too
    _allow(daemon, "Edit(/docs/**)", "--repo", str(app))
    sessions = {
        "app": Session(daemon, claude_bin, app / "sub"),
        "worktree": Session(daemon, claude_bin, tree),
        "other": Session(daemon, claude_bin, other),
        "outside": Session(daemon, claude_bin, tmp_path / "loose"),
    }
    try:
        got = {where: s.asks("Bash", command="make all") for where, s in sessions.items()}
        assert got == {"app": ALLOW, "worktree": ALLOW, "other": None, "outside": None}
        worktree = sessions["worktree"]
        assert worktree.asks("Edit", file_path=str(tree / "docs" / "a.md")) == ALLOW
        assert worktree.asks("Edit", file_path=str(tree / "src" / "a.py")) is None
    finally:
        for s in sessions.values():
            s.close()
    [row] = [r for r in _allow(daemon, "--list") if r["rule"] == "Bash(make:*)"]
    assert (row["scope"], row["label"]) == ("repository", "app")


def test_a_session_grant_covers_that_session_alone(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """``--session NAME`` answers that session's requests and no other session's."""
    mine = Session(daemon, claude_bin, tmp_path / "mine")
    theirs = Session(daemon, claude_bin, tmp_path / "theirs")
    try:
        _allow(daemon, "WebFetch(domain:example.com)", "--session", mine.name)
        assert mine.asks("WebFetch", url="https://example.com/x") == ALLOW
        assert theirs.asks("WebFetch", url="https://example.com/x") is None
        assert mine.asks("WebFetch", url="https://example.org/x") is None
    finally:
        mine.close()
        theirs.close()


def test_the_sessions_own_deny_and_ask_rules_win(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """A call a project's deny rule or the user's ask rule covers is never allowed by a
    standing approval (no decision: Claude Code decides as it would); the hold is audited
    with the rule and the file that held it."""
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Bash(npm test -- --update:*)"]}})
    )
    user = Path(daemon.env["CLAUDE_CONFIG_DIR"])
    user.mkdir(parents=True, exist_ok=True)
    (user / "settings.json").write_text(
        json.dumps({"permissions": {"ask": ["Bash(npm test -- --ci)"]}})
    )
    _allow(daemon, "Bash(npm test:*)")
    session = Session(daemon, claude_bin, project)
    try:
        assert session.asks("Bash", command="npm test") == ALLOW
        assert session.asks("Bash", command="npm test -- --update snapshots") is None
        assert session.asks("Bash", command="npm test -- --ci") is None
    finally:
        session.close()
    held = _events(daemon, "APPROVAL_HELD")
    assert [(e["by_rule"], Path(e["source"]).name) for e in held] == [
        ("Bash(npm test -- --update:*)", "settings.json"),
        ("Bash(npm test -- --ci)", "settings.json"),
    ]
    assert str(project) in held[0]["source"]
    assert str(user) in held[1]["source"]


def test_an_agent_may_not_grant(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> None:
    """``agentcoord allow`` run by an agent's process (under a claude) is refused, token or
    not, and grants nothing."""
    work = tmp_path / "agent"
    work.mkdir()
    out = subprocess.run(
        [str(claude_bin), "--", sys.executable, "-m", "agentcoord", "allow", "Bash"],
        env=daemon.env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1
    assert "an agent's process is never the human" in out.stderr
    assert _allow(daemon, "--list") == []
