"""Leases: claims on files and other keys, and who may write a file (docs/claims.md "The leases
service").

:mod:`.leasing` (:class:`Leases`, the one service, over the claim and focus stores),
:mod:`.filekeys` (a file's canonical key: its repository and path; :class:`FileKeys` keeps git's
answers), :mod:`.holders` (canonical keys, the holder's site and process), :mod:`.sites` (each
file claim's holder worktree and branch), :mod:`.guard` (the write guard's decision),
:mod:`.editleases` (automatic edit leases), :mod:`.commit` (the commit check's decision),
:mod:`.rows` (a claim as data) and :mod:`.refusal` (what is said when a file is someone else's).

Importing this package is light (the CLI's key rendering reads :mod:`.filekeys`): the service
and the modules that need the stores load when first named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentcoord.leases.editleases import AUTO_LEASE_PURPOSE, EditLeases
from agentcoord.leases.filekeys import FILE_PREFIX, FileKey, FileKeys
from agentcoord.leases.sites import ClaimSites, Site

if TYPE_CHECKING:
    from agentcoord.leases.leasing import Leases

__all__ = [
    "AUTO_LEASE_PURPOSE",
    "FILE_PREFIX",
    "ClaimSites",
    "EditLeases",
    "FileKey",
    "FileKeys",
    "Leases",
    "Site",
]


def __getattr__(name: str) -> Any:
    """:class:`Leases` on first use (it imports the NATS-backed stores)."""
    if name == "Leases":
        from agentcoord.leases.leasing import Leases

        return Leases
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
