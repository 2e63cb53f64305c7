"""Session agents end with their ``claude`` process, and go after a retention.

docs/localagents.md "Session lifetime": a session's Agent follows its Claude session; when its
process exits the Agent ends (phase ``Ended``, ``status.endedAt``, ``status.reason``), and ended
sessions are kept for a retention period (``session_retention``, default 24 h), then removed
with their inbox and focus. :class:`SessionWatch` does that, event driven:

- it lists this daemon's session agents at start: one whose process is gone (by
  ``(pid, create_time)``: a reused pid with another start time is gone) ends with reason
  ``gone at daemon start``;
- it watches the Agent objects; for each Running session it waits on the process's pidfd
  (:func:`agentcoord.kernel.pidfd.wait_pid`, no polling) and ends the Agent with ``process exited``;
- one timer, for the next retention deadline, removes ended agents (the Agent through the
  directory, then the inbox and focus through ``forget``).

The directory (:class:`~agentcoord.stores.objects.agentdirectory.StoreDirectory`) decides what an
end means (kept as Ended, or removed when the session never took part) and brings a resumed
session back; this module only waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from agentcoord.kernel.directory import SessionKey
from agentcoord.kernel.pidfd import wait_pid
from agentcoord.kernel.tasks import TaskSet
from agentcoord.stores.objects.agentdirectory import ENDED, PROC_LABEL, StoreDirectory, parse_proc
from agentcoord.stores.objects.backend import ObjectBackend
from agentcoord.stores.objects.statuserrors import Expired, StoreError

__all__ = ["DEFAULT_RETENTION_S", "SessionWatch", "same_process"]

log = logging.getLogger(__name__)

DEFAULT_RETENTION_S = 24 * 3600
_RETRY_REMOVE_S = 60.0  # a removal that failed (the store busy or down) is tried again
_REWATCH_DELAY_S = 0.1  # after a watch broke for another reason than Expired

Forget = Callable[[str], Awaitable[None]]


def same_process(key: SessionKey) -> bool:
    """Whether ``(pid, create_time)`` names a live process: the pid exists, is no zombie,
    and started at that time (a pid the kernel gave to another process is not it)."""
    import psutil

    pid, create_time = key
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False  # exited, waiting to be reaped
        started = proc.create_time()
    except (psutil.Error, OSError):
        return False
    # The key holds the start time in whole milliseconds (the session-proc label).
    return abs(round(started * 1000) - round(create_time * 1000)) <= 1


def _ended_at(obj: dict[str, Any]) -> float:
    text = str((obj.get("status") or {}).get("endedAt") or "")
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return time.time()  # an Ended agent without a readable time: its retention starts now


class SessionWatch:
    """Async context manager ending this daemon's session agents; see the module doc.

    ``forget`` callables drop what else is keyed by an agent's name (its inbox, its focus)
    once the Agent itself is removed.
    """

    def __init__(
        self,
        store: ObjectBackend,
        directory: StoreDirectory,
        namespace: str = "default",
        *,
        retention: float = DEFAULT_RETENTION_S,
        forget: Sequence[Forget] = (),
    ) -> None:
        self._store = store
        self._directory = directory
        self._ns = namespace
        self._retention = retention
        self._forget = tuple(forget)
        self._waiters: dict[str, tuple[SessionKey, asyncio.Task[None]]] = {}
        self._deadlines: dict[str, float] = {}  # ended agent -> when it is removed (wall clock)
        self._cwds: dict[str, str] = {}  # live session agent -> its cwd (spec.cwd)
        self._changed = asyncio.Event()
        # Called when the live sessions or their cwds change (the conflict watch follows them).
        self.on_live_change: list[Callable[[], None]] = []
        # The watch, the retention timer and one waiter per live session.
        self._tasks = TaskSet("session watch")

    async def __aenter__(self) -> SessionWatch:
        objs, rv = await self._store.list("agents", self._ns, self._directory.selector)
        await self._tasks.__aenter__()
        self._tasks.spawn(self._watch(objs, rv), name="session-watch")
        self._tasks.spawn(self._sweep(), name="session-retention")
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            # Cancels every task and waits; one that failed was logged when it did
            # (docs/architecture.md "Stopping").
            await self._tasks.__aexit__(None, None, None)
        finally:
            self._waiters.clear()

    # -- the watch ---------------------------------------------------------------------------

    async def _watch(self, objs: list[dict[str, Any]], rv: int) -> None:
        for obj in objs:
            key = parse_proc((obj["metadata"].get("labels") or {}).get(PROC_LABEL))
            phase = (obj.get("status") or {}).get("phase")
            if phase == "Running" and key is not None and not same_process(key):
                # A restart: the session's process went while no daemon was watching it.
                await self._end(obj["metadata"]["name"], key, "gone at daemon start")
            else:
                self._on_event_logged("ADDED", obj)
        since: int | None = rv
        while True:
            try:
                watcher = await self._store.watch(
                    "agents", namespace=self._ns, labels=self._directory.selector, since=since
                )
                async with watcher:
                    async for event in watcher:
                        since = event.rv or since
                        if event.type != "BOOKMARK":
                            self._on_event_logged(event.type, event.object)
            except Expired:
                since = None  # cut off: list again (ADDED for what exists)
            except StoreError:
                log.warning("session agent watch ended; watching again", exc_info=True)
                await asyncio.sleep(_REWATCH_DELAY_S)  # a back-off, not a poll

    def _on_event_logged(self, etype: str, obj: dict[str, Any]) -> None:
        try:
            self._on_event(etype, obj)
        except Exception:  # an odd object (kubectl can write anything) must not stop the watch
            log.exception("session watch: cannot follow %s", obj.get("metadata"))

    def _on_event(self, etype: str, obj: dict[str, Any]) -> None:
        name = str(obj["metadata"]["name"])
        phase = (obj.get("status") or {}).get("phase")
        key = parse_proc((obj["metadata"].get("labels") or {}).get(PROC_LABEL))
        if etype == "DELETED" or (obj.get("spec") or {}).get("agentType") != "session":
            self._stop_waiting(name)
            self._set_deadline(name, None)
            return
        if phase == "Running" and key is not None:
            self._set_deadline(name, None)
            cwd = (obj.get("spec") or {}).get("cwd")
            if isinstance(cwd, str) and cwd and self._cwds.get(name) != cwd:
                self._cwds[name] = cwd
                self._live_changed()
            current = self._waiters.get(name)
            if current is not None and current[0] == key:
                return
            self._stop_waiting(name)
            task = self._tasks.spawn(self._wait(name, key), name=f"session-exit-{name}")
            self._waiters[name] = (key, task)
            return
        self._stop_waiting(name)
        self._set_deadline(name, _ended_at(obj) + self._retention if phase == ENDED else None)

    def live_cwds(self) -> dict[str, str]:
        """The live session agents on this host and their cwds: the working-tree guard's
        "who works in this worktree" (docs/claims.md "Working-tree guard")."""
        return {name: cwd for name, cwd in self._cwds.items() if name in self._waiters}

    def _live_changed(self) -> None:
        for call in self.on_live_change:
            try:
                call()
            except Exception:  # a listener's bug must not stop the watch
                log.exception("session watch: a live-session listener failed")

    def _stop_waiting(self, name: str) -> None:
        if self._cwds.pop(name, None) is not None:
            self._live_changed()
        current = self._waiters.pop(name, None)
        if current is not None:  # still waiting: a waiter that is ending is no longer listed
            current[1].cancel("the session agent changed")

    async def _wait(self, name: str, key: SessionKey) -> None:
        # Checked before the pidfd is opened: a pid reused by another process is not waited
        # on (the window between the check and the open is far shorter than a pid wrap).
        if same_process(key):
            await wait_pid(key[0], None)
        current = self._waiters.get(name)
        if current is not None and current[1] is asyncio.current_task():
            del self._waiters[name]  # from here on a change of the Agent does not cancel us
            if self._cwds.pop(name, None) is not None:
                self._live_changed()
        await self._end(name, key, "process exited")

    async def _end(self, name: str, key: SessionKey, reason: str) -> None:
        try:
            outcome = await self._directory.end_session(name, reason, key)
        except Exception:  # logged; the watch goes on (a later event may end it)
            log.warning("could not end session agent %s", name, exc_info=True)
            return
        if outcome is not None:
            log.info("session agent %s %s: %s", name, outcome, reason)
        if outcome == "removed":
            await self.drop(name)

    # -- retention ---------------------------------------------------------------------------

    def _set_deadline(self, name: str, when: float | None) -> None:
        if when is None:
            if self._deadlines.pop(name, None) is not None:
                self._changed.set()
            return
        if self._deadlines.get(name) != when:
            self._deadlines[name] = when
            self._changed.set()

    async def _sweep(self) -> None:
        """One timer, for the next deadline; re-armed whenever the deadlines change."""
        while True:
            now = time.time()
            for name in [n for n, when in self._deadlines.items() if when <= now]:
                del self._deadlines[name]
                try:
                    removed = await self._directory.remove_ended(name)
                except Exception:  # logged; asked again later, and the sweep goes on
                    log.warning("could not remove ended session agent %s", name, exc_info=True)
                    self._deadlines[name] = now + _RETRY_REMOVE_S
                    continue
                if removed:
                    log.info("removed ended session agent %s (retention over)", name)
                    await self.drop(name)
            self._changed.clear()
            upcoming = min(self._deadlines.values(), default=None)
            delay = None if upcoming is None else max(0.0, upcoming - time.time())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._changed.wait()

    async def drop(self, name: str) -> None:
        """Forget what else is kept under a removed agent's name (its inbox, its focus)."""
        for forget in self._forget:
            try:
                await forget(name)
            except Exception:  # one store failing must not keep the other's data
                log.warning("could not drop data of removed agent %s", name, exc_info=True)
