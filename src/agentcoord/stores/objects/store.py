"""The object store: SQLite for durability, memory for reads, one writer with group commit.

Writes queue to one writer task. It takes every queued write (up to ``max_batch``), decides
each against the current state plus the batch's earlier writes (:mod:`rules`), and commits the
whole batch in one ``BEGIN IMMEDIATE`` transaction on a dedicated SQLite thread: one thread hop
per batch, not four awaits per write (FACTS.md: aiosqlite caps near 2.2k tx/s that way; bench/
store.py measures both). Only after the commit does the batch reach the in-memory cache and the
watchers, so nobody sees a write that could still be lost.

Tables: ``objects`` (current state), ``events`` (the log; its rowid is the resourceVersion),
``meta`` (compaction point). ``PRAGMA user_version`` is the schema version.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from agentcoord.stores.objects.errors import (
    AlreadyExists,
    BadRequest,
    Expired,
    ObjectNotFound,
    StoreError,
    TooManyRequests,
)
from agentcoord.stores.objects.kinds import GROUP, KINDS, Kind
from agentcoord.stores.objects.patch import MERGE_PATCH, apply_patch
from agentcoord.stores.objects.rules import (
    Key,
    prepare_create,
    prepare_delete,
    prepare_update,
    same_but_rv,
)
from agentcoord.stores.objects.schema import check_object, validate
from agentcoord.stores.objects.selectors import (
    FieldSelector,
    LabelSelector,
    parse_fields,
    parse_labels,
)
from agentcoord.stores.objects.watch import Watcher, WatchEvent

__all__ = ["SCHEMA_VERSION", "ObjectStore"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
Obj = dict[str, Any]
T = TypeVar("T")
_Warnings = list[str]  # out-parameter: warnings for the client (fieldValidation=Warn)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, object BLOB NOT NULL,
    PRIMARY KEY (resource, namespace, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
    rv INTEGER PRIMARY KEY, type TEXT NOT NULL, resource TEXT NOT NULL,
    namespace TEXT NOT NULL, name TEXT NOT NULL, object BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


def _dumps(obj: Obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _kind(plural: str) -> Kind:
    kind = KINDS.get(plural)
    if kind is None:
        raise ObjectNotFound(f"the server could not find the requested resource ({plural})")
    return kind


def _not_found(kind: Kind, name: str) -> ObjectNotFound:
    return ObjectNotFound(
        f'{kind.plural}.{GROUP} "{name}" not found',
        details={"name": name, "group": GROUP, "kind": kind.plural},
    )


@dataclass
class _Entry:
    obj: Obj  # never mutated once cached
    raw: bytes


@dataclass
class _Change:
    type: str  # ADDED, MODIFIED, DELETED
    key: Key
    obj: Obj


class _View:
    """The state one write is decided against: cache plus the batch's earlier writes."""

    def __init__(self, store: ObjectStore, now: float) -> None:
        self._store = store
        self.overlay: dict[Key, Obj | None] = {}
        self.now = now

    def get(self, key: Key) -> Obj | None:
        if key in self.overlay:
            return self.overlay[key]
        entry = self._store._cache.get(key[0], {}).get((key[1], key[2]))
        return entry.obj if entry else None


_Changes = list[_Change]
_OpFn = Callable[[_View], "_Changes | Obj"]


@dataclass
class _Op:
    fn: _OpFn | None
    future: asyncio.Future[Obj]
    compact_to: int | None = None


@dataclass
class _Stats:
    batches: int = 0
    writes: int = 0
    watchers_cut: int = 0
    compactions: int = 0
    max_batch: int = 0
    extra: dict[str, int] = field(default_factory=dict)


class ObjectStore:
    """An async context manager holding the store open; see the module docstring."""

    def __init__(
        self,
        path: Path,
        *,
        retention: int = 10_000,
        watch_queue: int = 1_000,
        max_batch: int = 512,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.retention = retention
        self.watch_queue = watch_queue
        self.max_batch = max_batch
        self._clock = clock
        self._cache: dict[str, dict[tuple[str, str], _Entry]] = {p: {} for p in KINDS}
        self._by_uid: dict[str, Key] = {}
        self._dependents: dict[str, set[Key]] = {}
        self._watchers: dict[str, set[Watcher]] = {p: set() for p in KINDS}
        self._rv = 0
        self._compacted = 0
        self._queue: asyncio.Queue[_Op | None] = asyncio.Queue()
        self._gc_queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False
        self.stats = _Stats()

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> ObjectStore:
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="objects-sqlite")
        rows, rv, compacted = await self._run(self._db_open)
        for resource, raw in rows:
            if resource not in self._cache:
                log.warning("ignoring stored objects of unknown resource %s", resource)
                continue
            obj = json.loads(raw)
            self._remember(resource, obj, raw)
        self._rv, self._compacted = rv, compacted
        self._tasks = [
            asyncio.create_task(self._writer(), name="objects-writer"),
            asyncio.create_task(self._collector(), name="objects-gc"),
        ]
        self._gc_queue.put_nowait(None)  # sweep dependents orphaned by a crash
        log.info("object store %s open at rv %d (%d objects)", self.path, rv, len(self._by_uid))
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closing = True
        self._queue.put_nowait(None)
        writer, collector = self._tasks or (None, None)
        if collector is not None:
            collector.cancel()
        for task in (writer, collector):
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        for watchers in self._watchers.values():
            for w in list(watchers):
                w.end()
        if self._executor is not None:
            with contextlib.suppress(Exception):
                await self._run(self._db_close)
            self._executor.shutdown(wait=True)
            self._executor = None

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        assert self._executor is not None
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    # -- SQLite (runs on the store's own thread) --------------------------------------------

    def _db_open(self) -> tuple[list[tuple[str, bytes]], int, int]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._conn = conn
        with contextlib.suppress(OSError):
            self.path.chmod(0o600)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=5000")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version}; this agentcoord knows {SCHEMA_VERSION}"
            )
        if version < SCHEMA_VERSION:
            conn.execute("BEGIN IMMEDIATE")
            for statement in _statements():
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")
        rows = conn.execute("SELECT resource, object FROM objects").fetchall()
        compacted = (
            conn.execute("SELECT value FROM meta WHERE key='compacted'").fetchone() or [0]
        )[0]
        top_event = conn.execute("SELECT max(rv) FROM events").fetchone()[0] or 0
        top_object = conn.execute("SELECT max(rv) FROM objects").fetchone()[0] or 0
        top_meta = (conn.execute("SELECT value FROM meta WHERE key='rv'").fetchone() or [0])[0]
        return rows, max(top_event, top_object, top_meta, compacted), compacted

    def _db_close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _db_commit(
        self,
        events: list[tuple[int, str, str, str, str, bytes]],
        upserts: list[tuple[str, str, str, int, bytes]],
        deletes: list[tuple[str, str, str]],
        compact_to: int | None,
        top_rv: int,
    ) -> None:
        conn = self._conn
        assert conn is not None
        conn.execute("BEGIN IMMEDIATE")
        try:
            if events:
                conn.executemany(
                    "INSERT INTO events(rv, type, resource, namespace, name, object) "
                    "VALUES (?,?,?,?,?,?)",
                    events,
                )
            if upserts:
                conn.executemany(
                    "INSERT INTO objects(resource, namespace, name, rv, object) VALUES (?,?,?,?,?)"
                    " ON CONFLICT(resource, namespace, name) DO UPDATE SET rv=excluded.rv, "
                    "object=excluded.object",
                    upserts,
                )
            if deletes:
                conn.executemany(
                    "DELETE FROM objects WHERE resource=? AND namespace=? AND name=?", deletes
                )
            if compact_to is not None:
                conn.execute("DELETE FROM events WHERE rv <= ?", (compact_to,))
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES ('compacted', ?) "
                    "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                    (compact_to,),
                )
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES ('rv', ?) "
                    "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                    (top_rv,),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _db_events(self, resource: str, after: int, upto: int) -> list[tuple[int, str, bytes]]:
        conn = self._conn
        assert conn is not None
        rows: list[tuple[int, str, bytes]] = conn.execute(
            "SELECT rv, type, object FROM events WHERE rv > ? AND rv <= ? AND resource = ? "
            "ORDER BY rv",
            (after, upto, resource),
        ).fetchall()
        return rows

    # -- cache and indexes ----------------------------------------------------------------

    def _remember(self, resource: str, obj: Obj, raw: bytes) -> None:
        meta = obj["metadata"]
        key = (resource, meta["namespace"], meta["name"])
        self._forget(key)
        self._cache[resource][(key[1], key[2])] = _Entry(obj, raw)
        self._by_uid[meta["uid"]] = key
        for ref in meta.get("ownerReferences") or []:
            self._dependents.setdefault(ref["uid"], set()).add(key)

    def _forget(self, key: Key) -> Obj | None:
        entry = self._cache[key[0]].pop((key[1], key[2]), None)
        if entry is None:
            return None
        meta = entry.obj["metadata"]
        self._by_uid.pop(meta["uid"], None)
        for ref in meta.get("ownerReferences") or []:
            deps = self._dependents.get(ref["uid"])
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self._dependents[ref["uid"]]
        return entry.obj

    # -- the writer ---------------------------------------------------------------------

    async def _submit(self, fn: _OpFn) -> Obj:
        if self._closing:
            raise TooManyRequests("the object store is shutting down")
        fut: asyncio.Future[Obj] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Op(fn, fut))
        return await fut

    async def _writer(self) -> None:
        while True:
            first = await self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch and not self._queue.empty():
                op = self._queue.get_nowait()
                if op is None:
                    self._queue.put_nowait(None)  # finish this batch, then stop
                    break
                batch.append(op)
            try:
                await self._commit_batch(batch)
            except Exception as exc:
                log.exception("object store commit failed")
                for op in batch:
                    if not op.future.done():
                        op.future.set_exception(
                            StoreError(f"the object store could not commit: {exc}")
                        )

    async def _commit_batch(self, batch: list[_Op]) -> None:
        view = _View(self, self._clock())
        base_rv = self._rv
        rv = base_rv
        changes: list[_Change] = []
        results: list[tuple[_Op, Obj | BaseException, int]] = []
        compact_to: int | None = None
        for op in batch:
            if op.compact_to is not None:
                compact_to = max(compact_to or 0, op.compact_to)
                results.append((op, {}, len(changes)))
                continue
            assert op.fn is not None
            try:
                outcome = op.fn(view)
            except StoreError as exc:
                results.append((op, exc, len(changes)))
                continue
            except Exception as exc:  # a bug in a rule must not stop the writer
                log.exception("object store write failed")
                results.append((op, StoreError(f"internal error: {exc}"), len(changes)))
                continue
            if isinstance(outcome, dict):
                results.append((op, outcome, len(changes)))
                continue
            for ch in outcome:
                rv += 1
                ch.obj["metadata"]["resourceVersion"] = str(rv)
                view.overlay[ch.key] = None if ch.type == "DELETED" else ch.obj
                changes.append(ch)
            results.append((op, outcome[-1].obj if outcome else {}, len(changes)))
        if compact_to is None and rv - self._compacted > 2 * self.retention:
            compact_to = rv - self.retention
        if compact_to is not None:
            compact_to = min(compact_to, rv)
            if compact_to <= self._compacted:
                compact_to = None
        raws = [_dumps(ch.obj) for ch in changes]
        if changes or compact_to is not None:
            events = [
                (
                    int(ch.obj["metadata"]["resourceVersion"]),
                    ch.type,
                    ch.key[0],
                    ch.key[1],
                    ch.key[2],
                    raw,
                )
                for ch, raw in zip(changes, raws, strict=True)
            ]
            final: dict[Key, bytes | None] = {}
            final_rv: dict[Key, int] = {}
            for ch, raw in zip(changes, raws, strict=True):
                final[ch.key] = None if ch.type == "DELETED" else raw
                final_rv[ch.key] = int(ch.obj["metadata"]["resourceVersion"])
            upserts = [(*k, final_rv[k], raw) for k, raw in final.items() if raw is not None]
            deletes = [k for k, raw in final.items() if raw is None]
            await self._run(self._db_commit, events, upserts, deletes, compact_to, rv)
        self._rv = rv
        if compact_to is not None:
            self._compacted = compact_to
            self.stats.compactions += 1
        self.stats.batches += 1
        self.stats.writes += len(changes)
        self.stats.max_batch = max(self.stats.max_batch, len(batch))
        self._publish(changes, raws)
        for op, result, _ in results:
            if op.future.done():
                continue
            if isinstance(result, BaseException):
                op.future.set_exception(result)
            else:
                op.future.set_result(result)

    def _publish(self, changes: list[_Change], raws: list[bytes]) -> None:
        for ch, raw in zip(changes, raws, strict=True):
            resource = ch.key[0]
            if ch.type == "DELETED":
                prev = self._forget(ch.key)
                self._gc_queue.put_nowait(ch.obj["metadata"]["uid"])
            else:
                entry = self._cache[resource].get((ch.key[1], ch.key[2]))
                prev = entry.obj if entry else None
                self._remember(resource, ch.obj, raw)
            event = WatchEvent(ch.type, ch.obj, int(ch.obj["metadata"]["resourceVersion"]))
            for w in list(self._watchers[resource]):
                w.offer(event, prev)

    # -- reads ---------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        """The resourceVersion of the last committed write."""
        return self._rv

    @property
    def compacted(self) -> int:
        """Events at or below this resourceVersion are gone (watching from there is 410)."""
        return self._compacted

    async def get(self, plural: str, namespace: str, name: str) -> Obj:
        """A copy of one object, or :class:`ObjectNotFound`."""
        return json.loads(self.get_raw(plural, namespace, name))  # type: ignore[no-any-return]

    def get_raw(self, plural: str, namespace: str, name: str) -> bytes:
        """The stored JSON of one object (what the HTTP API sends as is)."""
        kind = _kind(plural)
        entry = self._cache[plural].get((namespace, name))
        if entry is None:
            raise _not_found(kind, name)
        return entry.raw

    def list_raw(
        self,
        plural: str,
        namespace: str | None = None,
        labels: LabelSelector | str | None = None,
        fields: FieldSelector | str | None = None,
    ) -> tuple[list[bytes], list[Obj], int]:
        """Matching objects as (stored JSON, cached dicts: do not mutate) and the list's rv."""
        _kind(plural)
        lsel = labels if isinstance(labels, LabelSelector) else parse_labels(labels)
        fsel = fields if isinstance(fields, FieldSelector) else parse_fields(fields)
        entries = self._cache[plural]
        name = fsel.equal("metadata.name")
        ns = namespace if namespace is not None else fsel.equal("metadata.namespace")
        if name is not None and ns is not None:
            found = entries.get((ns, name))
            items = [((ns, name), found)] if found else []
        else:
            items = sorted(entries.items())
        raws: list[bytes] = []
        objs: list[Obj] = []
        for (obj_ns, _), entry in items:
            if namespace is not None and obj_ns != namespace:
                continue
            meta = entry.obj["metadata"]
            if not lsel.empty and not lsel.matches(meta.get("labels")):
                continue
            if fsel.terms and not fsel.matches(entry.obj):
                continue
            raws.append(entry.raw)
            objs.append(entry.obj)
        return raws, objs, self._rv

    async def list(
        self,
        plural: str,
        namespace: str | None = None,
        labels: LabelSelector | str | None = None,
        fields: FieldSelector | str | None = None,
    ) -> tuple[list[Obj], int]:
        """Copies of the matching objects and the resourceVersion of the list."""
        raws, _, rv = self.list_raw(plural, namespace, labels, fields)
        return [json.loads(r) for r in raws], rv

    # -- writes --------------------------------------------------------------------------

    async def create(
        self,
        plural: str,
        namespace: str,
        obj: Obj,
        *,
        field_validation: str = "Strict",
        keep_status: bool = False,
        warnings: _Warnings | None = None,
    ) -> Obj:
        """Create; 409 AlreadyExists if the name is taken. ``keep_status`` is for the daemon."""
        kind = _kind(plural)
        body, warns = validate(kind, obj, field_validation)
        if warnings is not None:
            warnings.extend(warns)

        def op(view: _View) -> list[_Change]:
            new = prepare_create(kind, body, namespace, view.now, keep_status=keep_status)
            check_object(kind, new)
            key = (plural, namespace, new["metadata"]["name"])
            if view.get(key) is not None:
                raise AlreadyExists(
                    f'{plural}.{GROUP} "{key[2]}" already exists',
                    details={"name": key[2], "group": GROUP, "kind": plural},
                )
            return [_Change("ADDED", key, new)]

        return await self._submit(op)

    def _update_op(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        make: Callable[[Obj], Obj],
        subresource: str | None,
    ) -> _OpFn:
        def op(view: _View) -> list[_Change] | Obj:
            key = (kind.plural, namespace, name)
            old = view.get(key)
            if old is None:
                raise _not_found(kind, name)
            new = prepare_update(kind, old, make(old), subresource=subresource)
            if same_but_rv(new, old):
                return old
            if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
                return [_Change("DELETED", key, new)]
            return [_Change("MODIFIED", key, new)]

        return op

    async def update(
        self,
        plural: str,
        namespace: str,
        obj: Obj,
        *,
        subresource: str | None = None,
        field_validation: str = "Strict",
        warnings: _Warnings | None = None,
    ) -> Obj:
        """Replace (PUT); 409 Conflict if ``metadata.resourceVersion`` is not the current one."""
        kind = _kind(plural)
        body, warns = validate(kind, obj, field_validation)
        if warnings is not None:
            warnings.extend(warns)
        name = (body.get("metadata") or {}).get("name")
        if not name:
            raise BadRequest("the object has no metadata.name")
        return await self._submit(
            self._update_op(kind, namespace, name, lambda _: body, subresource)
        )

    async def patch(
        self,
        plural: str,
        namespace: str,
        name: str,
        patch: Any,
        *,
        content_type: str = MERGE_PATCH,
        subresource: str | None = None,
        field_validation: str = "Strict",
        warnings: _Warnings | None = None,
    ) -> Obj:
        """Merge or JSON patch, decided against the newest version (no conflict unless the
        patch itself names a resourceVersion)."""
        kind = _kind(plural)

        def make(old: Obj) -> Obj:
            patched = apply_patch(content_type, old, patch)
            body, warns = validate(kind, patched, field_validation)
            if warnings is not None:
                warnings.extend(warns)
            return body

        return await self._submit(self._update_op(kind, namespace, name, make, subresource))

    async def delete(
        self,
        plural: str,
        namespace: str,
        name: str,
        *,
        rv: int | None = None,
        uid: str | None = None,
        propagation: str = "Background",
    ) -> Obj:
        """Delete (or mark, if finalizers remain); dependents are collected in the background.

        ``propagation`` Orphan drops the owner reference from dependents instead; Foreground is
        served as Background.
        """
        kind = _kind(plural)

        def op(view: _View) -> list[_Change] | Obj:
            key = (plural, namespace, name)
            old = view.get(key)
            if old is None:
                raise _not_found(kind, name)
            outcome = prepare_delete(kind, old, view.now, rv=rv, uid=uid)
            if not outcome.remove:
                return old if outcome.obj is old else [_Change("MODIFIED", key, outcome.obj)]
            gone = dict(old)
            gone["metadata"] = dict(old["metadata"])
            changes = [_Change("DELETED", key, gone)]
            if propagation == "Orphan":
                # In the same transaction, so the collector never sees them owner-less.
                changes.extend(self._orphans(view, old["metadata"]["uid"]))
            return changes

        return await self._submit(op)

    def _orphans(self, view: _View, owner_uid: str) -> _Changes:
        changes = []
        for key in sorted(self._dependents.get(owner_uid, set())):
            dep = view.get(key)
            if dep is None:
                continue
            refs = [
                r for r in dep["metadata"].get("ownerReferences") or [] if r["uid"] != owner_uid
            ]
            new = dict(dep)
            new["metadata"] = {k: v for k, v in dep["metadata"].items() if k != "ownerReferences"}
            if refs:
                new["metadata"]["ownerReferences"] = refs
            changes.append(_Change("MODIFIED", key, new))
        return changes

    async def compact(self, rv: int) -> None:
        """Drop the event log at and below ``rv``; watches from there get 410 Expired."""
        fut: asyncio.Future[Obj] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Op(None, fut, compact_to=rv))
        await fut

    # -- watch ---------------------------------------------------------------------------

    async def watch(
        self,
        plural: str,
        *,
        namespace: str | None = None,
        labels: LabelSelector | str | None = None,
        fields: FieldSelector | str | None = None,
        since: int | None = None,
    ) -> Watcher:
        """Start a watch: from ``since`` (replaying the log), or with the current objects as
        ADDED events when ``since`` is None or 0. Use as ``async with``/``async for``."""
        _kind(plural)
        lsel = labels if isinstance(labels, LabelSelector) else parse_labels(labels)
        fsel = fields if isinstance(fields, FieldSelector) else parse_fields(fields)
        if since and since < self._compacted:
            raise Expired(f"too old resource version: {since} ({self._compacted})")
        w = Watcher(plural, namespace, lsel, fsel, self.watch_queue)
        if self._closing:
            w.end()
            return w
        self._watchers[plural].add(w)
        w.on_close.append(lambda x: self._watchers[plural].discard(x))
        now = self._rv
        if not since:
            _, objs, _ = self.list_raw(plural, namespace, lsel, fsel)
            for obj in objs:
                w._backlog.append(WatchEvent("ADDED", obj, int(obj["metadata"]["resourceVersion"])))
        elif since < now:
            w._ready.clear()
            try:
                rows = await self._run(self._db_events, plural, since, now)
            except Exception as exc:
                w.end(StoreError(f"could not read the event log: {exc}"))
                rows = []
            if since < self._compacted:
                w.end(Expired(f"too old resource version: {since} ({self._compacted})"))
                rows = []
            for rv, etype, raw in rows:
                obj = json.loads(raw)
                if w.matches(obj):
                    w._backlog.append(WatchEvent(etype, obj, rv))
            w._ready.set()
        return w

    # -- garbage collection --------------------------------------------------------------

    async def _collector(self) -> None:
        while True:
            item = await self._gc_queue.get()
            try:
                if item is None:
                    await self._sweep()
                else:
                    await self._collect(item)
            except Exception:
                log.exception("garbage collection failed for %s", item)

    def _owners_gone(self, obj: Obj) -> bool:
        refs = obj["metadata"].get("ownerReferences") or []
        return bool(refs) and all(ref["uid"] not in self._by_uid for ref in refs)

    async def _collect(self, owner_uid: str) -> None:
        for key in sorted(self._dependents.get(owner_uid, set())):
            entry = self._cache[key[0]].get((key[1], key[2]))
            if entry is None or not self._owners_gone(entry.obj):
                continue
            if entry.obj["metadata"].get("deletionTimestamp"):
                continue
            with contextlib.suppress(ObjectNotFound):
                await self.delete(*key, uid=entry.obj["metadata"]["uid"])
                log.info("collected %s/%s/%s (owner %s deleted)", *key, owner_uid)

    async def _sweep(self) -> None:
        for owner in list(self._dependents):
            if owner not in self._by_uid:
                await self._collect(owner)


def _statements() -> Iterable[str]:
    return [s.strip() for s in _SCHEMA.split(";") if s.strip()]
