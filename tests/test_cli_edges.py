"""The CLI's daily edges against a real daemon: ``--version``, help without markup, "created"
against "updated", prompts with their whole question and context, claim keys as ``repo:path``
and one way of writing a time (docs/architecture.md "Times and keys shown to people")."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import Daemon, console_link
from tests.console.test_console_login import _path, _request
from tests.tools.conftest import AgentProc

AGENTCOORD = [sys.executable, "-m", "agentcoord"]
# local time with its zone: "2026-12-02 14:03:07 CET" (a zone's abbreviation or its offset)
TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?:[A-Z]{2,5}|[+-]\d{4})"
_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def _cli(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGENTCOORD, *args], env=env, capture_output=True, text=True, timeout=30, cwd=cwd
    )


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([*_GIT, *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def test_version_flag_is_the_version(daemon: Daemon) -> None:
    """`agentcoord --version` exits 0 with `agentcoord version`'s line, the daemon's version."""
    flag = _cli(daemon.env, "--version")
    assert flag.returncode == 0, flag.stderr
    assert flag.stdout == _cli(daemon.env, "version").stdout
    status = json.loads(_cli(daemon.env, "status", "--json").stdout)
    assert flag.stdout == f"agentcoord {status['version']}\n"


def _commands(env: dict[str, str]) -> list[list[str]]:
    """Every command `agentcoord -h` lists (and setup's clients), as argv for its help."""
    top = _cli(env, "-h").stdout
    names = re.search(r"\{([a-z,-]+)\}", top)
    assert names is not None, top
    # `claude` passes every argument to Claude Code: its -h is Claude Code's.
    out = [[n, "-h"] for n in names.group(1).split(",") if n != "claude"]
    return [["-h"], *out, ["setup", "claude", "-h"], ["setup", "git", "-h"]]


def test_help_has_no_markup(daemon: Daemon) -> None:
    """Each command's -h is plain text: no RST or Markdown backticks, no Sphinx roles."""
    for argv in _commands(daemon.env):
        out = _cli(daemon.env, *argv)
        assert out.returncode == 0, (argv, out.stderr)
        assert out.stdout.startswith("usage: agentcoord"), (argv, out.stdout)
        assert "`" not in out.stdout, (argv, out.stdout)
        assert not re.search(r":(?:func|data|class|meth):", out.stdout), (argv, out.stdout)


def test_setup_claude_says_created_then_unchanged_then_updated(tmp_path: Path) -> None:
    """A first `setup claude` in an empty home says "created" for each file it wrote, a second
    "unchanged"; after `--remove` on a file the user keeps, setup says "updated"."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AGENTCOORD_", "CLAUDE"))},
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "AGENTCOORD_STATE_DIR": str(tmp_path / "state"),
    }
    settings = tmp_path / ".claude" / "settings.json"
    servers = tmp_path / ".claude.json"  # the user config beside ~/.claude
    first = _cli(env, "setup", "claude")
    assert first.returncode == 0, first.stderr
    assert f"created {settings}" in first.stdout.splitlines()
    assert f"created {servers}" in first.stdout.splitlines()
    assert "updated" not in first.stdout
    second = _cli(env, "setup", "claude").stdout.splitlines()
    assert f"unchanged {settings}" in second
    assert f"unchanged {servers}" in second
    _cli(env, "setup", "claude", "--remove")
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"theme": "dark"}))
    third = _cli(env, "setup", "claude").stdout.splitlines()
    assert f"updated {settings}" in third
    assert f"created {servers}" in third


def _wait_prompts(d: Daemon) -> list[dict[str, Any]]:
    import time

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        prompts = json.loads(_cli(d.env, "prompts", "--json").stdout)["prompts"]
        if prompts:
            return prompts  # type: ignore[no-any-return]
    raise AssertionError(f"no prompt appeared:\n{d.log()}")


QUESTION = (
    "Ship release 1.4 to production now, with the database migration that renames the "
    "billing_accounts table and rewrites every invoice row, before the Friday freeze begins?"
)
CONTEXT = (
    "The migration took 41 minutes on staging.\n"
    "Rollback needs the snapshot from 02:00; support is on call until 18:00 and has been told."
)


def test_prompts_show_the_whole_question_and_its_context(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """`agentcoord prompts` wraps the question and its context, never cuts them; the asked
    time is in the one format; the console's snapshot carries both."""
    agent = AgentProc(daemon, claude_bin, tmp_path / "work")
    try:
        pending = agent.start("escalate", question=QUESTION, context=CONTEXT, timeout_secs=60)
        (prompt,) = _wait_prompts(daemon)
        out = _cli(daemon.env, "prompts")
        assert out.returncode == 0, out.stderr
        assert "..." not in out.stdout
        header, *rows = out.stdout.splitlines()
        assert header.split() == [
            "ID",
            "KIND",
            "FROM",
            "ASKED",
            "QUESTION",
            "CONTEXT",
            "CHOICES",
            "PHASE",
        ]
        # The question column, read down the rows, is the whole question.
        start = header.index("QUESTION")
        end = header.index("CONTEXT")
        question = " ".join(r[start:end].strip() for r in rows if r[start:end].strip())
        assert question == QUESTION
        context = " ".join(r[end:].split("  ")[0].strip() for r in rows if r[end:].strip())
        assert context == CONTEXT.replace("\n", " ")
        assert re.search(TIME, rows[0]), rows[0]
        from agentcoord.cli.views import CELL_WIDTH

        assert end - start <= CELL_WIDTH + 2  # wrapped onto rows, not one long line
        _, headers, _ = _request(daemon, "GET", _path(daemon, console_link(daemon)))
        cookie = {"cookie": headers["set-cookie"].split(";")[0]}
        state = json.loads(_request(daemon, "GET", "/console/api/state", cookie)[2])
        (shown,) = state["prompts"]
        assert (shown["question"], shown["context"]) == (QUESTION, CONTEXT)
        assert _cli(daemon.env, "answer", prompt["id"], "later").returncode == 0
        agent.result(pending)
    finally:
        agent.close()


def test_claims_and_audit_show_repo_path_in_one_time_format(
    daemon_factory: Any, claude_bin: Path, tmp_path: Path
) -> None:
    """A file claim from a linked worktree shows as `app:src/app.py (worktree app-fix, branch
    fix)` in `claims` and the console's claims, `app:src/app.py` in audit text and the console's
    agents, never its internal key;
    --json keeps the real key; every time shown is local time with the zone (TZ honoured)."""
    d = daemon_factory(TZ="Europe/Berlin").start()
    app = tmp_path / "app"
    (app / "src").mkdir(parents=True)
    _git(app, "init", "-q", "-b", "main")
    (app / "README").write_text("x\n")
    _git(app, "add", "README")
    _git(app, "commit", "-q", "-m", "init")
    _git(app, "worktree", "add", "-q", "-b", "fix", str(tmp_path / "app-fix"))
    agent = AgentProc(d, claude_bin, tmp_path / "app-fix")
    try:
        agent.call("claim", resource_key="file:src/app.py", mode="write", ttl="10m")
        real = f"file:{os.path.realpath(app / '.git')}//src/app.py"
        data = json.loads(_cli(d.env, "claims", "--json").stdout)
        (row,) = data["claims"]
        assert row["resource_key"] == real
        claims = _cli(d.env, "claims")
        assert claims.returncode == 0, claims.stderr
        assert "file:" not in claims.stdout
        line = claims.stdout.splitlines()[1]
        assert line.startswith("app:src/app.py (worktree app-fix, branch fix)  "), line
        assert re.search(TIME.replace("(?:[A-Z]{2,5}|[+-]\\d{4})", "CES?T"), line), line
        audit = _cli(d.env, "audit", "--type", "CLAIM_ACQUIRED")
        assert "file:" not in audit.stdout
        assert "resource_key=app:src/app.py" in audit.stdout
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CES?T  CLAIM_ACQUIRED", audit.stdout)
        _, headers, _ = _request(d, "GET", _path(d, console_link(d)))
        cookie = {"cookie": headers["set-cookie"].split(";")[0]}
        state = json.loads(_request(d, "GET", "/console/api/state?audit=1", cookie)[2])
        (shown,) = state["claims"]
        where = "app:src/app.py (worktree app-fix, branch fix)"
        assert (shown["resource_key"], shown["key"]) == (real, where)
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CES?T", shown["expires_at"])
        (mine,) = [a for a in state["agents"] if a["name"] == agent.name]
        assert mine["claims"] == ["app:src/app.py"]
        texts = [e["text"] for e in state["audit"] if e["type"] == "CLAIM_ACQUIRED"]
        assert texts == audit.stdout.splitlines()  # the console's line is the CLI's
    finally:
        agent.close()
