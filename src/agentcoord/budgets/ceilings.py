"""Ceilings and what is used of them (pure; docs/budgets.md "Ceilings").

Three ceilings, each off at 0: concurrent sessions (live session agents), started agents
(agents the daemon runs: spawned ones Pending, Running or Idle, package agents while a runner
of theirs is Pending or Running) and spend in US dollars since local midnight (the
``total_cost_usd`` Claude Code's result carries, summed over the turns the daemon ran). A
start past the agents or the spend ceiling is refused (or queued: the service decides) with a
line that says which ceiling, its value, what holds it and what to do; sessions are people's
own and are never refused: past their ceiling they are told so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Ceilings",
    "Usage",
    "count_usage",
    "held_by",
    "over_agents",
    "over_ceiling",
    "over_sessions",
    "over_spend",
]

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
    # The started agents that hold the agents ceiling's slots, (name, phase), and the live
    # sessions' names: what a refusal or a session's notice names.
    holders: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    session_names: tuple[str, ...] = field(default=(), compare=False)

    def as_dict(self, ceilings: Ceilings) -> dict[str, Any]:
        return {
            "sessions": {"used": self.sessions, "ceiling": ceilings.sessions},
            "agents": {"used": self.agents, "ceiling": ceilings.agents},
            "spend_usd": {"used": round(self.spend_usd, 4), "ceiling": ceilings.spend_usd},
        }


def count_usage(agents: Iterable[Mapping[str, Any]], spend_usd: float) -> Usage:
    """Live sessions and started agents among Agent objects (``spec.agentType``,
    ``status.phase``), with the spend given. A package agent's Agent with no phase yet or
    Idle (made when it is first messaged, before its runner starts) runs nothing: it holds
    no slot. A spawned agent holds one from its spawn, Idle included."""
    sessions: list[str] = []
    started: list[tuple[str, str]] = []
    for obj in agents:
        kind = (obj.get("spec") or {}).get("agentType") or "session"
        phase = (obj.get("status") or {}).get("phase")
        if (kind in _STARTED_TYPES and phase is None) or (kind == "local" and phase == "Idle"):
            continue
        phase = phase or "Running"
        if phase not in _LIVE_PHASES:
            continue
        name = str((obj.get("metadata") or {}).get("name", ""))
        if kind == "session":
            sessions.append(name)
        elif kind in _STARTED_TYPES:
            started.append((name, phase))
    return Usage(
        len(sessions),
        len(started),
        spend_usd,
        holders=tuple(started),
        session_names=tuple(sessions),
    )


def held_by(holders: Iterable[tuple[str, str]], limit: int = 5) -> str:
    """``a (Running), b (Idle) and 3 more``: who holds the slots, for a person."""
    names = [f"{name} ({phase})" for name, phase in holders]
    if not names:
        return "starts not yet counted"
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def over_agents(ceilings: Ceilings, used: int, holders: Iterable[tuple[str, str]]) -> str | None:
    """Why one more started agent does not fit now, naming the ceiling, its value and what
    holds it; None when it fits."""
    if not ceilings.agents or used < ceilings.agents:
        return None
    return (
        f"the started-agents ceiling is reached: {used} of {ceilings.agents} run "
        f"(max_agents = {ceilings.agents}), held by {held_by(holders)}"
    )


def over_spend(ceilings: Ceilings, spend_usd: float) -> str | None:
    """Why nothing may start for today's spend, or None."""
    if ceilings.spend_usd and spend_usd >= ceilings.spend_usd:
        return (
            f"today's spend ceiling is reached: ${spend_usd:.2f} of "
            f"${ceilings.spend_usd:.2f} (max_spend_usd = {ceilings.spend_usd:g}); starts resume "
            "after local midnight, or raise max_spend_usd"
        )
    return None


def over_ceiling(ceilings: Ceilings, usage: Usage) -> str | None:
    """Why starting one more agent is refused now, or None when it may start."""
    why = over_agents(ceilings, usage.agents, usage.holders)
    if why is not None:
        return why + "; wait for one to end (or cancel one), or raise max_agents"
    return over_spend(ceilings, usage.spend_usd)


def over_sessions(ceilings: Ceilings, usage: Usage, name: str) -> str | None:
    """What the session ``name`` is told when it starts past ``max_sessions`` (it is counted
    in ``usage``), or None within the ceiling. It says the session runs anyway: the ceiling
    cannot stop a process the daemon did not start."""
    if not ceilings.sessions or usage.sessions <= ceilings.sessions:
        return None
    others = [n for n in usage.session_names if n != name]
    shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
    return (
        f"this machine is past its session ceiling: {usage.sessions} live sessions, "
        f"max_sessions = {ceilings.sessions} (the others: {shown or 'none'}). This session "
        "runs anyway (the ceiling does not stop a session), and the human has been told; "
        "start no agents (spawn_subagent, run_agent) unless the human asks you to"
    )
