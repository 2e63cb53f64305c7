"""Where the daemon's dirs are, importable without cost (the stdio shim needs them at every start).

Every client (the shim, the hooks, the CLI, the commit guard, a start on demand) must find the
user's one daemon whatever its environment: an MCP client may pass its servers only HOME, PATH
and a few more (docs/daemon.md "Finding the daemon"). The runtime dir is, in order:

1. ``$AGENTCOORD_RUNTIME_DIR`` (or ``--runtime-dir``): taken as given;
2. ``runtime_dir`` in the config file: taken as given;
3. ``$XDG_RUNTIME_DIR/agentcoord``;
4. ``/run/user/$UID/agentcoord`` when ``/run/user/$UID`` is a directory the user owns;
5. ``/tmp/agentcoord-$UID``.

Where 3-5 find no daemon listening, the daemon's *pointer* decides: a file every daemon leaves
at a place that needs no variable but HOME (:func:`pointer_path`, ``0600`` in a ``0700`` dir
the user owns), naming its runtime and state dirs. A client follows it when the dir it names is
the user's own and its socket is there; a start on demand with no live daemon starts on the
dirs it names, so a missing variable never makes a second daemon on another state dir.

The roots of 4 and 5 are injectable (``runtime_roots`` in the config file) so tests never use
the real ``/run/user`` or ``/tmp``.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "POINTER_NAME",
    "Located",
    "config_file_path",
    "connect_first",
    "default_runtime_dir",
    "default_state_dir",
    "locate",
    "pointer_dir",
    "pointer_path",
    "read_pointer",
    "read_pointer_file",
    "settled",
    "user_home",
    "write_pointer",
]

POINTER_NAME = "daemon.json"
_RUN_USER = Path("/run/user")
_TMP = Path("/tmp")
_SOCKET = "agentcoord.sock"


def user_home(env: Mapping[str, str], uid: int) -> Path:
    """``$HOME``, else the password database's home for ``uid``."""
    if env.get("HOME"):
        return Path(env["HOME"])
    import pwd

    try:
        return Path(pwd.getpwuid(uid).pw_dir)
    except KeyError:
        return Path(os.path.expanduser("~"))


def config_file_path(env: Mapping[str, str], uid: int) -> Path | None:
    """The config file :func:`agentcoord.kernel.config.load_config` reads by default, if it
    exists."""
    if env.get("AGENTCOORD_CONFIG"):
        return Path(env["AGENTCOORD_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME")
    config_home = Path(base) if base else user_home(env, uid) / ".config"
    candidate = config_home / "agentcoord" / "config.toml"
    return candidate if candidate.is_file() else None


def _file_settings(env: Mapping[str, str], uid: int) -> dict[str, Any]:
    """The config file's dir settings (``runtime_dir``, ``state_dir``, ``runtime_roots``); {}
    without a file or with one that cannot be read (the daemon and CLI report that)."""
    path = config_file_path(env, uid)
    if path is None:
        return {}
    import tomllib  # only with a config file

    try:
        data = tomllib.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    keys = ("runtime_dir", "state_dir", "runtime_roots")
    return {k: data[k] for k in keys if k in data}


def _roots(settings: Mapping[str, Any]) -> tuple[Path, Path]:
    roots = settings.get("runtime_roots")
    if isinstance(roots, list) and len(roots) == 2 and all(isinstance(r, str) for r in roots):
        return Path(roots[0]).expanduser(), Path(roots[1]).expanduser()
    return _RUN_USER, _TMP


def _owned_dir(path: Path, uid: int) -> bool:
    """A real directory (not a link) that ``uid`` owns and nobody else may write to."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode) and info.st_uid == uid and not stat.S_IMODE(info.st_mode) & 0o022
    )


def default_runtime_dir(
    env: Mapping[str, str], uid: int, settings: Mapping[str, Any] | None = None
) -> Path:
    """The runtime dir from the environment and config file alone (steps 1-5 above)."""
    if env.get("AGENTCOORD_RUNTIME_DIR"):
        return Path(env["AGENTCOORD_RUNTIME_DIR"])
    settings = _file_settings(env, uid) if settings is None else settings
    if isinstance(settings.get("runtime_dir"), str):
        return Path(settings["runtime_dir"]).expanduser()
    if env.get("XDG_RUNTIME_DIR"):
        return Path(env["XDG_RUNTIME_DIR"]) / "agentcoord"
    run_user, tmp = _roots(settings)
    if _owned_dir(run_user / str(uid), uid):
        return run_user / str(uid) / "agentcoord"
    return tmp / f"agentcoord-{uid}"


def default_state_dir(env: Mapping[str, str], settings: Mapping[str, Any] | None = None) -> Path:
    """``$AGENTCOORD_STATE_DIR``, the config file's ``state_dir``, else
    ``$XDG_STATE_HOME/agentcoord`` (``~/.local/state/agentcoord``)."""
    if env.get("AGENTCOORD_STATE_DIR"):
        return Path(env["AGENTCOORD_STATE_DIR"])
    if settings and isinstance(settings.get("state_dir"), str):
        return Path(settings["state_dir"]).expanduser()
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    return Path(env.get("XDG_STATE_HOME") or home / ".local" / "state") / "agentcoord"


# -- the pointer ------------------------------------------------------------------------------


def pointer_dir(env: Mapping[str, str], uid: int) -> Path:
    """Where the pointer (and the lock serialising starts on demand) lives: a place that needs
    no variable but HOME, so a client with a stripped environment finds it."""
    return user_home(env, uid) / ".local" / "state" / "agentcoord"


def pointer_path(env: Mapping[str, str], uid: int) -> Path:
    """The pointer file: ``~/.local/state/agentcoord/daemon.json``."""
    return pointer_dir(env, uid) / POINTER_NAME


class Located(NamedTuple):
    """Where a client looks for the daemon, and where a start on demand puts one (a NamedTuple,
    not a dataclass: every shim and command hook imports this module, and dataclasses costs
    them 7 ms of imports)."""

    candidates: tuple[Path, ...]  # runtime dirs to try, in order
    start_runtime: Path  # where a daemon started on demand serves
    start_state: Path | None  # its state dir (None: its own environment's)
    explicit: bool  # the environment or config file named the runtime dir


def read_pointer(env: Mapping[str, str], uid: int) -> tuple[Path, Path] | None:
    """(runtime dir, state dir) from the user's pointer (:func:`read_pointer_file`)."""
    return read_pointer_file(pointer_path(env, uid), uid)


def read_pointer_file(path: Path, uid: int) -> tuple[Path, Path] | None:
    """(runtime dir, state dir) from a pointer, or None when there is none to trust: it and
    its dir must be the user's and writable by nobody else, and it must come from this host."""
    if not _owned_dir(path.parent, uid):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if info.st_uid != uid or stat.S_IMODE(info.st_mode) & 0o022:
            return None
        raw = os.read(fd, 65536)
    finally:
        os.close(fd)
    import json

    try:
        data = json.loads(raw)
        runtime, state, host = data["runtime_dir"], data["state_dir"], data.get("host")
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(runtime, str) or not isinstance(state, str) or not runtime or not state:
        return None
    if host is not None and host != os.uname().nodename:
        return None  # a home shared between machines: another host's daemon
    return Path(runtime), Path(state)


def write_pointer(path: Path, uid: int, runtime: Path, state: Path) -> None:
    """Record ``runtime`` and ``state`` as the user's daemon's dirs in the pointer ``path``
    (atomically, 0600 in a 0700 dir)."""
    import json

    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not _owned_dir(directory, uid):
        raise PermissionError(f"{directory} is not a directory only uid {uid} may write to")
    record = {
        "runtime_dir": str(runtime),
        "state_dir": str(state),
        "host": os.uname().nodename,
        "pid": os.getpid(),
    }
    tmp = directory / f".{path.name}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, json.dumps(record).encode() + b"\n")
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _has_socket(runtime: Path, uid: int) -> bool:
    """A socket in a dir the user owns (not whether anything listens on it)."""
    try:
        info = (runtime / _SOCKET).lstat()
    except OSError:
        return False
    return stat.S_ISSOCK(info.st_mode) and info.st_uid == uid and _owned_dir(runtime, uid)


def locate(env: Mapping[str, str], uid: int) -> Located:
    """Where to look for the user's daemon, and where to start one (the module's order).

    Cheap: with ``$AGENTCOORD_RUNTIME_DIR`` set it touches no file; otherwise a stat or two,
    the config file's dirs when there is one, and the pointer only when needed."""
    if env.get("AGENTCOORD_RUNTIME_DIR"):
        runtime = Path(env["AGENTCOORD_RUNTIME_DIR"])
        return Located((runtime,), runtime, None, True)
    settings = _file_settings(env, uid)
    runtime = default_runtime_dir(env, uid, settings)
    if isinstance(settings.get("runtime_dir"), str):
        return Located((runtime,), runtime, None, True)
    pointed = read_pointer(env, uid)
    if pointed is None:
        return Located((runtime,), runtime, None, False)
    p_runtime, p_state = pointed
    explicit_state = env.get("AGENTCOORD_STATE_DIR") or settings.get("state_dir")
    if explicit_state and Path(str(explicit_state)).expanduser() != p_state:
        return Located((runtime,), runtime, None, False)  # another daemon, deliberately
    if p_runtime == runtime:
        return Located((runtime,), runtime, p_state, False)
    # The environment's dir first (a second daemon the user started there on purpose), then
    # the pointer's; a start goes where the pointer says: the user's daemon's own dirs.
    return Located((runtime, p_runtime), p_runtime, p_state, False)


def settled(located: Located, uid: int) -> tuple[Path, Path | None]:
    """One runtime dir (and the state dir that goes with it, None: the environment's) for a
    process that connects once or serves (the CLI, ``agentcoord serve``): the first candidate
    with a socket, else the environment's own. A daemon started by hand thus finds the user's
    running daemon (and stops, naming it) but otherwise keeps to its environment's dirs."""
    for runtime in located.candidates:
        if _has_socket(runtime, uid):
            pointed = runtime == located.start_runtime
            return runtime, located.start_state if pointed else None
    return located.candidates[0], None


def connect_first(candidates: Iterable[Path]) -> tuple[socket.socket, Path]:
    """A connection to the daemon's socket in the first of ``candidates`` (runtime dirs, in
    :func:`locate`'s order) that accepts one, and that dir; raises the first candidate's
    ``OSError`` when none does (every client finds the daemon this one way)."""
    first: OSError | None = None
    for runtime in candidates:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(runtime / _SOCKET))
        except OSError as exc:
            sock.close()
            first = first or exc
            continue
        return sock, runtime
    raise first or FileNotFoundError("no runtime dir to look in")
