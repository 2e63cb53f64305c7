"""The audit stream on a real nats-server: appends survive a clean close and are queryable."""

from __future__ import annotations

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
