"""The budgets service: what is used of each ceiling, read when asked, and the check before
the daemon starts an agent (docs/budgets.md).

Sessions and started agents are counted from the Agent objects in the store's memory; spend
is the sum of ``cost_usd`` over today's ``TURN_ENDED`` audit events (the operator writes each
turn's ``total_cost_usd`` there), kept for a few seconds so a burst of starts reads the
stream once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentcoord.budgets.ceilings import Ceilings, Usage, count_usage, over_ceiling
from agentcoord.errors import NotAllowed

if TYPE_CHECKING:
    from agentcoord.stores.audit import AuditLog
    from agentcoord.stores.objects.backend import ObjectBackend

__all__ = ["Budgets", "midnight"]

_SPEND_CACHE_S = 5.0
_SPEND_EVENTS = 100_000  # today's turns read at most (a ceiling counts what it can see)


def midnight(now: float) -> float:
    """Local midnight of ``now``'s day (epoch seconds)."""
    local = time.localtime(now)
    return time.mktime((local.tm_year, local.tm_mon, local.tm_mday, 0, 0, 0, 0, 0, -1))


class Budgets:
    """Ceilings over the store's agents and the audit's spend."""

    def __init__(
        self,
        ceilings: Ceilings,
        store: ObjectBackend,
        audit: AuditLog,
        namespace: str = "default",
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.ceilings = ceilings
        self._store = store
        self._audit = audit
        self._ns = namespace
        self._clock = clock
        self._spend: tuple[float, float] | None = None  # (read at, dollars)

    async def usage(self) -> Usage:
        _, objs, _ = self._store.list_raw("agents", self._ns)
        return count_usage(objs, await self._spent())

    async def report(self) -> dict[str, Any]:
        """Each ceiling with what is used of it (``agentcoord top``, the console)."""
        return (await self.usage()).as_dict(self.ceilings)

    async def check_start(self, what: str) -> None:
        """Refuse (:class:`NotAllowed`) starting ``what`` past a ceiling."""
        if not self.ceilings.agents and not self.ceilings.spend_usd:
            return
        why = over_ceiling(self.ceilings, await self.usage())
        if why is not None:
            raise NotAllowed(f"not starting {what}: {why}")

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
