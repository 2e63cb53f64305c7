"""Watchers: a bounded queue per watcher, fed by the store after each commit.

A watcher that falls ``maxsize`` events behind is cut off (as in kine; docs/store.md "Semantics"):
its stream ends with :class:`Expired` and the client must list again. The store never blocks on a
watcher.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from agentcoord.stores.objects.selectors import FieldSelector, LabelSelector
from agentcoord.stores.objects.statuserrors import Expired, StoreError

__all__ = ["WatchEvent", "Watcher"]


@dataclass(frozen=True)
class WatchEvent:
    """ADDED, MODIFIED, DELETED (or BOOKMARK) with the object; ``rv`` is its resourceVersion."""

    type: str
    object: dict[str, Any]
    rv: int


class Watcher:
    """One watch: filter, bounded queue, and the reason it ended (if it did)."""

    def __init__(
        self,
        plural: str,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        maxsize: int,
    ) -> None:
        self.plural = plural
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self._queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue(maxsize)
        self._ended: StoreError | None = None
        # Initial ADDED events and replayed history come first, unbounded; live ones queue.
        # Initial objects wait as their stored JSON and are decoded as they are handed out.
        self._backlog: deque[WatchEvent | bytes] = deque()
        self._ready = asyncio.Event()
        self._ready.set()
        self.delivered_rv = 0  # the rv of the last event handed out (progress for bookmarks)
        self.on_close: list[Callable[[Watcher], None]] = []

    def matches(self, obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata", {})
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels")) and self.fields.matches(obj)

    def relevant(self, event: WatchEvent, prev: dict[str, Any] | None) -> WatchEvent | None:
        """``event`` as this watcher sees it (selector moves become ADDED/DELETED), or None."""
        now_in = self.matches(event.object)
        if event.type == "MODIFIED":
            was_in = self.matches(prev)
            if now_in and not was_in:
                return WatchEvent("ADDED", event.object, event.rv)
            if was_in and not now_in:
                return WatchEvent("DELETED", event.object, event.rv)
        return event if now_in else None

    def offer(self, event: WatchEvent, prev: dict[str, Any] | None) -> None:
        """Queue ``event`` if it concerns this watcher; turn selector moves into ADDED/DELETED."""
        if self._ended is not None:
            return
        seen = self.relevant(event, prev)
        if seen is not None:
            self.deliver(seen)

    def deliver(self, event: WatchEvent) -> None:
        """Queue an event already filtered by its source (a Kubernetes API server's watch)."""
        if self._ended is not None:
            return
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self.end(Expired("the watcher fell too far behind and was cut off; list again"))

    def preload(self, event: WatchEvent) -> None:
        """Add an initial or replayed event; these come before anything queued live."""
        self._backlog.append(event)

    def preload_added(self, raws: list[bytes]) -> None:
        """Add initial ADDED events for objects given as stored JSON (decoded when handed out,
        so a watch starting on 10k objects does not hold 10k dicts at once)."""
        self._backlog.extend(raws)

    def hold(self) -> None:
        """Deliver nothing until :meth:`release` (while history is read from the log)."""
        self._ready.clear()

    def release(self) -> None:
        self._ready.set()

    def end(self, reason: StoreError | None = None) -> None:
        """Stop the watch; ``reason`` is raised to the consumer once the queue is drained."""
        if self._ended is not None:
            return
        self._ended = reason or _Closed("the watch was closed")
        for cb in self.on_close:
            cb(self)
        # If the queue is full, the consumer sees _ended once it has drained it.
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(None)

    @property
    def ended(self) -> bool:
        return self._ended is not None

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    async def next(self, timeout: float | None = None) -> WatchEvent | None:
        """The next event; None on timeout; raises the end reason when the watch is over."""
        try:
            async with asyncio.timeout(timeout):
                await self._ready.wait()
                if self._backlog:
                    item: WatchEvent | None = _event(self._backlog.popleft())
                else:
                    if self._queue.empty() and self._ended is not None:
                        raise self._ended
                    item = await self._queue.get()
        except TimeoutError:
            return None
        if item is None:
            assert self._ended is not None
            raise self._ended
        self.delivered_rv = item.rv
        return item

    @property
    def idle(self) -> bool:
        """Nothing is waiting to be delivered (so a bookmark at the store's rv is honest)."""
        return self._ready.is_set() and not self._backlog and self._queue.empty()

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[WatchEvent]:
        while True:
            try:
                event = await self.next()
            except _Closed:
                return
            if event is not None:
                yield event

    async def __aenter__(self) -> Watcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.end()


def _event(item: WatchEvent | bytes) -> WatchEvent:
    if isinstance(item, WatchEvent):
        return item
    obj: dict[str, Any] = json.loads(item)
    return WatchEvent("ADDED", obj, int(obj["metadata"]["resourceVersion"]))


class _Closed(StoreError):
    """The watch was closed by its owner or by the store shutting down (a normal end)."""

    code, reason = 200, "Closed"
