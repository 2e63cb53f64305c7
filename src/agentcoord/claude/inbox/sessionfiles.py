"""Claude Code's session registry: which live session listens on which inbox socket
(docs/claude-code.md "The native inbox").

Each session that binds a messaging socket advertises it in ``<claude dir>/sessions/<pid>.json``
and removes the file at a clean exit. A record is believed only when everything on disk agrees:
the file and the socket belong to this user, the pid is alive and started when the record says
(``procStart``, field 22 of ``/proc/<pid>/stat``: a reused pid is another process), and the
socket path is an absolute path to a unix socket (never a symlink). Nothing here connects.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_RECORD_BYTES",
    "Peer",
    "proc_start",
    "read_peer",
    "registry_pids",
    "sessions_dir",
]

MAX_RECORD_BYTES = 64 * 1024  # a record is a few hundred bytes; anything bigger is not one
PEER_PROTOCOL = 1


@dataclass(frozen=True)
class Peer:
    """One live session's inbox as its registry record describes it."""

    pid: int
    socket: str  # the messaging socket's absolute path
    name: str  # the name Claude Code shows for the session (``ListAgents``)
    status: str  # ``idle`` or ``busy`` as last written ("" when the record says nothing)
    features: tuple[str, ...]
    session_id: str | None = None
    token: str | None = None  # the session's peer token, when its key file is readable
    name_source: str = ""  # who chose the name: ``user`` (/rename), ``peer``, ``derived``...

    @property
    def address(self) -> str:
        """The session's address as frames carry it (``uds:<socket>``)."""
        return f"uds:{self.socket}"


def sessions_dir(claude_dir: Path) -> Path:
    return claude_dir / "sessions"


def proc_start(pid: int) -> str | None:
    """Field 22 of ``/proc/<pid>/stat`` (start time in clock ticks), or None when the pid is
    gone. The command name (field 2) may hold spaces and parentheses: split after its last
    ``)``."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rsplit(")", 1)[-1].split()
    # fields[0] is field 3 (state), so field 22 is fields[19]; a zombie has exited.
    if len(fields) < 20 or fields[0] == "Z":
        return None
    return fields[19]


def registry_pids(claude_dir: Path) -> set[int]:
    """The pids that have a record now."""
    try:
        names = os.listdir(sessions_dir(claude_dir))
    except OSError:
        return set()
    return {int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit()}


def _read_owned(path: Path, uid: int, limit: int) -> bytes | None:
    """The bytes of a regular file ``uid`` owns (no symlink followed), at most ``limit``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != uid or st.st_size > limit:
            return None
        return os.read(fd, limit + 1)[:limit]
    finally:
        os.close(fd)


def _token(claude_dir: Path, pid: int, socket_path: str, uid: int) -> str | None:
    digest = hashlib.sha256(socket_path.encode()).hexdigest()
    raw = _read_owned(sessions_dir(claude_dir) / f"{pid}.{digest}.key", uid, MAX_RECORD_BYTES)
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        return None
    token = data.get("peerToken") if isinstance(data, dict) else None
    return token if isinstance(token, str) and token else None


def peer_from_record(data: Any, pid: int) -> Peer | None:
    """The pure check of one parsed record: None unless it names ``pid``, speaks protocol 1
    and gives an absolute socket path."""
    if not isinstance(data, dict) or data.get("pid") != pid:
        return None
    if data.get("peerProtocol") != PEER_PROTOCOL:
        return None
    path = data.get("messagingSocketPath")
    if not isinstance(path, str) or not os.path.isabs(path) or "\n" in path:
        return None
    features = data.get("peerFeatures")
    name = data.get("name")
    status = data.get("status")
    session_id = data.get("sessionId")
    return Peer(
        pid=pid,
        socket=os.path.normpath(path),
        name=name if isinstance(name, str) else "",
        status=status if status in ("idle", "busy") else "",
        features=tuple(f for f in features if isinstance(f, str))
        if isinstance(features, list)
        else (),
        session_id=session_id if isinstance(session_id, str) else None,
        name_source=str(data.get("nameSource") or ""),
    )


def read_peer(claude_dir: Path, pid: int, uid: int | None = None) -> Peer | None:
    """The live inbox of the session ``pid``, or None: no record, a record of another user or
    of a dead or reused pid, or a socket that is not this user's unix socket."""
    uid = os.getuid() if uid is None else uid
    raw = _read_owned(sessions_dir(claude_dir) / f"{pid}.json", uid, MAX_RECORD_BYTES)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    peer = peer_from_record(data, pid)
    if peer is None:
        return None
    started = proc_start(pid)
    recorded = data.get("procStart")
    if started is None or (recorded is not None and str(recorded) != started):
        return None
    try:
        st = os.lstat(peer.socket)
    except OSError:
        return None
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != uid:
        return None
    token = _token(claude_dir, pid, peer.socket, uid)
    return Peer(**{**peer.__dict__, "token": token})
