"""What the daemon's registry records among Claude Code's peers cost, and that it stays bounded
(docs/claude-code.md "Who sessions can message"): at most ``MAX_MAILBOXES`` records, each one
holder thread and one mailbox socket, all three given back when the agent leaves."""

from __future__ import annotations

import gc
import json
import os
import tempfile
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentcoord.claude.inbox import mailboxes
from agentcoord.claude.inbox.mailboxes import Mailboxes
from agentcoord.claude.inbox.peerrecords import Holder
from agentcoord.claude.inbox.sessionfiles import proc_start, sessions_dir
from tests.claude.test_channels import _poll

BOUND = 4  # MAX_MAILBOXES for these tests: the same code path as 256, with fewer threads


async def _no_frame(*_: Any) -> None:
    return None


async def _nobody(_: Any) -> None:
    return None


class Boxes:
    def __init__(self, root: Path, boxes: Mailboxes) -> None:
        self.claude, self.socks, self.m = root / "claude", root / "socks", boxes

    def records(self) -> dict[str, int]:
        """name -> pid of each record written, the daemon's own included."""
        out = {}
        for path in sessions_dir(self.claude).glob("*.json"):
            data = json.loads(path.read_text())
            out[str(data["name"])] = int(data["pid"])
        return out

    def sockets(self) -> set[str]:
        return {p.name for p in self.socks.iterdir()}


@pytest.fixture
async def boxes(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Boxes]:
    monkeypatch.setattr(mailboxes, "MAX_MAILBOXES", BOUND)
    # A short path: a socket's must fit in 108 bytes, which pytest's tmp_path may not leave.
    with tempfile.TemporaryDirectory(prefix="mb-") as tmp:
        root = Path(tmp)
        m = Mailboxes(root / "claude", root / "socks", _no_frame, _nobody, uid=os.getuid())
        async with m:
            yield Boxes(root, m)
        assert not list(sessions_dir(root / "claude").glob("*.json"))
        assert not list((root / "socks").iterdir())


def _gone(pids: set[int]) -> bool:
    return all(proc_start(pid) is None for pid in pids)


async def test_records_never_pass_the_bound(boxes: Boxes) -> None:
    """Three times the bound of agents wanted: the bound of records, one live holder thread and
    one mailbox socket each (plus the daemon's own record and socket)."""
    threads = len(os.listdir("/proc/self/task"))
    await boxes.m.publish({f"agent-{i}": f"agent-{i}" for i in range(3 * BOUND)})
    found = boxes.records()
    assert len(found) == BOUND + 1
    assert len(boxes.sockets()) == BOUND + 1
    assert len(os.listdir("/proc/self/task")) == threads + BOUND
    assert all(proc_start(pid) is not None for pid in found.values())


async def test_an_agent_that_leaves_gives_its_slot_back(boxes: Boxes) -> None:
    """Agents that leave take their record, socket and holder thread with them, so as many
    others as left get records after them, however many came before."""
    first = {f"gone-{i}": f"gone-{i}" for i in range(BOUND)}
    await boxes.m.publish(first)
    sockets_before = boxes.sockets()
    old = {pid for name, pid in boxes.records().items() if name in first}
    assert len(old) == BOUND
    threads = len(os.listdir("/proc/self/task"))
    later = {f"new-{i}": f"new-{i}" for i in range(BOUND)}
    await boxes.m.publish(later)
    assert set(boxes.records()) == {mailboxes.ROUTER_NAME, *later}
    assert len(boxes.sockets()) == BOUND + 1
    assert not sockets_before & boxes.sockets() - {f"{os.getpid()}.sock"}
    _poll(lambda: _gone(old), "the holders of the agents that left to end")
    assert len(os.listdir("/proc/self/task")) == threads


async def test_a_holder_keeps_little_python_memory() -> None:
    """A holder is a bare thread blocked on a lock: under 2 KB of Python allocations each
    (a threading.Thread with its two events took about 6 KB; 256 holders are a daemon's
    bound)."""
    warm = await Holder().__aenter__()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = [await Holder().__aenter__() for _ in range(32)]
        gc.collect()
        per = (tracemalloc.get_traced_memory()[0] - before) / len(held)
    finally:
        tracemalloc.stop()
    pids = {h.pid for h in held} | {warm.pid}
    for h in [warm, *held]:
        await h.__aexit__(None, None, None)
    assert per < 2048, per
    _poll(lambda: _gone(pids), "the holders to end")
