"""The agent directory seam: maps resolved sessions to Agent names.

The Agent objects back this Protocol in the daemon (``stores/objects/agentdirectory.py``);
:class:`MemoryDirectory` keeps the same names in memory. Both name a new session with
:func:`agentcoord.kernel.sessionnames.session_name`.
"""

from __future__ import annotations

import asyncio
from typing import Literal, Protocol

from agentcoord.kernel.sessionnames import session_name

__all__ = ["AgentDirectory", "EndOutcome", "MemoryDirectory", "SessionKey"]

SessionKey = tuple[int, float]  # (pid, create_time) of the session's CLI process
# What ending a session did: kept as Ended, or removed (it never took part).
EndOutcome = Literal["ended", "removed"]


class AgentDirectory(Protocol):
    """Names for callers; first contact from an unknown session creates its Agent."""

    async def session_agent(
        self,
        key: SessionKey,
        session_id: str | None,
        cwd: str | None,
        name_base: str | None,
        native: str | None = None,
    ) -> str:
        """The Agent name of a live session, created on first contact; a new one is named
        ``native`` (the CLI's own name for it) when that is free and valid, else from
        ``name_base`` (what its kind's name rule says it reads as). An existing session agent
        keeps its name."""
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
        self._host = host
        self._by_key: dict[SessionKey, str] = {}
        self._by_session_id: dict[str, str] = {}
        self._names: set[str] = set()
        self._meta: dict[str, tuple[str | None, str | None]] = {}  # name -> (session id, cwd)
        self._lock = asyncio.Lock()

    async def session_agent(
        self,
        key: SessionKey,
        session_id: str | None,
        cwd: str | None,
        name_base: str | None,
        native: str | None = None,
    ) -> str:
        async with self._lock:
            name = self._by_key.get(key)
            if name is None and session_id:
                name = self._by_session_id.get(session_id)
            if name is None:
                name = session_name(name_base, self._names, self._host, native)
                self._names.add(name)
            self._by_key[key] = name
            if session_id:
                self._by_session_id[session_id] = name
            self._meta[name] = (session_id, cwd)
            return name

    async def mark_used(self, name: str) -> None:
        return None  # nothing is kept beyond the process here, so nothing ends

    async def end_session(
        self, name: str, reason: str, key: SessionKey | None = None
    ) -> EndOutcome | None:
        return None

    def listing(self) -> list[tuple[str, str | None, str | None]]:
        """Known session agents as ``(name, session id, cwd)``, by name (list_agents)."""
        return sorted((name, *self._meta.get(name, (None, None))) for name in self._names)
