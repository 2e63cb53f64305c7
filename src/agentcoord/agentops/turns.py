"""Turns: one run of an agent's runner, the table of turns each agent runs (the daemon's basis
for depth), and the runner table that tells the controller when a runner started."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcoord.agentops.callrules import LinkedSession, TurnPlace
from agentcoord.identity.runners import RunnerInfo, RunnerKey, RunnerTable

__all__ = ["ActiveTurns", "RegisteringRunners", "Turn", "focus_of"]


class ActiveTurns:
    """Turns each agent is running now, as (depth, chain): the daemon's basis for depth."""

    def __init__(self) -> None:
        self._by_agent: defaultdict[str, dict[str, tuple[int, tuple[str, ...]]]] = defaultdict(dict)

    def add(self, agent: str, turn_id: str, place: TurnPlace) -> None:
        self._by_agent[agent][turn_id] = (place.depth, place.chain)

    def remove(self, agent: str, turn_id: str) -> None:
        self._by_agent[agent].pop(turn_id, None)

    def of(self, agent: str) -> list[tuple[int, tuple[str, ...]]]:
        return list(self._by_agent.get(agent, {}).values())


@dataclass
class Turn:
    """One run of an agent's runner: a main turn or a message in a linked session."""

    id: str
    agent: str
    place: TurnPlace
    session: LinkedSession
    resume: bool
    prompt: str
    job_dir: Path
    done: asyncio.Future[dict[str, Any]]
    task: asyncio.Task[None] | None = None
    key: RunnerKey | None = None  # (pid, create_time) once started
    focus: str = ""  # what the turn is about, for status.focus
    started: float = field(default_factory=time.monotonic)


class RegisteringRunners:
    """A :class:`agentcoord.identity.runners.RunnerTable` for one turn: registers its runner in
    the daemon's table and tells the controller that the turn's runner started."""

    def __init__(self, table: RunnerTable, turn: Turn, on_start: Callable[[Turn], None]) -> None:
        self._table, self._turn, self._on_start = table, turn, on_start

    def register(self, pid: int, create_time: float, info: RunnerInfo) -> RunnerKey:
        key = self._table.register(pid, create_time, info)
        self._turn.key = key
        self._on_start(self._turn)
        return key

    def forget(self, key: RunnerKey) -> None:
        self._table.forget(key)


def focus_of(text: str, limit: int = 120) -> str:
    """The first non-empty line of a turn's text: what the agent works on now."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""
