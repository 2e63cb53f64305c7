"""Budgets against the real daemon and its stand-in runners: past the started-agents ceiling a
spawn is refused saying which ceiling; past today's spend (the turns' ``total_cost_usd``) too;
the ceilings and what is used of them are reported to the human (docs/budgets.md)."""

from __future__ import annotations

from typing import Any

from tests.agentops.conftest import fails, needs_bwrap, ok, stored, wait_for
from tests.budgets.report import budgets

pytestmark = needs_bwrap


def test_a_spawn_past_the_agents_ceiling_is_refused(local_daemon: Any) -> None:
    """With max_agents 1, the second spawn is refused naming the ceiling; once the first is
    cancelled, a spawn goes through again."""
    d, _, call = local_daemon(AGENTCOORD_MAX_AGENTS="1", AGENTCOORD_MAX_SESSIONS="5")
    ok(call, "spawn_subagent", name="bee")
    why = fails(call, "spawn_subagent", name="wasp")
    assert "not starting agent wasp: the started-agents ceiling is reached: 1 of 1 run" in why
    assert stored(d, "agents", "wasp") is None
    report = budgets(d)
    assert report["agents"] == {"used": 1, "ceiling": 1}
    assert report["sessions"]["ceiling"] == 5
    ok(call, "cancel", name="bee")
    wait_for(lambda: budgets(d)["agents"]["used"] == 0, what="bee to stop counting")
    ok(call, "spawn_subagent", name="wasp")


def test_a_spawn_past_todays_spend_is_refused(local_daemon: Any) -> None:
    """A turn that cost $0.75 against a $0.50 ceiling: the spend is reported, and the next
    spawn is refused naming the spend ceiling."""
    d, _, call = local_daemon(AGENTCOORD_MAX_SPEND_USD="0.5")
    ok(call, "spawn_subagent", name="bee")
    res = ok(call, "ask", agent="bee", text="cost 0.75\nanswer spent")
    assert res["answer"] == "spent"
    report = wait_for(
        lambda: (r := budgets(d))["spend_usd"]["used"] >= 0.75 and r, what="the spend"
    )
    assert report["spend_usd"] == {"used": 0.75, "ceiling": 0.5}
    why = fails(call, "spawn_subagent", name="wasp")
    assert "today's spend ceiling is reached: $0.75 of $0.50" in why
