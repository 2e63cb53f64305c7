"""The agent directory seam: maps resolved sessions and runners to Agent names.

The in-memory :class:`MemoryDirectory` serves until the object store backs this Protocol with
Agent objects; callers only see :class:`AgentDirectory`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal, Protocol

from agentcoord.kernel.ancestry import session_agent_stem

__all__ = [
    "AgentDirectory",
    "EndOutcome",
    "MemoryDirectory",
    "RunnerInfo",
    "SessionKey",
    "host_suffix",
]

SessionKey = tuple[int, float]  # (pid, create_time) of the claude process
# What ending a session did: kept as Ended, or removed (it never took part).
EndOutcome = Literal["ended", "removed"]


def host_suffix(host: str | None) -> str:
    """What a session agent's name ends with when several hosts share one NATS: ``--<host>``,
    valid in an object name and a NATS subject token (no dots, no ``@``); docs/one-host-to-many.md
    "What runs where"."""
    return f"--{host}" if host else ""


@dataclass(frozen=True)
class RunnerInfo:
    """A process the daemon started for an agent, and the depth of the turn it runs."""

    agent: str
    depth: int = 0
    chain: tuple[str, ...] = ()  # the agents whose turns led to this one (refusing cycles)


class AgentDirectory(Protocol):
    """Names for callers; first contact from an unknown session creates its Agent."""

    async def session_agent(self, key: SessionKey, session_id: str | None, cwd: str | None) -> str:
        """The Agent name of a live Claude session, created on first contact."""
        ...

    async def rename_session(self, key: SessionKey, name: str) -> None:
        """Give a session's Agent a chosen name (``register_agent``)."""
        ...

    async def mark_used(self, name: str) -> None:
        """The session ``name`` took part (a tool call, a hook): its end keeps it as Ended."""
        ...

    async def end_session(
        self, name: str, reason: str, key: SessionKey | None = None
    ) -> EndOutcome | None:
        """End a session's Agent (its process exited, or the SessionEnd hook ran)."""
        ...


class MemoryDirectory:
    """Session -> Agent name, kept in memory; names are ``<dir>-<n>``, or ``<dir>-<n>--<host>``
    when daemons on several hosts share one NATS, so ids are unique across hosts
    (docs/one-host-to-many.md "What runs where")."""

    def __init__(self, host: str | None = None) -> None:
        self._suffix = host_suffix(host)
        self._by_key: dict[SessionKey, str] = {}
        self._by_session_id: dict[str, str] = {}
        self._names: set[str] = set()
        self._meta: dict[str, tuple[str | None, str | None]] = {}  # name -> (session id, cwd)
        self._lock = asyncio.Lock()

    async def session_agent(self, key: SessionKey, session_id: str | None, cwd: str | None) -> str:
        async with self._lock:
            name = self._by_key.get(key)
            if name is None and session_id:
                name = self._by_session_id.get(session_id)
            if name is None:
                stem = session_agent_stem(cwd)
                n = 1
                while f"{stem}-{n}{self._suffix}" in self._names:
                    n += 1
                name = f"{stem}-{n}{self._suffix}"
                self._names.add(name)
            self._by_key[key] = name
            if session_id:
                self._by_session_id[session_id] = name
            self._meta[name] = (session_id, cwd)
            return name

    async def rename_session(self, key: SessionKey, name: str) -> None:
        async with self._lock:
            old = self._by_key.get(key)
            if old is not None:
                self._names.discard(old)
            self._names.add(name)
            self._by_key[key] = name
            if old is not None and old in self._meta:
                self._meta[name] = self._meta.pop(old)

    async def mark_used(self, name: str) -> None:
        return None  # nothing is kept beyond the process here, so nothing ends

    async def end_session(
        self, name: str, reason: str, key: SessionKey | None = None
    ) -> EndOutcome | None:
        return None

    def listing(self) -> list[tuple[str, str | None, str | None]]:
        """Known session agents as ``(name, session id, cwd)``, by name (list_agents)."""
        return sorted((name, *self._meta.get(name, (None, None))) for name in self._names)
