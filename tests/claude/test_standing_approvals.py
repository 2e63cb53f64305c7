"""The real Claude Code with a standing approval: one ``agentcoord allow`` for a repository,
and two ``claude -p`` sessions in it each run the tool with no answer from anyone (the
PermissionRequest http hook allows it); after ``allow --revoke``, the next session's call is
denied, as ``-p`` denies a dialog nobody answers (docs/approvals.md)."""

from __future__ import annotations

import subprocess
import sys

from tests.claude.conftest import Claude, Run
from tests.claude.model_api import Text, ToolUse, tool_results
from tests.conftest import Daemon, cli_json


def _session(claude: Claude, name: str) -> Run:
    """One ``claude -p`` in the default permission mode (every Bash call that changes
    something asks), whose model touches ``name``."""
    claude.api.script(ToolUse("Bash", {"command": f"touch {name}"}), Text("done"))
    first = len(claude.api.requests)
    proc = subprocess.Popen(
        [
            str(claude.binary),
            "-p",
            f"create {name}",
            "--output-format",
            "json",
            "--permission-mode",
            "default",
        ],
        env=claude.env,
        cwd=claude.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return claude.finish(proc, first)


def _agentcoord(claude: Claude, *args: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", *args],
        env=claude.env,
        cwd=claude.cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out


def test_one_grant_runs_the_tool_in_two_sessions_and_a_revoke_ends_it(
    daemon: Daemon, claude: Claude
) -> None:
    """Without a grant the call is denied; with ``allow 'Bash(touch:*)' --repo .`` two
    sessions' calls run (the files exist, the results are no errors) and the grant counts
    two uses, each audited with its session; revoked, a third session's call is denied."""
    subprocess.run(["git", "init", "-q"], cwd=claude.cwd, check=True, timeout=30)
    before = _session(claude, "zero.txt")
    before.check()
    [refused] = tool_results(before.requests[-1])
    assert refused.get("is_error"), refused
    assert not (claude.cwd / "zero.txt").exists()

    _agentcoord(claude, "allow", "Bash(touch:*)", "--repo", ".", "--for", "10m")
    for name in ("one.txt", "two.txt"):
        run = _session(claude, name)
        run.check()
        [ran] = tool_results(run.requests[-1])
        assert not ran.get("is_error"), ran
        assert (claude.cwd / name).exists(), name
    [row] = cli_json(daemon, "allow", "--list")
    assert row["uses"] == 2
    used = cli_json(daemon, "audit", "--type", "APPROVAL_USED")["events"]
    assert [e["input"] for e in used] == ["touch one.txt", "touch two.txt"]
    assert len({e["agent"] for e in used}) == 2  # two sessions, two agents

    _agentcoord(claude, "allow", "--revoke", row["id"])
    after = _session(claude, "three.txt")
    after.check()
    [denied] = tool_results(after.requests[-1])
    assert denied.get("is_error"), denied
    assert not (claude.cwd / "three.txt").exists()
