"""The seam ``list_agents``/``get_agent`` read Agent rows through (seed 000 "Discovery").

:class:`AgentSource` is what the tools need; :class:`DirectoryAgents` serves it from the
daemon's in-memory session directory until the object store's Agent objects replace it.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentcoord.daemon.directory import MemoryDirectory

__all__ = ["AgentSource", "DirectoryAgents"]


class AgentSource(Protocol):
    """Agent rows in seed 000's condensed shape: ``{name, profile, pool, phase, labels}``."""

    async def list_agents(self) -> list[dict[str, Any]]:
        """Every known agent, by name."""
        ...

    async def get_agent(self, name: str) -> dict[str, Any] | None:
        """One agent, or None when there is no such agent (not an error)."""
        ...


def _row(name: str, session_id: str | None, cwd: str | None) -> dict[str, Any]:
    labels = {}
    if session_id:
        labels["agentcoord/session"] = session_id
    if cwd:
        labels["agentcoord/cwd"] = cwd
    return {"name": name, "profile": "", "pool": "", "phase": "Running", "labels": labels}


class DirectoryAgents:
    """:class:`AgentSource` over :class:`MemoryDirectory` (live Claude sessions)."""

    def __init__(self, directory: MemoryDirectory) -> None:
        self._directory = directory

    async def list_agents(self) -> list[dict[str, Any]]:
        return [_row(*entry) for entry in self._directory.listing()]

    async def get_agent(self, name: str) -> dict[str, Any] | None:
        for entry in self._directory.listing():
            if entry[0] == name:
                return _row(*entry)
        return None
