"""The daemon's records as objects: one typed :class:`Repository` over the object backend.

A record (an AgentChannel, a HumanPrompt, a handoff AgentTask, a registered Agent, a dispatch
job) *is* its object (docs/store.md "Records are objects"). Each kind has a :class:`Codec`
that says which record fields live in ``spec`` (what a person may set with kubectl), which in
``status`` (what the daemon observes) and which, having no slot in the kind's schema, in
per-field annotations under :data:`NOTE_PREFIX`. Every read decodes the object as it is in the
store's memory (the SQLite cache or the Kubernetes mirror), so a ``kubectl patch`` of spec is
what the daemon reads next.

Writes are compare-and-set on ``metadata.resourceVersion`` (STYLE.md 8): a change is a
function of the current record; a 409 re-reads the object and applies the function again, up
to :data:`CAS_TRIES` times, then fails with a :class:`Conflict` that says so. A write replaces
only the fields its codec owns, so other writers' fields (an AgentTask's checkpoints, a spec
field the record does not map) are kept. ``put`` (the upsert of the local-agent Protocols)
writes only the fields the caller changed since it read the record, so a concurrent kubectl
change to another field is not undone.

Objects written before records moved here carry the whole record in the
:data:`LEGACY_RECORD_ANNOTATION`; it fills the fields spec/status/notes lack until the
daemon's next write rewrites the object without it (docs/store.md "Older objects").
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import logging
import re
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from agentcoord.errors import AgentCoordError, NotFound
from agentcoord.kernel.duration import parse_duration
from agentcoord.stores.agentrecords import AgentRecord, AgentTaskRecord
from agentcoord.stores.objects.backend import ObjectBackend
from agentcoord.stores.objects.kinds import GROUP, GROUP_VERSION
from agentcoord.stores.objects.statuserrors import AlreadyExists, Conflict, ObjectNotFound
from agentcoord.stores.records import (
    AlreadyAnswered,
    ChannelPhase,
    ChannelRecord,
    PromptRecord,
    TaskRecord,
)

__all__ = [
    "CAS_TRIES",
    "KEY_ANNOTATION",
    "KIND_LABEL",
    "LEGACY_RECORD_ANNOTATION",
    "NOTE_PREFIX",
    "Codec",
    "Parts",
    "Repository",
    "StoreAgentRecords",
    "StoreChannelRecords",
    "StoreJobRecords",
    "StorePromptRecords",
    "StoreTaskRecords",
    "object_name",
    "object_of",
    "record_of",
]

log = logging.getLogger(__name__)

KIND_LABEL = f"{GROUP}/record-kind"
KEY_ANNOTATION = f"{GROUP}/record-key"
LEGACY_RECORD_ANNOTATION = f"{GROUP}/record"
NOTE_PREFIX = f"record.{GROUP}/"
CAS_TRIES = 20
_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

R = TypeVar("R")
Obj = dict[str, Any]


def object_name(prefix: str, key: str) -> str:
    """The object name for a record key: the key itself when it is a DNS label, else a
    stable ``<prefix>-<digest>`` (the key is kept in :data:`KEY_ANNOTATION`)."""
    if len(key) <= 63 and _DNS_NAME.match(key):
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{prefix}-{digest}"


def stamp(ts: float) -> str:
    """RFC 3339 with microseconds (metav1.MicroTime's form), so record times round-trip."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def unstamp(text: Any) -> float | None:
    """Unix seconds of an RFC 3339 string; None when absent or unparsable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


@dataclass
class Parts:
    """A record's place in its object: spec, status and notes (annotations, prefix dropped)."""

    spec: dict[str, Any] = field(default_factory=dict)
    status: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Codec(Generic[R]):
    """How records of one type are objects of one kind.

    ``encode`` gives the record's parts; ``decode`` gives the record fields an object holds
    (only those it holds: a legacy object's annotation fills the rest). The ``*_keys`` name
    what a write owns: those keys are replaced (or removed when the encoding lacks them);
    everything else in the object is left as it is. A create writes the encoding whole.
    """

    plural: str
    kind: str
    record_kind: str  # the KIND_LABEL value and the object-name prefix
    record_type: type[R]
    key: Callable[[R], str]
    key_fields: Callable[[str], dict[str, Any]]
    encode: Callable[[R], Parts]
    decode: Callable[[Parts, Mapping[str, Any]], dict[str, Any]]
    spec_keys: frozenset[str]
    status_keys: frozenset[str]
    note_keys: frozenset[str]


def _build(record_type: type[R], values: Mapping[str, Any]) -> R:
    known = {f.name for f in dataclasses.fields(record_type)}  # type: ignore[arg-type]
    return record_type(**{k: v for k, v in values.items() if k in known})


def _overlay(current: Mapping[str, Any], new: Mapping[str, Any], owned: frozenset[str]) -> Obj:
    out = {k: v for k, v in current.items() if k not in owned}
    out.update({k: v for k, v in new.items() if k in owned})
    return out


class Repository(Generic[R]):
    """Records of one :class:`Codec` as objects in one namespace; see the module docstring."""

    def __init__(
        self, store: ObjectBackend, codec: Codec[R], namespace: str = "default", *, track: bool
    ) -> None:
        self._store = store
        self._codec = codec
        self._ns = namespace
        # put(): the record each caller last read or wrote, so a put writes only its changes.
        self._track = track
        self._seen: dict[int, tuple[weakref.ref[Any], dict[str, Any]]] = {}

    # -- reads: decoded from the object as the store holds it now ---------------------------

    def _name(self, key: str) -> str:
        return object_name(self._codec.record_kind, key)

    def _object(self, key: str) -> Obj | None:
        try:
            obj: Obj = json.loads(
                self._store.get_raw(self._codec.plural, self._ns, self._name(key))
            )
        except ObjectNotFound:
            return None
        meta = obj.get("metadata") or {}
        if (meta.get("labels") or {}).get(KIND_LABEL) != self._codec.record_kind:
            return None  # an object of another origin under that name is not ours
        if (meta.get("annotations") or {}).get(KEY_ANNOTATION, meta.get("name")) != key:
            return None  # a digest name shared by another key
        return obj

    def _exists(self, key: str) -> bool:
        try:
            self._store.get_raw(self._codec.plural, self._ns, self._name(key))
        except ObjectNotFound:
            return False
        return True

    def decode(self, obj: Mapping[str, Any]) -> R | None:
        """The record an object holds (None, logged, if it cannot be one)."""
        return _decode(self._codec, obj)

    def get(self, key: str) -> R | None:
        obj = self._object(key)
        return None if obj is None else self._seen_as(self.decode(obj))

    def list(self) -> list[R]:
        _, objs, _ = self._store.list_raw(
            self._codec.plural, self._ns, f"{KIND_LABEL}={self._codec.record_kind}"
        )
        out = [self._seen_as(self.decode(o)) for o in objs]
        return [r for r in out if r is not None]

    def _seen_as(self, rec: R | None) -> R | None:
        if rec is not None and self._track:
            ident = id(rec)

            def forget(_: weakref.ref[Any]) -> None:
                self._seen.pop(ident, None)

            self._seen[ident] = (weakref.ref(rec, forget), dataclasses.asdict(rec))  # type: ignore[call-overload]
        return rec

    # -- writes: compare-and-set, retried on 409 --------------------------------------------

    def _create_body(self, rec: R) -> Obj:
        return _create_body(self._codec, rec, self._ns)

    def _changed_body(self, old: Obj, rec: R) -> tuple[Obj, dict[str, Any]]:
        """``old`` with the record's owned fields replaced: (object, its new status)."""
        codec = self._codec
        parts = codec.encode(rec)
        new = copy.deepcopy(old)
        meta = new["metadata"]
        notes = {NOTE_PREFIX + k: v for k, v in parts.notes.items()}
        owned_notes = frozenset(NOTE_PREFIX + k for k in codec.note_keys)
        annotations = _overlay(meta.get("annotations") or {}, notes, owned_notes)
        annotations.pop(LEGACY_RECORD_ANNOTATION, None)  # the object now holds the record
        annotations[KEY_ANNOTATION] = codec.key(rec)
        meta["annotations"] = annotations
        meta["labels"] = {**(meta.get("labels") or {}), KIND_LABEL: codec.record_kind}
        new["spec"] = _overlay(old.get("spec") or {}, parts.spec, codec.spec_keys)
        status = _overlay(old.get("status") or {}, parts.status, codec.status_keys)
        return new, status

    async def _write(self, old: Obj | None, rec: R) -> Obj:
        """One attempt; :class:`Conflict` (or :class:`AlreadyExists`) when someone was first."""
        plural = self._codec.plural
        if old is None:
            return await self._store.create(
                plural, self._ns, self._create_body(rec), keep_status=True
            )
        new, status = self._changed_body(old, rec)
        main_changed = {k: v for k, v in new.items() if k != "status"} != {
            k: v for k, v in old.items() if k != "status"
        }
        status_changed = status != (old.get("status") or {})
        if main_changed:
            # Spec and status in one version (the daemon's write, keep_status): a heartbeat
            # that moves both is one row of the object log, not two.
            body = {**new, "status": status} if status_changed else new
            return await self._store.update(plural, self._ns, body, keep_status=status_changed)
        if status_changed:
            body = {**old, "status": status}
            return await self._store.update(plural, self._ns, body, subresource="status")
        return old

    async def _cas(self, key: str, fn: Callable[[R | None], R | None]) -> tuple[R | None, bool]:
        """Apply ``fn`` to the current record (None when absent) and store what it returns
        (None: nothing to write). Returns (the stored record, whether this call wrote)."""
        for _ in range(CAS_TRIES):
            old = self._object(key)
            current = None if old is None else self.decode(old)
            new = fn(copy.deepcopy(current))
            if new is None:
                return current, False
            try:
                written = await self._write(old, new)
            except AlreadyExists:
                if self._object(key) is None and self._exists(key):
                    raise AlreadyExists(
                        f"{self._codec.kind} {self._name(key)} exists and is not a "
                        f"{self._codec.record_kind} record"
                    ) from None
                continue  # created by another writer first: apply fn to its record
            except Conflict:
                continue  # another writer was first: read its version and apply fn again
            return self.decode(written) or new, True
        raise _StillConflicting(
            f"{self._codec.kind} {self._name(key)} changed under each of {CAS_TRIES} writes in a "
            "row (another writer keeps changing it); try again"
        )

    async def change(self, key: str, fn: Callable[[R], R]) -> R:
        """Store ``fn(current record)``; :class:`NotFound` if there is none."""

        def apply(current: R | None) -> R:
            if current is None:
                raise NotFound(f"{self._codec.kind} {key} does not exist")
            return fn(current)

        rec, _ = await self._cas(key, apply)
        assert rec is not None
        return rec

    async def create(self, rec: R) -> tuple[R, bool]:
        """Create ``rec`` unless a record of its key exists: (the stored record, created)."""
        stored, created = await self._cas(
            self._codec.key(rec), lambda cur: rec if cur is None else None
        )
        assert stored is not None
        return stored, created

    async def put(self, rec: R) -> R:
        """Create or update from a whole record, writing only the fields that differ from the
        record as this caller last read (or wrote) it: all of them for a record it built."""
        seen = self._seen.get(id(rec))
        base = seen[1] if seen is not None and seen[0]() is rec else None
        now = dataclasses.asdict(rec)  # type: ignore[call-overload]
        delta = {k: v for k, v in now.items() if base is None or base.get(k) != v}

        def apply(current: R | None) -> R | None:
            if current is None:
                return rec
            if not delta:
                return None
            return dataclasses.replace(current, **copy.deepcopy(delta))  # type: ignore[type-var]

        stored, _ = await self._cas(self._codec.key(rec), apply)
        self._seen_as(rec)
        assert stored is not None
        return stored

    async def delete(self, key: str) -> bool:
        if self._object(key) is None:
            return False
        try:
            await self._store.delete(self._codec.plural, self._ns, self._name(key))
        except ObjectNotFound:
            return False
        return True


def _create_body(codec: Codec[R], rec: R, namespace: str) -> Obj:
    parts = codec.encode(rec)
    key = codec.key(rec)
    annotations = {KEY_ANNOTATION: key, **{NOTE_PREFIX + k: v for k, v in parts.notes.items()}}
    body: Obj = {
        "apiVersion": GROUP_VERSION,
        "kind": codec.kind,
        "metadata": {
            "name": object_name(codec.record_kind, key),
            "namespace": namespace,
            "labels": {KIND_LABEL: codec.record_kind},
            "annotations": annotations,
        },
        "spec": parts.spec,
    }
    if parts.status:
        body["status"] = parts.status
    return body


def _decode(codec: Codec[R], obj: Mapping[str, Any]) -> R | None:
    meta = obj.get("metadata") or {}
    annotations: Mapping[str, str] = meta.get("annotations") or {}
    values: dict[str, Any] = {}
    values.update(_legacy(meta))
    values.update(codec.key_fields(annotations.get(KEY_ANNOTATION) or meta.get("name", "")))
    parts = Parts(
        spec=dict(obj.get("spec") or {}),
        status=dict(obj.get("status") or {}),
        notes={
            k.removeprefix(NOTE_PREFIX): v
            for k, v in annotations.items()
            if k.startswith(NOTE_PREFIX)
        },
    )
    try:
        values.update(codec.decode(parts, meta))
        return _build(codec.record_type, values)
    except (TypeError, ValueError, KeyError, AttributeError):
        log.warning("%s %s is not a record; skipped", codec.kind, meta.get("name"))
        return None


class _StillConflicting(Conflict):
    """Every compare-and-set attempt of one change met a newer version (409)."""


# -- decoding helpers (a kubectl user may write anything the schema allows) ------------------


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def _some(**values: Any) -> dict[str, Any]:
    """The fields whose source was present (``...`` marks an absent one)."""
    return {k: v for k, v in values.items() if v is not ...}


def _legacy(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The whole record an object written before records moved to spec/status carries."""
    text = (meta.get("annotations") or {}).get(LEGACY_RECORD_ANNOTATION)
    if not text:
        return {}
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        log.warning("%s: unreadable legacy record annotation", meta.get("name"))
        return {}
    return record


def _created(parts: Parts, meta: Mapping[str, Any]) -> Any:
    """A record's creation time: its note, else the legacy record's (``...``), else the
    object's creationTimestamp (a person's kubectl-made record)."""
    ts = unstamp(parts.notes.get("created-at"))
    if ts is None and not _legacy(meta):
        ts = unstamp(meta.get("creationTimestamp"))
    return ... if ts is None else ts


# -- AgentChannel ----------------------------------------------------------------------------

_CHANNEL_PHASES: frozenset[str] = frozenset({"Pending", "Open", "Closed", "Expired"})


def _channel_encode(rec: ChannelRecord) -> Parts:
    spec: dict[str, Any] = {"participants": list(rec.participants), "subject": rec.subject}
    if rec.topic:
        spec["topic"] = rec.topic
    if rec.ttl_secs:
        spec["ttl"] = f"{rec.ttl_secs}s"
    status: dict[str, Any] = {"phase": rec.phase, "openedAt": stamp(rec.created_at)}
    if rec.expires_at:
        status["expiresAt"] = stamp(rec.expires_at)
    notes = {"created-by": rec.created_by} if rec.created_by else {}
    return Parts(spec, status, notes)


def _channel_decode(parts: Parts, meta: Mapping[str, Any]) -> dict[str, Any]:
    spec, status = parts.spec, parts.status
    created = unstamp(status.get("openedAt"))
    ttl: int | None = None
    if isinstance(spec.get("ttl"), str):
        try:
            ttl = max(1, round(parse_duration(spec["ttl"])))
        except AgentCoordError:
            log.warning(
                "AgentChannel %s: spec.ttl %r is not a duration", meta.get("name"), spec["ttl"]
            )
    # The TTL is the user's (spec): the expiry follows it; status.expiresAt is only its echo.
    expires: Any = None
    if ttl:
        expires = created + ttl if created is not None else unstamp(status.get("expiresAt")) or ...
    phase = status.get("phase")
    return _some(
        participants=[str(p) for p in spec["participants"]] if "participants" in spec else ...,
        subject=_str(spec.get("subject")) or ...,
        topic=_str(spec.get("topic")) or "",
        ttl_secs=ttl,
        expires_at=expires,
        phase=phase if phase in _CHANNEL_PHASES else ...,
        created_at=... if created is None else created,
        created_by=parts.notes.get("created-by", ...),
    )


_CHANNELS: Codec[ChannelRecord] = Codec(
    plural="agentchannels",
    kind="AgentChannel",
    record_kind="channel",
    record_type=ChannelRecord,
    key=lambda r: r.name,
    key_fields=lambda k: {"name": k},
    encode=_channel_encode,
    decode=_channel_decode,
    spec_keys=frozenset({"participants", "subject", "topic", "ttl"}),
    status_keys=frozenset({"phase", "openedAt", "expiresAt"}),
    note_keys=frozenset({"created-by"}),
)


class StoreChannelRecords:
    """:class:`agentcoord.stores.records.ChannelRecords` on AgentChannel objects."""

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r = Repository(store, _CHANNELS, namespace, track=False)

    async def get(self, name: str) -> ChannelRecord | None:
        return self._r.get(name)

    async def create(self, rec: ChannelRecord) -> tuple[ChannelRecord, bool]:
        return await self._r.create(rec)

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


# -- HumanPrompt -----------------------------------------------------------------------------


def _prompt_encode(rec: PromptRecord) -> Parts:
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
            status["answeredAt"] = stamp(rec.answered_at)
    return Parts(spec, status, {"created-at": stamp(rec.created_at)})


def _prompt_decode(parts: Parts, meta: Mapping[str, Any]) -> dict[str, Any]:
    spec, status = parts.spec, parts.status
    meridian = spec.get("meridianSpec")
    phase = status.get("phase")
    answer = status.get("answer")
    answered_at = unstamp(status.get("answeredAt"))
    return _some(
        kind=_str(spec.get("kind")) or ...,
        agent=_str(spec.get("agent")) or ...,
        question=spec.get("message", ...),
        context=str(meridian.get("context") or "") if isinstance(meridian, dict) else ...,
        choices=[str(c) for c in spec.get("choices") or []] if spec else ...,
        schema=spec.get("responseSchema") if spec else ...,
        # Pending is the kind's word for the record's Open; other phases are read as written.
        phase=... if not isinstance(phase, str) else ("Open" if phase == "Pending" else phase),
        answer=answer.get("value") if isinstance(answer, dict) else (None if status else ...),
        answered_by=_str(status.get("answeredBy")) or (None if status else ...),
        answered_at=answered_at if answered_at is not None or status else ...,
        created_at=_created(parts, meta),
    )


_PROMPTS: Codec[PromptRecord] = Codec(
    plural="humanprompts",
    kind="HumanPrompt",
    record_kind="prompt",
    record_type=PromptRecord,
    key=lambda r: r.id,
    key_fields=lambda k: {"id": k},
    encode=_prompt_encode,
    decode=_prompt_decode,
    spec_keys=frozenset(
        {"kind", "agent", "message", "replySubject", "meridianSpec", "choices", "responseSchema"}
    ),
    status_keys=frozenset({"phase", "answer", "answeredBy", "answeredAt"}),
    note_keys=frozenset({"created-at"}),
)


class StorePromptRecords:
    """:class:`agentcoord.stores.records.PromptRecords` on HumanPrompt objects."""

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r = Repository(store, _PROMPTS, namespace, track=False)

    async def create(self, rec: PromptRecord) -> PromptRecord:
        stored, created = await self._r.create(rec)
        if not created:
            raise AlreadyAnswered(f"prompt {rec.id} already exists")
        return stored

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


# -- AgentTask: a handoff's successor task ----------------------------------------------------


def _handoff_encode(rec: TaskRecord) -> Parts:
    spec: dict[str, Any] = {
        "objective": rec.objective,
        "assignedAgentRef": {"kind": "Agent", "name": rec.assigned_agent},
        "context": json.dumps(rec.handoff, separators=(",", ":")),
        "lineage": rec.lineage,
    }
    # status is the operator's from here on (phase, checkpoints): written at create only.
    return Parts(spec, {"phase": "Pending"}, {"created-at": stamp(rec.created_at)})


def _handoff_decode(parts: Parts, meta: Mapping[str, Any]) -> dict[str, Any]:
    spec = parts.spec
    ref = spec.get("assignedAgentRef")
    context = spec.get("context")
    handoff: Any = ...
    if isinstance(context, str):
        try:
            handoff = json.loads(context)
        except ValueError:
            handoff = {"text": context}  # a person's plain-text hand-over note
    lineage = spec.get("lineage")
    return _some(
        objective=spec.get("objective", ...),
        assigned_agent=(_str(ref.get("name")) or ...) if isinstance(ref, dict) else ...,
        handoff=handoff if isinstance(handoff, dict) else ...,
        lineage=lineage if isinstance(lineage, dict) else ...,
        created_at=_created(parts, meta),
    )


_HANDOFFS: Codec[TaskRecord] = Codec(
    plural="agenttasks",
    kind="AgentTask",
    record_kind="handoff",
    record_type=TaskRecord,
    key=lambda r: r.name,
    key_fields=lambda k: {"name": k},
    encode=_handoff_encode,
    decode=_handoff_decode,
    spec_keys=frozenset({"objective", "assignedAgentRef", "context", "lineage"}),
    status_keys=frozenset(),
    note_keys=frozenset({"created-at"}),
)


class StoreTaskRecords:
    """:class:`agentcoord.stores.records.TaskRecords` (handoff successors) on AgentTasks."""

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r = Repository(store, _HANDOFFS, namespace, track=False)

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
        stored, _ = await self._r.create(rec)
        return stored

    async def get(self, name: str) -> TaskRecord | None:
        return self._r.get(name)


# -- Agent: a registered agent ----------------------------------------------------------------


def _capacity(metadata: Mapping[str, Any]) -> int | None:
    value = metadata.get("available_capacity")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _registered_encode(rec: AgentRecord) -> Parts:
    spec: dict[str, Any] = {
        "agentType": rec.transport,
        "description": rec.agent_name,
        "capabilities": list(rec.capabilities),
    }
    if rec.endpoint:
        spec["endpoint"] = rec.endpoint
    capacity = _capacity(rec.metadata)
    if capacity is not None:
        spec["capacity"] = capacity
    status: dict[str, Any] = {"phase": rec.status.capitalize() if rec.status else "Unknown"}
    if rec.last_heartbeat:
        status["lastHeartbeat"] = rec.last_heartbeat
    notes = {
        "agent-type": rec.agent_type,
        "registered-at": rec.registered_at,
        "registered-by": rec.registered_by,
        "heartbeat-ttl": str(rec.heartbeat_ttl),
        "metadata": json.dumps(rec.metadata, separators=(",", ":"), default=str)
        if rec.metadata
        else "",
    }
    return Parts(spec, status, {k: v for k, v in notes.items() if v})


def _registered_decode(parts: Parts, meta: Mapping[str, Any]) -> dict[str, Any]:
    spec, status, notes = parts.spec, parts.status, parts.notes
    if "metadata" in notes:
        metadata = json.loads(notes["metadata"])
    else:
        metadata = _legacy(meta).get("metadata") or {}
    if not isinstance(metadata, dict):
        raise TypeError("metadata")
    # spec.capacity is the user's: an edit sets it, removing it removes the limit.
    if isinstance(spec.get("capacity"), int):
        metadata["available_capacity"] = spec["capacity"]
    elif _capacity(metadata) is not None:
        del metadata["available_capacity"]
    phase = _str(status.get("phase"))
    ttl = _int(notes.get("heartbeat-ttl"))
    return _some(
        transport=_str(spec.get("agentType")) or ...,
        agent_name=spec["description"] if isinstance(spec.get("description"), str) else ...,
        capabilities=[str(c) for c in spec["capabilities"]] if "capabilities" in spec else ...,
        endpoint=_str(spec.get("endpoint")) or ("" if "agentType" in spec else ...),
        status=... if phase is None else ("" if phase == "Unknown" else phase.lower()),
        last_heartbeat=_str(status.get("lastHeartbeat")) or ...,
        metadata=metadata,
        agent_type=notes.get("agent-type", ...),
        registered_at=notes.get("registered-at", ...),
        registered_by=notes.get("registered-by", ...),
        heartbeat_ttl=... if ttl is None else ttl,
    )


_REGISTERED: Codec[AgentRecord] = Codec(
    plural="agents",
    kind="Agent",
    record_kind="registered",
    record_type=AgentRecord,
    key=lambda r: r.agent_id,
    key_fields=lambda k: {"agent_id": k},
    encode=_registered_encode,
    decode=_registered_decode,
    spec_keys=frozenset({"agentType", "description", "capabilities", "endpoint", "capacity"}),
    status_keys=frozenset({"phase", "lastHeartbeat"}),
    note_keys=frozenset(
        {"agent-type", "registered-at", "registered-by", "heartbeat-ttl", "metadata"}
    ),
)


class StoreAgentRecords:
    """:class:`agentcoord.stores.agentrecords.AgentRecords` on Agent objects."""

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r = Repository(store, _REGISTERED, namespace, track=True)

    async def upsert(self, record: AgentRecord) -> None:
        await self._r.put(record)

    def get(self, key: str) -> AgentRecord | None:
        return self._r.get(key)

    async def delete(self, key: str) -> bool:
        return await self._r.delete(key)

    def list(self) -> list[AgentRecord]:
        return self._r.list()


# -- AgentTask: a dispatch job ----------------------------------------------------------------

_JOB_PHASES = {"pending": "Pending", "running": "Running", "succeeded": "Succeeded"}
_NO_TASK = "(no task text)"  # spec.objective is required; a job may have none


def _job_encode(rec: AgentTaskRecord) -> Parts:
    spec: dict[str, Any] = {
        "objective": rec.task or _NO_TASK,
        "assignedAgentRef": {"kind": "Agent", "name": rec.agent_id},
    }
    status: dict[str, Any] = {"phase": _JOB_PHASES.get(rec.status, "Failed")}
    if rec.error:
        status["message"] = rec.error
    elif rec.status not in _JOB_PHASES:
        status["message"] = rec.status
    notes = {
        "transport": rec.transport,
        "requested-by": rec.requested_by,
        "created-at": rec.created_at,
        "finished-at": rec.finished_at,
        "sandbox": rec.sandbox,
        "log-dir": rec.log_dir,
        "remote-job-id": rec.remote_job_id,
        "profile": rec.profile,
        "exit-code": "" if rec.exit_code is None else str(rec.exit_code),
        "outcome": rec.status if rec.status not in _JOB_PHASES else "",
    }
    if rec.result is not None:
        if isinstance(rec.result, str):
            status["result"] = rec.result
        else:
            status["result"] = json.dumps(rec.result, default=str)
            notes["result-format"] = "json"
    return Parts(spec, status, {k: v for k, v in notes.items() if v})


def _job_decode(parts: Parts, meta: Mapping[str, Any]) -> dict[str, Any]:
    spec, status, notes = parts.spec, parts.status, parts.notes
    ref = spec.get("assignedAgentRef")
    phase = _str(status.get("phase"))
    state: Any = ...
    if phase == "Failed":
        # the outcome (failed, timed_out, cancelled) is a note; a legacy record has its own
        state = notes.get("outcome") or _legacy(meta).get("status") or "failed"
    elif phase is not None:
        state = phase.lower()
    message = _str(status.get("message")) or ""
    result: Any = ... if not status else status.get("result")
    if isinstance(result, str) and notes.get("result-format") == "json":
        result = json.loads(result)
    objective = spec.get("objective")
    return _some(
        task=("" if objective == _NO_TASK else objective) if isinstance(objective, str) else ...,
        agent_id=(_str(ref.get("name")) or ...) if isinstance(ref, dict) else ...,
        status=state,
        error=(... if not status else ("" if message == state else message)),
        result=result,
        transport=notes.get("transport", ...),
        requested_by=notes.get("requested-by", ...),
        created_at=notes.get("created-at", ...),
        finished_at=notes.get("finished-at", ...),
        sandbox=notes.get("sandbox", ...),
        log_dir=notes.get("log-dir", ...),
        remote_job_id=notes.get("remote-job-id", ...),
        profile=notes.get("profile", ...),
        exit_code=_int(notes.get("exit-code")) if "exit-code" in notes else ...,
    )


_JOBS: Codec[AgentTaskRecord] = Codec(
    plural="agenttasks",
    kind="AgentTask",
    record_kind="job",
    record_type=AgentTaskRecord,
    key=lambda r: f"job-{r.job_id}",
    key_fields=lambda k: {"job_id": k.removeprefix("job-")},
    encode=_job_encode,
    decode=_job_decode,
    spec_keys=frozenset({"objective", "assignedAgentRef"}),
    status_keys=frozenset({"phase", "message", "result"}),
    note_keys=frozenset(
        {
            "transport",
            "requested-by",
            "created-at",
            "finished-at",
            "sandbox",
            "log-dir",
            "remote-job-id",
            "profile",
            "exit-code",
            "outcome",
            "result-format",
        }
    ),
)


class StoreJobRecords:
    """:class:`agentcoord.stores.agentrecords.TaskRecords` (dispatch jobs) on AgentTasks."""

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r = Repository(store, _JOBS, namespace, track=True)

    async def upsert(self, record: AgentTaskRecord) -> None:
        await self._r.put(record)

    def get(self, key: str) -> AgentTaskRecord | None:
        return self._r.get(f"job-{key}")

    async def delete(self, key: str) -> bool:
        return await self._r.delete(f"job-{key}")

    def list(self) -> list[AgentTaskRecord]:
        return self._r.list()


_CODECS: dict[tuple[str, str], Codec[Any]] = {
    (c.kind, c.record_kind): c for c in (_CHANNELS, _PROMPTS, _HANDOFFS, _REGISTERED, _JOBS)
}


def record_of(obj: Mapping[str, Any]) -> Any | None:
    """The record any record object holds (a ChannelRecord, AgentRecord, ...), or None for an
    object that is not one: the pure decoding, for readers of a store file."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    codec = _CODECS.get((str(obj.get("kind")), str(labels.get(KIND_LABEL))))
    return None if codec is None else _decode(codec, obj)


def object_of(rec: Any, namespace: str = "default") -> Obj:
    """The object a daemon's create writes for ``rec`` (any record type above): the pure
    encoding, the inverse of :func:`record_of`."""
    for codec in _CODECS.values():
        if type(rec) is codec.record_type:
            return _create_body(codec, rec, namespace)
    raise TypeError(f"{type(rec).__name__} is not a record kept as an object")
