"""The repository guards in the real Claude Code (docs/claims.md "Working-tree guard", "Folders
and globs", "Push guard"): the binary, set up by ``agentcoord setup claude``, drives Bash and
Write from the scripted model in a git repository where another live session (a stand-in
``claude`` in the same directory) works and holds claims; what the binary sends back to the
model, and the repository afterwards, show what was refused."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.claude.conftest import Claude
from tests.claude.model_api import Text, ToolUse, tool_results
from tests.conftest import Daemon
from tests.test_commitguard import git_env, setup_git
from tests.tools.session_helpers import finish, read_results
from tests.tools.test_commit_guard import _hold


def _bash(command: str) -> ToolUse:
    return ToolUse("Bash", {"command": command, "description": "git"})


def _git(cwd: Path, env: dict[str, str], *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


@contextmanager
def _peer(
    daemon: Daemon, claude_bin: Path, cwd: Path, calls: list[tuple[str, dict[str, Any]]]
) -> Iterator[str]:
    """Another live session in ``cwd`` that made ``calls``; its agent name."""
    proc = _hold(daemon, claude_bin, cwd, [*calls, ("whoami", {})])
    try:
        results = read_results(proc)
        assert not any(r.get("isError") for r in results), results
        yield results[-1]["structuredContent"]["agent"]
    finally:
        finish(proc)


def _repo(claude: Claude, env: dict[str, str]) -> Path:
    """The session's project as a repository on main with src/a.py and src/b.py committed."""
    root = claude.cwd
    _git(root, env, "init", "-q", "-b", "main")
    (root / "src").mkdir()
    for name in ("a.py", "b.py"):
        (root / "src" / name).write_text("v1\n")
    _git(root, env, "add", "src")
    _git(root, env, "commit", "-q", "-m", "init")
    return root


def test_a_sessions_checkout_and_add_all_under_a_live_peer_are_refused(
    daemon: Daemon, claude: Claude, claude_bin: Path
) -> None:
    """In a tree where another live session works and holds src/b.py: the real session's Bash
    ``git checkout -b other`` is refused naming the peer and the branch stays main; its
    ``git add -A`` is refused listing src/b.py; ``git add -- src/a.py`` runs, and only
    src/a.py is staged."""
    env = git_env(daemon.runtime_dir)
    root = _repo(claude, env)
    claim = ("claim", {"resource_key": "file:src/b.py"})
    with _peer(daemon, claude_bin, root, [("annotate", {"intent": "fixing b"}), claim]) as peer:
        (root / "src" / "a.py").write_text("mine\n")
        (root / "src" / "b.py").write_text("the peer's half-done work\n")
        claude.api.script(
            _bash("git checkout -q -b other"),
            _bash("git add -A"),
            _bash("git add -- src/a.py"),
            Text("done"),
        )
        run = claude.run("commit my work", "--allowedTools", "Bash")
    run.check()
    checkout, add_all, add_mine = tool_results(run.requests[-1])
    assert checkout.get("is_error"), checkout
    assert f"{peer}: works there" in checkout["text"], checkout
    assert "working on: fixing b" in checkout["text"], checkout
    assert add_all.get("is_error"), add_all
    assert f"src/b.py: {peer}" in add_all["text"], add_all
    assert "git add -- src/a.py" in add_all["text"], add_all
    assert not add_mine.get("is_error"), add_mine
    assert _git(root, env, "branch", "--show-current").strip() == "main"
    assert _git(root, env, "diff", "--cached", "--name-only").split() == ["src/a.py"]


def test_a_folder_claim_denies_a_write_to_a_new_file_in_it(
    daemon: Daemon, claude: Claude, claude_bin: Path
) -> None:
    """Another session holds the folder src/api/: the real session's Write of a new file in it
    is denied naming the folder and the holder, and the file is not created; a Write beside
    the folder goes through."""
    env = git_env(daemon.runtime_dir)
    root = _repo(claude, env)
    new, beside = root / "src" / "api" / "v2" / "routes.py", root / "src" / "apiclient.py"
    with _peer(daemon, claude_bin, root, [("claim", {"resource_key": "file:src/api/"})]) as peer:
        claude.api.script(
            ToolUse("Write", {"file_path": str(new), "content": "x = 1\n"}),
            ToolUse("Write", {"file_path": str(beside), "content": "y = 2\n"}),
            Text("done"),
        )
        run = claude.run("add the routes")
    run.check()
    denied, allowed = tool_results(run.requests[-1])
    assert denied.get("is_error"), denied
    assert f"is inside src/api/, which is claimed for writing by {peer}" in denied["text"]
    assert not new.exists()
    assert not allowed.get("is_error"), allowed
    assert beside.read_text() == "y = 2\n"


def test_a_push_of_a_claimed_file_is_refused(
    daemon: Daemon, claude: Claude, claude_bin: Path, tmp_path: Path
) -> None:
    """With the guards installed, a commit of src/a.py made (with the override) before a peer
    claimed it cannot be pushed by the real session's Bash ``git push``: the push guard
    refuses naming the file and the peer, and the remote keeps its old main."""
    env = git_env(daemon.runtime_dir)
    root = _repo(claude, env)
    origin = tmp_path / "origin.git"
    _git(tmp_path, env, "init", "-q", "--bare", str(origin))
    _git(root, env, "remote", "add", "origin", str(origin))
    _git(root, env, "push", "-q", "origin", "main")
    assert setup_git(env, str(root)).returncode == 0
    (root / "src" / "a.py").write_text("changed\n")
    _git(root, env, "add", "src/a.py")
    _git(root, dict(env, AGENTCOORD_ALLOW_CLAIMED="1"), "commit", "-q", "-m", "change a")
    before = _git(origin, env, "rev-parse", "main")
    # The peer works elsewhere and claims the file by its absolute path.
    with _peer(
        daemon, claude_bin, tmp_path, [("claim", {"resource_key": str(root / "src" / "a.py")})]
    ) as peer:
        claude.api.script(_bash("git push origin main"), Text("done"))
        run = claude.run("push my work", "--allowedTools", "Bash")
    run.check()
    (pushed,) = tool_results(run.requests[-1])
    assert pushed.get("is_error"), pushed
    assert "push refused: 1 file the pushed commits change is claimed" in pushed["text"]
    assert f"src/a.py: {peer}" in pushed["text"], pushed
    assert _git(origin, env, "rev-parse", "main") == before
