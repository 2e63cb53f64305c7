"""The object store: SQLite for durability, memory for reads, one writer with group commit.

Writes queue to one writer task. It takes every queued write (up to ``max_batch``), decides
each against the current state plus the batch's earlier writes (:mod:`writerules`), and commits the
whole batch in one ``BEGIN IMMEDIATE`` transaction on a dedicated SQLite thread: one thread hop
per batch, not four awaits per write (docs/store.md "Storage": aiosqlite caps near 2.2k tx/s that
way; bench/store.py measures both). Only after the commit does the batch reach the in-memory cache
and the watchers, so nobody sees a write that could still be lost.

The file itself is :mod:`._sqlite`; the cache and its indexes :mod:`._cache`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from agentcoord.kernel.jsoncodec import valid_text
from agentcoord.kernel.tasks import TaskSet
from agentcoord.stores.objects._cache import Cache
from agentcoord.stores.objects._sqlite import SqliteFile
from agentcoord.stores.objects._writeops import (
    Change,
    OpFn,
    View,
    create_op,
    delete_op,
    not_found,
    update_op,
)
from agentcoord.stores.objects.kinds import KINDS, Kind
from agentcoord.stores.objects.patch import MERGE_PATCH, apply_patch
from agentcoord.stores.objects.schema import validate
from agentcoord.stores.objects.selectors import (
    FieldSelector,
    LabelSelector,
    parse_fields,
    parse_labels,
)
from agentcoord.stores.objects.statuserrors import (
    BadRequest,
    Expired,
    ObjectNotFound,
    RequestEntityTooLarge,
    StoreError,
    TooManyRequests,
)
from agentcoord.stores.objects.watch import Watcher, WatchEvent
from agentcoord.stores.objects.writerules import (
    Key,
)

__all__ = ["ObjectStore"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
T = TypeVar("T")
_Warnings = list[str]  # out-parameter: warnings for the client (fieldValidation=Warn)


def _dumps(obj: Obj) -> bytes:
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        # A lone surrogate got past the boundaries (docs/security.md "Input at the boundary"):
        # stored as U+FFFD, so it cannot fail the other writes of its group commit.
        log.warning("object store: a lone surrogate in %s stored as U+FFFD", _name_of(obj))
        return valid_text(text).encode()


def _name_of(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return valid_text(f"{obj.get('kind', '?')} {meta.get('name', '?')}")


def _kind(plural: str) -> Kind:
    kind = KINDS.get(plural)
    if kind is None:
        raise ObjectNotFound(f"the server could not find the requested resource ({plural})")
    return kind


@dataclass
class _Op:
    fn: OpFn | None
    future: asyncio.Future[Obj]
    compact_to: int | None = None


@dataclass
class _Stats:
    """Counters for the bench and for status pages."""

    batches: int = 0
    writes: int = 0
    compactions: int = 0
    max_batch: int = 0


class ObjectStore:
    """An async context manager holding the store open; see the module docstring."""

    def __init__(
        self,
        path: Path,
        *,
        retention: int = 10_000,  # events kept for watches; compacted when twice this
        watch_queue: int = 1_000,
        max_batch: int = 512,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.retention = retention
        self.watch_queue = watch_queue
        self.max_batch = max_batch
        self._clock = clock
        self._cache = Cache()
        self._watchers: dict[str, set[Watcher]] = {p: set() for p in KINDS}
        self._rv = 0
        self._compacted = 0
        self._queue: asyncio.Queue[_Op | None] = asyncio.Queue()
        self._gc_queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._db = SqliteFile(self.path)
        self._tasks = TaskSet("object store")
        self._writer_task: asyncio.Task[None] | None = None
        self._closing = False
        self.stats = _Stats()

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> ObjectStore:
        # Every kind's schema is derived from its typed declaration (docs/store.md "Declaring a
        # kind"), about half a millisecond each: done here, at open, rather than inside the first
        # write of each kind, which would otherwise reach its watchers that much later.
        for kind in KINDS.values():
            kind.schema()
        rows, rv, compacted = await self._db.open()
        for resource, raw in rows:
            if resource not in KINDS:
                log.warning("ignoring stored objects of unknown resource %s", resource)
                continue
            self._cache.remember(resource, json.loads(raw), raw)
        self._rv, self._compacted = rv, compacted
        await self._tasks.__aenter__()
        self._writer_task = self._tasks.spawn(self._writer(), name="objects-writer")
        self._tasks.spawn(self._collector(), name="objects-gc")
        self._gc_queue.put_nowait(None)  # sweep dependents orphaned by a crash
        if self._rv - self._compacted > 2 * self.retention:
            # A log kept under a larger retention (or before there was one) is cut to this
            # one's now, not at the next write (docs/reliability.md "State retention").
            try:
                await self.compact(self._rv - self.retention)
            except BaseException:  # cancelled by start-up's bound, or failed: close again
                await self.__aexit__(None, None, None)
                raise
        log.info("object store %s open at rv %d (%d objects)", self.path, rv, len(self._cache))
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closing = True
        self._queue.put_nowait(None)
        writer, self._writer_task = self._writer_task, None
        try:
            if writer is not None:
                # The writer drains what is queued, then stops at the None.
                await asyncio.wait([writer])
        finally:
            # Cancels the collector (and the writer, if this close was cancelled) and waits.
            await self._tasks.__aexit__(None, None, None)
            for watchers in self._watchers.values():
                for w in list(watchers):
                    w.end()
            await self._db.close()

    # -- the writer ---------------------------------------------------------------------

    async def _submit(self, fn: OpFn) -> Obj:
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
        view = View(self._cache, self._clock())
        base_rv = self._rv
        rv = base_rv
        changes: list[Change] = []
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
            await self._db.commit(events, upserts, deletes, compact_to, rv)
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

    def _publish(self, changes: list[Change], raws: list[bytes]) -> None:
        for ch, raw in zip(changes, raws, strict=True):
            resource = ch.key[0]
            if ch.type == "DELETED":
                prev = self._cache.forget(ch.key)
                self._gc_queue.put_nowait(ch.obj["metadata"]["uid"])
            else:
                prev = self._cache.remember(resource, ch.obj, raw)
            watchers = self._watchers[resource]
            if not watchers:
                continue
            event = WatchEvent(ch.type, ch.obj, int(ch.obj["metadata"]["resourceVersion"]))
            # Only a MODIFIED event needs the version before it (a selector move).
            before = prev.obj if prev is not None and ch.type == "MODIFIED" else None
            for w in list(watchers):
                w.offer(event, before)

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
        entry = self._cache.get((plural, namespace, name))
        if entry is None:
            raise not_found(kind, name)
        return entry.raw

    def list_raw(
        self,
        plural: str,
        namespace: str | None = None,
        labels: LabelSelector | str | None = None,
        fields: FieldSelector | str | None = None,
    ) -> tuple[list[bytes], Sequence[Obj], int]:
        """Matching objects as (stored JSON, dicts decoded from it on access) and the list's
        rv."""
        _kind(plural)
        lsel = labels if isinstance(labels, LabelSelector) else parse_labels(labels)
        fsel = fields if isinstance(fields, FieldSelector) else parse_fields(fields)
        raws, objs = self._cache.select(plural, namespace, lsel, fsel)
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

        return await self._submit(create_op(kind, namespace, body, keep_status=keep_status))

    async def update(
        self,
        plural: str,
        namespace: str,
        obj: Obj,
        *,
        subresource: str | None = None,
        field_validation: str = "Strict",
        keep_status: bool = False,
        warnings: _Warnings | None = None,
    ) -> Obj:
        """Replace (PUT); 409 Conflict if ``metadata.resourceVersion`` is not the current one.
        ``keep_status`` is for the daemon: the body's status is written in the same version."""
        kind = _kind(plural)
        body, warns = validate(kind, obj, field_validation)
        if warnings is not None:
            warnings.extend(warns)
        name = (body.get("metadata") or {}).get("name")
        if not name:
            raise BadRequest("the object has no metadata.name")
        op = update_op(kind, namespace, name, lambda _: body, subresource, keep_status=keep_status)
        return await self._submit(op)

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
        max_bytes: int | None = None,
    ) -> Obj:
        """Merge or JSON patch, decided against the newest version (no conflict unless the
        patch itself names a resourceVersion). ``max_bytes`` bounds the object the patch makes:
        small patches must not grow an object past the limit a whole body is held to
        (docs/security.md "Limits")."""
        kind = _kind(plural)

        def make(old: Obj) -> Obj:
            patched = apply_patch(content_type, old, patch)
            body, warns = validate(kind, patched, field_validation)
            if max_bytes is not None and len(made := _dumps(body)) > max_bytes:
                raise RequestEntityTooLarge(
                    f"Request entity too large: limit is {max_bytes} bytes (the patched object "
                    f"has {len(made)})"
                )
            if warnings is not None:
                warnings.extend(warns)
            return body

        return await self._submit(update_op(kind, namespace, name, make, subresource))

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

        op = delete_op(kind, namespace, name, rv=rv, uid=uid, propagation=propagation)
        return await self._submit(op)

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
            raws, _, _ = self.list_raw(plural, namespace, lsel, fsel)
            w.preload_added(raws)
        elif since < now:
            w.hold()
            prior: dict[tuple[str, str], Obj | None] = {}
            try:
                rows = await self._db.events(plural, since, now)
                if not lsel.empty and rows:
                    # A relabel in the replay must enter/leave the selection as ADDED/DELETED,
                    # as it does live: that needs each object's version at ``since``.
                    keys = {
                        (o["metadata"]["namespace"], o["metadata"]["name"])
                        for o in map(json.loads, (raw for _, _, raw in rows))
                    }
                    prior = await self._db.versions_at(plural, keys, since)
            except Exception as exc:
                w.end(StoreError(f"could not read the event log: {exc}"))
                rows = []
            if since < self._compacted:
                w.end(Expired(f"too old resource version: {since} ({self._compacted})"))
                rows = []
            for rv, etype, raw in rows:
                obj = json.loads(raw)
                key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
                if key in prior:
                    event = w.relevant(WatchEvent(etype, obj, rv), prior[key])
                    prior[key] = None if etype == "DELETED" else obj
                else:  # no earlier version in the log: pass it on if it matches now
                    event = WatchEvent(etype, obj, rv) if w.matches(obj) else None
                if event is not None:
                    w.preload(event)
            w.release()
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

    def _owners_gone(self, owners: tuple[str, ...]) -> bool:
        return bool(owners) and all(uid not in self._cache.by_uid for uid in owners)

    async def _collect(self, owner_uid: str) -> None:
        for key in sorted(self._cache.dependents.get(owner_uid, set())):
            entry = self._cache.get(key)
            if entry is None or not self._owners_gone(entry.owners):
                continue
            if entry.obj["metadata"].get("deletionTimestamp"):
                continue
            with contextlib.suppress(ObjectNotFound):
                await self.delete(*key, uid=entry.uid)
                log.info("collected %s/%s/%s (owner %s deleted)", *key, owner_uid)

    async def _sweep(self) -> None:
        for owner in list(self._cache.dependents):
            if owner not in self._cache.by_uid:
                await self._collect(owner)
