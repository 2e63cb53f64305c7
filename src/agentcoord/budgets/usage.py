"""The budgets service: what is used of each ceiling, read when asked, and the admission of
every start of an agent (docs/budgets.md).

Sessions and started agents are counted from the Agent objects in the store's memory; spend
is the sum of ``cost_usd`` over today's ``TURN_ENDED`` audit events (the operator writes each
turn's ``total_cost_usd`` there), kept for a few seconds so a burst of starts reads the
stream once.

A start is admitted with :meth:`Budgets.admit`, which hands back a :class:`Slot` the starter
holds until its runner ends: between the admission and the Agent object showing the start
(Pending, Running), the slot is what counts it, so two starts at once never both take the
last one. Past the started-agents ceiling a start that may wait joins a queue and is admitted
in order as slots free (a watch on the Agent objects says when); one that may not is refused,
naming the ceiling, its value and what holds it. Past the spend ceiling every start is refused:
spend only falls at midnight.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentcoord.budgets.ceilings import (
    Ceilings,
    Usage,
    count_usage,
    held_by,
    over_agents,
    over_sessions,
    over_spend,
)
from agentcoord.errors import NotAllowed, TimedOut
from agentcoord.kernel.tasks import TaskSet

if TYPE_CHECKING:
    from agentcoord.stores.audit import AuditLog
    from agentcoord.stores.objects.backend import ObjectBackend

__all__ = ["Budgets", "Slot", "midnight"]

log = logging.getLogger(__name__)

_WAIT_FIX = "wait for one to end (or cancel one), or raise max_agents"

_SPEND_CACHE_S = 5.0
_SPEND_EVENTS = 100_000  # today's turns read at most (a ceiling counts what it can see)


def midnight(now: float) -> float:
    """Local midnight of ``now``'s day (epoch seconds)."""
    local = time.localtime(now)
    return time.mktime((local.tm_year, local.tm_mon, local.tm_mday, 0, 0, 0, 0, 0, -1))


@dataclass
class Slot:
    """A start's place under the started-agents ceiling, held until its runner ends."""

    name: str
    position: int = 0  # where it waited in the queue; 0: admitted at once
    waited_s: float = 0.0
    _release: Callable[[], None] | None = field(default=None, repr=False)

    def release(self) -> None:
        """Give the slot back (once; later calls do nothing)."""
        release, self._release = self._release, None
        if release is not None:
            release()

    def report(self) -> dict[str, Any]:
        """What a result says of the wait, when there was one."""
        if not self.position:
            return {}
        return {"queued": {"position": self.position, "waited_ms": round(self.waited_s * 1000)}}


@dataclass
class _Waiter:
    name: str
    what: str
    admitted: asyncio.Future[None]


def _admitted(waiter: _Waiter) -> bool:
    fut = waiter.admitted
    return fut.done() and not fut.cancelled() and fut.exception() is None


class Budgets:
    """Ceilings over the store's agents and the audit's spend; the queue of waiting starts.

    An async context manager: while entered, a watch on the Agent objects admits queued
    starts as slots free (without it, a queued start is admitted only when a slot of this
    service is released)."""

    def __init__(
        self,
        ceilings: Ceilings,
        store: ObjectBackend,
        audit: AuditLog,
        namespace: str = "default",
        *,
        clock: Callable[[], float] = time.time,
        tell_human: Callable[[str, str], Awaitable[object]] | None = None,
    ) -> None:
        """``tell_human(session, text)``: how the human hears of a session past
        ``max_sessions`` (the daemon makes it a notice prompt, which the desktop notifier
        shows)."""
        self.ceilings = ceilings
        self._tell_human = tell_human
        self._told: set[str] = set()  # sessions already told they are past max_sessions
        self._store = store
        self._audit = audit
        self._ns = namespace
        self._clock = clock
        self._spend: tuple[float, float] | None = None  # (read at, dollars)
        self._reserved: Counter[str] = Counter()  # admitted starts, by agent name
        self._queue: list[_Waiter] = []
        self._tasks = TaskSet("budgets")

    async def __aenter__(self) -> Budgets:
        await self._tasks.__aenter__()
        if self.ceilings.agents:
            self._tasks.spawn(self._watch(), name="budgets-watch")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._tasks.__aexit__(None, None, None)
        for waiter in self._queue:
            if not waiter.admitted.done():
                waiter.admitted.set_exception(NotAllowed("the daemon is stopping"))
        self._queue.clear()

    async def usage(self) -> Usage:
        _, objs, _ = self._store.list_raw("agents", self._ns)
        return count_usage(objs, await self._spent())

    async def report(self) -> dict[str, Any]:
        """Each ceiling with what is used of it (``agentcoord top``, the console)."""
        return (await self.usage()).as_dict(self.ceilings)

    def session_started(self, name: str) -> str | None:
        """The session ``name`` starts (or first reaches the daemon): past ``max_sessions``,
        the line it is told, once; the audit (``SESSION_OVER_CEILING``) and the human hear
        of it too. None within the ceiling (docs/budgets.md "Sessions past the ceiling")."""
        if not self.ceilings.sessions or name in self._told:
            return None
        _, objs, _ = self._store.list_raw("agents", self._ns)
        usage = count_usage(objs, 0.0)
        text = over_sessions(self.ceilings, usage, name)
        if text is None:
            return None
        self._told.add(name)
        self._audit.emit(
            "SESSION_OVER_CEILING",
            name,
            sessions=usage.sessions,
            ceiling=f"max_sessions = {self.ceilings.sessions}",
        )
        log.warning("session %s started past max_sessions (%d live)", name, usage.sessions)
        if self._tell_human is not None and self._tasks.running:
            question = (
                f"Session {name} started past the session ceiling: {usage.sessions} live "
                f"sessions, max_sessions = {self.ceilings.sessions}. It runs anyway; close "
                "one, or raise max_sessions."
            )
            self._tasks.spawn(self._tell(name, question), name="budgets-tell-human")
        return text

    async def _tell(self, name: str, question: str) -> None:
        assert self._tell_human is not None
        try:
            await self._tell_human(name, question)
        except Exception:  # a notice is best effort: the audit event already says it
            log.warning("could not tell the human about session %s", name, exc_info=True)

    def holds_slot(self, name: str) -> bool:
        """Whether the agent ``name`` runs (or is being started) now: a start of another turn
        of it takes no new slot."""
        return name in self._holders()

    async def admit(
        self, name: str, what: str, *, wait: bool = False, timeout: float | None = None
    ) -> Slot:
        """Admit the start of agent ``name`` (``what`` names it for a person) under the
        ceilings, or refuse it (:class:`NotAllowed`). Past the started-agents ceiling, with
        ``wait`` the start queues and is admitted in order as slots free, or refused
        (:class:`TimedOut`) when ``timeout`` passes first. The slot is held until released."""
        if not self.ceilings.agents and not self.ceilings.spend_usd:
            return Slot(name)
        why = over_spend(self.ceilings, await self._spent())
        if why is not None:
            raise NotAllowed(f"not starting {what}: {why}")
        if not self.ceilings.agents:
            return Slot(name)
        holders = self._holders()
        if name in holders or (len(holders) < self.ceilings.agents and not self._queue):
            return self._reserve(name)
        why = over_agents(self.ceilings, len(holders), holders.items())
        if not wait:
            raise NotAllowed(f"not starting {what}: {why}; {_WAIT_FIX}")
        return await self._queued(name, what, timeout)

    async def _queued(self, name: str, what: str, timeout: float | None) -> Slot:
        waiter = _Waiter(name, what, asyncio.get_running_loop().create_future())
        self._queue.append(waiter)
        position = len(self._queue)
        holders = self._holders()
        self._audit.emit(
            "START_QUEUED",
            name,
            what=what,
            position=position,
            ceiling=f"max_agents = {self.ceilings.agents}",
            held_by=held_by(holders.items()),
        )
        log.info("queued the start of %s at position %d (max_agents)", what, position)
        began = self._clock()
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(waiter.admitted)
        except TimeoutError:
            if not _admitted(waiter):
                self._drop(waiter)
                holders = self._holders()
                why = over_agents(self.ceilings, len(holders), holders.items())
                raise TimedOut(
                    f"not starting {what}: still queued after {timeout:g} s, "
                    f"{len(self._queue)} start(s) waiting; "
                    f"{why or 'the ceiling was reached'}; {_WAIT_FIX}"
                ) from None
        except BaseException:  # cancelled (the caller went away), or the service closing
            if _admitted(waiter):
                self._unreserve(name)
            else:
                self._drop(waiter)
            raise
        waited = self._clock() - began
        self._audit.emit("START_DEQUEUED", name, what=what, position=position, waited_s=waited)
        return Slot(name, position, waited, lambda: self._unreserve(name))

    def _drop(self, waiter: _Waiter) -> None:
        if waiter in self._queue:
            self._queue.remove(waiter)
        if not waiter.admitted.done():
            waiter.admitted.cancel()
        self._pump()  # the next in line may fit now

    def _holders(self) -> dict[str, str]:
        """Who holds a slot now: started agents live in the store, then admitted starts the
        store does not show yet (name -> phase)."""
        _, objs, _ = self._store.list_raw("agents", self._ns)
        holders = dict(count_usage(objs, 0.0).holders)
        for name, count in self._reserved.items():
            if count > 0:
                holders.setdefault(name, "starting")
        return holders

    def _reserve(self, name: str) -> Slot:
        self._reserved[name] += 1
        return Slot(name, _release=lambda: self._unreserve(name))

    def _unreserve(self, name: str) -> None:
        self._reserved[name] -= 1
        if self._reserved[name] <= 0:
            del self._reserved[name]
        self._pump()

    def _pump(self) -> None:
        """Admit queued starts, in order, while there is room."""
        if not self._queue:
            return
        holders = self._holders()
        while self._queue:
            head = self._queue[0]
            if head.admitted.done():
                self._queue.pop(0)
                continue
            if head.name not in holders and len(holders) >= self.ceilings.agents:
                return
            self._queue.pop(0)
            self._reserved[head.name] += 1
            holders.setdefault(head.name, "starting")
            head.admitted.set_result(None)

    async def _watch(self) -> None:
        """Admit queued starts when an Agent object changes (one may have ended)."""
        from agentcoord.stores.objects import Expired, StoreError

        while True:
            try:
                watcher = await self._store.watch("agents", namespace=self._ns)
                async with watcher:
                    async for event in watcher:
                        if event.type != "BOOKMARK":
                            self._pump()
            except Expired:
                continue
            except StoreError:
                log.warning("budgets: the agent watch ended; watching again", exc_info=True)
                await asyncio.sleep(0.1)
            else:
                return

    async def _spent(self) -> float:
        if not self.ceilings.spend_usd:
            return 0.0
        now = self._clock()
        if self._spend is not None and now - self._spend[0] < _SPEND_CACHE_S:
            return self._spend[1]
        events = await self._audit.query(
            since=midnight(now), type_="TURN_ENDED", limit=_SPEND_EVENTS
        )
        total = 0.0
        for e in events:
            cost = e.data.get("cost_usd")
            if isinstance(cost, int | float) and cost > 0:
                total += float(cost)
        self._spend = (now, total)
        return total
