"""Background tasks owned by a task group: the one way a part of the daemon runs work in the
background (docs/architecture.md "Tasks").

A service enters a :class:`TaskSet` with its own lifetime (``async with`` in its
``__aenter__``, or on its exit stack) and starts each loop with :meth:`TaskSet.spawn`. Every
task belongs to the set's :class:`asyncio.TaskGroup`, so none outlives its service: leaving
the set cancels what still runs and waits for it. A task that fails is logged with its name at
once, and does not cancel its siblings or the daemon (a crashed watcher is a bug to report,
not a reason to stop serving); :attr:`TaskSet.failures` keeps the errors for tests.

A lint test (tests/architecture/test_tasks.py) finds any task created outside a task group.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["TaskSet"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class TaskSet:
    """A named :class:`asyncio.TaskGroup` for a service's background tasks."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.failures: list[BaseException] = []
        self._group: asyncio.TaskGroup | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def __aenter__(self) -> TaskSet:
        group = asyncio.TaskGroup()
        await group.__aenter__()
        self._group = group
        return self

    async def __aexit__(self, *exc: object) -> None:
        group, self._group = self._group, None
        if group is None:
            return
        for task in list(self._tasks):
            task.cancel(f"{self.owner} stopping")
        # Every child catches its own errors (_guarded), so the group never aborts or raises:
        # this only waits for the cancelled tasks to finish.
        await group.__aexit__(None, None, None)

    @property
    def running(self) -> bool:
        return self._group is not None

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T | None]:
        """Run ``coro`` in the background until it ends or the set closes."""
        if self._group is None:
            coro.close()
            raise RuntimeError(f"{self.owner}: spawn({name!r}) outside the task set's lifetime")
        task = self._group.create_task(self._guarded(coro, name), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def cancel(self, task: asyncio.Task[Any], why: str) -> None:
        task.cancel(why)

    def live(self) -> list[asyncio.Task[Any]]:
        """The tasks still running (what a service waits for before it reports stopped)."""
        return [t for t in self._tasks if not t.done()]

    async def _guarded(self, coro: Coroutine[Any, Any, T], name: str) -> T | None:
        try:
            return await coro
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.failures.append(exc)
            log.exception("%s: background task %s failed", self.owner, name)
            return None
