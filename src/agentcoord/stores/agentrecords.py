"""Registered agents and dispatch jobs as records, behind small Protocols.

The registry's :class:`AgentRecord` shape (docs/localagents.md "Records"), and an
:class:`AgentTaskRecord` per job. Both persist through a Protocol: the daemon keeps them as Agent
and AgentTask objects, read from their spec and status (:mod:`agentcoord.stores.objects.repository`,
docs/store.md "Records are objects"). :class:`JsonFileRecords` (one 0600 JSON file each) is what a
:class:`LocalAgents` built without records uses, as a unit test does.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol, TypeVar

__all__ = [
    "AgentRecord",
    "AgentRecords",
    "AgentTaskRecord",
    "TaskRecords",
]

log = logging.getLogger(__name__)


@dataclass
class AgentRecord:
    """A registered agent (docs/localagents.md "Records")."""

    agent_id: str
    agent_name: str = ""
    agent_type: str = ""
    capabilities: list[str] = field(default_factory=list)
    endpoint: str = ""
    transport: str = "http"  # "http" or "local"
    status: str = "online"
    metadata: dict[str, Any] = field(default_factory=dict)
    registered_at: str = ""
    last_heartbeat: str = ""
    heartbeat_ttl: int = 300
    registered_by: str = ""  # the resolved caller that registered it (never an argument)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentRecord:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class AgentTaskRecord:
    """One dispatched job: who asked, which agent, how it went, where its log is."""

    job_id: str
    agent_id: str
    transport: str
    task: str
    requested_by: str
    status: str = "pending"  # pending, running, succeeded, failed, timed_out, cancelled
    created_at: str = ""
    finished_at: str = ""
    sandbox: str = ""  # "bwrap" or "none (weaker: ...)" for local jobs
    log_dir: str = ""
    exit_code: int | None = None
    remote_job_id: str = ""
    result: Any = None
    error: str = ""
    profile: str = ""  # the AgentProfile a local job started with (docs/profiles.md)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentTaskRecord:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


R = TypeVar("R", AgentRecord, AgentTaskRecord)


class AgentRecords(Protocol):
    """Where registered agents live (Agent objects: stores/objects/repository.py). Reads are
    synchronous (the store serves them from memory); writes wait for the commit."""

    async def upsert(self, record: AgentRecord) -> None: ...
    def get(self, key: str) -> AgentRecord | None: ...
    async def delete(self, key: str) -> bool: ...
    def list(self) -> list[AgentRecord]: ...


class TaskRecords(Protocol):
    """Where dispatch jobs live (AgentTask objects: stores/objects/repository.py)."""

    async def upsert(self, record: AgentTaskRecord) -> None: ...
    def get(self, key: str) -> AgentTaskRecord | None: ...
    async def delete(self, key: str) -> bool: ...
    def list(self) -> list[AgentTaskRecord]: ...
