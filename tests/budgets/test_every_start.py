"""Every start of an agent is admitted under the ceilings, against the real daemon and its
stand-in runners (docs/budgets.md "Every start"): ``run_agent``/``dispatch_to_agent`` jobs and
messages that start a runner queue when their caller waits, in order, and are refused with the
ceiling, its value and what holds it when it does not."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.agentops.conftest import fails, needs_bwrap, ok, stored, wait_for
from tests.conftest import cli_json
from tests.localagents.conftest import make_package

pytestmark = needs_bwrap


def _events(d: Any, kind: str) -> list[dict[str, Any]]:
    return list(cli_json(d, "audit", "--type", kind)["events"])


def _never_ran(d: Any, name: str) -> bool:
    """No runner was ever started for ``name``: no Agent, or one that never left Idle."""
    status = (stored(d, "agents", name) or {}).get("status") or {}
    return status.get("phase") in (None, "Idle") and "startedAt" not in status


def _holder(call: Any, d: Any, tmp: Path) -> Path:
    """Spawn ``bee``, whose runner holds the one slot until the returned file exists."""
    gate = tmp / "bee-may-end"
    ok(call, "spawn_subagent", name="bee", prompt=f"wait_file {gate}\nanswer bee done")
    wait_for(
        lambda: (stored(d, "agents", "bee") or {}).get("status", {}).get("phase") == "Running",
        what="bee running",
    )
    return gate


def test_jobs_and_messages_that_cannot_wait_are_refused_naming_the_ceiling(
    local_daemon: Any, visible_root: Path
) -> None:
    """With max_agents 1 held by bee: a run_agent job without wait, a dispatch_to_agent job
    and a send_message that would start a package agent are refused, each saying which
    ceiling, its value and that bee holds it; nothing was started for them."""
    d, hub, call = local_daemon(AGENTCOORD_MAX_AGENTS="1")
    make_package(hub, "pkg-a", "capabilities: [lint]\n")
    _holder(call, d, visible_root)
    why = fails(call, "run_agent", agent_id="pkg-a", task="answer hi")
    assert "not starting a job of local agent pkg-a" in why
    assert "the started-agents ceiling is reached: 1 of 1 run (max_agents = 1)" in why
    assert "held by bee (Running)" in why
    why = fails(call, "dispatch_to_agent", capability="lint", task="answer hi")
    assert "(max_agents = 1), held by bee (Running)" in why
    why = fails(call, "send_message", agent="pkg-a", text="answer hi")
    assert "not starting agent pkg-a (a message from " in why
    assert "held by bee (Running)" in why
    assert _never_ran(d, "pkg-a")


def test_waiting_starts_queue_in_order_and_start_as_slots_free(
    local_daemon: Any, visible_root: Path
) -> None:
    """With max_agents 1 held by bee: a waiting run_agent job and then an ask that cold-starts
    a package agent queue (positions 1 and 2, audited), start only once bee ends, in the
    order they queued, and say in their results that they waited."""
    d, hub, call = local_daemon(AGENTCOORD_MAX_AGENTS="1")
    make_package(hub, "pkg-a")
    make_package(hub, "pkg-b")
    gate = _holder(call, d, visible_root)
    with ThreadPoolExecutor(2) as pool:
        try:
            job: Future[Any] = pool.submit(
                call, "run_agent", {"agent_id": "pkg-a", "task": "answer a", "wait": True}
            )
            wait_for(lambda: len(_events(d, "START_QUEUED")) == 1, what="the job queued")
            asked: Future[Any] = pool.submit(
                call, "ask", {"agent": "pkg-b", "text": "answer b", "timeout_secs": 600}
            )
            wait_for(lambda: len(_events(d, "START_QUEUED")) == 2, what="the ask queued")
            queued = _events(d, "START_QUEUED")
            assert [(e["agent"], e["position"]) for e in queued] == [
                ("pkg-a", 1),
                ("pkg-b", 2),
            ]
            assert queued[0]["held_by"] == "bee (Running)"
            assert not job.done()
            assert not asked.done()
            assert _events(d, "START_DEQUEUED") == []
            gate.touch()
            err, res = job.result()
            assert not err, res
            assert res["job"]["status"] == "succeeded"
            assert res["job"]["queued"]["position"] == 1
            err, answer = asked.result()
            assert not err, answer
            assert answer["answer"] == "b"
            assert answer["queued"]["position"] == 2
        finally:
            gate.touch()  # a failed check must not leave the calls waiting
    assert [e["agent"] for e in _events(d, "START_DEQUEUED")] == ["pkg-a", "pkg-b"]


def test_a_queued_ask_that_outlives_its_timeout_is_refused_and_leaves_the_queue(
    local_daemon: Any, visible_root: Path
) -> None:
    """An ask queued behind bee whose timeout passes first is refused saying it was still
    queued and why; the package agent was never started, and once bee ends a new ask runs."""
    d, hub, call = local_daemon(AGENTCOORD_MAX_AGENTS="1")
    make_package(hub, "pkg-a")
    gate = _holder(call, d, visible_root)
    why = fails(call, "ask", agent="pkg-a", text="answer late", timeout_secs=0.5)
    assert "not starting agent pkg-a (a message from " in why
    assert "still queued after 0.5 s" in why
    assert "(max_agents = 1), held by bee (Running)" in why
    assert _never_ran(d, "pkg-a")
    gate.touch()
    wait_for(
        lambda: (stored(d, "agents", "bee") or {}).get("status", {}).get("phase") == "Succeeded",
        what="bee done",
    )
    assert ok(call, "ask", agent="pkg-a", text="answer now")["answer"] == "now"


def test_a_turn_of_an_agent_that_holds_a_slot_takes_no_other(local_daemon: Any) -> None:
    """At max_agents 1, asking the agent that holds the slot (idle, no objective) runs at
    once: another turn of a running agent is no new agent."""
    _, _, call = local_daemon(AGENTCOORD_MAX_AGENTS="1")
    ok(call, "spawn_subagent", name="bee")
    res = ok(call, "ask", agent="bee", text="answer again")
    assert res["answer"] == "again"
    assert "queued" not in res
