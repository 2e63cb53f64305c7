"""Automatic edit leases: the write guard's own claim on a file an agent edits
(docs/claims.md "Claiming files").

The first edit of a file takes a ``write`` lease for the quiet period; later edits renew it,
at most once per :data:`RENEW_AFTER_S` (a burst of edits costs one write); an explicit claim of
the writer's own is left as it is. Pure: values in, values out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from agentcoord.kernel.config import Config
    from agentcoord.stores.kv import Holder

__all__ = ["AUTO_LEASE_PURPOSE", "RENEW_AFTER_S", "EditLeases", "LeaseStep", "lease_step"]

AUTO_LEASE_PURPOSE = "automatic edit lease"
# An edit renews its lease only when the last renewal is at least this old (a burst of edits
# costs one write), and never later than a tenth of the quiet period.
RENEW_AFTER_S = 1.0

LeaseStep = Literal["keep", "renew", "claim"]


@dataclass(frozen=True)
class EditLeases:
    """Automatic edit leases (docs/claims.md "Claiming files"): on, and the quiet period in
    seconds after which an unrenewed lease lapses (its TTL)."""

    enabled: bool = True
    quiet: float = 600.0

    @classmethod
    def from_config(cls, cfg: Config) -> EditLeases:
        """The edit-lease settings of ``cfg``."""
        return cls(cfg.auto_edit_leases, float(cfg.edit_lease_quiet))


def lease_step(mine: Holder | None, now: float, quiet: float) -> LeaseStep:
    """What an edit does to the writer's own claim ``mine`` on the file: ``keep`` it (an
    explicit claim, which granting would replace, or a lease renewed a moment ago), ``renew``
    the lease, or ``claim`` a new one (none held, or one without a token to renew by)."""
    if mine is None:
        return "claim"
    if mine.purpose != AUTO_LEASE_PURPOSE:
        return "keep"
    renewed_at = mine.expires - mine.ttl
    if now - renewed_at < min(RENEW_AFTER_S, quiet / 10):
        return "keep"
    return "renew" if mine.token is not None else "claim"
