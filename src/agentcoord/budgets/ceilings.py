"""Ceilings and what is used of them (pure; docs/budgets.md "Ceilings").

Three ceilings, each off at 0: concurrent sessions (live session agents), started agents
(agents the daemon runs: spawned and local, Pending or Running) and spend in US dollars since
local midnight (the ``total_cost_usd`` Claude Code's result carries, summed over the turns the
daemon ran). Starting an agent past the agents or the spend ceiling is refused with a line
that says which ceiling, what is used, and what to do; sessions are people's own and are
never refused: past their ceiling they are shown over it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Ceilings", "Usage", "count_usage", "over_ceiling"]

_STARTED_TYPES = frozenset({"spawned", "local"})
_LIVE_PHASES = frozenset({"Pending", "Running", "Idle"})


@dataclass(frozen=True)
class Ceilings:
    """The configured ceilings; 0 is none."""

    sessions: int = 0
    agents: int = 0
    spend_usd: float = 0.0


@dataclass(frozen=True)
class Usage:
    """What is used now."""

    sessions: int
    agents: int
    spend_usd: float

    def as_dict(self, ceilings: Ceilings) -> dict[str, Any]:
        return {
            "sessions": {"used": self.sessions, "ceiling": ceilings.sessions},
            "agents": {"used": self.agents, "ceiling": ceilings.agents},
            "spend_usd": {"used": round(self.spend_usd, 4), "ceiling": ceilings.spend_usd},
        }


def count_usage(agents: Iterable[Mapping[str, Any]], spend_usd: float) -> Usage:
    """Live sessions and started agents among Agent objects (``spec.agentType``,
    ``status.phase``), with the spend given."""
    sessions = started = 0
    for obj in agents:
        kind = (obj.get("spec") or {}).get("agentType") or "session"
        phase = (obj.get("status") or {}).get("phase") or "Running"
        if phase not in _LIVE_PHASES:
            continue
        if kind == "session":
            sessions += 1
        elif kind in _STARTED_TYPES:
            started += 1
    return Usage(sessions, started, spend_usd)


def over_ceiling(ceilings: Ceilings, usage: Usage) -> str | None:
    """Why starting one more agent is refused now, or None when it may start."""
    if ceilings.agents and usage.agents >= ceilings.agents:
        return (
            f"the started-agents ceiling is reached: {usage.agents} of {ceilings.agents} run; "
            "wait for one to end (or cancel one), or raise max_agents"
        )
    if ceilings.spend_usd and usage.spend_usd >= ceilings.spend_usd:
        return (
            f"today's spend ceiling is reached: ${usage.spend_usd:.2f} of "
            f"${ceilings.spend_usd:.2f}; starts resume after local midnight, or raise "
            "max_spend_usd"
        )
    return None
