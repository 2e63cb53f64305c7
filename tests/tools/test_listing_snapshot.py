"""The bytes ``tools/list`` and ``initialize`` send are fixed: an agent's listing, the human's,
and the read-only names are compared with files recorded from the daemon's own answers
(tests/tools/snapshots/), so a change to how tools are declared cannot change what a client
reads."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from pathlib import Path
from typing import Any, cast

import pytest

from agentcoord.daemon.services import Services
from agentcoord.daemon.toolset import build_registry
from agentcoord.kernel.caller import Caller, CallerKind
from agentcoord.kernel.config import Config
from agentcoord.kernel.jsoncodec import dumps
from agentcoord.mcp.core import McpCore, McpSession

pytestmark = pytest.mark.unit

SNAPSHOTS = Path(__file__).parent / "snapshots"
# AGENTCOORD_RECORD_SNAPSHOTS=1 writes the files instead of comparing (after a deliberate
# change to the tool surface; the diff is then reviewed like code).
RECORD = os.environ.get("AGENTCOORD_RECORD_SNAPSHOTS") == "1"
# The page size a daemon lists with unless configured otherwise.
_PAGE_SIZE = int(
    next(f.default for f in dataclasses.fields(Config) if f.name == "tools_page_size")  # type: ignore[arg-type]
)


class _Unused:
    """Stands for every service and for the MCP core's parts: building the registry and
    answering tools/list and initialize call none of them."""

    push = None

    def __getattr__(self, name: str) -> Any:
        return _Unused()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a service was used while listing the tools")


def _core() -> McpCore:
    u: Any = _Unused()
    registry = build_registry(cast(Services, u))
    return McpCore(registry, u, u, u, _PAGE_SIZE, leases=u)


def _answers(kind: CallerKind, method: str) -> bytes:
    """Every reply ``method`` gets from a caller of ``kind``, following tools/list's cursor,
    as the transport encodes them, one per line; of initialize's, the ``_meta`` naming the
    read-only tools."""
    core = _core()
    session = McpSession(caller=Caller(kind=kind, agent=f"{kind}-1", via="unix"))
    lines: list[bytes] = []
    params: dict[str, Any] = {"protocolVersion": "2025-06-18"} if method == "initialize" else {}
    for n in range(1, 100):
        msg = {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
        reply = asyncio.run(core.handle_message(msg, session))
        assert reply is not None
        assert "result" in reply, reply
        if method == "initialize":  # its tools part: the rest names the version
            lines.append(dumps(reply["result"]["_meta"]))
            break
        lines.append(core.encode_reply(reply))
        cursor = reply["result"].get("nextCursor")
        if cursor is None:
            break
        params = {"cursor": cursor}
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize(
    ("kind", "method", "name"),
    [
        ("session", "tools/list", "tools_list.agent.jsonl"),
        ("human", "tools/list", "tools_list.human.jsonl"),
        ("session", "initialize", "initialize.agent.jsonl"),
    ],
)
def test_listing_bytes_are_unchanged(kind: CallerKind, method: str, name: str) -> None:
    """The bytes of ``method``'s replies to a caller of ``kind`` equal the recorded ones."""
    got = _answers(kind, method)
    path = SNAPSHOTS / name
    if RECORD:
        path.write_bytes(got)
    want = path.read_bytes()
    assert got == want, f"{name} changed; if on purpose, record it again (see RECORD)"


def test_snapshots_hold_every_tool() -> None:
    """The recorded listings are whole: the human's names every tool, the agent's the listed
    ones, and initialize names the read-only ones, so the comparison above covers them all."""
    human = json.loads((SNAPSHOTS / "tools_list.human.jsonl").read_text().splitlines()[0])
    agent = json.loads((SNAPSHOTS / "tools_list.agent.jsonl").read_text().splitlines()[0])
    init = json.loads((SNAPSHOTS / "initialize.agent.jsonl").read_text())
    registry = build_registry(cast(Services, _Unused()))
    assert [t["name"] for t in human["result"]["tools"]] == [t.name for t in registry.all()]
    assert [t["name"] for t in agent["result"]["tools"]] == [
        t.name for t in registry.listed_for("session")
    ]
    assert init["agentcoord/readOnlyTools"] == registry.read_only_names()
    assert len(init["agentcoord/readOnlyTools"]) == 9
