"""The daemon as operator: spawn_subagent, the controller's phases, cancel, and a kill -9 of
the daemon while runners work (real daemon, real bubblewrap, the stand-in ``claude -p``)."""

from __future__ import annotations

import asyncio
import json
import signal
from typing import Any

import psutil

from tests.agentops.conftest import (
    created_rv,
    fails,
    first_version,
    make_profiles,
    needs_bwrap,
    ok,
    stored,
    wait_for,
)

pytestmark = needs_bwrap


def _phase(d: Any, name: str) -> str | None:
    obj = stored(d, "agents", name)
    return None if obj is None else (obj.get("status") or {}).get("phase")


def _marked(marker: str) -> list[psutil.Process]:
    """Live processes whose command line carries ``marker`` (the runner's prompt)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in part for part in proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_spawn_creates_task_first_then_owned_agent_and_runs_it(local_daemon: Any) -> None:
    """spawn_subagent writes <name>-task (objective, assignee) and the Agent owned by it; the
    controller runs the objective: Running with a pid, then Succeeded, result on the task."""
    d, _, call = local_daemon()
    make_profiles(d, "p1")
    res = ok(call, "spawn_subagent", name="worker", profile="p1", prompt="sleep 1\nanswer built")
    assert stored(d, "agents", "worker") is not None
    assert res == {
        "name": "worker",
        "profile": "p1",
        "created": True,
        "cwd": res["cwd"],
        "task": "worker-task",
    }
    task = stored(d, "agenttasks", "worker-task")
    agent = stored(d, "agents", "worker")
    assert task is not None
    assert agent is not None
    assert task["spec"]["objective"] == "sleep 1\nanswer built"
    assert task["spec"]["assignedAgentRef"]["name"] == "worker"
    assert agent["spec"]["ownerRef"]["uid"] == task["metadata"]["uid"]
    assert agent["metadata"]["ownerReferences"][0]["uid"] == task["metadata"]["uid"]
    assert created_rv(d, "agenttasks", "worker-task") < created_rv(d, "agents", "worker")
    assert first_version(d, "agents", "worker")["status"]["phase"] == "Pending"
    running = wait_for(lambda: _phase(d, "worker") == "Running" and stored(d, "agents", "worker"))
    assert psutil.pid_exists(running["status"]["pid"])
    assert running["status"]["focus"] == "sleep 1"
    wait_for(lambda: _phase(d, "worker") == "Succeeded", what="worker succeeded")
    done = stored(d, "agenttasks", "worker-task")
    assert done is not None
    assert done["status"]["phase"] == "Succeeded"
    assert done["status"]["result"] == "built"


def test_respawn_with_another_profile_is_an_error(local_daemon: Any) -> None:
    """The same name and profile returns the agent as is; another profile is refused."""
    d, _, call = local_daemon()
    ok(call, "spawn_subagent", name="worker", profile="p1")
    again = ok(call, "spawn_subagent", name="worker", profile="p1")
    assert again["created"] is False
    err = fails(call, "spawn_subagent", name="worker", profile="p2")
    assert "already exists with profile 'p1'" in err
    assert stored(d, "agents", "worker")["spec"]["profile"] == "p1"  # type: ignore[index]


def test_failed_turn_is_failed(local_daemon: Any) -> None:
    """A runner that reports is_error (exit 0) leaves the agent Failed, not Succeeded."""
    d, _, call = local_daemon()
    ok(call, "spawn_subagent", name="worker", prompt="is_error")
    wait_for(lambda: _phase(d, "worker") == "Failed", what="worker failed")
    assert "error_during_execution" in stored(d, "agents", "worker")["status"]["message"]  # type: ignore[index]


def test_cancel_stops_the_runner(local_daemon: Any) -> None:
    """cancel deletes the Agent; the controller has stopped the runner's process group when
    cancel returns, the task's status says so, and a CONTROL message lands in the agent's
    inbox."""
    d, _, call = local_daemon()
    ok(call, "spawn_subagent", name="slow", prompt="sleep 60\n# cancel-me-7f3a")
    running = wait_for(lambda: _phase(d, "slow") == "Running" and stored(d, "agents", "slow"))
    pid = running["status"]["pid"]
    assert _marked("cancel-me-7f3a")
    res = ok(call, "cancel", name="slow")
    assert res["cancelled"] is True
    assert res["stopped"] is True
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not _marked("cancel-me-7f3a")
    assert stored(d, "agents", "slow") is None
    task = stored(d, "agenttasks", "slow-task")
    assert task is not None
    assert task["status"]["phase"] == "Failed"
    assert task["status"]["message"].startswith("agent slow cancelled: runner stopped in ")
    assert res["status"]["message"] == task["status"]["message"]
    control = asyncio.run(_last_inbox_message(d, "slow"))
    assert control["kind"] == "control"
    assert control["text"] == "cancel"


async def _last_inbox_message(d: Any, agent: str) -> dict[str, Any]:
    """The newest message stored for ``agent``'s inbox, read from JetStream as its owner can."""
    import nats

    from agentcoord.kernel import wire
    from tests.tools.conftest import nats_login

    url, user, password = nats_login(d)
    nc = await nats.connect(url, user=user, password=password)
    try:
        msg = await nc.jetstream().get_last_msg("AGENT_MESSAGES", f"agents.{agent}.inbox")
    finally:
        await nc.close()
    assert msg.data is not None, "the inbox's last message has no payload"
    return wire.message_view(wire.decode(msg.data))


def test_cancel_of_a_task_and_of_nothing(local_daemon: Any) -> None:
    """cancel falls back to the AgentTask; neither existing is an error."""
    d, _, call = local_daemon()
    ok(call, "spawn_subagent", name="quick", prompt="answer ok")
    wait_for(lambda: _phase(d, "quick") == "Succeeded")
    assert ok(call, "cancel", name="quick-task")["kind"] == "AgentTask"
    # the Agent is owned by its task: garbage collection takes it too
    wait_for(lambda: stored(d, "agents", "quick") is None, what="agent collected")
    assert "no Agent or AgentTask named ghost" in fails(call, "cancel", name="ghost")


def test_kill_9_of_the_daemon_leaves_no_orphans_and_true_statuses(
    local_daemon: Any, daemon_factory: Any
) -> None:
    """With runners working, SIGKILL the daemon: the runners die with it, and the restarted
    daemon reaps their records: Failed with a reason, no runner left, an idle agent intact."""
    d, _, call = local_daemon()
    ok(call, "spawn_subagent", name="w1", prompt="sleep 60\n# orphan-check-91c2")
    ok(call, "spawn_subagent", name="w2", prompt="sleep 60\n# orphan-check-91c2")
    ok(call, "spawn_subagent", name="done", prompt="answer finished")
    for name in ("w1", "w2"):
        wait_for(lambda n=name: _phase(d, n) == "Running", what=f"{name} running")  # type: ignore[misc]
    wait_for(lambda: _phase(d, "done") == "Succeeded")
    linked = ok(call, "ask", agent="done", text="answer first")
    assert len({p.pid for p in _marked("orphan-check-91c2")}) >= 2
    d.stop(signal.SIGKILL)
    wait_for(lambda: not _marked("orphan-check-91c2"), what="runners gone")
    d.start()
    for name in ("w1", "w2"):
        wait_for(lambda n=name: _phase(d, n) == "Failed", what=f"{name} reaped")  # type: ignore[misc]
        obj = stored(d, "agents", name)
        assert obj is not None
        assert obj["status"]["message"] == "runner lost: the daemon stopped while it ran"
        assert json.loads(obj["metadata"]["annotations"]["fastverk.savvifi.com/runners"]) == []
    assert _phase(d, "done") == "Succeeded"
    assert not _marked("orphan-check-91c2")
    # the sleeping agent's linked session survives the restart: the next ask resumes it
    again = ok(call, "ask", agent="done", text="history")
    assert again["session_id"] == linked["session_id"]
    assert again["resumed"] is True
    assert json.loads(again["answer"])["history"] == 1
    # the reaped agent still answers: a message wakes it in a new turn
    assert ok(call, "ask", agent="w1", text="answer back")["answer"] == "back"


def test_sigterm_stops_runners_with_the_daemon(local_daemon: Any) -> None:
    """A clean stop (SIGTERM) stops the running runner with the daemon, and the restarted
    daemon says what happened to it."""
    d, _, call = local_daemon()
    ok(call, "spawn_subagent", name="w1", prompt="sleep 600\n# sigterm-check-5d1e")
    wait_for(lambda: _phase(d, "w1") == "Running", what="w1 running")
    assert d.stop(signal.SIGTERM, timeout=60) == 0, d.log()[-4000:]  # not killed: a clean stop
    # Killed with the daemon, the runner's processes may still await the scheduler on a busy
    # machine; its 10-minute sleep cannot end them within the wait.
    wait_for(lambda: not _marked("sigterm-check-5d1e"), what="the runner gone with the daemon")
    d.start()
    wait_for(lambda: _phase(d, "w1") == "Failed", what="w1 reaped")
    assert stored(d, "agents", "w1")["status"]["message"] == (  # type: ignore[index]
        "runner lost: the daemon stopped while it ran"
    )


def test_spawn_with_a_missing_profile_fails_with_the_reason(local_daemon: Any) -> None:
    """The operator starts agents from their AgentProfile: a profile that does not exist
    fails the agent's start with a readable reason instead of running with defaults."""
    d, _, call = local_daemon()
    ok(call, "spawn_subagent", name="ghosted", profile="ghost", prompt="answer never")
    agent = wait_for(
        lambda: (
            (stored(d, "agents", "ghosted") or {}).get("status", {}).get("phase") == "Failed"
            and stored(d, "agents", "ghosted")
        )
    )
    assert "no AgentProfile 'ghost'" in json.dumps(agent["status"])
