"""The seam ``list_agents``/``get_agent`` read Agent rows through (docs/tools.md "Discovery").

:class:`AgentSource` is what the tools need; :class:`StoreAgents` serves it from the object
store's Agent objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agentcoord.stores.objects.backend import ObjectBackend

__all__ = ["AgentSource", "AgentStates", "StoreAgents", "agent_row"]


class AgentStates(Protocol):
    """Where a row's live state comes from (the activity service, docs/activity.md)."""

    def fields(
        self, agent: str, labels: Mapping[str, str] | None = None, phase: str | None = None
    ) -> dict[str, Any]:
        """``state`` (in words) and ``state_since``, or nothing when unknown."""
        ...


class AgentSource(Protocol):
    """Agent rows in the condensed shape: ``{name, profile, pool, phase, labels}``."""

    async def list_agents(self) -> list[dict[str, Any]]:
        """Every known agent, by name."""
        ...

    async def get_agent(self, name: str) -> dict[str, Any] | None:
        """One agent, or None when there is no such agent (not an error)."""
        ...


def agent_row(obj: dict[str, Any]) -> dict[str, Any]:
    """The condensed row of an Agent object; phase reads Unknown until status is set."""
    spec, status, meta = obj.get("spec", {}), obj.get("status", {}), obj["metadata"]
    row = {
        "name": meta["name"],
        "profile": spec.get("profile", ""),
        "pool": spec.get("pool", ""),
        "phase": status.get("phase") or "Unknown",
        "labels": dict(meta.get("labels") or {}),
    }
    if status.get("endedAt"):  # an ended session: when and why (docs/localagents.md)
        row["ended_at"] = status["endedAt"]
        row["reason"] = status.get("reason", "")
    return row


class StoreAgents:
    """:class:`AgentSource` over Agent objects in one namespace of the object store."""

    def __init__(
        self, store: ObjectBackend, namespace: str = "default", states: AgentStates | None = None
    ) -> None:
        self._store = store
        self._ns = namespace
        self._states = states

    def _row(self, obj: dict[str, Any]) -> dict[str, Any]:
        row = agent_row(obj)
        if self._states is not None:
            row.update(self._states.fields(row["name"], row["labels"], row["phase"]))
        return row

    async def list_agents(self) -> list[dict[str, Any]]:
        # Registered HTTP agents are Agent objects too; list_agents shows them with the
        # registry's own rows (effective_status), so they are left out here.
        _, objs, _ = self._store.list_raw("agents", self._ns, "!fastverk.savvifi.com/record-kind")
        return sorted((self._row(o) for o in objs), key=lambda r: r["name"])

    async def get_agent(self, name: str) -> dict[str, Any] | None:
        from agentcoord.stores.objects.statuserrors import ObjectNotFound

        try:
            obj = await self._store.get("agents", self._ns, name)
        except ObjectNotFound:
            return None
        if "fastverk.savvifi.com/record-kind" in (obj["metadata"].get("labels") or {}):
            return None  # a registered agent: get_agent answers with its registry row
        return self._row(obj)
