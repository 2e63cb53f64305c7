"""The seam ``list_agents``/``get_agent`` read Agent rows through (seed 000 "Discovery").

:class:`AgentSource` is what the tools need; :class:`StoreAgents` serves it from the object
store's Agent objects (the daemon's default), :class:`DirectoryAgents` from the in-memory
session directory (tests of the tools without a store).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from agentcoord.daemon.directory import MemoryDirectory

if TYPE_CHECKING:
    from agentcoord.stores.objects.store import ObjectStore

__all__ = ["AgentSource", "DirectoryAgents", "StoreAgents"]


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


def agent_row(obj: dict[str, Any]) -> dict[str, Any]:
    """Seed 000's condensed row of an Agent object; phase reads Unknown until status is set."""
    spec, status, meta = obj.get("spec", {}), obj.get("status", {}), obj["metadata"]
    return {
        "name": meta["name"],
        "profile": spec.get("profile", ""),
        "pool": spec.get("pool", ""),
        "phase": status.get("phase") or "Unknown",
        "labels": dict(meta.get("labels") or {}),
    }


class StoreAgents:
    """:class:`AgentSource` over Agent objects in one namespace of the object store."""

    def __init__(self, store: ObjectStore, namespace: str = "default") -> None:
        self._store = store
        self._ns = namespace

    async def list_agents(self) -> list[dict[str, Any]]:
        # Registered HTTP agents are Agent objects too; list_agents shows them with the
        # registry's own rows (effective_status), so they are left out here.
        _, objs, _ = self._store.list_raw("agents", self._ns, "!fastverk.savvifi.com/record-kind")
        return sorted((agent_row(o) for o in objs), key=lambda r: r["name"])

    async def get_agent(self, name: str) -> dict[str, Any] | None:
        from agentcoord.stores.objects.errors import ObjectNotFound

        try:
            obj = await self._store.get("agents", self._ns, name)
        except ObjectNotFound:
            return None
        if "fastverk.savvifi.com/record-kind" in (obj["metadata"].get("labels") or {}):
            return None  # a registered agent: get_agent answers with its registry row
        return agent_row(obj)
