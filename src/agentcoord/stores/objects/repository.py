"""The daemon's records as objects: one typed :class:`Repository` over the object backend.

A record (an AgentChannel, a HumanPrompt, a handoff AgentTask, a registered Agent, a dispatch
job) *is* its object (docs/store.md "Records are objects"). Each record type has a
:class:`~agentcoord.stores.objects.recordcodec.RecordCodec` (:mod:`recordmaps`) derived from
its slot table and its kind's typed spec and status. Every read decodes the object as it is in
the store's memory (the SQLite cache or the Kubernetes mirror), so a ``kubectl patch`` of spec
is what the daemon reads next.

Writes are compare-and-set on ``metadata.resourceVersion`` (docs/store.md "Records are objects"): a
change is a function of the current record; a 409 re-reads the object and applies the function
again, up to :data:`CAS_TRIES` times, then fails with a :class:`Conflict` that says so. A write
replaces only the fields its codec owns, so other writers' fields (an AgentTask's checkpoints, a
spec field the record does not map) are kept. ``put`` (the upsert of the local-agent Protocols)
writes only the fields the caller changed since it read the record, so a concurrent kubectl
change to another field is not undone.

Objects written before records moved here carried the whole record in the
:data:`LEGACY_RECORD_ANNOTATION`; :meth:`Repository.drop_legacy` moves it into spec, status
and notes, once, when the daemon opens its store (:func:`migrate_legacy_records`, docs/store.md
"Older objects"); reads never look at it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from agentcoord.errors import NotFound
from agentcoord.stores.agentrecords import AgentRecord, AgentTaskRecord
from agentcoord.stores.objects.backend import ObjectBackend
from agentcoord.stores.objects.kinds import GROUP
from agentcoord.stores.objects.recordcodec import (
    KEY_ANNOTATION,
    KIND_LABEL,
    NOTE_PREFIX,
    RecordCodec,
    object_name,
)
from agentcoord.stores.objects.recordmaps import (
    CHANNELS,
    CODECS,
    HANDOFFS,
    JOBS,
    PROMPTS,
    REGISTERED,
)
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
    "Repository",
    "StoreAgentRecords",
    "StoreChannelRecords",
    "StoreJobRecords",
    "StorePromptRecords",
    "StoreTaskRecords",
    "migrate_legacy_records",
    "object_name",
    "object_of",
    "record_of",
]

log = logging.getLogger(__name__)

LEGACY_RECORD_ANNOTATION = f"{GROUP}/record"
CAS_TRIES = 20

R = TypeVar("R")
Obj = dict[str, Any]


def _overlay(current: Mapping[str, Any], new: Mapping[str, Any], owned: frozenset[str]) -> Obj:
    out = {k: v for k, v in current.items() if k not in owned}
    out.update({k: v for k, v in new.items() if k in owned})
    return out


class Repository(Generic[R]):
    """Records of one :class:`RecordCodec` as objects in one namespace; see the module docstring."""

    def __init__(
        self,
        store: ObjectBackend,
        codec: RecordCodec[R, Any, Any],
        namespace: str = "default",
        *,
        track: bool,
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
        return self._codec.create_body(rec, self._ns)

    def _changed_body(
        self, old: Obj, rec: R, *, drop_legacy: bool = False
    ) -> tuple[Obj, dict[str, Any]]:
        """``old`` with the record's owned fields replaced: (object, its new status)."""
        codec = self._codec
        spec, status, notes_ = codec.encode(rec)
        new = copy.deepcopy(old)
        meta = new["metadata"]
        notes = {NOTE_PREFIX + k: v for k, v in notes_.items()}
        owned_notes = frozenset(NOTE_PREFIX + k for k in codec.owned("note"))
        annotations = _overlay(meta.get("annotations") or {}, notes, owned_notes)
        if drop_legacy:
            # Only the move drops it: a daemon write to an object whose annotation has not
            # been read into it (one written by an older daemon since the start) keeps it for
            # the next start's move, rather than losing the fields only it holds.
            annotations.pop(LEGACY_RECORD_ANNOTATION, None)
        annotations[KEY_ANNOTATION] = codec.key(rec)
        meta["annotations"] = annotations
        meta["labels"] = {**(meta.get("labels") or {}), KIND_LABEL: codec.record_kind}
        new["spec"] = _overlay(old.get("spec") or {}, spec, codec.owned("spec"))
        return new, _overlay(old.get("status") or {}, status, codec.owned("status"))

    async def _write(self, old: Obj | None, rec: R, *, drop_legacy: bool = False) -> Obj:
        """One attempt; :class:`Conflict` (or :class:`AlreadyExists`) when someone was first."""
        plural = self._codec.plural
        if old is None:
            return await self._store.create(
                plural, self._ns, self._create_body(rec), keep_status=True
            )
        new, status = self._changed_body(old, rec, drop_legacy=drop_legacy)
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
                        f"{self._codec.kind.kind} {self._name(key)} exists and is not a "
                        f"{self._codec.record_kind} record"
                    ) from None
                continue  # created by another writer first: apply fn to its record
            except Conflict:
                continue  # another writer was first: read its version and apply fn again
            return self.decode(written) or new, True
        raise _StillConflicting(
            f"{self._codec.kind.kind} {self._name(key)} changed under each of {CAS_TRIES} "
            "writes in a row (another writer keeps changing it); try again"
        )

    async def change(self, key: str, fn: Callable[[R], R]) -> R:
        """Store ``fn(current record)``; :class:`NotFound` if there is none."""

        def apply(current: R | None) -> R:
            if current is None:
                raise NotFound(f"{self._codec.kind.kind} {key} does not exist")
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

    # -- the legacy record annotation, moved once at start-up ------------------------------

    async def drop_legacy(self) -> int:
        """Rewrite each object of this record kind that still holds the legacy record
        annotation: its fields fill what spec, status and notes lack (the object's own win, so
        an earlier kubectl edit stands), and the annotation goes. Returns how many objects
        were rewritten; run again, it finds none (docs/store.md "Older objects")."""
        _, objs, _ = self._store.list_raw(
            self._codec.plural, self._ns, f"{KIND_LABEL}={self._codec.record_kind}"
        )
        keys = []
        for obj in objs:
            meta = obj.get("metadata") or {}
            annotations = meta.get("annotations") or {}
            if LEGACY_RECORD_ANNOTATION in annotations:
                keys.append(str(annotations.get(KEY_ANNOTATION) or meta.get("name")))
        done = 0
        for key in keys:
            done += await self._drop_legacy(key)
        return done

    async def _drop_legacy(self, key: str) -> bool:
        for _ in range(CAS_TRIES):
            old = self._object(key)
            meta = (old or {}).get("metadata") or {}
            text = (meta.get("annotations") or {}).get(LEGACY_RECORD_ANNOTATION)
            if old is None or text is None:
                return False  # gone, or another writer moved it first
            rec = _decode(self._codec, old, _legacy_fields(text, meta.get("name")))
            if rec is None:
                return False  # not a record even with its annotation (logged); left as it is
            try:
                await self._write(old, rec, drop_legacy=True)
            except Conflict:
                continue  # another writer was first: read its version and move that
            return True
        raise _StillConflicting(
            f"{self._codec.kind.kind} {self._name(key)} changed under each of {CAS_TRIES} "
            "moves of its legacy record annotation (another writer keeps changing it); start "
            "again once it stops"
        )

    async def delete(self, key: str) -> bool:
        if self._object(key) is None:
            return False
        try:
            await self._store.delete(self._codec.plural, self._ns, self._name(key))
        except ObjectNotFound:
            return False
        return True


def _decode(
    codec: RecordCodec[R, Any, Any], obj: Mapping[str, Any], under: Mapping[str, Any] | None = None
) -> R | None:
    try:
        return codec.decode(obj, under)
    except (TypeError, ValueError, KeyError, AttributeError):
        name = (obj.get("metadata") or {}).get("name")
        log.warning("%s %s is not a record; skipped", codec.kind.kind, name)
        return None


def _legacy_fields(text: str, name: Any) -> dict[str, Any]:
    """The record fields a legacy record annotation holds ({} when it is unreadable)."""
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        log.warning("%s: unreadable legacy record annotation", name)
        return {}
    return record


async def migrate_legacy_records(store: ObjectBackend, namespace: str = "default") -> int:
    """Move every record object's legacy annotation into its spec, status and notes: run
    once when the daemon opens its store (either backend), so reads never consult it.
    Idempotent; returns how many objects were rewritten."""
    done = 0
    for codec in CODECS:
        done += await Repository(store, codec, namespace, track=False).drop_legacy()
    if done:
        log.info("moved %d legacy record annotation(s) into spec and status", done)
    return done


class _StillConflicting(Conflict):
    """Every compare-and-set attempt of one change met a newer version (409)."""


# -- the record seams on their objects ------------------------------------------------------


class StoreChannelRecords:
    """:class:`agentcoord.stores.records.ChannelRecords` on AgentChannel objects."""

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r = Repository(store, CHANNELS, namespace, track=False)

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


class StorePromptRecords:
    """:class:`agentcoord.stores.records.PromptRecords` on HumanPrompt objects."""

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r = Repository(store, PROMPTS, namespace, track=False)

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


class StoreTaskRecords:
    """:class:`agentcoord.stores.records.TaskRecords` (handoff successors) on AgentTasks."""

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r = Repository(store, HANDOFFS, namespace, track=False)

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


class StoreAgentRecords:
    """:class:`agentcoord.stores.agentrecords.AgentRecords` on Agent objects."""

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r = Repository(store, REGISTERED, namespace, track=True)

    async def upsert(self, record: AgentRecord) -> None:
        await self._r.put(record)

    def get(self, key: str) -> AgentRecord | None:
        return self._r.get(key)

    async def delete(self, key: str) -> bool:
        return await self._r.delete(key)

    def list(self) -> list[AgentRecord]:
        return self._r.list()


class StoreJobRecords:
    """:class:`agentcoord.stores.agentrecords.TaskRecords` (dispatch jobs) on AgentTasks."""

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._r = Repository(store, JOBS, namespace, track=True)

    async def upsert(self, record: AgentTaskRecord) -> None:
        await self._r.put(record)

    def get(self, key: str) -> AgentTaskRecord | None:
        return self._r.get(f"job-{key}")

    async def delete(self, key: str) -> bool:
        return await self._r.delete(f"job-{key}")

    def list(self) -> list[AgentTaskRecord]:
        return self._r.list()


_CODECS: dict[tuple[str, str], RecordCodec[Any, Any, Any]] = {
    (c.kind.kind, c.record_kind): c for c in CODECS
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
    for codec in CODECS:
        if type(rec) is codec.record_type:
            return codec.create_body(rec, namespace)
    raise TypeError(f"{type(rec).__name__} is not a record kept as an object")
