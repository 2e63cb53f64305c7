"""The controller in process, on a real SQLite object store and real processes: after a
restart it adopts a runner that still runs (same pid and start time) and reaps the rest."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from agentcoord.agentops.controller import (
    FINALIZER,
    MANAGED_LABEL,
    RUNNERS_ANNOTATION,
    AgentController,
)
from agentcoord.identity.runners import RunnerInfo, Runners
from agentcoord.localagents.launch import Launcher
from agentcoord.localagents.runner import RunnerSpec
from agentcoord.localagents.sandbox import Sandbox
from agentcoord.stores.objects import ObjectStore

RESULT = {"type": "result", "subtype": "success", "is_error": False, "result": "adopted ok"}


def _runner(job: Path) -> subprocess.Popen[bytes]:
    """A stand-in runner outliving 'the old daemon': waits until the test creates
    ``job/go`` (at most 10 minutes), then prints a result JSON. It ends only when the test
    says so, however slow the machine."""
    job.mkdir(parents=True)
    gate = str(job / "go")
    code = (
        "import json, os, time\n"
        "deadline = time.monotonic() + 600\n"
        f"while not os.path.exists({gate!r}) and time.monotonic() < deadline:\n"
        "    time.sleep(0.02)\n"
        f"print(json.dumps({RESULT!r}))\n"
    )
    with (job / "stdout").open("wb") as out:
        return subprocess.Popen([sys.executable, "-c", code], stdout=out, start_new_session=True)


async def _agent(store: ObjectStore, name: str, records: list[dict[str, Any]]) -> None:
    body = {
        "metadata": {
            "name": name,
            "labels": {MANAGED_LABEL: "agentcoord"},
            "finalizers": [FINALIZER],
            "annotations": {RUNNERS_ANNOTATION: json.dumps(records)},
        },
        "spec": {"agentType": "spawned", "ownerRef": {"name": f"{name}-task"}},
        "status": {"phase": "Running"},
    }
    await store.create("agents", "default", body, keep_status=True)


def _record(proc: subprocess.Popen[bytes] | None, job: Path, pid: int = 0) -> dict[str, Any]:
    real = proc.pid if proc else pid
    made = psutil.Process(real).create_time() if proc else 12345.0
    return {"turn": "t1", "pid": real, "createTime": made, "jobDir": str(job), "depth": 2,
            "chain": ["x", "y"], "sessionId": "s1"}  # fmt: skip


def _controller(store: ObjectStore, tmp: Path, runners: Runners) -> AgentController:
    return AgentController(
        store=store,
        runners=runners,
        spec=RunnerSpec(),
        sandbox=Sandbox(None),
        state_dir=tmp / "state",
        runtime_dir=tmp / "run",
        claude_dir=tmp / "claude",
        base_env={},
        launcher=Launcher.for_spec(RunnerSpec(), store, base_env={}, runtime_dir=tmp / "run"),
    )


async def _phase(store: ObjectStore, name: str, want: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        obj = await store.get("agents", "default", name)
        if (obj.get("status") or {}).get("phase") == want:
            return obj
        assert time.monotonic() < deadline, obj.get("status")
        await asyncio.sleep(0.05)


async def test_adopts_a_live_runner_and_reaps_dead_ones(tmp_path: Path) -> None:
    """A live recorded runner is adopted (its identity resolves again, with its depth) and its
    result lands on exit; a dead one with output is judged by it; one without is Failed."""
    live = _runner(tmp_path / "jobs" / "live")
    dead_ok = tmp_path / "jobs" / "dead-ok"
    dead_ok.mkdir(parents=True)
    (dead_ok / "stdout").write_text(json.dumps({**RESULT, "result": "finished before"}))
    runners = Runners()
    async with ObjectStore(tmp_path / "objects.db") as store:
        await _agent(store, "live", [_record(live, tmp_path / "jobs" / "live")])
        await _agent(store, "dead-ok", [_record(None, dead_ok, pid=999_999)])
        await _agent(store, "lost", [_record(None, tmp_path / "jobs" / "none", pid=999_998)])
        async with _controller(store, tmp_path, runners):
            key = (live.pid, psutil.Process(live.pid).create_time())
            assert runners.lookup(key) == RunnerInfo("live", 2, ("x", "y"))
            (tmp_path / "jobs" / "live" / "go").touch()  # it may finish now
            assert (await _phase(store, "dead-ok", "Succeeded"))["status"]["message"] == (
                "finished before"
            )
            lost = await _phase(store, "lost", "Failed")
            assert lost["status"]["message"] == "runner lost: the daemon stopped while it ran"
            done = await _phase(store, "live", "Succeeded")
            assert done["status"]["message"] == "adopted ok"
            assert json.loads(done["metadata"]["annotations"][RUNNERS_ANNOTATION]) == []
            assert runners.lookup(key) is None
    live.wait(60)


async def test_deleting_an_adopted_agent_stops_its_process_group(tmp_path: Path) -> None:
    """Delete is the stop signal also for an adopted runner: its group is killed, then the
    finalizer goes and the object with it."""
    live = _runner(tmp_path / "jobs" / "live")
    async with ObjectStore(tmp_path / "objects.db") as store:
        await _agent(store, "live", [_record(live, tmp_path / "jobs" / "live")])
        async with _controller(store, tmp_path, Runners()) as ctl:
            await store.delete("agents", "default", "live")
            assert await ctl.wait_gone("live", 60)
    assert live.wait(60) == -15  # SIGTERM: it was never told to finish
