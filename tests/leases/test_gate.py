"""The per-repository gate of the leases service (docs/claims.md "Folders and globs"): file
claims pass together, a folder or glob claim alone, in arrival order, and a waiter cancelled
at any point neither keeps the gate nor loses it for the others."""

from __future__ import annotations

import asyncio

import pytest

from agentcoord.leases.gate import RepoGates

pytestmark = pytest.mark.unit


async def _enter(
    gates: RepoGates, repo: str, alone: bool, log: list[str], name: str, leave: asyncio.Event
) -> None:
    async with gates.passing(repo, alone):
        log.append(f"in {name}")
        await leave.wait()
        log.append(f"out {name}")


async def test_shared_passes_together_and_alone_waits_for_them_in_order() -> None:
    """Two file claims are in at once; a glob claim waits for both; a file claim arriving
    after the glob waits behind it; another repository is not held up."""
    gates, log = RepoGates(), list[str]()
    leave = {n: asyncio.Event() for n in ("f1", "f2", "g", "f3", "other")}
    async with asyncio.TaskGroup() as tg:
        tg.create_task(_enter(gates, "r", False, log, "f1", leave["f1"]))
        tg.create_task(_enter(gates, "r", False, log, "f2", leave["f2"]))
        await asyncio.sleep(0)
        tg.create_task(_enter(gates, "r", True, log, "g", leave["g"]))
        await asyncio.sleep(0)
        tg.create_task(_enter(gates, "r", False, log, "f3", leave["f3"]))
        tg.create_task(_enter(gates, "q", True, log, "other", leave["other"]))
        for _ in range(3):
            await asyncio.sleep(0)
        assert log == ["in f1", "in f2", "in other"]
        leave["f1"].set()
        leave["f2"].set()
        leave["other"].set()
        for _ in range(5):
            await asyncio.sleep(0)
        assert log[-1] == "in g"
        assert "in f3" not in log
        leave["g"].set()
        leave["f3"].set()
    assert log.index("out g") < log.index("in f3")
    assert gates._gates == {}  # idle gates are dropped


async def test_a_cancelled_waiter_passes_the_gate_on() -> None:
    """A glob claim cancelled while waiting does not keep the file claims behind it out."""
    gates, log = RepoGates(), list[str]()
    first, glob_leave, later = asyncio.Event(), asyncio.Event(), asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(_enter(gates, "r", False, log, "f1", first))
        await asyncio.sleep(0)
        waiting = tg.create_task(_enter(gates, "r", True, log, "g", glob_leave))
        await asyncio.sleep(0)
        tg.create_task(_enter(gates, "r", False, log, "f2", later))
        await asyncio.sleep(0)
        waiting.cancel()
        for _ in range(3):
            await asyncio.sleep(0)
        assert log == ["in f1", "in f2"]
        first.set()
        later.set()
    assert gates._gates == {}
