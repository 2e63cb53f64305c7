"""Repository identity of a file: the canonical claim key (docs/claims.md "Claiming files").

Sessions of one repository run in different git worktrees, so a path means nothing without the
repository it is in. A file's identity is its repository, the git *common* dir that all
worktrees of one repository share (``git rev-parse --git-common-dir``), plus its path relative
to the worktree's top level. The canonical key is::

    file:<common-dir>//<rel>        inside git, e.g. file:/src/app/.git//src/app.py
    file:<absolute path>            outside git, e.g. file:/etc/hosts

Both parts are normalized (``os.path.realpath``; no empty, ``.`` or ``..`` segment), so neither
contains ``//`` and the one ``//`` splits the key unambiguously; a key outside git has none.
The same file reached from any worktree of one repository, from any subdirectory or by an
absolute path, has one key; the same relative path in another repository has another. A
canonical key given back (``file:<common-dir>//<rel>``, whose common dir holds a ``HEAD``) is
itself. A relative path with no cwd to resolve it against is kept, normalized, as given.

Asking git costs a process, and the write guard runs on every edit: a :class:`FileKeys` keeps
git's answers per directory until the worktree's ``HEAD`` file changes (a checkout, a branch
switch; checked with one ``stat`` per lookup) or for at most :data:`CACHE_TTL` seconds (a
``git init`` or a removed worktree is noticed then). A directory outside git is kept for the
TTL too. The daemon has one, built by the composition root and owned by the leases service
(docs/claims.md "The leases service"); this module keeps no state. Nothing here raises: a
missing directory or a failing git falls back to the absolute path. :func:`split_file_key`
is pure.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CACHE_TTL", "FILE_PREFIX", "FileKey", "FileKeys", "split_file_key"]

FILE_PREFIX = "file:"
SEPARATOR = "//"
_MAX_WALK = 64  # directory levels an inherited answer is looked for
CACHE_TTL = 5.0  # seconds a directory's answer is trusted while its HEAD file is unchanged
_GIT_TIMEOUT = 5.0

# Variables that would point git at another repository than the directory's own (git(1)
# "ENVIRONMENT"): the daemon's environment must not decide a session's repository.
_GIT_ENV_DROP = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)


@dataclass(frozen=True)
class FileKey:
    """One file's identity: ``key`` is the canonical claim key; ``repo`` the absolute git
    common dir (None outside git); ``rel`` the path relative to the worktree's top level (the
    normalized absolute path outside git); ``worktree`` that top level; ``branch`` the current
    branch (None when detached or outside git)."""

    key: str
    repo: str | None
    rel: str
    worktree: str | None
    branch: str | None


@dataclass(frozen=True)
class _Repo:
    common: str
    toplevel: str
    branch: str | None


@dataclass
class _Entry:
    repo: _Repo | None
    expires: float
    head: str | None  # the worktree's HEAD file, whose change invalidates the entry
    head_sig: tuple[int, int, int] | None


def _strip_prefix(path: str) -> str:
    return path[len(FILE_PREFIX) :] if path.startswith(FILE_PREFIX) else path


def _absolute(path: str, cwd: str | None) -> str | None:
    """``path`` made absolute against ``cwd`` and normalized; None when it is relative and
    there is no absolute cwd to resolve it against."""
    if not os.path.isabs(path):
        if not cwd or not os.path.isabs(cwd):
            return None
        path = os.path.join(cwd, path)
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):  # an embedded NUL, a symlink loop on some systems
        real = os.path.normpath(path)
    # POSIX keeps a leading "//" as implementation-defined; on Linux it is "/".
    return "/" + real.lstrip("/")


def _existing_dir(path: str) -> str:
    """The nearest existing directory at or above ``path``'s directory (a new file may be
    written into a directory that does not exist yet)."""
    d = os.path.dirname(path)
    while not os.path.isdir(d):
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return d


def _head_sig(head: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(head)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _read_branch(head: str) -> str | None:
    """The branch a HEAD file names (``ref: refs/heads/<b>``); None when detached."""
    try:
        with open(head, encoding="utf-8", errors="replace") as f:
            text = f.read(4096).strip()
    except OSError:
        return None
    prefix = "ref: refs/heads/"
    return text[len(prefix) :] if text.startswith(prefix) else None


def _ask_git(directory: str) -> tuple[_Repo | None, str | None]:
    """One ``git rev-parse`` in ``directory``: its repository and its HEAD file's path. No
    argument comes from the caller (the directory is passed as the process's cwd)."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--git-common-dir", "--git-dir", "--show-toplevel"],
            cwd=directory,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None, None
    lines = out.stdout.splitlines()
    if out.returncode != 0 or len(lines) < 3 or not all(lines[:3]):
        return None, None  # not in git, inside a .git dir or a bare repository, git missing
    # --git-common-dir and --git-dir may be relative to the cwd; --show-toplevel is absolute.
    common, gitdir, toplevel = (_absolute(p, directory) for p in lines[:3])
    if common is None or gitdir is None or toplevel is None:
        return None, None
    head = os.path.join(gitdir, "HEAD")
    return _Repo(common, toplevel, _read_branch(head)), head


def _head_unchanged(entry: _Entry) -> bool:
    return entry.head is None or _head_sig(entry.head) == entry.head_sig


def _canonical(raw: str) -> FileKey | None:
    """``raw`` as an already canonical key's body (what check_claims shows, passed back to
    release): a normalized git dir, ``//``, a normalized relative path (a folder's with its
    trailing ``/``)."""
    repo, sep, rel = raw.partition(SEPARATOR)
    if not sep or not repo.startswith("/") or not rel or rel.startswith("/"):
        return None
    bare = rel[:-1] if rel.endswith("/") else rel
    if os.path.normpath(repo) != repo or os.path.normpath(bare) != bare or bare.startswith(".."):
        return None
    if not os.path.isfile(os.path.join(repo, "HEAD")):
        return None  # a path with a doubled slash, not a repository's key
    return FileKey(FILE_PREFIX + raw, repo, rel, None, None)


class FileKeys:
    """Files' canonical keys, with git's answers kept per directory (the module docstring
    says how long). Thread-safe: the write guard and the commit check resolve off the event
    loop, several at once."""

    def __init__(self) -> None:
        self._cache: dict[str, _Entry] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget every directory's answer (after moving repositories around)."""
        with self._lock:
            self._cache.clear()

    def file_key(self, path: str, cwd: str | None) -> FileKey:
        """The identity of ``path`` (with or without ``file:``, absolute or relative to
        ``cwd``). A canonical key comes back as itself (worktree and branch unknown: None)."""
        return self._key_for(path, cwd, time.monotonic())

    def file_keys(self, paths: Sequence[str], cwd: str | None) -> list[FileKey]:
        """:meth:`file_key` for each path, asking git at most once per worktree."""
        now = time.monotonic()
        return [self._key_for(p, cwd, now) for p in paths]

    def claim_key(self, path: str, cwd: str | None) -> FileKey:
        """The identity of what a claim names (docs/claims.md "Folders and globs"): a file as
        :meth:`file_key` gives it, or a folder (a trailing ``/``, or an existing directory) or
        a glob (``*``, ``?``, ``[`` in a name), whose literal leading directories are resolved
        as a file's are and whose pattern part is kept: ``file:src/**/*.py`` from a worktree
        is ``file:<common-dir>//src/**/*.py``. The repository's top level as a folder is
        ``**``. A ``.`` or ``..`` after the first glob name cannot be resolved:
        :class:`~agentcoord.errors.InvalidArguments`."""
        from agentcoord.leases.matcher import GLOB_CHARS

        raw = _strip_prefix(path)
        canonical = _canonical(raw)
        if canonical is not None:
            return canonical
        parts = raw.split("/")
        first = next((k for k, p in enumerate(parts) if any(c in GLOB_CHARS for c in p)), None)
        folder = raw.endswith(("/", "/.", "/..")) or raw in (".", "..")
        if first is None and not folder:
            absolute = _absolute(raw, cwd)
            if absolute is None or not os.path.isdir(absolute):
                return self.file_key(raw, cwd)
            folder = True  # an existing directory named without its slash
        if first is None:
            literal, rest = raw, ""
        else:
            literal, rest = "/".join(parts[:first]), "/".join(p for p in parts[first:] if p)
            if any(p in (".", "..") for p in rest.split("/")):
                from agentcoord.errors import InvalidArguments

                raise InvalidArguments(
                    f"{path!r}: a glob may not have . or .. after its first glob"
                )
            if raw.endswith("/"):
                rest += "/"
        if not literal:
            literal = "/" if raw.startswith("/") else "."
        # Resolve a name inside the literal directory, then cut the name: the directory's key.
        inside = self.file_key(os.path.join(literal, "_"), cwd)
        base = inside.rel[:-1]  # "" at a worktree's top, else "<dir>/"
        pattern = base + rest if rest else (base or "**/")
        if pattern == "**/":
            pattern = "**"
        if inside.repo is None:
            key = FILE_PREFIX + pattern
        else:
            key = f"{FILE_PREFIX}{inside.repo}{SEPARATOR}{pattern}"
        return FileKey(key, inside.repo, pattern, inside.worktree, inside.branch)

    def _key_for(self, path: str, cwd: str | None, now: float) -> FileKey:
        raw = _strip_prefix(path)
        canonical = _canonical(raw)
        if canonical is not None:
            return canonical
        absolute = _absolute(raw, cwd)
        if absolute is None:
            # A relative path with no cwd to resolve it against: kept as given, normalized.
            rel = os.path.normpath(raw) if raw else raw
            return FileKey(FILE_PREFIX + rel, None, rel, None, None)
        repo = self._repo_of(_existing_dir(absolute), now)
        if repo is not None:
            rel = os.path.relpath(absolute, repo.toplevel)
            if rel != "." and not rel.startswith(".." + os.sep) and rel != "..":
                key = f"{FILE_PREFIX}{repo.common}{SEPARATOR}{rel}"
                return FileKey(key, repo.common, rel, repo.toplevel, repo.branch)
        return FileKey(FILE_PREFIX + absolute, None, absolute, None, None)

    def _valid(self, directory: str, now: float) -> _Entry | None:
        with self._lock:
            entry = self._cache.get(directory)
        if entry is not None and now < entry.expires and _head_unchanged(entry):
            return entry
        return None

    def _inherited(self, directory: str, now: float) -> _Entry | None:
        """The answer of the nearest cached ancestor, when no ``.git`` entry lies between it
        and ``directory`` (so no nested repository or worktree starts in between): one
        ``lstat`` per level instead of a git run per directory of a commit (docs/claims.md
        "Claiming files")."""
        d = directory
        for _ in range(_MAX_WALK):
            if os.path.basename(d) == ".git" or os.path.lexists(os.path.join(d, ".git")):
                return None  # a worktree's top (or git's own dir) answers only for itself
            parent = os.path.dirname(d)
            if parent == d:
                return None
            entry = self._valid(parent, now)
            if entry is not None:
                return entry
            d = parent
        return None

    def _repo_of(self, directory: str, now: float) -> _Repo | None:
        entry = self._valid(directory, now) or self._inherited(directory, now)
        if entry is not None:
            with self._lock:
                self._cache.setdefault(directory, entry)
            return entry.repo
        repo, head = _ask_git(directory)
        entry = _Entry(repo, now + CACHE_TTL, head, _head_sig(head) if head else None)
        with self._lock:
            self._cache[directory] = entry
            if repo is not None:
                # The top level answers for every directory below it that has no .git of its own.
                self._cache[repo.toplevel] = entry
        return repo


def split_file_key(key: str) -> tuple[str | None, str]:
    """A canonical key's (repository, path): ``(common-dir, rel)`` inside git, ``(None,
    absolute path)`` outside, ``(None, key)`` for a key that is not a file key."""
    if not key.startswith(FILE_PREFIX):
        return None, key
    body = key[len(FILE_PREFIX) :]
    repo, sep, rel = body.partition(SEPARATOR)
    if sep and repo.startswith("/") and rel:
        return repo, rel
    return None, body
