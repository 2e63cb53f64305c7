"""The local-agent registry's records as objects: registered agents (Agent) and dispatch
jobs (AgentTask), backing :mod:`agentcoord.localagents.records`'s Protocols."""

from __future__ import annotations

import json
from typing import Any

from agentcoord.localagents.records import AgentRecord, AgentTaskRecord
from agentcoord.stores.objects._objrecords import ObjectRecords
from agentcoord.stores.objects.store import ObjectStore

__all__ = ["StoreAgentRecords", "StoreJobRecords"]


# -- local agents: registered agents (Agent) and dispatch jobs (AgentTask) ----------------------


def _registered_shape(rec: AgentRecord) -> tuple[dict[str, Any], dict[str, Any]]:
    spec: dict[str, Any] = {
        "agentType": rec.transport,
        "description": rec.agent_name,
        "capabilities": list(rec.capabilities),
    }
    if rec.endpoint:
        spec["endpoint"] = rec.endpoint
    capacity = rec.metadata.get("available_capacity")
    if isinstance(capacity, int) and not isinstance(capacity, bool) and capacity >= 0:
        spec["capacity"] = capacity
    status: dict[str, Any] = {"phase": rec.status.capitalize() if rec.status else "Unknown"}
    if rec.last_heartbeat:
        status["lastHeartbeat"] = rec.last_heartbeat
    return spec, status


class StoreAgentRecords:
    """:class:`agentcoord.localagents.records.AgentRecords` on Agent objects."""

    def __init__(self, store: ObjectStore) -> None:
        self._r: ObjectRecords[AgentRecord] = ObjectRecords(
            store,
            plural="agents",
            kind="Agent",
            record_kind="registered",
            key=lambda r: r.agent_id,
            load=AgentRecord.from_dict,
            shape=_registered_shape,
        )

    async def upsert(self, record: AgentRecord) -> None:
        await self._r.upsert(record)

    def get(self, key: str) -> AgentRecord | None:
        return self._r.get(key)

    async def delete(self, key: str) -> bool:
        return await self._r.delete(key)

    def list(self) -> list[AgentRecord]:
        return self._r.list()


_JOB_PHASES = {"pending": "Pending", "running": "Running", "succeeded": "Succeeded"}


def _job_shape(rec: AgentTaskRecord) -> tuple[dict[str, Any], dict[str, Any]]:
    spec: dict[str, Any] = {
        "objective": rec.task or "(no task text)",
        "assignedAgentRef": {"kind": "Agent", "name": rec.agent_id},
    }
    status: dict[str, Any] = {"phase": _JOB_PHASES.get(rec.status, "Failed")}
    if rec.error:
        status["message"] = rec.error
    elif rec.status not in _JOB_PHASES:
        status["message"] = rec.status
    if rec.result is not None:
        status["result"] = (
            rec.result if isinstance(rec.result, str) else json.dumps(rec.result, default=str)
        )
    return spec, status


class StoreJobRecords:
    """:class:`agentcoord.localagents.records.TaskRecords` (dispatch jobs) on AgentTasks."""

    def __init__(self, store: ObjectStore) -> None:
        self._r: ObjectRecords[AgentTaskRecord] = ObjectRecords(
            store,
            plural="agenttasks",
            kind="AgentTask",
            record_kind="job",
            key=lambda r: f"job-{r.job_id}",
            load=AgentTaskRecord.from_dict,
            shape=_job_shape,
        )

    async def upsert(self, record: AgentTaskRecord) -> None:
        await self._r.upsert(record)

    def get(self, key: str) -> AgentTaskRecord | None:
        return self._r.get(f"job-{key}")

    async def delete(self, key: str) -> bool:
        return await self._r.delete(f"job-{key}")

    def list(self) -> list[AgentTaskRecord]:
        return self._r.list()
