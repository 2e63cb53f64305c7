"""Record seams for AgentChannel, HumanPrompt and AgentTask (DESIGN.md "Planes").

These objects belong to the Kubernetes-compatible object store. Messaging needs only a few
operations on them, so each is a small ``Protocol`` with an in-memory implementation here; the
store backs the same Protocols (each operation is one compare-and-set there). Operations are
semantic (``answer``, ``add_participants``) rather than whole-object updates, so the store can
apply them atomically on the current resourceVersion.
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from agentcoord.errors import NotFound, ToolError

__all__ = [
    "AlreadyAnswered",
    "ChannelPhase",
    "ChannelRecord",
    "ChannelRecords",
    "MemoryChannelRecords",
    "MemoryPromptRecords",
    "MemoryTaskRecords",
    "PromptRecord",
    "PromptRecords",
    "TaskRecord",
    "TaskRecords",
    "effective_phase",
]

ChannelPhase = Literal["Pending", "Open", "Closed", "Expired"]


class AlreadyAnswered(ToolError):
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


class MemoryChannelRecords:
    """ChannelRecords in a dict; each operation is atomic on the event loop (no awaits)."""

    def __init__(self) -> None:
        self._by_name: dict[str, ChannelRecord] = {}

    def _get(self, name: str) -> ChannelRecord:
        rec = self._by_name.get(name)
        if rec is None:
            raise NotFound(f"channel {name} does not exist")
        return rec

    async def get(self, name: str) -> ChannelRecord | None:
        rec = self._by_name.get(name)
        return copy.deepcopy(rec) if rec else None

    async def create(self, rec: ChannelRecord) -> tuple[ChannelRecord, bool]:
        existing = self._by_name.get(rec.name)
        if existing is not None:
            return copy.deepcopy(existing), False
        self._by_name[rec.name] = copy.deepcopy(rec)
        return copy.deepcopy(rec), True

    async def add_participants(self, name: str, agents: list[str]) -> ChannelRecord:
        rec = self._get(name)
        rec.participants += [a for a in agents if a not in rec.participants]
        return copy.deepcopy(rec)

    async def set_phase(self, name: str, phase: ChannelPhase) -> ChannelRecord:
        rec = self._get(name)
        rec.phase = phase
        return copy.deepcopy(rec)

    async def list(self) -> list[ChannelRecord]:
        return [copy.deepcopy(r) for r in self._by_name.values()]


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


class MemoryPromptRecords:
    def __init__(self) -> None:
        self._by_id: dict[str, PromptRecord] = {}

    async def create(self, rec: PromptRecord) -> PromptRecord:
        if rec.id in self._by_id:
            raise ToolError(f"prompt {rec.id} already exists")
        self._by_id[rec.id] = copy.deepcopy(rec)
        return copy.deepcopy(rec)

    async def get(self, prompt_id: str) -> PromptRecord | None:
        rec = self._by_id.get(prompt_id)
        return copy.deepcopy(rec) if rec else None

    async def list(self, *, open_only: bool = True) -> list[PromptRecord]:
        recs = sorted(self._by_id.values(), key=lambda r: r.created_at)
        return [copy.deepcopy(r) for r in recs if r.phase == "Open" or not open_only]

    async def answer(self, prompt_id: str, answer: Any, by: str) -> PromptRecord:
        rec = self._by_id.get(prompt_id)
        if rec is None:
            raise NotFound(f"prompt {prompt_id} does not exist")
        if rec.phase != "Open":
            raise AlreadyAnswered(f"prompt {prompt_id} is already answered")
        rec.phase, rec.answer, rec.answered_by = "Answered", answer, by
        rec.answered_at = time.time()
        return copy.deepcopy(rec)


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


class MemoryTaskRecords:
    def __init__(self) -> None:
        self._by_name: dict[str, TaskRecord] = {}

    async def record_handoff(
        self, *, offer: str, task: str, from_agent: str, to_agent: str, context: dict[str, Any]
    ) -> TaskRecord:
        name = f"{to_agent}-{offer}".replace(":", "-")
        rec = self._by_name.get(name)
        if rec is None:
            rec = TaskRecord(
                name=name,
                objective=task,
                assigned_agent=to_agent,
                lineage={"handedOffFrom": {"agent": from_agent, "task": task, "offer": offer}},
                handoff=dict(context),
            )
            self._by_name[name] = rec
        return copy.deepcopy(rec)

    async def get(self, name: str) -> TaskRecord | None:
        rec = self._by_name.get(name)
        return copy.deepcopy(rec) if rec else None
