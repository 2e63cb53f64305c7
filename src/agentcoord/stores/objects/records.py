"""Messaging's records as objects: AgentChannel, HumanPrompt and AgentTask (handoff).

Backs the Protocols of :mod:`agentcoord.stores.records` with the object store, so channels,
prompts and handoff tasks are objects that ``kubectl`` lists and that survive a restart.
"""

from __future__ import annotations

import json
import time
from typing import Any

from agentcoord.stores.objects._objrecords import ObjectRecords, object_name
from agentcoord.stores.objects.rules import rfc3339
from agentcoord.stores.objects.store import ObjectStore
from agentcoord.stores.records import (
    AlreadyAnswered,
    ChannelPhase,
    ChannelRecord,
    PromptRecord,
    TaskRecord,
)

__all__ = ["StoreChannelRecords", "StorePromptRecords", "StoreTaskRecords"]


# -- messaging: AgentChannel, HumanPrompt, AgentTask (handoff) --------------------------------


def _channel_shape(rec: ChannelRecord) -> tuple[dict[str, Any], dict[str, Any]]:
    spec: dict[str, Any] = {"participants": list(rec.participants), "subject": rec.subject}
    if rec.topic:
        spec["topic"] = rec.topic
    if rec.ttl_secs:
        spec["ttl"] = f"{rec.ttl_secs}s"
    status: dict[str, Any] = {"phase": rec.phase, "openedAt": rfc3339(rec.created_at)}
    if rec.expires_at:
        status["expiresAt"] = rfc3339(rec.expires_at)
    return spec, status


class StoreChannelRecords:
    """:class:`agentcoord.stores.records.ChannelRecords` on AgentChannel objects."""

    def __init__(self, store: ObjectStore) -> None:
        self._r: ObjectRecords[ChannelRecord] = ObjectRecords(
            store,
            plural="agentchannels",
            kind="AgentChannel",
            record_kind="channel",
            key=lambda r: r.name,
            load=lambda d: ChannelRecord(**d),
            shape=_channel_shape,
        )

    async def get(self, name: str) -> ChannelRecord | None:
        return self._r.get(name)

    async def create(self, rec: ChannelRecord) -> tuple[ChannelRecord, bool]:
        return await self._r.create_if_absent(rec)

    async def add_participants(self, name: str, agents: list[str]) -> ChannelRecord:
        def add(rec: ChannelRecord) -> ChannelRecord:
            rec.participants = rec.participants + [a for a in agents if a not in rec.participants]
            return rec

        return await self._r.change(name, add)

    async def set_phase(self, name: str, phase: ChannelPhase) -> ChannelRecord:
        def set_(rec: ChannelRecord) -> ChannelRecord:
            rec.phase = phase
            return rec

        return await self._r.change(name, set_)

    async def list(self) -> list[ChannelRecord]:
        return self._r.list()


def _prompt_shape(rec: PromptRecord) -> tuple[dict[str, Any], dict[str, Any]]:
    spec: dict[str, Any] = {
        "kind": rec.kind,
        "agent": rec.agent,
        "message": rec.question,
        "replySubject": f"prompts.{rec.id}.reply",
        "meridianSpec": {
            "type": "info" if rec.kind == "notify" else rec.kind,
            "context": rec.context,
        },
    }
    if rec.choices:
        spec["choices"] = list(rec.choices)
    if rec.schema is not None:
        spec["responseSchema"] = rec.schema
    status: dict[str, Any] = {"phase": "Pending" if rec.phase == "Open" else rec.phase}
    if rec.phase == "Answered":
        status.update(answer={"value": rec.answer}, answeredBy=rec.answered_by or "")
        if rec.answered_at:
            status["answeredAt"] = rfc3339(rec.answered_at)
    return spec, status


class StorePromptRecords:
    """:class:`agentcoord.stores.records.PromptRecords` on HumanPrompt objects."""

    def __init__(self, store: ObjectStore) -> None:
        self._r: ObjectRecords[PromptRecord] = ObjectRecords(
            store,
            plural="humanprompts",
            kind="HumanPrompt",
            record_kind="prompt",
            key=lambda r: r.id,
            load=lambda d: PromptRecord(**d),
            shape=_prompt_shape,
        )

    async def create(self, rec: PromptRecord) -> PromptRecord:
        _, created = await self._r.create_if_absent(rec)
        if not created:
            raise AlreadyAnswered(f"prompt {rec.id} already exists")
        return rec

    async def get(self, prompt_id: str) -> PromptRecord | None:
        return self._r.get(prompt_id)

    async def list(self, *, open_only: bool = True) -> list[PromptRecord]:
        recs = sorted(self._r.list(), key=lambda r: r.created_at)
        return [r for r in recs if r.phase == "Open" or not open_only]

    async def answer(self, prompt_id: str, answer: Any, by: str) -> PromptRecord:
        def answer_once(rec: PromptRecord) -> PromptRecord:
            if rec.phase != "Open":
                raise AlreadyAnswered(f"prompt {prompt_id} is already answered")
            rec.phase, rec.answer, rec.answered_by = "Answered", answer, by
            rec.answered_at = time.time()
            return rec

        return await self._r.change(prompt_id, answer_once)


def _handoff_task_shape(rec: TaskRecord) -> tuple[dict[str, Any], dict[str, Any]]:
    spec: dict[str, Any] = {
        "objective": rec.objective,
        "assignedAgentRef": {"kind": "Agent", "name": rec.assigned_agent},
        "context": json.dumps(rec.handoff, separators=(",", ":")),
        "lineage": rec.lineage,
    }
    return spec, {"phase": "Pending"}


class StoreTaskRecords:
    """:class:`agentcoord.stores.records.TaskRecords` (handoff successors) on AgentTasks."""

    def __init__(self, store: ObjectStore) -> None:
        self._r: ObjectRecords[TaskRecord] = ObjectRecords(
            store,
            plural="agenttasks",
            kind="AgentTask",
            record_kind="handoff",
            key=lambda r: r.name,
            load=lambda d: TaskRecord(**d),
            shape=_handoff_task_shape,
        )

    async def record_handoff(
        self, *, offer: str, task: str, from_agent: str, to_agent: str, context: dict[str, Any]
    ) -> TaskRecord:
        name = object_name("handoff", f"{to_agent}-{offer}".replace(":", "-").lower())
        rec = TaskRecord(
            name=name,
            objective=task,
            assigned_agent=to_agent,
            lineage={"handedOffFrom": {"agent": from_agent, "task": task, "offer": offer}},
            handoff=dict(context),
        )
        stored, _ = await self._r.create_if_absent(rec)
        return stored

    async def get(self, name: str) -> TaskRecord | None:
        return self._r.get(name)
