"""Record seams for AgentChannel, HumanPrompt and AgentTask (DESIGN.md "Planes").

These records are objects of the Kubernetes-compatible object store: each record is read from
its object's spec and status (:mod:`agentcoord.stores.objects.repository`, docs/store.md
"Records are objects"). Messaging needs only a few operations on them, so each is a small
``Protocol``. Operations are semantic (``answer``, ``add_participants``) rather than
whole-object updates, so the store applies them as a compare-and-set on the current
resourceVersion, re-applied after a 409.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from agentcoord.errors import StateConflict

__all__ = [
    "AlreadyAnswered",
    "ChannelPhase",
    "ChannelRecord",
    "ChannelRecords",
    "PromptRecord",
    "PromptRecords",
    "TaskRecord",
    "TaskRecords",
    "effective_phase",
]

ChannelPhase = Literal["Pending", "Open", "Closed", "Expired"]


class AlreadyAnswered(StateConflict):
    """A HumanPrompt was answered already; the first answer stands."""


# -- AgentChannel ----------------------------------------------------------------------------


@dataclass
class ChannelRecord:
    """An AgentChannel: the durable half of a conversation (seed 000 "Durable state")."""

    name: str
    subject: str
    participants: list[str]
    created_by: str
    topic: str = ""
    ttl_secs: int | None = None
    phase: ChannelPhase = "Pending"
    created_at: float = field(default_factory=time.time)
    expires_at: float | None = None

    def view(self, now: float | None = None) -> dict[str, Any]:
        out = asdict(self)
        out["phase"] = effective_phase(self, time.time() if now is None else now)
        return out


def effective_phase(rec: ChannelRecord, now: float) -> ChannelPhase:
    """The phase with expiry applied: a live channel past its TTL reads Expired."""
    if rec.phase in ("Pending", "Open") and rec.expires_at is not None and now >= rec.expires_at:
        return "Expired"
    return rec.phase


class ChannelRecords(Protocol):
    async def get(self, name: str) -> ChannelRecord | None: ...

    async def create(self, rec: ChannelRecord) -> tuple[ChannelRecord, bool]:
        """Create ``rec``, or return the existing record by that name (and False)."""
        ...

    async def add_participants(self, name: str, agents: list[str]) -> ChannelRecord: ...

    async def set_phase(self, name: str, phase: ChannelPhase) -> ChannelRecord: ...

    async def list(self) -> list[ChannelRecord]: ...


# -- HumanPrompt -----------------------------------------------------------------------------


@dataclass
class PromptRecord:
    """A HumanPrompt: a question for the human, open until answered."""

    id: str
    agent: str
    kind: str  # notify | approval | choice | input
    question: str
    context: str = ""
    choices: list[str] = field(default_factory=list)
    schema: dict[str, Any] | None = None  # the answer's JSON Schema (structured kinds)
    phase: Literal["Open", "Answered"] = "Open"
    answer: Any = None
    answered_by: str | None = None
    created_at: float = field(default_factory=time.time)
    answered_at: float | None = None

    def view(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, "", [])}


class PromptRecords(Protocol):
    async def create(self, rec: PromptRecord) -> PromptRecord: ...

    async def get(self, prompt_id: str) -> PromptRecord | None: ...

    async def list(self, *, open_only: bool = True) -> list[PromptRecord]: ...

    async def answer(self, prompt_id: str, answer: Any, by: str) -> PromptRecord:
        """Record the answer if the prompt is open; raise AlreadyAnswered otherwise."""
        ...


# -- AgentTask -------------------------------------------------------------------------------


@dataclass
class TaskRecord:
    """An AgentTask created by a handoff: the successor's task and where it came from."""

    name: str
    objective: str
    assigned_agent: str
    lineage: dict[str, Any]
    handoff: dict[str, Any]
    created_at: float = field(default_factory=time.time)

    def view(self) -> dict[str, Any]:
        return asdict(self)


class TaskRecords(Protocol):
    async def record_handoff(
        self, *, offer: str, task: str, from_agent: str, to_agent: str, context: dict[str, Any]
    ) -> TaskRecord:
        """Write the successor's AgentTask with ``spec.lineage.handedOffFrom`` (idempotent)."""
        ...

    async def get(self, name: str) -> TaskRecord | None: ...
