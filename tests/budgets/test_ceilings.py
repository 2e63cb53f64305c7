"""Ceilings on sessions, started agents and spend (pure)."""

from __future__ import annotations

from typing import Any

from agentcoord.budgets import Ceilings, Usage, over_ceiling
from agentcoord.budgets.ceilings import (
    count_usage,
    held_by,
    over_agents,
    over_sessions,
    over_spend,
)


def _agent(kind: str, phase: str) -> dict[str, Any]:
    return {"spec": {"agentType": kind}, "status": {"phase": phase}}


def test_usage_counts_live_sessions_and_started_agents() -> None:
    """Live sessions and live spawned or local agents count; ended or failed ones do not;
    registered HTTP agents are not started by the daemon."""
    objs = [
        _agent("session", "Running"),
        _agent("session", "Ended"),
        _agent("spawned", "Idle"),
        _agent("spawned", "Pending"),
        _agent("local", "Running"),
        _agent("spawned", "Failed"),
        _agent("http", "Running"),
        {"metadata": {}},  # a session agent written before types: a session
    ]
    assert count_usage(objs, 1.5) == Usage(sessions=2, agents=3, spend_usd=1.5)


def test_over_ceiling_names_the_ceiling_and_what_to_do() -> None:
    """A start is refused at the agents or the spend ceiling, with the numbers and the fix;
    0 is no ceiling, and sessions never refuse a start."""
    assert over_ceiling(Ceilings(), Usage(50, 50, 500.0)) is None
    assert over_ceiling(Ceilings(sessions=1, agents=4), Usage(9, 3, 0.0)) is None
    why = over_ceiling(Ceilings(agents=4), Usage(0, 4, 0.0))
    assert why is not None
    assert "4 of 4 run" in why
    assert "max_agents" in why
    spent = over_ceiling(Ceilings(spend_usd=2.0), Usage(0, 0, 2.5))
    assert spent is not None
    assert "$2.50 of $2.00" in spent
    assert "max_spend_usd" in spent
    assert Usage(1, 2, 0.123456).as_dict(Ceilings(3, 4, 5.0)) == {
        "sessions": {"used": 1, "ceiling": 3},
        "agents": {"used": 2, "ceiling": 4},
        "spend_usd": {"used": 0.1235, "ceiling": 5.0},
    }


def _named(name: str, kind: str, phase: str | None) -> dict[str, Any]:
    status = {} if phase is None else {"phase": phase}
    return {"metadata": {"name": name}, "spec": {"agentType": kind}, "status": status}


def test_slots_are_held_by_running_agents_not_by_package_agents_at_rest() -> None:
    """A spawned agent holds a slot from its spawn (Idle too); a package agent's Agent holds
    none before its runner starts (no phase, or Idle), one while it runs; the holders are
    named with their phase, the live sessions by name."""
    usage = count_usage(
        [
            _named("bee", "spawned", "Idle"),
            _named("pkg-a", "local", None),
            _named("pkg-b", "local", "Idle"),
            _named("pkg-c", "local", "Running"),
            _named("app-1", "session", "Running"),
        ],
        0.0,
    )
    assert usage.agents == 2
    assert usage.holders == (("bee", "Idle"), ("pkg-c", "Running"))
    assert usage.session_names == ("app-1",)
    assert held_by(usage.holders) == "bee (Idle), pkg-c (Running)"
    assert held_by([(f"a{n}", "Running") for n in range(7)]).endswith("and 2 more")


def test_refusals_name_the_ceiling_its_value_and_what_holds_it() -> None:
    """The agents line names max_agents and its holders; the spend line names max_spend_usd."""
    why = over_agents(Ceilings(agents=2), 2, [("bee", "Running"), ("wasp", "Idle")])
    assert why == (
        "the started-agents ceiling is reached: 2 of 2 run (max_agents = 2), "
        "held by bee (Running), wasp (Idle)"
    )
    assert over_agents(Ceilings(agents=2), 1, [("bee", "Running")]) is None
    spent = over_spend(Ceilings(spend_usd=1.5), 2.0)
    assert spent is not None
    assert "$2.00 of $1.50 (max_spend_usd = 1.5)" in spent


def test_a_session_past_max_sessions_is_told_it_runs_anyway() -> None:
    """Only past the ceiling (the session itself counted) is there a line; it names the
    count, the ceiling and the other sessions, and says the session runs anyway."""
    two = count_usage([_named("a", "session", "Running"), _named("b", "session", None)], 0.0)
    assert over_sessions(Ceilings(sessions=2), two, "b") is None
    assert over_sessions(Ceilings(), two, "b") is None
    line = over_sessions(Ceilings(sessions=1), two, "b")
    assert line is not None
    assert line.startswith("this machine is past its session ceiling: 2 live sessions, ")
    assert "max_sessions = 1 (the others: a)" in line
    assert "runs anyway" in line
