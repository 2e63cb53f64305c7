"""Daemon on demand: the first shim or SessionStart hook that finds no daemon starts one.

Where no systemd socket unit serves the socket (no socket file, or a refused connect), the
caller spawns ``<this python> -m agentcoord serve`` with its own environment (so the same state
and runtime dirs), detached (a session of its own, stdin from /dev/null, stdout and stderr
appended to ``<state>/daemon.log``), and waits a bounded time for the socket to accept. Starts
are serialised per user by a lock next to the daemon's pointer
(:mod:`agentcoord.kernel.locate`), and each caller looks again under it, so callers whose
environments differ still end with one
daemon; where they miss the lock (another home), the dir lock lets one daemon serve and the
other exit "already running", and its caller connects to the winner (docs/claude-code.md
"Daemon on demand"). A caller that does not name the dirs starts the daemon on the dirs the
pointer names, so a stripped environment never makes a daemon on another state dir.
``AGENTCOORD_NO_AUTOSTART=1`` turns this off. Imported only when the first connect failed, so
a session whose daemon is up never pays for it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from agentcoord.errors import DaemonUnreachable
from agentcoord.kernel.locate import Located, connect_first, default_state_dir, locate, pointer_dir

__all__ = ["NO_AUTOSTART_ENV", "connect_or_start", "holder", "log_path"]

NO_AUTOSTART_ENV = "AGENTCOORD_NO_AUTOSTART"
_POLL_S = 0.02  # a bounded wait for a process we started, not a test's synchronisation
# The Claude session that happens to start the daemon is not its owner: the daemon serves
# every session, so it does not carry this one's markers (the runners drop them too).
_SESSION_ENV = (
    "CLAUDECODE",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_SSE_PORT",
    "CLAUDE_PROJECT_DIR",
)
_ALREADY = b"already running"  # DaemonAlreadyRunning's text, as `serve` prints it


def log_path(env: Mapping[str, str], runtime: Path, state: Path | None = None) -> Path:
    """Where an on-demand daemon logs: ``<state>/daemon.log``; the runtime dir's when the
    state dir cannot be written (the daemon will say why there)."""
    state = state or default_state_dir(env)
    try:
        state.mkdir(parents=True, exist_ok=True, mode=0o700)
        return state / "daemon.log"
    except OSError:
        return runtime / "daemon.log"


def holder(runtime: Path) -> int | None:
    """The pid of a live process holding ``runtime``'s dir lock (it writes its pid there and
    empties the file when it exits): a daemon still stopping or starting, None when there is
    none. A daemon killed outright leaves its pid behind, but no process."""
    try:
        pid = int((runtime / "daemon.lock").read_text().strip() or 0)
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid  # alive, another user's: not ours to replace either
    return pid


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def _disabled(env: Mapping[str, str]) -> bool:
    return env.get(NO_AUTOSTART_ENV, "").strip().lower() not in ("", "0", "false", "no")


def connect_or_start(
    where: Located | Path, env: Mapping[str, str], why: str, timeout: float = 5.0
) -> socket.socket:
    """A connection to the user's daemon, starting it if need be.

    ``where`` is :func:`agentcoord.kernel.locate.locate`'s answer (a bare path: that runtime dir, as
    ``--runtime-dir`` names it); ``why`` is the first connect's failure. Raises
    :class:`DaemonUnreachable` with one sentence saying what happened and what to do.
    """
    located = where if isinstance(where, Located) else Located((where,), where, None, True)
    runtime = located.start_runtime
    path = runtime / "agentcoord.sock"
    if _disabled(env):
        raise DaemonUnreachable(
            f"no daemon is listening on {path} ({why}) and {NO_AUTOSTART_ENV}=1 keeps it from "
            "being started on demand (the systemd service starts with `systemctl --user start "
            "agentcoord.socket`)"
        )
    if env.get("AGENTCOORD_JOB_ID"):
        # A runner the daemon started: its daemon is gone, and one started here (in the
        # runner's sandbox, with the dirs masked) would be no one else's.
        raise DaemonUnreachable(f"the daemon that started this agent is gone ({path}: {why})")
    deadline = time.monotonic() + timeout
    with _StartLock(env, deadline):
        # Under the lock: another caller may have started it meanwhile, anywhere.
        again = located if located.explicit else locate(env, os.getuid())
        with contextlib.suppress(OSError):
            return connect_first(again.candidates)[0]
        return _start(again, env, why, deadline, timeout)


def _start(
    located: Located, env: Mapping[str, str], why: str, deadline: float, timeout: float
) -> socket.socket:
    runtime, state = located.start_runtime, located.start_state
    path = runtime / "agentcoord.sock"
    log = log_path(env, runtime, state)
    try:
        runtime.mkdir(parents=True, exist_ok=True, mode=0o700)
        out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as exc:
        raise DaemonUnreachable(
            f"no daemon is listening on {path} ({why}), and none can be started: "
            f"{log}: {exc.strerror}"
        ) from None
    start = os.lseek(out, 0, os.SEEK_END)
    daemon_env = {k: v for k, v in env.items() if k not in _SESSION_ENV}
    # The dirs it was found to belong on, named: it must not look for them itself (its
    # environment may lack what pointed here).
    daemon_env["AGENTCOORD_RUNTIME_DIR"] = str(runtime)
    if state is not None:
        daemon_env["AGENTCOORD_STATE_DIR"] = str(state)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentcoord", "serve"],
            env=daemon_env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            cwd="/",  # holds no project directory (or mount) busy for its whole life
            start_new_session=True,  # not in the session's process group: it outlives it
        )
    except OSError as exc:
        what = f"`{sys.executable} -m agentcoord serve`"
        raise DaemonUnreachable(f"could not start {what}: {exc}") from None
    finally:
        os.close(out)
    lost = False  # our daemon exited "already running": another caller's serves
    while True:
        sock = _connect(path)
        if sock is not None and (runtime / "http.addr").exists():
            _forget(proc)
            return sock  # http.addr is written last: the daemon serves
        if sock is not None:
            sock.close()
        if lost and not located.explicit:  # the winner may serve elsewhere: its pointer says
            with contextlib.suppress(OSError):
                return connect_first(locate(env, os.getuid()).candidates)[0]
        if not lost and proc.poll() is not None:
            said = _said_since(log, start)
            if _ALREADY not in said:
                raise DaemonUnreachable(
                    f"the daemon could not start (exit {proc.returncode}): "
                    f"{_last_line(said) or 'no message'} (its log: {log})"
                )
            lost = True
        if time.monotonic() >= deadline:
            raise DaemonUnreachable(
                f"the daemon started on demand (pid {proc.pid}) did not answer on {path} "
                f"within {timeout:g} s (its log: {log})"
            )
        time.sleep(_POLL_S)


class _StartLock:
    """The per-user lock serialising starts on demand (an flock the kernel drops with us);
    waited for until ``deadline``, then gone without (the dir lock still keeps one daemon)."""

    def __init__(self, env: Mapping[str, str], deadline: float) -> None:
        self._path = pointer_dir(env, os.getuid()) / "start.lock"
        self._deadline = deadline
        self._fd: int | None = None

    def __enter__(self) -> _StartLock:
        import fcntl

        try:
            self._path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError:
            return self  # an unwritable home: the dir lock alone decides
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= self._deadline:
                    os.close(fd)
                    return self
                time.sleep(_POLL_S)  # a bounded wait for another caller's start
                continue
            self._fd = fd
            return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _forget(proc: subprocess.Popen[bytes]) -> None:
    """Let a daemon we started run on without us: it is no child to wait for (a running
    Popen's finaliser would warn). The kernel reparents it when we exit."""
    if proc.poll() is None:
        proc.returncode = 0


def _said_since(log: Path, offset: int) -> bytes:
    try:
        with log.open("rb") as f:
            f.seek(offset)
            return f.read(65536)
    except OSError:
        return b""


def _last_line(text: bytes) -> str:
    lines = [ln.strip() for ln in text.decode(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""
