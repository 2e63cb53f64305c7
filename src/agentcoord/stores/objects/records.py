"""Store-backed record seams: the messaging and local-agent records as Kubernetes objects.

Messaging (``stores/records.py``) and local agents (``localagents/records.py``) talk to small
Protocols; here they are backed by the object store, so channels, prompts, tasks and registered
agents are AgentChannel, HumanPrompt, AgentTask and Agent objects that ``kubectl`` lists.

Each object carries its record whole in the ``fastverk.savvifi.com/record`` annotation (the
exact Python record, floats and all) next to the spec/status fields a person reads with
kubectl; the annotation is what the daemon reads back. Conditional changes (answer a prompt
once, add participants) are compare-and-set on ``metadata.resourceVersion``, retried on 409.
Reads come from the store's memory cache, so they stay synchronous where the Protocols are.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Generic, TypeVar

from agentcoord.errors import NotFound
from agentcoord.localagents.records import AgentRecord, AgentTaskRecord
from agentcoord.stores.objects.backend import ObjectBackend
from agentcoord.stores.objects.errors import Conflict, ObjectNotFound
from agentcoord.stores.objects.kinds import GROUP, GROUP_VERSION
from agentcoord.stores.objects.rules import rfc3339
from agentcoord.stores.records import (
    AlreadyAnswered,
    ChannelPhase,
    ChannelRecord,
    PromptRecord,
    TaskRecord,
)

__all__ = [
    "RECORD_ANNOTATION",
    "StoreAgentRecords",
    "StoreChannelRecords",
    "StoreJobRecords",
    "StorePromptRecords",
    "StoreTaskRecords",
    "object_name",
]

RECORD_ANNOTATION = f"{GROUP}/record"
KEY_ANNOTATION = f"{GROUP}/record-key"
KIND_LABEL = f"{GROUP}/record-kind"
_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_CAS_TRIES = 20

R = TypeVar("R")


def object_name(prefix: str, key: str) -> str:
    """The object name for a record key: the key itself when it is a DNS label, else a
    stable ``<prefix>-<digest>`` (the key is kept in an annotation)."""
    if len(key) <= 63 and _DNS_NAME.match(key):
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{prefix}-{digest}"


class _Records(Generic[R]):
    """Records of one type as objects of one kind, selected by a record-kind label."""

    def __init__(
        self,
        store: ObjectBackend,
        *,
        plural: str,
        kind: str,
        record_kind: str,
        key: Callable[[R], str],
        load: Callable[[dict[str, Any]], R],
        shape: Callable[[R], tuple[dict[str, Any], dict[str, Any]]],
        namespace: str = "default",
    ) -> None:
        self._store = store
        self._plural, self._kind, self._record_kind = plural, kind, record_kind
        self._key, self._load, self._shape = key, load, shape
        self._ns = namespace

    def _name(self, key: str) -> str:
        return object_name(self._record_kind, key)

    def _obj(self, key: str) -> dict[str, Any] | None:
        try:
            obj: dict[str, Any] = json.loads(
                self._store.get_raw(self._plural, self._ns, self._name(key))
            )
        except ObjectNotFound:
            return None
        meta = obj.get("metadata", {})
        annotations = meta.get("annotations") or {}
        if (meta.get("labels") or {}).get(KIND_LABEL) != self._record_kind:
            return None  # an object of another origin under that name is not ours
        if annotations.get(KEY_ANNOTATION) != key or RECORD_ANNOTATION not in annotations:
            return None
        return obj

    def get(self, key: str) -> R | None:
        obj = self._obj(key)
        return None if obj is None else self._record_of(obj)

    def _record_of(self, obj: dict[str, Any]) -> R:
        return self._load(json.loads(obj["metadata"]["annotations"][RECORD_ANNOTATION]))

    def list(self) -> list[R]:
        _, objs, _ = self._store.list_raw(
            self._plural, self._ns, f"{KIND_LABEL}={self._record_kind}"
        )
        return [
            self._record_of(o)
            for o in objs
            if RECORD_ANNOTATION in (o["metadata"].get("annotations") or {})
        ]

    def _body(self, record: R, old: dict[str, Any] | None) -> dict[str, Any]:
        spec, status = self._shape(record)
        key = self._key(record)
        meta: dict[str, Any] = {
            "name": self._name(key),
            "namespace": self._ns,
            "labels": {KIND_LABEL: self._record_kind},
            "annotations": {
                KEY_ANNOTATION: key,
                RECORD_ANNOTATION: json.dumps(asdict(record), separators=(",", ":"), default=str),  # type: ignore[call-overload]
            },
        }
        if old is not None:
            old_meta = old["metadata"]
            meta["labels"] = {**(old_meta.get("labels") or {}), **meta["labels"]}
            meta["annotations"] = {**(old_meta.get("annotations") or {}), **meta["annotations"]}
            meta["resourceVersion"] = old_meta["resourceVersion"]
        body = {"apiVersion": GROUP_VERSION, "kind": self._kind, "metadata": meta, "spec": spec}
        if status:
            body["status"] = status
        return body

    async def upsert(self, record: R) -> None:
        """Create or replace (last writer wins: the caller owns the record)."""
        for _ in range(_CAS_TRIES):
            old = self._obj(self._key(record))
            try:
                await self._write(record, old)
                return
            except Conflict:
                continue
        raise Conflict(f"{self._kind} {self._key(record)} keeps changing; try again")

    async def _write(self, record: R, old: dict[str, Any] | None) -> None:
        body = self._body(record, old)
        if old is None:
            await self._store.create(self._plural, self._ns, body, keep_status=True)
            return
        updated = await self._store.update(self._plural, self._ns, body)
        if "status" in body and body["status"] != updated.get("status"):
            # status is a subresource: a second write, at the version the first one made.
            rv = updated["metadata"]["resourceVersion"]
            body["metadata"]["resourceVersion"] = rv
            await self._store.update(self._plural, self._ns, body, subresource="status")

    async def change(self, key: str, fn: Callable[[R], R]) -> R:
        """Apply ``fn`` to the current record and store the result (CAS, retried on 409)."""
        for _ in range(_CAS_TRIES):
            old = self._obj(key)
            if old is None:
                raise NotFound(f"{self._kind} {key} does not exist")
            new = fn(self._record_of(old))
            try:
                await self._write(new, old)
                return new
            except Conflict:
                continue
        raise Conflict(f"{self._kind} {key} keeps changing; try again")

    async def create_if_absent(self, record: R) -> tuple[R, bool]:
        existing = self.get(self._key(record))
        if existing is not None:
            return existing, False
        try:
            await self._write(record, None)
        except Conflict:  # AlreadyExists is a 409 too: someone created it first
            found = self.get(self._key(record))
            if found is None:
                raise
            return found, False
        return record, True

    async def delete(self, key: str) -> bool:
        if self._obj(key) is None:
            return False
        try:
            await self._store.delete(self._plural, self._ns, self._name(key))
        except ObjectNotFound:
            return False
        return True


def _iso(ts: float | None) -> str | None:
    return rfc3339(ts) if ts else None


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

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r: _Records[ChannelRecord] = _Records(
            store,
            plural="agentchannels",
            kind="AgentChannel",
            record_kind="channel",
            key=lambda r: r.name,
            load=lambda d: ChannelRecord(**d),
            shape=_channel_shape,
            namespace=namespace,
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

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r: _Records[PromptRecord] = _Records(
            store,
            plural="humanprompts",
            kind="HumanPrompt",
            record_kind="prompt",
            key=lambda r: r.id,
            load=lambda d: PromptRecord(**d),
            shape=_prompt_shape,
            namespace=namespace,
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

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r: _Records[TaskRecord] = _Records(
            store,
            plural="agenttasks",
            kind="AgentTask",
            record_kind="handoff",
            key=lambda r: r.name,
            load=lambda d: TaskRecord(**d),
            shape=_handoff_task_shape,
            namespace=namespace,
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

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r: _Records[AgentRecord] = _Records(
            store,
            plural="agents",
            kind="Agent",
            record_kind="registered",
            key=lambda r: r.agent_id,
            load=AgentRecord.from_dict,
            shape=_registered_shape,
            namespace=namespace,
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

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r: _Records[AgentTaskRecord] = _Records(
            store,
            plural="agenttasks",
            kind="AgentTask",
            record_kind="job",
            key=lambda r: f"job-{r.job_id}",
            load=AgentTaskRecord.from_dict,
            shape=_job_shape,
            namespace=namespace,
        )

    async def upsert(self, record: AgentTaskRecord) -> None:
        await self._r.upsert(record)

    def get(self, key: str) -> AgentTaskRecord | None:
        return self._r.get(f"job-{key}")

    async def delete(self, key: str) -> bool:
        return await self._r.delete(f"job-{key}")

    def list(self) -> list[AgentTaskRecord]:
        return self._r.list()
