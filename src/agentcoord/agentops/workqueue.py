"""A deduplicating, rate-limited work queue of keys: client-go's workqueue semantics, which the
Agent controller follows (docs/ask-and-operator.md "The operator").

- :meth:`WorkQueue.add` queues a key once: a key added again while it waits is taken once.
- :meth:`WorkQueue.get` hands a key to one worker, which marks it :meth:`~WorkQueue.done`
  when finished. A key added while a worker holds it is not handed to another worker: it is
  queued again at ``done``, so one key is never processed twice at the same time, and a
  change seen during processing is never lost.
- :meth:`WorkQueue.add_rate_limited` queues a key after its exponential back-off
  (:func:`backoff`: doubling from ``base_delay``, capped at ``max_delay``); :meth:`forget`
  resets it after a success.
- :meth:`WorkQueue.shut_down` stops it: waiting workers get None, later adds are dropped.

Delays are loop timers (``call_later``), not tasks: the queue owns no task to leak.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["WorkQueue", "backoff"]

K = TypeVar("K", bound=Hashable)


def backoff(failures: int, base_delay: float, max_delay: float) -> float:
    """The delay before retry number ``failures + 1``: ``base_delay * 2**failures``, at most
    ``max_delay`` (client-go's ItemExponentialFailureRateLimiter)."""
    if failures < 0:
        raise ValueError("failures must be >= 0")
    return min(max_delay, base_delay * float(2 ** min(failures, 64)))


class WorkQueue(Generic[K]):
    """Keys waiting for a worker; see the module docstring."""

    def __init__(self, *, base_delay: float = 0.05, max_delay: float = 30.0) -> None:
        if base_delay <= 0 or max_delay < base_delay:
            raise ValueError("need 0 < base_delay <= max_delay")
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._queue: deque[K] = deque()  # in order, each key at most once
        self._dirty: set[K] = set()  # keys to process (queued, or queued again while held)
        self._processing: set[K] = set()  # keys a worker holds now
        self._failures: dict[K, int] = {}
        self._timers: dict[K, tuple[float, asyncio.TimerHandle]] = {}  # key -> (when, timer)
        self._ready = asyncio.Event()  # set while the queue holds a key (or on shut-down)
        self._shutting_down = False

    def __len__(self) -> int:
        """Keys waiting for a worker now (not the delayed ones)."""
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, key: K) -> None:
        """Queue ``key`` unless it already waits; held by a worker, it waits for ``done``."""
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return
        self._queue.append(key)
        self._ready.set()

    def add_after(self, key: K, delay: float) -> None:
        """Queue ``key`` in ``delay`` seconds; a key already due sooner keeps its time."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        current = self._timers.get(key)
        if current is not None:
            if current[0] <= when:
                return
            current[1].cancel()
        self._timers[key] = (when, loop.call_at(when, self._due, key))

    def _due(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def add_rate_limited(self, key: K) -> float:
        """Queue ``key`` after its back-off, one step longer than the last; the delay."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay = backoff(failures, self.base_delay, self.max_delay)
        self.add_after(key, delay)
        return delay

    def failures(self, key: K) -> int:
        """How many times ``key`` was queued with back-off since it was last forgotten."""
        return self._failures.get(key, 0)

    def forget(self, key: K) -> None:
        """``key`` succeeded: its next failure starts again from ``base_delay``."""
        self._failures.pop(key, None)

    async def get(self) -> K | None:
        """The next key, held by the caller until :meth:`done`; None once shut down."""
        while not self._queue:
            if self._shutting_down:
                return None
            self._ready.clear()
            await self._ready.wait()
        if self._shutting_down:
            return None
        key = self._queue.popleft()
        self._dirty.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: K) -> None:
        """The worker is finished with ``key``; added meanwhile, it is queued again now."""
        self._processing.discard(key)
        if key in self._dirty and not self._shutting_down:
            self._queue.append(key)
            self._ready.set()

    def shut_down(self) -> None:
        """Stop: waiting workers get None, delayed keys are dropped, adds are ignored."""
        self._shutting_down = True
        for _, timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._ready.set()
