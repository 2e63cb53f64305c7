"""Live Claude Code sessions and the online/idle status of packages
(docs/localagents.md "Local agents: packages and sessions").

Sources (docs/localagents.md "Sessions"): ``claude`` processes and their cwd (psutil),
``~/.claude/sessions/<pid>.json`` ({pid, sessionId, cwd, startedAt, updatedAt}) and the newest
transcript under ``~/.claude/projects/<cwd, non-alphanumerics as '-'>/``. The probe is the I/O
shell; :func:`package_status` is the pure rule.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agentcoord.identity.kinds import ClaudeCode
from agentcoord.identity.procinfo import ProcInfo
from agentcoord.kernel.lazy import on_first_use

if TYPE_CHECKING:
    import psutil
else:  # ~6 ms of imports that the daemon's start-up does not need (agentcoord.kernel.lazy)
    psutil = on_first_use("psutil")

__all__ = [
    "LiveSession",
    "PsutilSessionProbe",
    "SessionProbe",
    "package_status",
    "project_dir_name",
]

_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")
_CLAUDE = ClaudeCode()  # how a process is recognised as a Claude Code session


@dataclass(frozen=True)
class LiveSession:
    """A running Claude Code session: where it works and when it last did something."""

    pid: int
    cwd: str
    last_activity: float  # unix seconds
    session_id: str | None = None


# The ``entrypoint`` of the records agentcoord itself writes into Claude Code's session
# registry for its own mailboxes (docs/claude-code.md "Who sessions can message").
PEER_RECORD_ENTRYPOINT = "agentcoord"


def project_dir_name(cwd: str) -> str:
    """The transcript directory name Claude Code uses for ``cwd``."""
    return _NON_ALNUM.sub("-", cwd)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def package_status(
    package: Path | str, sessions: Iterable[LiveSession], ttl: float, now: float
) -> tuple[str, LiveSession | None]:
    """``online`` when a live session works inside ``package`` within ``ttl``, else ``idle``.

    Never ``offline``: a local agent is always callable by a cold start.
    """
    root = str(package)
    best: LiveSession | None = None
    for s in sessions:
        fresh = _inside(s.cwd, root) and now - s.last_activity <= ttl
        if fresh and (best is None or s.last_activity > best.last_activity):
            best = s
    return ("online", best) if best is not None else ("idle", None)


class SessionProbe(Protocol):
    """Lists the live sessions on this machine."""

    def sessions(self) -> list[LiveSession]: ...


def _newest_mtime(directory: Path) -> float:
    newest = 0.0
    try:
        with os.scandir(directory) as it:
            for entry in it:
                if entry.name.endswith(".jsonl"):
                    try:
                        newest = max(newest, entry.stat().st_mtime)
                    except OSError:
                        continue
    except OSError:
        pass
    return newest


class PsutilSessionProbe:
    """The real probe. ``cache_s`` bounds how often the process table is walked."""

    def __init__(self, claude_dir: Path, cache_s: float = 1.0) -> None:
        self._claude_dir = claude_dir
        self._cache_s = cache_s
        self._cached: tuple[float, list[LiveSession]] | None = None

    def sessions(self) -> list[LiveSession]:
        now = time.monotonic()
        if self._cached is not None and now - self._cached[0] < self._cache_s:
            return self._cached[1]
        found = self._probe()
        self._cached = (now, found)
        return found

    def _session_files(self) -> dict[int, dict[str, object]]:
        """The registry's records by pid, without the daemon's own peer records (those name
        agentcoord's mailboxes, not Claude Code sessions: docs/claude-code.md "Who sessions
        can message")."""
        out: dict[int, dict[str, object]] = {}
        try:
            entries = list(os.scandir(self._claude_dir / "sessions"))
        except OSError:
            return out
        for entry in entries:
            if not entry.name.endswith(".json"):
                continue
            try:
                with open(entry.path, "rb") as fh:
                    data = json.loads(fh.read(65536))
                pid = int(data["pid"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if isinstance(data, dict) and data.get("entrypoint") != PEER_RECORD_ENTRYPOINT:
                out[pid] = data
        return out

    def _probe(self) -> list[LiveSession]:
        files = self._session_files()
        live: dict[int, tuple[str, float, str | None]] = {}
        for proc in psutil.process_iter(["name", "cmdline", "exe", "create_time"]):
            info = proc.info
            cmdline = info.get("cmdline") or []
            row = ProcInfo(
                pid=proc.pid,
                create_time=info.get("create_time") or 0.0,
                name=info.get("name") or "",
                argv0=cmdline[0] if cmdline else "",
                exe=info.get("exe") or "",
            )
            if not _CLAUDE.recognise(row) and proc.pid not in files:
                continue
            try:
                cwd = proc.cwd()
            except psutil.Error:
                continue
            live[proc.pid] = (cwd, row.create_time, None)
        out: list[LiveSession] = []
        for pid, (cwd, started, _) in live.items():
            record = files.get(pid, {})
            sid = record.get("sessionId")
            activity = started
            updated = record.get("updatedAt")
            if isinstance(updated, int | float):
                activity = max(activity, updated / 1000.0)
            activity = max(
                activity, _newest_mtime(self._claude_dir / "projects" / project_dir_name(cwd))
            )
            out.append(LiveSession(pid, cwd, activity, sid if isinstance(sid, str) else None))
        return out
