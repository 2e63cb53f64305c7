"""Where a file claim's holder works: its worktree and branch, by (key, token)
(docs/claims.md "The leases service").

The claim store's :class:`~agentcoord.stores.kv.Holder` has no place for them, so the leases
service keeps them beside it, in this daemon: a claim granted before a restart, or by another
host's daemon, shows none. One :class:`ClaimSites` belongs to one service, built with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentcoord.stores.kv import ClaimStore

__all__ = ["ClaimSites", "Site"]

_SITES_KEEP = 4096


@dataclass(frozen=True)
class Site:
    """Where a file claim's holder works: its worktree's top level and branch."""

    worktree: str | None
    branch: str | None


class ClaimSites:
    """Each live file claim's :class:`Site`, by (key, token), over the claims of ``claims``."""

    def __init__(self, claims: ClaimStore) -> None:
        self._claims = claims
        self._by: dict[tuple[str, int], Site] = {}
        self._keep = _SITES_KEEP

    def note(self, key: str, token: int | None, site: Site) -> None:
        """Remember the site of the grant ``token`` on ``key`` (no token: nothing to key by)."""
        if token is None:
            return
        self._by[(key, token)] = site
        if len(self._by) > self._keep:
            self._prune()

    def get(self, key: str, token: int | None) -> Site | None:
        """The site noted for the grant ``token`` on ``key``, if this daemon noted one."""
        return None if token is None else self._by.get((key, token))

    def _prune(self) -> None:
        """Forget released grants; once in a while (when the map doubles), not per claim."""
        live = {(k, h.token) for k, h in self._claims.check("")}
        self._by = {k: v for k, v in self._by.items() if k in live}
        self._keep = max(_SITES_KEEP, 2 * len(self._by))
