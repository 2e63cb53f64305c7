"""The processes the daemon started for agents (runners), and who each one is.

Whoever starts a runner registers it (``localagents/runner.py``'s ``run_local``, the operator's
adoption after a restart) and forgets it when it exits; the identity resolver only looks a
process up (:func:`agentcoord.identity.ancestry.decide`). A runner is keyed by its pid and its
start time, so a recycled pid is never mistaken for one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

__all__ = ["RunnerInfo", "RunnerKey", "RunnerLookup", "RunnerTable", "Runners"]

RunnerKey = tuple[int, float]  # (pid, create_time) of the process the daemon started


@dataclass(frozen=True)
class RunnerInfo:
    """A process the daemon started for an agent, and the depth of the turn it runs."""

    agent: str
    depth: int = 0
    chain: tuple[str, ...] = ()  # the agents whose turns led to this one (refusing cycles)


class RunnerLookup(Protocol):
    """What the identity rules read: the runner a process is, if any."""

    def lookup(self, key: RunnerKey) -> RunnerInfo | None: ...


class RunnerTable(Protocol):
    """What a starter of runners writes: one registered while it runs, forgotten at its end."""

    def register(self, pid: int, create_time: float, info: RunnerInfo) -> RunnerKey: ...

    def forget(self, key: RunnerKey) -> None: ...


class Runners:
    """The daemon's live runners: a :class:`RunnerTable` for their starters and a
    :class:`RunnerLookup` for the identity resolver. Used on the event loop only."""

    def __init__(self) -> None:
        self._by_key: dict[RunnerKey, RunnerInfo] = {}

    def register(self, pid: int, create_time: float, info: RunnerInfo) -> RunnerKey:
        """Record that the process ``(pid, create_time)`` runs ``info``'s agent."""
        key = (pid, create_time)
        self._by_key[key] = info
        return key

    def forget(self, key: RunnerKey) -> None:
        """The runner ``key`` exited (or is being stopped); forgetting twice is harmless."""
        self._by_key.pop(key, None)

    def lookup(self, key: RunnerKey) -> RunnerInfo | None:
        """The runner the process ``key`` is, or None when the daemon did not start it."""
        return self._by_key.get(key)

    def __len__(self) -> int:
        return len(self._by_key)

    def __iter__(self) -> Iterator[tuple[RunnerKey, RunnerInfo]]:
        """The live runners, in the order they were registered."""
        return iter(list(self._by_key.items()))
