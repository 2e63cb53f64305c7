"""Property: under concurrent random writes, every watcher sees every event once, in order."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcoord.stores.objects import ObjectStore, StoreError, WatchEvent

pytestmark = pytest.mark.unit

NAMES = ["a", "b", "c"]
NS = "default"

_op = st.tuples(
    st.sampled_from(["create", "update", "patch", "status", "delete", "json", "finalize"]),
    st.sampled_from(NAMES),
    st.integers(0, 3),
)
_client = st.lists(_op, max_size=12)


async def _do(store: ObjectStore, op: str, name: str, n: int) -> None:
    if op == "create":
        labels = {"n": str(n)} if n else {}
        await store.create("agents", NS, {"metadata": {"name": name, "labels": labels}, "spec": {}})
    elif op == "update":
        cur = await store.get("agents", NS, name)
        cur["spec"] = {"pool": f"p{n}"}
        await store.update("agents", NS, cur)  # may be 409 if another client got in first
    elif op == "patch":
        await store.patch("agents", NS, name, {"spec": {"profile": f"x{n}"}})
    elif op == "status":
        await store.patch("agents", NS, name, {"status": {"phase": f"P{n}"}}, subresource="status")
    elif op == "json":
        ops = [{"op": "add", "path": "/metadata/labels", "value": {"j": str(n)}}]
        await store.patch("agents", NS, name, ops, content_type="application/json-patch+json")
    elif op == "finalize":
        fin = {"metadata": {"finalizers": ["x/y"] if n % 2 else None}}
        await store.patch("agents", NS, name, fin)
    else:
        await store.delete("agents", NS, name)


async def _client_run(store: ObjectStore, ops: list[tuple[str, str, int]]) -> None:
    for op, name, n in ops:
        with contextlib.suppress(StoreError):
            await _do(store, op, name, n)
        await asyncio.sleep(0)


async def _collect(w: Any, upto: int) -> list[WatchEvent]:
    events: list[WatchEvent] = []
    while not events or events[-1].rv < upto:
        e = await w.next(timeout=5)
        assert e is not None, f"watch stalled at {events[-1].rv if events else 0} < {upto}"
        events.append(e)
    return events


async def _scenario(path: Path, clients: list[list[tuple[str, str, int]]]) -> None:
    async with ObjectStore(path) as store:
        early = [await store.watch("agents", since=0) for _ in range(3)]
        half = len(clients) // 2
        await asyncio.gather(*(_client_run(store, c) for c in clients[:half]))
        resume_at = store.revision
        late = await store.watch("agents", since=resume_at) if resume_at else None
        await asyncio.gather(*(_client_run(store, c) for c in clients[half:]))
        top = store.revision
        final, _ = await store.list("agents")
        if top == 0:
            return
        for w in early:
            events = await _collect(w, top)
            assert [e.rv for e in events] == list(range(1, top + 1)), "once, in order, no gaps"
            state: dict[str, Any] = {}
            for e in events:
                if e.type == "DELETED":
                    del state[e.object["metadata"]["name"]]
                else:
                    state[e.object["metadata"]["name"]] = e.object
            assert sorted(state.values(), key=lambda o: o["metadata"]["name"]) == final
        if late is not None and top > resume_at:
            events = await _collect(late, top)
            assert [e.rv for e in events] == list(range(resume_at + 1, top + 1))
    db = sqlite3.connect(path)
    logged = [json.loads(r[0]) for r in db.execute("SELECT object FROM events ORDER BY rv")]
    db.close()
    assert [int(o["metadata"]["resourceVersion"]) for o in logged] == list(range(1, top + 1))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_client, min_size=2, max_size=4))
def test_watchers_see_every_event_once_in_order(clients: list[list[tuple[str, str, int]]]) -> None:
    """Concurrent random writes: watchers get rv 1..N with no gaps; replay equals final state."""
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_scenario(Path(tmp) / "o.db", clients))
