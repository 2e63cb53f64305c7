"""Who a message may be addressed to (docs/messaging.md "Recipients").

A direct send, a handoff offer, a channel invitation, ``send_message`` and ``ask`` name their
recipient; a misspelt name would otherwise wait in a durable inbox for an agent that never
comes. Known names are every Agent object in the store (any phase: an Ended session may be
resumed; registered HTTP agents are Agent objects too), every local package agent, and the
human. An unknown name is a tool error naming the closest known ones, unless the caller asks
to queue for an agent that does not exist yet.

The sources are small Protocols read in memory, so this module imports neither the local agents
nor the daemon.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from agentcoord.errors import NotFound
from agentcoord.stores.objects.statuserrors import ObjectNotFound

__all__ = [
    "QUEUED_NOTE",
    "QUEUE_HINT",
    "AgentObjects",
    "PackageAgents",
    "Recipients",
    "unknown_text",
]

_SUGGESTIONS = 3

# The note a result carries when it was queued for a name no agent has (``queue_unknown``).
QUEUED_NOTE = "no agent named {name} exists yet; the message waits in its inbox"
# What a refusal adds: how to queue on purpose.
QUEUE_HINT = "(queue_unknown=true queues for an agent that does not exist yet)"


class AgentObjects(Protocol):
    """The object store's in-memory reads (:meth:`ObjectBackend.get_raw`, ``list_raw``)."""

    def get_raw(self, plural: str, namespace: str, name: str) -> bytes: ...

    def list_raw(self, plural: str, namespace: str | None = None) -> tuple[Any, Any, Any]: ...


class PackageAgents(Protocol):
    """Local package agents: the live package index (:class:`agentcoord.localagents.index.
    PackageIndex`; empty where local agents are off)."""

    def packages(self) -> Iterable[Any]: ...

    def get(self, agent_id: str) -> Any | None: ...


def unknown_text(name: str, known: Iterable[str]) -> str:
    """``no agent named X; did you mean: a, b?``, or that no agent has a similar name."""
    close = difflib.get_close_matches(name, sorted(set(known)), n=_SUGGESTIONS)
    if close:
        return f"no agent named {name}; did you mean: {', '.join(close)}?"
    return f"no agent named {name} (no agent has a similar name)"


class Recipients:
    """Checks recipient names against the agents that exist."""

    def __init__(
        self,
        store: AgentObjects | None,
        namespace: str,
        *,
        packages: PackageAgents | None = None,
        human: str = "",
        host: str | None = None,
        also: Callable[[], set[str]] | None = None,
    ) -> None:
        """``store``: Agent objects in ``namespace`` (None: none, for tests that have no
        store); ``packages``: local package agents; ``human``: the human's name
        (``human:<user>``); ``also``: more names that exist (the agents of the human's tokens
        for MCP clients, docs/tokens.md)."""
        self._also = also
        self._store = store
        self._ns = namespace
        self._packages = packages
        self._human = human
        # Hosts sharing one NATS qualify session names with ``--<host>``; an agent of another
        # host lives in that host's store, so its name is taken on trust (docs/one-host-to-many.md
        # "What runs where").
        self._host = host

    def known(self) -> set[str]:
        """Every name a message may be addressed to now."""
        names: set[str] = set()
        if self._store is not None:
            _, objs, _ = self._store.list_raw("agents", self._ns)
            names.update(o["metadata"]["name"] for o in objs)
        p = self._packages
        if p is not None:
            names.update(pkg.agent_id for pkg in p.packages())
        if self._human:
            names.add(self._human)
        if self._also is not None:
            names.update(self._also())
        return names

    async def check(self, names: Iterable[str]) -> None:
        """Raise :class:`NotFound` for the first of ``names`` no agent has, naming the
        closest known names."""
        for name in names:
            if not self.exists(name) and not self._other_host(name):
                # The option is unlisted (docs/messaging.md "Recipients"): the error teaches it.
                raise NotFound(f"{unknown_text(name, self.known())} {QUEUE_HINT}")

    def exists(self, name: str) -> bool:
        """One lookup per place a name can live: every send asks, and listing every Agent
        (each decoded from its JSON) and package is only worth it for the suggestions."""
        if name == self._human or (self._also is not None and name in self._also()):
            return True
        if self._store is not None:
            try:
                self._store.get_raw("agents", self._ns, name)
                return True
            except ObjectNotFound:
                pass
        p = self._packages
        return p is not None and p.get(name) is not None

    def _other_host(self, name: str) -> bool:
        if not self._host:
            return False
        stem, sep, host = name.rpartition("--")
        return bool(sep and stem and host) and host != self._host
