"""How many connections each local user may hold open: a pure count, no sockets.

The daemon's own uid (the human and the agents) has a budget of its own, so no other user,
however many connections it opens, can take a descriptor the owner needs; every other uid has a
small budget each and a shared one in all (docs/security.md "Limits").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

__all__ = ["ConnBudget", "ConnLimits"]

UNKNOWN_UID = -1  # a peer whose uid could not be read counts as another uid


@dataclass(frozen=True)
class ConnLimits:
    """The budgets, and how long a connection may idle or take to send a request."""

    owner_uid: int
    owner: int = 512
    per_uid: int = 16
    other_uids: int = 64
    idle_timeout: float = 60.0
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    other_max_body: int = 64 << 10  # a request body from another uid (refused anyway)


class ConnBudget:
    """Open connections per uid against :class:`ConnLimits`."""

    def __init__(self, limits: ConnLimits) -> None:
        self.limits = limits
        self._open: Counter[int] = Counter()
        self._others = 0

    def admit(self, uid: int | None) -> str | None:
        """Count a new connection of ``uid`` and return None, or say why it is refused."""
        key = UNKNOWN_UID if uid is None else uid
        lim = self.limits
        if key == lim.owner_uid:
            if self._open[key] >= lim.owner:
                return f"too many connections from uid {key} (limit {lim.owner})"
        else:
            if self._open[key] >= lim.per_uid:
                return f"too many connections from uid {key} (limit {lim.per_uid})"
            if self._others >= lim.other_uids:
                return f"too many connections from other uids (limit {lim.other_uids})"
            self._others += 1
        self._open[key] += 1
        return None

    def release(self, uid: int | None) -> None:
        """A connection admitted for ``uid`` closed."""
        key = UNKNOWN_UID if uid is None else uid
        self._open[key] -= 1
        if self._open[key] <= 0:
            del self._open[key]
        if key != self.limits.owner_uid:
            self._others -= 1

    def open(self, uid: int) -> int:
        """Connections of ``uid`` open now."""
        return self._open[uid]
