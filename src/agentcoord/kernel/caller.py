"""Who is calling: the identity the daemon derived from the transport.

A :class:`Caller` is never built from tool arguments; see docs/security.md "Who a caller is".
``anonymous`` is a same-uid process that maps to no agent and has not (yet) proved it is the
human: it may only log in (unix socket) and is refused everything else.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["ANONYMOUS", "Caller", "CallerKind", "Via", "decision_fields"]

CallerKind = Literal["session", "runner", "human", "anonymous"]
Via = Literal["unix", "http-token", "http-peer", "console", "internal"]

ANONYMOUS = "anonymous"

# How a human decision came, by transport (docs/security.md "Every human decision is audited"): the
# CLI speaks to the unix socket, MCP clients to /mcp with the token, the console to its own routes.
_HOW: dict[str, str] = {"unix": "cli", "http-token": "mcp", "console": "console"}


@dataclass(frozen=True)
class Caller:
    """The resolved identity of one connection."""

    kind: CallerKind
    agent: str  # Agent object name, ``human:<user>``, or ``anonymous``
    via: Via
    pid: int | None = None  # the peer process (the shim, or the HTTP client)
    uid: int | None = None
    session_id: str | None = None  # the CLI's session id, for kind == "session"
    session_pid: int | None = None  # the session's CLI process (``claude``) the peer descends from
    session_kind: str | None = None  # which agent CLI the session is (``claude``: identity/kinds)
    cwd: str | None = None
    depth: int = 0  # turn depth (docs/ask-and-operator.md): 0 for a person, runners carry theirs
    chain: tuple[str, ...] = ()  # agents whose turns led to a runner's (cycles)
    exe: str | None = None  # the peer's executable, for the audit of human decisions
    markers: tuple[str, ...] = ()  # agent environment markers of an anonymous peer

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if v is not None}
        if not self.markers:
            del out["markers"]
        return out


def decision_fields(caller: Caller) -> dict[str, Any]:
    """What the audit says about who sent a human decision: how it came, the process."""
    return {"how": _HOW.get(caller.via, caller.via), "pid": caller.pid, "exe": caller.exe}
