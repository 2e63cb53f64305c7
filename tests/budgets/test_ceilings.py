"""Ceilings on sessions, started agents and spend (pure)."""

from __future__ import annotations

from typing import Any

from agentcoord.budgets import Ceilings, Usage, over_ceiling
from agentcoord.budgets.ceilings import count_usage


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
