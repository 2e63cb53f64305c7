"""Repository identity of files (docs/claims.md "Claiming files"): real git repositories and
``git worktree add`` in tmp_path; git is the one process these tests run."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcoord.leases import filekeys
from agentcoord.leases.filekeys import FileKey, FileKeys, split_file_key
from agentcoord.stores.kv.keys import MAX_KEY_CHARS, escape_key, unescape_key

pytestmark = pytest.mark.unit

_GIT = [
    "git",
    "-c",
    "user.name=t",
    "-c",
    "user.email=t@example.invalid",
    "-c",
    "init.defaultBranch=main",
]


def _git(cwd: Path, *args: str) -> str:
    out = subprocess.run([*_GIT, *args], cwd=cwd, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    (path / "README").write_text("x\n")
    _git(path, "add", "README")
    _git(path, "commit", "-q", "-m", "init")
    return path


KEYS = FileKeys()  # what the daemon builds once; emptied around each test
resolve_file_key, resolve_file_keys, resolve_claim_key = (
    KEYS.file_key,
    KEYS.file_keys,
    KEYS.claim_key,
)


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    KEYS.clear()
    yield
    KEYS.clear()


@pytest.fixture
def worktrees(tmp_path: Path) -> tuple[Path, Path]:
    """A repository ``main`` and a linked worktree ``wt`` on branch ``feature``."""
    main = _repo(tmp_path / "main")
    _git(main, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "wt"))
    return main, tmp_path / "wt"


@pytest.fixture
def git_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], str]]:
    """Each git run filekeys makes: its argv and cwd."""
    calls: list[tuple[list[str], str]] = []
    real = subprocess.run

    def counting(argv: list[str], **kw: Any) -> Any:
        if argv[1:2] == ["rev-parse"]:  # the fixtures' own git runs start with -c
            calls.append((list(argv), str(kw.get("cwd"))))
        return real(argv, **kw)

    monkeypatch.setattr(subprocess, "run", counting)
    return calls


def test_worktrees_of_one_repository_share_the_key(worktrees: tuple[Path, Path]) -> None:
    """The same relative path in two worktrees is one key; rel, worktree and branch differ."""
    main, wt = worktrees
    a = resolve_file_key("file:src/app.py", str(main))
    b = resolve_file_key("src/app.py", str(wt))
    common = os.path.realpath(main / ".git")
    assert a.key == b.key == f"file:{common}//src/app.py"
    assert a.repo == b.repo == common
    assert a.rel == b.rel == "src/app.py"
    assert (a.worktree, a.branch) == (os.path.realpath(main), "main")
    assert (b.worktree, b.branch) == (os.path.realpath(wt), "feature")


def test_another_repository_gets_another_key(tmp_path: Path) -> None:
    """The same relative path in a different repository is a different key."""
    one, two = _repo(tmp_path / "one"), _repo(tmp_path / "two")
    a = resolve_file_key("f.txt", str(one))
    b = resolve_file_key("f.txt", str(two))
    assert a.rel == b.rel == "f.txt"
    assert a.key != b.key


def test_subdirectory_relative_and_absolute_forms_agree(worktrees: tuple[Path, Path]) -> None:
    """From a subdirectory, ``../f``, the absolute path and a worktree-relative path agree."""
    main, wt = worktrees
    (main / "sub").mkdir()
    from_sub = resolve_file_key("../f.txt", str(main / "sub"))
    absolute = resolve_file_key(f"file:{main / 'f.txt'}", "/somewhere/else")
    other_wt = resolve_file_key("f.txt", str(wt))
    assert from_sub.rel == "f.txt"
    assert from_sub.key == absolute.key == other_wt.key
    # ...and a subdirectory's own f.txt is a different file.
    assert resolve_file_key("f.txt", str(main / "sub")).rel == "sub/f.txt"


def test_outside_git_the_key_is_the_absolute_path(tmp_path: Path) -> None:
    """A file in no repository is keyed by its normalized absolute path."""
    (tmp_path / "d").mkdir()
    fk = resolve_file_key("./d/../d/x.txt", str(tmp_path / "d" / ".."))
    absolute = os.path.realpath(tmp_path / "d" / "x.txt")
    assert fk == FileKey(f"file:{absolute}", None, absolute, None, None)


def test_missing_directories_and_a_missing_cwd_never_raise(
    worktrees: tuple[Path, Path], tmp_path: Path
) -> None:
    """A new file in directories not yet made is still in its repository; a cwd that does not
    exist falls back to the absolute path; a relative path without a cwd is kept as given."""
    main, _ = worktrees
    fk = resolve_file_key("new/deep/x.py", str(main))
    assert (fk.repo, fk.rel) == (os.path.realpath(main / ".git"), "new/deep/x.py")
    gone = resolve_file_key("x.py", str(tmp_path / "no" / "such"))
    assert gone.repo is None
    assert gone.rel == os.path.realpath(tmp_path / "no" / "such" / "x.py")
    assert resolve_file_key("a/./b.py", None) == FileKey("file:a/b.py", None, "a/b.py", None, None)


def test_detached_head_has_no_branch(worktrees: tuple[Path, Path]) -> None:
    """A detached worktree reports branch None and keeps the repository's key."""
    main, wt = worktrees
    _git(wt, "checkout", "-q", "--detach")
    fk = resolve_file_key("f", str(wt))
    assert fk.branch is None
    assert fk.key == resolve_file_key("f", str(main)).key


def test_a_branch_switch_is_seen_through_the_cache(
    worktrees: tuple[Path, Path], git_calls: list[tuple[list[str], str]]
) -> None:
    """The cached answer is reused until the worktree's HEAD changes, then git is asked anew."""
    main, _ = worktrees
    assert resolve_file_key("f", str(main)).branch == "main"
    assert resolve_file_key("g", str(main)).branch == "main"
    assert len(git_calls) == 1
    _git(main, "switch", "-q", "-c", "other")
    assert resolve_file_key("f", str(main)).branch == "other"
    assert len(git_calls) == 2


def test_the_cache_expires(
    worktrees: tuple[Path, Path],
    git_calls: list[tuple[list[str], str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After CACHE_TTL the directory is asked again (a new repository is noticed)."""
    main, _ = worktrees
    resolve_file_key("f", str(main))
    later = time.monotonic() + filekeys.CACHE_TTL + 1
    monkeypatch.setattr(time, "monotonic", lambda: later)
    resolve_file_key("f", str(main))
    assert len(git_calls) == 2


def test_git_runs_once_per_worktree(
    worktrees: tuple[Path, Path], git_calls: list[tuple[list[str], str]]
) -> None:
    """Paths in many directories of one worktree cost one git run (the top level's answer is
    inherited below it), with the directory as git's cwd."""
    main, _ = worktrees
    for d in ("sub", "sub/deeper", "other"):
        (main / d).mkdir()
    keys = resolve_file_keys(
        ["a", "file:b", str(main / "c"), "sub/d", "sub/deeper/e", "other/f", "../main/sub/g"],
        str(main),
    )
    assert [k.rel for k in keys] == ["a", "b", "c", "sub/d", "sub/deeper/e", "other/f", "sub/g"]
    assert [cwd for _, cwd in git_calls] == [os.path.realpath(main)]


def test_a_nested_repository_is_asked_on_its_own(
    worktrees: tuple[Path, Path], git_calls: list[tuple[list[str], str]]
) -> None:
    """A repository inside another (a .git below the cached top level) is not inherited."""
    main, _ = worktrees
    inner = _repo(main / "vendor" / "lib")
    outer_key, inner_key = resolve_file_keys(["x", "vendor/lib/y"], str(main))
    assert inner_key.repo == os.path.realpath(inner / ".git")
    assert inner_key.rel == "y"
    assert outer_key.repo != inner_key.repo
    assert len(git_calls) == 2


def test_option_like_names_never_reach_git(
    worktrees: tuple[Path, Path], git_calls: list[tuple[list[str], str]]
) -> None:
    """A file or directory named like a git option is a path; git's argv is always fixed."""
    main, _ = worktrees
    (main / "--exec-path=x").mkdir()
    keys = resolve_file_keys(["--output=/tmp/pwn", "-C", "--exec-path=x/--help"], str(main))
    assert [k.rel for k in keys] == ["--output=/tmp/pwn", "-C", "--exec-path=x/--help"]
    assert {tuple(argv) for argv, _ in git_calls} == {
        ("git", "rev-parse", "--git-common-dir", "--git-dir", "--show-toplevel")
    }
    assert all(os.path.isabs(cwd) for _, cwd in git_calls)


def test_git_missing_or_failing_falls_back(
    worktrees: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no git on PATH a file in a repository is keyed by its absolute path."""
    main, _ = worktrees
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    fk = resolve_file_key("f", str(main))
    assert fk.repo is None
    assert fk.key == f"file:{os.path.realpath(main / 'f')}"


def test_the_daemons_git_environment_is_ignored(
    worktrees: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIT_DIR in the resolver's environment does not redirect a directory to another repo."""
    main, _ = worktrees
    other = _repo(tmp_path / "other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert resolve_file_key("f", str(main)).repo == os.path.realpath(main / ".git")


def test_a_symlinked_cwd_resolves_to_the_real_file(
    worktrees: tuple[Path, Path], tmp_path: Path
) -> None:
    """A session whose cwd is a symlink to the worktree gets the worktree's key."""
    main, _ = worktrees
    link = tmp_path / "link"
    link.symlink_to(main)
    assert resolve_file_key("f", str(link)).key == resolve_file_key("f", str(main)).key


def test_keys_split_back_and_fit_the_claim_store(worktrees: tuple[Path, Path]) -> None:
    """A key splits into (repository, rel) and survives the store's escaping; others don't."""
    main, _ = worktrees
    fk = resolve_file_key("src/a b:c.py", str(main))
    assert split_file_key(fk.key) == (fk.repo, "src/a b:c.py")
    assert unescape_key(escape_key(fk.key)) == fk.key
    assert len(fk.key) < MAX_KEY_CHARS
    assert split_file_key("file:/etc/hosts") == (None, "/etc/hosts")
    assert split_file_key("symbol:a//b") == (None, "symbol:a//b")


def test_a_canonical_key_resolves_to_itself(worktrees: tuple[Path, Path], tmp_path: Path) -> None:
    """A key check_claims showed, given back from anywhere, is the same key; a path that merely
    has a doubled slash is still a path."""
    main, _ = worktrees
    fk = resolve_file_key("src/app.py", str(main))
    again = resolve_file_key(fk.key, str(tmp_path))
    assert (again.key, again.repo, again.rel) == (fk.key, fk.repo, fk.rel)
    (tmp_path / "d").mkdir()
    doubled = resolve_file_key(f"file:{tmp_path}//d/x", None)
    assert doubled.key == f"file:{os.path.realpath(tmp_path / 'd' / 'x')}"


# ---- folders and globs (docs/claims.md "Folders and globs") --------------------------------


def test_folder_and_glob_claims_resolve_to_their_repository(
    worktrees: tuple[Path, Path],
) -> None:
    """A folder (trailing slash, or an existing directory named without it) and a glob keep
    their pattern part and take the repository's common dir, from either worktree, and the
    canonical key given back is itself."""
    main, wt = worktrees
    (wt / "src" / "api").mkdir(parents=True)
    common = os.path.realpath(main / ".git")
    for cwd in (main, wt):
        assert resolve_claim_key("file:src/api/", str(cwd)).key == f"file:{common}//src/api/"
        glob = resolve_claim_key("file:src/**/*.py", str(cwd))
        assert (glob.key, glob.repo, glob.rel) == (
            f"file:{common}//src/**/*.py",
            common,
            "src/**/*.py",
        )
    assert resolve_claim_key("file:src/api", str(wt)).key == f"file:{common}//src/api/"
    assert resolve_claim_key("file:*.md", str(wt / "src")).key == f"file:{common}//src/*.md"
    assert resolve_claim_key("file:./", str(main)).key == f"file:{common}//**"
    assert resolve_claim_key("file:README", str(main)).key == f"file:{common}//README"
    for key in (f"file:{common}//src/api/", f"file:{common}//src/**/*.py"):
        assert resolve_claim_key(key, None).key == key


def test_a_glob_outside_git_is_absolute_and_dots_after_a_glob_are_refused(
    tmp_path: Path,
) -> None:
    """Outside git a folder or glob is an absolute path; a ``..`` after a glob name cannot be
    resolved and is an error naming the key."""
    from agentcoord.errors import InvalidArguments

    plain = tmp_path / "plain"
    plain.mkdir()
    real = os.path.realpath(plain)
    got = resolve_claim_key("file:logs/*.txt", str(plain))
    assert (got.key, got.repo) == (f"file:{real}/logs/*.txt", None)
    assert resolve_claim_key(f"{plain}/", None).key == f"file:{real}/"
    with pytest.raises(InvalidArguments, match=r"\.\."):
        resolve_claim_key("file:src/*/../x", str(plain))
