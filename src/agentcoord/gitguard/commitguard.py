"""``agentcoord setup git``: the git pre-commit guard (docs/claims.md "Commit guard").

Claude Code's PreToolUse hook sees Write and Edit, never a ``sed -i`` or a formatter run through
Bash; the commit is where every edit shows up. The hook installed here refuses a commit that
touches a file another agent holds a ``write`` claim on, asking the daemon (vendor method
``agentcoord/commit-check``, gitguard/commitcheck.py), which identifies the committer from the
socket's peer as it does every caller.

It runs on every commit, so it is a small script that does not import agentcoord: ``/bin/sh``
starts the interpreter this install runs on with ``-I -S`` (no site, no user paths), and the
script uses only modules built into the interpreter (``posix``, ``_socket``, ``_json``): the
``json``, ``socket`` and ``subprocess`` packages would import ``re``, ``enum`` and more, several
times the cost of the rest of the hook.

The hook goes where git looks for hooks (``git rev-parse --git-path hooks``: an absolute
``core.hooksPath`` when set, else the common dir's ``hooks``, which every worktree shares; a
relative ``core.hooksPath`` is the worktree's own and is refused). A pre-commit hook
already there is kept beside it (:data:`CHAINED`), run first, and its failure fails the commit;
``--remove`` moves it back, bytes and mode as they were.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentcoord.errors import AgentCoordError
from agentcoord.kernel.files import write_atomic
from agentcoord.leases.override import ALLOW_ENV

__all__ = [
    "ALLOW_ENV",
    "CHAINED",
    "MARKER",
    "GuardReport",
    "hook_text",
    "hooks_dir",
    "install_guard",
    "remove_guard",
]

MARKER = "# agentcoord commit guard"
CHAINED = "pre-commit.agentcoord-chained"  # the hook that was there before ours

Action = Literal["installed", "updated", "unchanged", "removed", "absent"]


@dataclass(frozen=True)
class GuardReport:
    """What setup did: the hook's path, the chained hook (kept or restored), the action."""

    hook: Path
    action: Action
    chained: Path | None = None  # the previous hook, run first (after install, None if none)
    restored: bool = False  # --remove put the previous hook back


# The hook. A shell/Python polyglot: sh reads ``''':'`` as the no-op ``:`` and execs the
# interpreter on this file; Python reads the shell lines as a string. The runtime dir follows
# agentcoord.kernel.locate (docs/daemon.md "Finding the daemon"), as ``agentcoord hook`` and the
# shim do: the environment's dir, then the one the daemon's pointer names.
_TEMPLATE = r"""#!/bin/sh
@MARKER@: refuses a commit that touches a file another agent holds a write
# claim on (docs/claims.md "Commit guard"). Installed by `agentcoord setup git`; undone by
# `agentcoord setup git --remove`. Override: @ALLOW_ENV@=1 git commit ...
''':'
py=@PYTHON@
[ -x "$py" ] || py=python3
exec "$py" -I -S "$0" "$@"
'''
import sys

try:
    import posix, _socket, _json
except ImportError:  # not CPython: no guard rather than no commit
    sys.stderr.write("agentcoord: the commit guard needs CPython; it is off for this commit\n")
    sys.exit(0)

TIMEOUT = 10.0


def say(text):
    sys.stderr.write(text + "\n")


def env(name):
    value = posix.environ.get(name.encode())
    return value.decode("utf-8", "surrogateescape") if value else ""


def spawn(argv, capture):
    actions = []
    if capture:
        r, w = posix.pipe()
        actions = [(posix.POSIX_SPAWN_DUP2, w, 1)]
    pid = posix.posix_spawnp(argv[0], argv, posix.environ, file_actions=actions)
    out = b""
    if capture:
        posix.close(w)
        chunks = []
        while True:
            chunk = posix.read(r, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        posix.close(r)
        out = b"".join(chunks)
    status = posix.waitstatus_to_exitcode(posix.waitpid(pid, 0)[1])
    return (status if status >= 0 else 1), out


class _Ctx:  # what _json's scanner reads; json.decoder would import re
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float


def owned_dir(path, uid):
    try:
        info = posix.lstat(path)
    except OSError:
        return False
    return info.st_mode & 0o170000 == 0o040000 and info.st_uid == uid and not info.st_mode & 0o22


def runtime_dirs():
    # Where the daemon may serve, in agentcoord.kernel.locate' order (the config file's runtime_dir
    # aside: reading TOML takes modules this script does without).
    named = env("AGENTCOORD_RUNTIME_DIR")
    if named:
        return [named]
    uid = posix.getuid()
    xdg = env("XDG_RUNTIME_DIR")
    if xdg:
        first = xdg + "/agentcoord"
    elif owned_dir("/run/user/%d" % uid, uid):
        first = "/run/user/%d/agentcoord" % uid
    else:
        first = "/tmp/agentcoord-%d" % uid
    home = env("HOME")
    if not home:
        import pwd

        home = pwd.getpwuid(uid).pw_dir
    pointer = home + "/.local/state/agentcoord/daemon.json"
    if not owned_dir(pointer.rpartition("/")[0], uid):
        return [first]
    try:
        fd = posix.open(pointer, posix.O_RDONLY | posix.O_NOFOLLOW)
    except OSError:
        return [first]
    try:
        info = posix.fstat(fd)
        raw = posix.read(fd, 65536) if info.st_uid == uid and not info.st_mode & 0o22 else b""
    finally:
        posix.close(fd)
    try:
        record = _json.make_scanner(_Ctx())(raw.decode(), 0)[0]
        pointed = record["runtime_dir"]
    except (ValueError, StopIteration, UnicodeDecodeError, KeyError, TypeError):
        return [first]
    if record.get("host") not in (None, posix.uname().nodename) or not isinstance(pointed, str):
        return [first]
    return [first, pointed]


def off(why):
    say("agentcoord: " + why + "; the commit guard is off for this commit")
    sys.exit(0)


def main():
    here = sys.argv[0].rpartition("/")[0] or "."
    chained = here + "/@CHAINED@"
    if posix.access(chained, posix.X_OK):
        status = spawn([chained] + sys.argv[1:], False)[0]
        if status:
            sys.exit(status)
    if env("@ALLOW_ENV@") not in ("", "0"):
        say("agentcoord: @ALLOW_ENV@ is set: committing without checking claims")
        return
    status, out = spawn(["git", "diff", "--cached", "--name-only", "--no-renames", "-z"], True)
    if status:
        off("git diff --cached failed")
    paths = [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]
    if not paths:
        return
    where = ""
    for runtime in runtime_dirs():
        where = runtime + "/agentcoord.sock"
        try:
            if posix.lstat(where).st_mode & 0o170000 == 0o140000:  # a socket
                break
        except OSError:
            continue
    q = _json.encode_basestring_ascii
    request = (
        '{"jsonrpc":"2.0","id":1,"method":"agentcoord/commit-check","params":{"cwd":%s,'
        '"paths":[%s]}}\n' % (q(posix.getcwd()), ",".join(q(p) for p in paths))
    )
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(TIMEOUT)
    try:
        sock.connect(where)
    except OSError:
        off("no daemon on " + where)
    buf = b""
    try:
        sock.sendall(request.encode())
        while b"\n" not in buf:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
    except OSError as exc:
        off("the daemon did not answer (%s)" % (exc.strerror or exc.__class__.__name__))
    finally:
        sock.close()
    try:
        reply = _json.make_scanner(_Ctx())(buf.split(b"\n", 1)[0].decode(), 0)[0]
    except (ValueError, StopIteration, UnicodeDecodeError):
        off("the daemon's answer was unreadable")
    result = reply.get("result") if isinstance(reply, dict) else None
    if not isinstance(result, dict):
        error = reply.get("error") if isinstance(reply, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        off("the daemon did not check the commit (%s)" % (message or "no answer"))
    if result.get("ok", True):
        return
    say(result.get("message") or "agentcoord: commit refused: staged files are claimed")
    sys.exit(1)


try:
    main()
except Exception as exc:  # a broken guard must not stop every commit: fail open, loudly
    off("the commit guard failed (%r)" % (exc,))
"""


def hook_text(python: str) -> str:
    """The pre-commit hook, run by ``python`` (a path; ``python3`` on PATH if it is gone)."""
    if "'" in python or "\n" in python:
        raise AgentCoordError(f"cannot use an interpreter path with a quote: {python!r}")
    return (
        _TEMPLATE.replace("@MARKER@", MARKER)
        .replace("@ALLOW_ENV@", ALLOW_ENV)
        .replace("@CHAINED@", CHAINED)
        .replace("@PYTHON@", _sh_quote(python))
    )


def _sh_quote(text: str) -> str:
    return f"'{text}'"


def default_python() -> str:
    """This install's interpreter, symlinks resolved: a venv may go away, its base stays, and
    the hook needs nothing beyond the interpreter's own modules."""
    return os.path.realpath(sys.executable)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, timeout=30, check=False
        )
    except OSError as exc:
        raise AgentCoordError(f"cannot run git: {exc}") from None


def hooks_dir(repo: Path) -> tuple[Path, bool]:
    """Where git looks for ``repo``'s hooks, and whether that is this worktree's own (a
    relative ``core.hooksPath`` is resolved in each worktree; git-config(1))."""
    out = _git(repo, "rev-parse", "--git-path", "hooks")
    if out.returncode != 0:
        why = out.stderr.strip().splitlines()[-1:] or ["not a git repository"]
        raise AgentCoordError(f"{repo}: {why[0]}")
    hooks = (repo / out.stdout.strip()).resolve()  # relative to repo, where git ran
    configured = _git(repo, "config", "--get", "core.hooksPath").stdout.strip()
    return hooks, bool(configured) and not configured.startswith(("/", "~"))


def _is_ours(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return MARKER.encode() in f.read(512)
    except OSError:
        return False


def _names_itself(path: Path) -> bool:
    """Whether a hook script reads its own name (husky 4's ``hookName=`basename "$0"```): one
    that would look up the wrong work under the name it is chained as."""
    try:
        with path.open("rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return False
    return re.search(rb'basename\s+["\']?\$\{?0', head) is not None


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _write_hook(path: Path, text: str) -> None:
    write_atomic(path, text, mode=0o755)


def install_guard(repo: Path, python: str | None = None) -> GuardReport:
    """Install the guard as ``repo``'s pre-commit hook; idempotent. A hook already there that
    is not ours is moved to :data:`CHAINED` and run first by ours."""
    where, inside = hooks_dir(repo)
    if inside:
        # A relative core.hooksPath is a directory of the worktree: the repository's own
        # hooks, or a hook manager's (husky), whose hooks find their work by their own file
        # name, so a chained one moved aside would silently do nothing.
        raise AgentCoordError(
            f"core.hooksPath ({where}) is inside the worktree, kept by the repository or a "
            "hook manager: the guard will not rewrite it; point core.hooksPath at an absolute "
            "directory (or unset it) and run setup git again"
        )
    where.mkdir(parents=True, exist_ok=True)
    hook, chained = where / "pre-commit", where / CHAINED
    text = hook_text(python or default_python())
    kept = chained if _exists(chained) else None
    if _is_ours(hook):
        if hook.read_text() == text:
            return GuardReport(hook, "unchanged", kept)
        _write_hook(hook, text)
        return GuardReport(hook, "updated", kept)
    if _exists(hook):
        if _names_itself(hook):
            raise AgentCoordError(
                f"{hook} finds its work by its own file name (basename $0): moved aside to be "
                "chained it would silently do nothing; call the guard from it instead"
            )
        if kept is not None:
            # Ours was replaced by another hook while an older one waits here: keeping both
            # would need a choice only the user can make.
            raise AgentCoordError(
                f"{hook} is not agentcoord's and {chained} exists too: move one of them away"
            )
        os.rename(hook, chained)  # a rename keeps its bytes, mode and symlink-ness exactly
        kept = chained
    _write_hook(hook, text)
    return GuardReport(hook, "installed", kept)


def remove_guard(repo: Path) -> GuardReport:
    """Remove the guard; the hook it chained, if any, becomes the pre-commit hook again."""
    where, _ = hooks_dir(repo)
    hook, chained = where / "pre-commit", where / CHAINED
    if not _is_ours(hook):
        return GuardReport(hook, "absent", chained if _exists(chained) else None)
    if _exists(chained):
        os.replace(chained, hook)
        return GuardReport(hook, "removed", hook, restored=True)
    hook.unlink()
    return GuardReport(hook, "removed")
