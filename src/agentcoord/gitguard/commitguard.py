"""``agentcoord setup git``: the git pre-commit and pre-push guards (docs/claims.md "Commit
guard", "Push guard").

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

The pre-push hook is the same program (:data:`PUSH`): it reads the refs git is about to push
(githooks(5) "pre-push"), lists every file their new commits change (a merge's against its
first parent), a rename as its old and its new path, and asks the same question; a pre-push
hook already there is chained the same way and given the same ref lines on its stdin.
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
    "COMMIT",
    "GUARDS",
    "MARKER",
    "PUSH",
    "PUSH_MARKER",
    "SHARED",
    "Guard",
    "GuardReport",
    "hook_text",
    "hooks_dir",
    "install_guard",
    "remove_guard",
]

MARKER = "# agentcoord commit guard"
CHAINED = "pre-commit.agentcoord-chained"  # the hook that was there before ours
PUSH_MARKER = "# agentcoord push guard"

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
_HEAD = r"""#!/bin/sh
@MARKER@: refuses a @WHAT@ that touches a file another agent holds a write
# claim on (see "@SECTION@" in docs/claims.md). Installed by `agentcoord setup git`; undone by
# `agentcoord setup git --remove`. Override: @ALLOW_ENV@=1 git @WHAT@ ...
''':'
py=@PYTHON@
[ -x "$py" ] || py=python3
exec "$py" -I -S "$0" "$@"
'''
"""

# What every guard hook shares: the modules it may use, spawning git, reading the daemon's
# pointer, failing open (gitguard/movehook.py builds the checkout and ref guards on it too).
SHARED = r"""import sys

try:
    import posix, _socket, _json
except ImportError:  # not CPython: no guard rather than no commit
    sys.stderr.write("agentcoord: the @WHAT@ guard needs CPython; it is off for this @WHAT@\n")
    sys.exit(0)

TIMEOUT = 10.0
HOOK = "@HOOK@"


def say(text):
    sys.stderr.write(text + "\n")


def env(name):
    value = posix.environ.get(name.encode())
    return value.decode("utf-8", "surrogateescape") if value else ""


def spawn(argv, capture, feed=None):
    actions = []
    if capture:
        r, w = posix.pipe()
        actions = [(posix.POSIX_SPAWN_DUP2, w, 1)]
    if feed is not None:  # the chained pre-push hook reads the ref lines git gave us
        fr, fw = posix.pipe()
        actions.append((posix.POSIX_SPAWN_DUP2, fr, 0))
    pid = posix.posix_spawnp(argv[0], argv, posix.environ, file_actions=actions)
    if feed is not None:
        posix.close(fr)
        try:
            view = memoryview(feed)
            while view:
                view = view[posix.write(fw, view) :]
        except OSError:  # it exited without reading them all
            pass
        posix.close(fw)
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
    say("agentcoord: " + why + "; the @WHAT@ guard is off for this @WHAT@")
    sys.exit(0)


def ask_daemon(request):
    # One JSON-RPC line to the daemon's socket, its result back (the guard is off, with a line
    # why, when no daemon answers it).
    where = ""
    for runtime in runtime_dirs():
        where = runtime + "/agentcoord.sock"
        try:
            if posix.lstat(where).st_mode & 0o170000 == 0o140000:  # a socket
                break
        except OSError:
            continue
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
        off("the daemon did not check the @WHAT@ (%s)" % (message or "no answer"))
    return result


def read_stdin():
    chunks = []
    while True:
        chunk = posix.read(0, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


"""

_BODY = r"""def names(out):
    return [p.decode("utf-8", "surrogateescape").strip("\n") for p in out.split(b"\0")]


def staged_paths():
    status, out = spawn(["git", "diff", "--cached", "--name-only", "--no-renames", "-z"], True)
    if status:
        off("git diff --cached failed")
    return names(out)


def pushed_paths(refs):
    # githooks(5) "pre-push": one line per ref, "<local ref> <local sha> <remote ref> <remote
    # sha>". Every file the pushed commits change; without rename detection a rename is its
    # old path and its new one, a delete its path. A merge counts what it changes against its
    # first parent, so a file its own resolution touches counts (git log alone lists no file
    # of a merge; -m --first-parent would also leave the merged side's commits out).
    paths = []
    for line in refs.decode("ascii", "replace").splitlines():
        words = line.split()
        if len(words) != 4 or words[1].strip("0") == "":
            continue  # malformed, or a deleted ref: no commits go
        local, remote = words[1], words[3]
        log = ["git", "log", "--format=", "--name-only", "--no-renames", "-z"]
        log.append("--diff-merges=first-parent")  # git 2.31 or newer
        status, out = 1, b""
        if remote.strip("0"):
            status, out = spawn(log + [remote + ".." + local], True)
        if status:  # a new branch, or a remote commit we do not have: what no remote has
            status, out = spawn(log + [local, "--not", "--remotes"], True)
        if status:
            off("git log of the pushed commits failed")
        paths += names(out)
    return paths


def main():
    here = sys.argv[0].rpartition("/")[0] or "."
    chained = here + "/@CHAINED@"
    refs = read_stdin() if HOOK == "pre-push" else None
    if posix.access(chained, posix.X_OK):
        status = spawn([chained] + sys.argv[1:], False, refs)[0]
        if status:
            sys.exit(status)
    if env("@ALLOW_ENV@") not in ("", "0"):
        say("agentcoord: @ALLOW_ENV@ is set: @DOING@ without checking claims")
        return
    found = pushed_paths(refs) if HOOK == "pre-push" else staged_paths()
    paths = list(dict.fromkeys(p for p in found if p))
    if not paths:
        return
    q = _json.encode_basestring_ascii
    push = "true" if HOOK == "pre-push" else "false"
    request = (
        '{"jsonrpc":"2.0","id":1,"method":"agentcoord/commit-check","params":{"cwd":%s,'
        '"push":%s,"paths":[%s]}}\n' % (q(posix.getcwd()), push, ",".join(q(p) for p in paths))
    )
    result = ask_daemon(request)
    if result.get("ok", True):
        return
    say(result.get("message") or "agentcoord: @WHAT@ refused: files are claimed")
    sys.exit(1)


try:
    main()
except Exception as exc:  # a broken guard must not stop every @WHAT@: fail open, loudly
    off("the @WHAT@ guard failed (%r)" % (exc,))
"""

_TEMPLATE = _HEAD + SHARED + _BODY


@dataclass(frozen=True)
class Guard:
    """One of the git guards: the hook it is, the line marking it as ours, the name the hook
    it found there runs under, and how it speaks of what it guards."""

    hook: str
    marker: str
    chained: str
    what: str  # "commit", "push"
    doing: str  # "committing", "pushing"
    section: str  # its section of docs/claims.md
    template: str = ""  # the hook's program; the commit and push guards' when empty
    allow_env: str = ALLOW_ENV  # the override for one run


COMMIT = Guard("pre-commit", MARKER, CHAINED, "commit", "committing", "Commit guard")
PUSH = Guard(
    "pre-push", PUSH_MARKER, "pre-push.agentcoord-chained", "push", "pushing", "Push guard"
)
GUARDS = (COMMIT, PUSH)


def hook_text(python: str, guard: Guard = COMMIT) -> str:
    """The guard's hook, run by ``python`` (a path; ``python3`` on PATH if it is gone)."""
    if "'" in python or "\n" in python:
        raise AgentCoordError(f"cannot use an interpreter path with a quote: {python!r}")
    return (
        (guard.template or _TEMPLATE)
        .replace("@MARKER@", guard.marker)
        .replace("@ALLOW_ENV@", guard.allow_env)
        .replace("@CHAINED@", guard.chained)
        .replace("@HOOK@", guard.hook)
        .replace("@WHAT@", guard.what)
        .replace("@DOING@", guard.doing)
        .replace("@SECTION@", guard.section)
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


def _is_ours(path: Path, marker: str) -> bool:
    try:
        with path.open("rb") as f:
            return marker.encode() in f.read(512)
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


def install_guard(repo: Path, python: str | None = None, guard: Guard = COMMIT) -> GuardReport:
    """Install ``guard`` as ``repo``'s hook of its name; idempotent. A hook already there that
    is not ours is moved to its chained name and run first by ours."""
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
    hook, chained = where / guard.hook, where / guard.chained
    text = hook_text(python or default_python(), guard)
    kept = chained if _exists(chained) else None
    if _is_ours(hook, guard.marker):
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


def remove_guard(repo: Path, guard: Guard = COMMIT) -> GuardReport:
    """Remove ``guard``; the hook it chained, if any, becomes that hook again."""
    where, _ = hooks_dir(repo)
    hook, chained = where / guard.hook, where / guard.chained
    if not _is_ours(hook, guard.marker):
        return GuardReport(hook, "absent", chained if _exists(chained) else None)
    if _exists(chained):
        os.replace(chained, hook)
        return GuardReport(hook, "removed", hook, restored=True)
    hook.unlink()
    return GuardReport(hook, "removed")
