"""The audit stream on a real nats-server: appends survive a clean close and are queryable."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agentcoord.stores.audit import AuditLog


async def test_close_drains_and_query_filters(js: Any) -> None:
    """Events emitted just before close are stored; queries filter by type, agent and since."""
    async with AuditLog(js) as log:
        log.emit("CLAIM_ACQUIRED", "a-1", resource_key="k", token=3)
        log.emit("CLAIM_RELEASED", "a-1", resource_key="k", reason="released")
        log.emit("AGENT_ANNOTATED", "human:me", intent="x")
    async with AuditLog(js) as log:
        everything = await log.query()
        assert [e.type for e in everything] == [
            "CLAIM_ACQUIRED",
            "CLAIM_RELEASED",
            "AGENT_ANNOTATED",
        ]
        released = await log.query(type_="CLAIM_RELEASED")
        assert [e.data["reason"] for e in released] == ["released"]
        mine = await log.query(agent="human:me")
        assert [e.agent for e in mine] == ["human:me"]
        assert await log.query(since=time.time() + 60) == []
        assert [e.type for e in await log.query(limit=1)] == ["AGENT_ANNOTATED"]
        assert log.failed == 0


class _Delegate:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def test_stream_creation_asked_again_when_its_answer_is_lost(js: Any) -> None:
    """A stream creation whose answer never comes is asked again after 2 s, not after 15 s."""
    import nats.errors

    lost: list[tuple[str, float]] = []

    class LosesFirstAnswer(_Delegate):
        async def add_stream(self, config: Any) -> Any:
            info = await self._inner.add_stream(config)  # the server makes the stream...
            if not lost:
                lost.append((config.name, self._timeout))  # the wait of the try it loses
                await asyncio.sleep(self._timeout)  # ...but its answer never arrives
                raise nats.errors.TimeoutError
            return info

    class Conn(_Delegate):
        def jetstream(self, **kw: Any) -> Any:
            return LosesFirstAnswer(self._inner.jetstream(**kw))

    class Js(LosesFirstAnswer):  # the daemon's own context: a cluster's 15 s timeout
        _nc = Conn(js._nc)
        _timeout = 15.0

    async with AuditLog(Js(js)) as log:
        log.emit("CLAIM_ACQUIRED", "a-1", resource_key="k", token=1)
    assert lost == [("AGENT_EVENTS", 2.0)]  # a short try lost its answer, not the 15 s one
    async with AuditLog(js) as log:
        assert [e.type for e in await log.query()] == ["CLAIM_ACQUIRED"]
