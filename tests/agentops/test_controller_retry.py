"""The controller's work queue in process, on a real SQLite object store and a real runner
process: a start that raises for a reason nobody foresaw is logged, retried after a back-off,
and the Agent still runs to its end (docs/ask-and-operator.md "The operator")."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentcoord.agentops.controller import (
    FINALIZER,
    MANAGED_LABEL,
    SESSIONS_ANNOTATION,
    AgentController,
)
from agentcoord.identity.runners import Runners
from agentcoord.localagents.launch import Launcher
from agentcoord.localagents.runner import RunnerSpec
from agentcoord.localagents.sandbox import Sandbox
from agentcoord.stores.objects import ObjectStore

RESULT = {"type": "result", "subtype": "success", "is_error": False, "result": "done at last"}


@dataclass(frozen=True)
class FlakySandbox(Sandbox):
    """The weaker sandbox, whose first ``failures`` wraps raise: a start that fails for a
    reason nobody foresaw, and then goes away."""

    failures: list[int] = field(default_factory=lambda: [0])
    calls: list[int] = field(default_factory=lambda: [0])
    retried: asyncio.Event = field(default_factory=asyncio.Event)  # set at the second call

    times: list[float] = field(default_factory=list)  # loop time of each call

    def argv(self, command: Sequence[str], **kw: Any) -> list[str]:
        self.calls[0] += 1
        self.times.append(asyncio.get_running_loop().time())
        if self.calls[0] >= 2:
            self.retried.set()
        if self.failures[0] > 0:
            self.failures[0] -= 1
            raise RuntimeError("the sandbox is not ready yet")
        return super().argv(command, **kw)


def _runner(tmp: Path) -> tuple[RunnerSpec, Path]:
    """A stand-in ``claude -p``: waits until the test opens its gate (a FIFO), then prints a
    result JSON; the spec that runs it and the gate."""
    gate = tmp / "gate"
    os.mkfifo(gate)
    script = tmp / "runner.py"
    script.write_text(
        f"import json, sys\nopen({str(gate)!r}).read()\nprint(json.dumps({RESULT!r}))\n"
    )
    return RunnerSpec(command=(sys.executable, str(script))), gate


async def _launcher(store: ObjectStore, spec: RunnerSpec, tmp: Path) -> Launcher:
    """The launcher the daemon builds from ``spec``, its default AgentProfile created."""
    launcher = Launcher.for_spec(spec, store, base_env=dict(os.environ), runtime_dir=tmp / "run")
    await launcher.ensure_default_profile()
    return launcher


async def _until_phase(
    store: ObjectStore, name: str, want: str, plural: str = "agents"
) -> dict[str, Any]:
    """The object once its phase is ``want`` (a watch on it, bounded)."""
    async with asyncio.timeout(15):
        watcher = await store.watch(plural, namespace="default", fields=f"metadata.name={name}")
        async with watcher:
            async for event in watcher:
                if (event.object.get("status") or {}).get("phase") == want:
                    return event.object
    raise AssertionError(f"the watch on {name} ended before phase {want}")


async def _spawned(store: ObjectStore, name: str, cwd: Path) -> None:
    """An AgentTask with an objective and the managed Agent it owns, Pending (as spawn)."""
    await store.create(
        "agenttasks",
        "default",
        {"metadata": {"name": f"{name}-task"}, "spec": {"objective": "answer done"}},
    )
    await store.create(
        "agents",
        "default",
        {
            "metadata": {
                "name": name,
                "labels": {MANAGED_LABEL: "agentcoord"},
                "finalizers": [FINALIZER],
            },
            "spec": {"agentType": "spawned", "ownerRef": {"name": f"{name}-task"}, "cwd": str(cwd)},
            "status": {"phase": "Pending"},
        },
        keep_status=True,
    )


async def test_a_start_that_raises_is_retried_with_backoff_until_it_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The first two starts raise inside the launch: each failure is logged once, with a
    longer back-off; the third start runs the runner, the Agent is Running, then Succeeded
    with the runner's answer, and the runner ran once."""
    spec, gate = _runner(tmp_path)
    sandbox = FlakySandbox(None, failures=[2])
    work = tmp_path / "work"
    work.mkdir()
    runners = Runners()
    caplog.set_level(logging.WARNING, logger="agentcoord.agentops.controller")
    async with (
        ObjectStore(tmp_path / "objects.db") as store,
        AgentController(
            store=store,
            runners=runners,
            spec=spec,
            sandbox=sandbox,
            state_dir=tmp_path / "state",
            runtime_dir=tmp_path / "run",
            claude_dir=tmp_path / "claude",
            base_env=dict(os.environ),
            launcher=await _launcher(store, spec, tmp_path),
        ),
    ):
        await _spawned(store, "w", work)
        running = await _until_phase(store, "w", "Running")
        assert running["status"]["pid"] > 0
        assert [info.agent for _, info in runners] == ["w"]
        await asyncio.to_thread(gate.write_text, "go")
        done = await _until_phase(store, "w", "Succeeded")
        assert done["status"]["message"] == "done at last"
        task = await _until_phase(store, "w-task", "Succeeded", "agenttasks")
        assert task["status"]["result"] == "done at last"
        sessions = json.loads(done["metadata"]["annotations"][SESSIONS_ANNOTATION])
        assert [s["name"] for s in sessions] == ["main"]  # the failed starts left none
    assert sandbox.calls == [3]
    gaps = [b - a for a, b in zip(sandbox.times, sandbox.times[1:], strict=False)]
    assert gaps[0] >= 0.09, gaps  # each retry waited out its back-off
    assert gaps[1] >= 0.19, gaps
    failures = [r for r in caplog.records if "reconciling agent w failed" in r.getMessage()]
    assert [r.getMessage().split(":")[0] for r in failures] == [
        "reconciling agent w failed (retry 1 in 0.1 s)",
        "reconciling agent w failed (retry 2 in 0.2 s)",
    ]
    assert all("the sandbox is not ready yet" in r.getMessage() for r in failures)


async def test_an_agent_deleted_while_its_start_keeps_failing_goes(tmp_path: Path) -> None:
    """A start that keeps raising does not hold the Agent: deleting it stops the retries and
    the finalizer is released, so the object leaves the store."""
    spec, _ = _runner(tmp_path)
    sandbox = FlakySandbox(None, failures=[1_000])
    work = tmp_path / "work"
    work.mkdir()
    async with (
        ObjectStore(tmp_path / "objects.db") as store,
        AgentController(
            store=store,
            runners=Runners(),
            spec=spec,
            sandbox=sandbox,
            state_dir=tmp_path / "state",
            runtime_dir=tmp_path / "run",
            claude_dir=tmp_path / "claude",
            base_env=dict(os.environ),
            launcher=await _launcher(store, spec, tmp_path),
        ) as ctl,
    ):
        await _spawned(store, "w", work)
        async with asyncio.timeout(60):
            await sandbox.retried.wait()  # failed and started again at least once
        await store.delete("agents", "default", "w")
        assert await ctl.wait_gone("w", 60)
        calls = sandbox.calls[0]
    assert calls >= 2
