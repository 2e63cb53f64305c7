"""The registry records the daemon keeps for itself and for the agents that are not Claude
Code sessions (docs/claude-code.md "Who sessions can message").

Claude Code lists a record ``sessions/<pid>.json`` in every session's ``ListAgents`` when its
pid is alive (and started when ``procStart`` says) and its socket accepts connections; the name
in it is the address ``SendMessage`` takes. One pid per record: the daemon's own record is
under its pid, and each other agent's under the thread id of a :class:`Holder`, a thread of
the daemon: it lives exactly as long as the daemon, so a record never outlives what answers
its socket.
Each record carries :data:`OWNER_MARK` and the daemon's own pid and start: the next start
sweeps whatever a daemon that is gone left behind.
"""

from __future__ import annotations

import _thread
import contextlib
import json
import logging
import os
import stat
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


class Holder:
    """Async context manager: a thread of the daemon whose thread id a record names.

    Claude Code takes a record's pid from its file name and checks it with ``kill(pid, 0)``
    and ``/proc/<pid>/stat`` (its start, field 22): on Linux both answer for a thread id as for
    a process id, so each record needs a live id of its own, not a process. A thread is the
    cheapest such id (no fork, no exec, nothing in the process table the session probe walks)
    and it cannot outlive the daemon: killed, the daemon takes its threads with it, so its
    records name dead ids until the next start sweeps them.

    A bare ``_thread`` blocked on a lock, not a :class:`threading.Thread`: the daemon holds up
    to 256 of them (docs/claude-code.md "Who sessions can message"), and a ``Thread`` with its
    two events added a third to each one's resident cost (about 19 KB against 14 KB)."""

    def __init__(self) -> None:
        self._release = _thread.allocate_lock()
        self._release.acquire()  # held until __aexit__: the thread blocks on it
        self._held = False
        self.pid = 0

    async def __aenter__(self) -> Holder:
        ready = _thread.allocate_lock()
        ready.acquire()
        ids: list[int] = []
        release = self._release

        def hold() -> None:
            ids.append(_thread.get_native_id())
            ready.release()
            release.acquire()

        _thread.start_new_thread(hold, ())
        with ready:  # the thread's first two statements: microseconds
            self.pid = ids[0]
        self._held = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._held:
            self._held = False
            self._release.release()  # the thread returns; its id is gone at once
