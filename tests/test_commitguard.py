"""The git pre-commit guard without a daemon: ``agentcoord setup git`` installs into the hooks
dir git uses (shared by worktrees, or ``core.hooksPath``), chains the hook that was there and
gives it back on ``--remove``; with no daemon the commit goes through with one line saying so.
The daemon's part (the leases service's commit check) is tested purely here and end to end in
tests/tools/test_commit_guard.py. Real git in tmp_path throughout."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agentcoord.errors import ProtocolError
from agentcoord.gitguard.commitcheck import commit_params
from agentcoord.gitguard.commitguard import CHAINED, MARKER, hooks_dir
from agentcoord.kernel.caller import Caller
from agentcoord.leases import filekeys
from agentcoord.leases.commit import blockers, candidates
from agentcoord.leases.refusal import commit_refusal
from agentcoord.stores.kv import Holder

OVERRIDE_HINT = "AGENTCOORD_ALLOW_CLAIMED=1 git commit"


def git_env(runtime: Path, **extra: str) -> dict[str, str]:
    """An environment for git in tests: no user or system config, a fixed identity, and the
    daemon runtime dir the hook looks in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "AGENTCOORD_"))}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
        AGENTCOORD_RUNTIME_DIR=str(runtime),
    )
    env.update(extra)
    return env


def git(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def make_worktrees(root: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """A repository W1 with one commit and a linked worktree W2 on branch ``w2``."""
    w1, w2 = root / "W1", root / "W2"
    w1.mkdir(parents=True)
    assert git(w1, env, "init", "-q", "-b", "main").returncode == 0
    (w1 / "src").mkdir()
    for name in ("auth.py", "util.py"):
        (w1 / "src" / name).write_text("x = 1\n")
    git(w1, env, "add", "src")
    assert git(w1, env, "commit", "-q", "-m", "init").returncode == 0
    assert git(w1, env, "worktree", "add", "-q", "-b", "w2", str(w2)).returncode == 0
    return w1, w2


def setup_git(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``agentcoord setup git ARGS`` as the user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "git", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def change(worktree: Path, env: dict[str, str], *names: str) -> None:
    """Edit and stage ``names`` (paths from the worktree's top level)."""
    for name in names:
        path = worktree / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(path.read_text() + "y = 2\n" if path.exists() else "new\n")
    assert git(worktree, env, "add", *names).returncode == 0


def head(worktree: Path, env: dict[str, str]) -> str:
    return git(worktree, env, "rev-parse", "HEAD").stdout.strip()


PREVIOUS_HOOK = """#!/bin/sh
# the user's own pre-commit hook
echo "previous hook ran in $(pwd)" >> "$MARKER_FILE"
exit "${PREVIOUS_STATUS:-0}"
"""


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    env = git_env(tmp_path / "no-daemon")
    w1, w2 = make_worktrees(tmp_path, env)
    return w1, w2, env


def test_install_chains_the_existing_hook_and_remove_restores_it(
    repo: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    """Installed from a linked worktree, the guard lands in the common hooks dir, keeps the
    hook that was there (run first, by every worktree's commits), is idempotent, and
    ``--remove`` gives the old hook back byte for byte, with its mode."""
    w1, w2, env = repo
    hooks = w1 / ".git" / "hooks"
    old = hooks / "pre-commit"
    old.write_text(PREVIOUS_HOOK)
    old.chmod(0o750)
    before = (old.read_bytes(), old.stat().st_mode)
    marker = tmp_path / "ran"
    env = dict(env, MARKER_FILE=str(marker))

    first = setup_git(env, str(w2))
    assert first.returncode == 0, first.stderr
    assert "installed the commit guard" in first.stdout
    assert MARKER in old.read_text()
    assert ((hooks / CHAINED).read_bytes(), (hooks / CHAINED).stat().st_mode) == before
    again = setup_git(env, str(w1))
    assert again.returncode == 0, again.stderr
    assert "already there" in again.stdout
    assert (hooks / CHAINED).read_bytes() == before[0]  # not our own hook chained to itself

    change(w1, env, "src/util.py")
    done = git(w1, env, "commit", "-m", "in W1")
    assert done.returncode == 0, done.stderr
    change(w2, env, "src/auth.py")
    assert git(w2, env, "commit", "-m", "in W2").returncode == 0
    assert marker.read_text().splitlines() == [
        f"previous hook ran in {w1.resolve()}",
        f"previous hook ran in {w2.resolve()}",
    ]

    removed = setup_git(env, "--remove", str(w2))
    assert removed.returncode == 0, removed.stderr
    assert "restored the pre-commit hook" in removed.stdout
    assert (old.read_bytes(), old.stat().st_mode) == before
    assert not (hooks / CHAINED).exists()
    assert "no agentcoord commit guard" in setup_git(env, "--remove", str(w1)).stdout


def test_install_keeps_both_when_a_foreign_hook_replaced_ours(
    repo: tuple[Path, Path, dict[str, str]],
) -> None:
    """When another tool replaced our hook while the chained one is still there, setup refuses
    in one line and changes neither."""
    w1, _, env = repo
    hooks = w1 / ".git" / "hooks"
    (hooks / "pre-commit").write_text(PREVIOUS_HOOK)
    assert setup_git(env, str(w1)).returncode == 0
    (hooks / "pre-commit").write_text("#!/bin/sh\n# another tool's hook\n")
    out = setup_git(env, str(w1))
    assert out.returncode == 1
    assert "move one of them away" in out.stderr
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\n# another tool's hook\n"
    assert (hooks / CHAINED).read_text() == PREVIOUS_HOOK


def test_a_hook_that_reads_its_own_name_is_not_moved(
    repo: tuple[Path, Path, dict[str, str]],
) -> None:
    """A pre-commit hook that finds its work by its own file name (husky 4's) would do nothing
    under the chained name: setup refuses in one line and leaves it in place."""
    w1, _, env = repo
    hook = w1 / ".git" / "hooks" / "pre-commit"
    text = '#!/bin/sh\nhookName=`basename "$0"`\n. "$(dirname "$0")/husky.sh"\n'
    hook.write_text(text)
    out = setup_git(env, str(w1))
    assert out.returncode == 1
    assert "basename $0" in out.stderr
    assert hook.read_text() == text
    assert not (hook.parent / CHAINED).exists()


def test_a_failing_previous_hook_fails_the_commit(
    repo: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    """The chained hook runs first; its exit status is the guard's, and the commit does not
    happen."""
    w1, _, env = repo
    (w1 / ".git" / "hooks" / "pre-commit").write_text(PREVIOUS_HOOK)
    (w1 / ".git" / "hooks" / "pre-commit").chmod(0o755)
    env = dict(env, MARKER_FILE=str(tmp_path / "ran"), PREVIOUS_STATUS="3")
    assert setup_git(env, str(w1)).returncode == 0
    change(w1, env, "src/util.py")
    hook = subprocess.run(
        [str(w1 / ".git" / "hooks" / "pre-commit")], cwd=w1, env=env, capture_output=True
    )
    assert hook.returncode == 3
    start = head(w1, env)
    refused = git(w1, env, "commit", "-m", "nope")
    assert refused.returncode != 0
    assert head(w1, env) == start


def test_install_without_a_previous_hook_and_remove_deletes_it(
    repo: tuple[Path, Path, dict[str, str]],
) -> None:
    """With no hook before it, install writes an executable hook and --remove deletes it."""
    w1, _, env = repo
    hook = w1 / ".git" / "hooks" / "pre-commit"
    assert setup_git(env, str(w1)).returncode == 0
    assert os.access(hook, os.X_OK)
    assert not (hook.parent / CHAINED).exists()
    assert setup_git(env, "--remove", str(w1)).returncode == 0
    assert not hook.exists()


def test_core_hooks_path_is_where_the_guard_goes(
    repo: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    """With core.hooksPath set, the guard is installed there (where git looks), not in
    .git/hooks, and commits run it."""
    w1, _, env = repo
    custom = tmp_path / "shared-hooks"
    assert git(w1, env, "config", "core.hooksPath", str(custom)).returncode == 0
    assert hooks_dir(w1) == (custom.resolve(), False)
    assert setup_git(env, str(w1)).returncode == 0
    assert MARKER in (custom / "pre-commit").read_text()
    assert not (w1 / ".git" / "hooks" / "pre-commit").exists()
    change(w1, env, "src/util.py")
    done = git(w1, env, "commit", "-m", "x")
    assert done.returncode == 0
    assert "commit guard is off" in done.stderr  # the guard ran (and found no daemon)


def test_a_relative_core_hooks_path_is_refused(repo: tuple[Path, Path, dict[str, str]]) -> None:
    """A relative core.hooksPath (a directory of the worktree: the repository's own hooks or a
    hook manager's) is refused in one line, and nothing is written there."""
    w1, _, env = repo
    managed = w1 / ".husky" / "_"
    managed.mkdir(parents=True)
    (managed / "pre-commit").write_text('#!/bin/sh\n. "$(dirname "$0")/h"\n')
    assert git(w1, env, "config", "core.hooksPath", ".husky/_").returncode == 0
    out = setup_git(env, str(w1))
    assert out.returncode == 1
    assert "inside the worktree" in out.stderr
    assert len(out.stderr.splitlines()) == 1
    assert sorted(p.name for p in managed.iterdir()) == ["pre-commit"]
    assert (managed / "pre-commit").read_text() == '#!/bin/sh\n. "$(dirname "$0")/h"\n'


def test_no_daemon_allows_the_commit_with_one_line(
    repo: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    """No socket, or a dead daemon's socket file: the commit is made and the hook prints one
    line saying the guard is off."""
    w1, _, env = repo
    assert setup_git(env, str(w1)).returncode == 0
    stale = tmp_path / "stale"
    stale.mkdir()
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(stale / "agentcoord.sock"))  # bound, never listening: connection refused
    for runtime in (tmp_path / "no-daemon", stale):
        env = dict(env, AGENTCOORD_RUNTIME_DIR=str(runtime))
        change(w1, env, "src/util.py")
        start = head(w1, env)
        done = git(w1, env, "commit", "-q", "-m", "x")
        assert done.returncode == 0, done.stderr
        assert head(w1, env) != start
        lines = done.stderr.splitlines()
        assert len(lines) == 1, lines
        assert "commit guard is off" in lines[0]
        assert str(runtime / "agentcoord.sock") in lines[0]


def test_only_paths_that_may_be_claimed_are_resolved(
    repo: tuple[Path, Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Of a commit spanning 10 directories, only the paths named as a claimed key ends, and
    symlinks (whose key ends in their target's name), are resolved: git is asked once, about
    the first of their directories (the other inherits the worktree top's answer), and the
    claimed path gets the key the claim from the other worktree has."""
    w1, w2, _ = repo
    paths = [f"pkg{i % 10}/mod{i}.py" for i in range(100)]
    for path in paths:
        (w2 / path).parent.mkdir(exist_ok=True)
        (w2 / path).write_text("x\n")
    (w2 / "pkg3" / "link.py").symlink_to("mod3.py")
    paths.append("pkg3/link.py")
    claimed = filekeys.FileKeys().file_key(str(w1 / "pkg7" / "mod57.py"), None).key
    keys = filekeys.FileKeys()  # nothing known yet
    asked: list[str] = []
    real = subprocess.run

    def counting(argv: list[str], **kw: object) -> object:
        if argv[1:2] == ["rev-parse"]:
            asked.append(str(kw.get("cwd")))
        return real(argv, **kw)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "run", counting)
    try:
        got = candidates(paths, str(w2), {claimed, "file:/elsewhere/.git//pkg1/x.py"})
        assert got == ["pkg7/mod57.py", "pkg3/link.py"]
        assert keys.file_keys(got, str(w2))[0].key == claimed
    finally:
        keys.clear()
    assert asked == [str((w2 / "pkg7").resolve())]


def test_setup_git_outside_a_repository_fails_in_one_line(tmp_path: Path) -> None:
    """``setup git`` on a directory that is no git repository exits 1 naming it."""
    out = setup_git(git_env(tmp_path), str(tmp_path))
    assert out.returncode == 1
    assert out.stderr.startswith("agentcoord: ")
    assert len(out.stderr.splitlines()) == 1


# ---- the daemon's decision (leases/commit.py), pure ----------------------------------------


def _holder(agent: str, mode: str = "write", purpose: str = "") -> Holder:
    return Holder(
        agent=agent,
        mode=mode,  # type: ignore[arg-type]
        ttl=300.0,
        acquired=1000.0,
        expires=1300.0,
        token=7,
        purpose=purpose,
    )


SESSION = Caller("session", "w2-1", "unix")
NOBODY = Caller("anonymous", "anonymous", "unix")


@pytest.mark.unit
def test_only_others_write_claims_on_staged_keys_block() -> None:
    """Write claims of others on a staged key block, with their purpose and focus; the
    committer's own, read and intent claims, and claims on other keys do not; a legacy key
    blocks through its alias."""
    live = [
        ("file:/r/.git//a.py", _holder("w1-1", purpose="rewriting auth")),
        ("file:/r/.git//a.py", _holder("w2-1")),  # the committer's own
        ("file:/r/.git//b.py", _holder("w1-1", "read")),
        ("file:/r/.git//b.py", _holder("w3-1", "intent")),
        ("file:/r/.git//c.py", _holder("w3-1")),  # not staged
        ("file:/w1/d.py", _holder("w3-1")),  # stored under an absolute path
    ]
    wanted = {
        "file:/r/.git//a.py": "a.py",
        "file:/r/.git//b.py": "b.py",
        "file:/r/.git//d.py": "d.py",
    }
    aliases = {"file:/w1/d.py": "file:/r/.git//d.py"}
    found = blockers(live, wanted, SESSION, lambda agent: f"focus of {agent}", aliases)
    assert [(b.path, b.holder.agent, b.intent) for b in found] == [
        ("a.py", "w1-1", "rewriting auth; focus of w1-1"),
        ("d.py", "w3-1", "focus of w3-1"),
    ]


@pytest.mark.unit
def test_an_anonymous_committer_is_blocked_by_every_write_claim() -> None:
    """A commit nobody can be attributed to owns no claim: every write claim blocks it, and
    the refusal says why."""
    live = [("file:/r/.git//a.py", _holder("anonymous")), ("file:/r/.git//a.py", _holder("w1-1"))]
    found = blockers(live, {"file:/r/.git//a.py": "a.py"}, NOBODY, lambda _: "")
    assert [b.holder.agent for b in found] == ["anonymous", "w1-1"]
    text = commit_refusal(found, NOBODY, 1000.0 + 125)
    assert "any agent's write claim blocks it" in text


@pytest.mark.unit
def test_the_refusal_names_holder_intent_since_and_the_override() -> None:
    """The text names the file, the holder, their intent, since when (and how long ago), the
    override and what --no-verify also skips."""
    found = blockers(
        [("file:/r/.git//a.py", _holder("w1-1", purpose="rewriting auth"))],
        {"file:/r/.git//a.py": "src/a.py"},
        SESSION,
        lambda _: "",
    )
    text = commit_refusal(found, SESSION, 1000.0 + 125)
    first, line = text.splitlines()[:2]
    assert (
        first
        == "agentcoord: commit refused: 1 staged file is claimed for writing by another agent:"
    )
    assert line.startswith("  src/a.py: w1-1 (rewriting auth), since ")
    assert "(2m5s ago)" in line
    assert OVERRIDE_HINT in text
    assert "--no-verify" in text
    assert "You are w2-1" in text


@pytest.mark.unit
@pytest.mark.parametrize(
    "params",
    [
        {"cwd": "relative", "paths": ["a"]},
        {"cwd": "/r", "paths": "a"},
        {"cwd": "/r", "paths": ["/etc/passwd"]},
        {"cwd": "/r", "paths": ["../other/a"]},
        {"cwd": "/r", "paths": [""]},
        {"paths": ["a"]},
    ],
)
def test_commit_params_refuse_paths_outside_the_worktree(params: dict[str, object]) -> None:
    """A commit-check names an absolute worktree and paths inside it; anything else is a
    JSON-RPC invalid-params error."""
    with pytest.raises(ProtocolError):
        commit_params(params)
