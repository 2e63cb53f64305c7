"""The registry records the daemon keeps for itself and for the agents that are not Claude
Code sessions (docs/claude-code.md "Who sessions can message").

Claude Code lists a record ``sessions/<pid>.json`` in every session's ``ListAgents`` when its
pid is alive (and started when ``procStart`` says) and its socket accepts connections; the name
in it is the address ``SendMessage`` takes. One pid per record: the daemon's own record is
under its pid, and each other agent's under the pid of a :class:`Holder`, a ``cat`` reading a
pipe the daemon holds: it lives exactly as long as the daemon (a crashed daemon's pipe closes
and the ``cat`` ends), so a record never outlives what answers its socket for long.
Each record carries :data:`OWNER_MARK` and the daemon's own pid and start: the next start
sweeps whatever a daemon that is gone left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import stat
import subprocess
import time
from pathlib import Path

from agentcoord.claude.inbox.sessionfiles import (
    MAX_RECORD_BYTES,
    PEER_PROTOCOL,
    proc_start,
    sessions_dir,
)
from agentcoord.kernel.files import write_atomic
from agentcoord.localagents.sessions import PEER_RECORD_ENTRYPOINT

__all__ = ["OWNER_MARK", "Holder", "remove_record", "sweep_records", "write_record"]

log = logging.getLogger(__name__)

OWNER_MARK = PEER_RECORD_ENTRYPOINT  # the record's ``entrypoint``: ours, dead or alive


def write_record(claude_dir: Path, pid: int, socket_path: Path, name: str, cwd: str) -> Path:
    """Write (0600) the record that makes ``socket_path`` the peer ``name`` under ``pid``."""
    now = int(time.time() * 1000)
    owner = os.getpid()
    record = {
        "pid": pid,
        "cwd": cwd,
        "startedAt": now,
        "procStart": proc_start(pid),
        "version": "agentcoord",
        "peerProtocol": PEER_PROTOCOL,
        "peerFeatures": ["notify_idle"],  # receipts and idle notices are sent to us
        "kind": "interactive",
        "entrypoint": OWNER_MARK,
        "messagingSocketPath": str(socket_path),
        "name": name,
        "nameSource": "agentcoord",
        "status": "idle",
        "updatedAt": now,
        "agentcoordOwner": {"pid": owner, "procStart": proc_start(owner)},
    }
    path = sessions_dir(claude_dir) / f"{pid}.json"
    write_atomic(path, json.dumps(record), mode=0o600, durable=False)
    return path


def remove_record(path: Path, socket_path: Path | None = None) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
    if socket_path is not None:
        with contextlib.suppress(OSError):
            os.unlink(socket_path)


def _owner_alive(data: dict[str, object]) -> bool:
    owner = data.get("agentcoordOwner")
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int):
        return False
    started = proc_start(owner["pid"])
    return started is not None and started == str(owner.get("procStart"))


def sweep_records(claude_dir: Path, uid: int) -> list[int]:
    """Remove the records (and sockets) of ours whose daemon is gone. The pids swept."""
    swept: list[int] = []
    folder = sessions_dir(claude_dir)
    try:
        names = os.listdir(folder)
    except OSError:
        return swept
    for name in names:
        if not name.endswith(".json") or not name[:-5].isdigit():
            continue
        path = folder / name
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != uid or st.st_size > MAX_RECORD_BYTES:
                continue
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("entrypoint") != OWNER_MARK:
            continue
        if _owner_alive(data):
            continue  # a live daemon's (another state dir's): not ours to touch
        sock = data.get("messagingSocketPath")
        remove_record(path)
        if isinstance(sock, str) and os.path.isabs(sock):
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(os.lstat(sock).st_mode):
                    os.unlink(sock)
        swept.append(int(name[:-5]))
    return swept


# The pipe is sh's stdin, kept as fd 3 for the background cat (whose own stdin POSIX sets to
# /dev/null before any redirection; dash takes no fd above 9); sh prints the cat's pid and exits.
_HOLDER_SH = "exec 3<&0; cat <&3 >/dev/null 2>&1 3<&- & echo $!"


def _start_holder(read_end: int) -> int:
    """Start a holder reading ``read_end``; its pid. Plain ``subprocess`` (in a thread): it
    hands the child fds 0-2 alone, so the cat keeps nothing of ours but the pipe, and sh's
    output ends when sh does."""
    out = subprocess.run(
        ["sh", "-c", _HOLDER_SH],
        stdin=read_end,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd="/",
        timeout=10,
        check=False,
    )
    try:
        return int(out.stdout.strip())
    except ValueError:
        raise OSError(f"no holder process started ({out.stdout!r})") from None


class Holder:
    """Async context manager: a ``cat`` whose pid a record names. It reads the daemon's pipe
    and ends when the daemon closes it, or dies. Started through ``sh`` in the background, so
    it is no child of the daemon (whose children are its runners and nats-server); it runs in
    ``/``, because the session probe (localagents/sessions.py) counts a record's process by
    its cwd, and a holder is inside no package."""

    def __init__(self) -> None:
        self._pipe: int | None = None
        self.pid = 0

    async def __aenter__(self) -> Holder:
        read_end, write_end = os.pipe()
        try:
            self.pid = await asyncio.to_thread(_start_holder, read_end)
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        self._pipe = write_end
        return self

    async def __aexit__(self, *exc: object) -> None:
        pipe, self._pipe = self._pipe, None
        if pipe is not None:
            os.close(pipe)  # the cat reads end-of-file and exits
