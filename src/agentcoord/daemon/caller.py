"""Who is calling: the identity the daemon derived from the transport.

A :class:`Caller` is never built from tool arguments; see DESIGN.md "Identity and trust".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["Caller", "CallerKind", "Via"]

CallerKind = Literal["session", "runner", "human"]
Via = Literal["unix", "http-token", "http-peer", "internal"]


@dataclass(frozen=True)
class Caller:
    """The resolved identity of one connection."""

    kind: CallerKind
    agent: str  # Agent object name, or ``human:<user>``
    via: Via
    pid: int | None = None  # the peer process (the shim, or the HTTP client)
    uid: int | None = None
    session_id: str | None = None  # Claude Code session id, for kind == "session"
    session_pid: int | None = None  # the ``claude`` process the peer descends from
    cwd: str | None = None
    depth: int = 0  # turn depth (seed 004): 0 for a person, runner turns carry theirs
    chain: tuple[str, ...] = ()  # issue 7: agents whose turns led to a runner's (cycles)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}
