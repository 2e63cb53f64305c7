"""Pure claim rules: modes, who may share a key, what a grant or release does, and when an
automatic release is due (docs/claims.md "Rules").

Everything here takes values and returns values; :mod:`.claimstore` does the NATS I/O.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from agentcoord.errors import InvalidArguments, NotAllowed, StateConflict
from agentcoord.kernel.jsoncodec import dumps

__all__ = [
    "MODES",
    "ClaimPolicy",
    "ClaimRecord",
    "Contention",
    "Holder",
    "Mode",
    "NotHolder",
    "ReleaseReason",
    "StaleToken",
    "beat",
    "compatible",
    "drop",
    "due_reason",
    "grant",
    "parse_mode",
    "release",
    "renew",
    "wire_ttl",
]

Mode = Literal["write", "read", "intent"]
MODES: tuple[Mode, ...] = ("write", "read", "intent")
ReleaseReason = Literal["released", "expired", "holder-exited", "heartbeat-lost", "max-age"]


class NotHolder(NotAllowed):
    """Releasing or renewing a claim that someone else holds (docs/claims.md "Tools")."""


class StaleToken(StateConflict):
    """The fencing token is not the one of the caller's current grant."""


@dataclass(frozen=True)
class ClaimPolicy:
    """Limits of the claim plane: heartbeat every 30 s, silence for 2 min releases
    (docs/claims.md "Rules")."""

    default_ttl: float = 300.0  # short-lived, 5 minutes, renewable (docs/claims.md "Rules")
    max_ttl: float = 2 * 3600.0  # one grant or renewal may not ask for more
    max_age: float = 8 * 3600.0  # hard limit on a claim's life, renewals included
    heartbeat_grace: float = 120.0


def parse_mode(text: str) -> Mode:
    """``write``, ``read`` or ``intent``; anything else (a typo) is an error, not ``read``."""
    value = text.strip().lower()
    for mode in MODES:
        if value == mode:
            return mode
    raise InvalidArguments(f"`mode` must be one of: write, read, intent (got {text!r})")


def compatible(held: Mode, wanted: Mode) -> bool:
    """Whether a ``wanted`` claim may coexist with a live ``held`` one.

    ``write`` excludes every write and read claim; ``read`` claims share with each other;
    ``intent`` is advisory: it never blocks and is never blocked, only shown.
    """
    if held == "intent" or wanted == "intent":
        return True
    return held == "read" and wanted == "read"


@dataclass(frozen=True, slots=True)
class Holder:
    """One grant on a key. ``token`` is None only for holders added by the entry's latest
    write; their token is that write's revision (see :meth:`ClaimRecord.with_tokens`)."""

    agent: str
    mode: Mode
    ttl: float
    acquired: float
    expires: float
    token: int | None = None
    purpose: str = ""
    pid: int | None = None
    pid_start: float | None = None
    heartbeat: float | None = None  # wall time of the last heartbeat, once the holder sends them
    host: str | None = None  # the host whose daemon granted it (pid is local there)

    def live(self, now: float) -> bool:
        return self.expires > now


@dataclass(frozen=True, slots=True)
class ClaimRecord:
    """The KV value of one resource key: its original key and its holders."""

    key: str
    holders: tuple[Holder, ...] = field(default_factory=tuple)

    def with_tokens(self, revision: int) -> ClaimRecord:
        """Fill in the tokens of holders granted by the write that produced ``revision``."""
        if all(h.token is not None for h in self.holders):
            return self
        return ClaimRecord(
            self.key,
            tuple(h if h.token is not None else _with_token(h, revision) for h in self.holders),
        )

    def encode(self) -> bytes:
        body = {
            "key": self.key,
            "holders": [_compact({f: getattr(h, f) for f in _HOLDER_FIELDS}) for h in self.holders],
        }
        return dumps(body)

    @staticmethod
    def decode(data: bytes) -> ClaimRecord:
        body = json.loads(data)
        return ClaimRecord(
            key=str(body["key"]), holders=tuple(_holder(h) for h in body.get("holders", ()))
        )

    def deadline(self, policy: ClaimPolicy) -> float | None:
        """The earliest wall time at which some holder's automatic release is due."""
        times = [_holder_deadline(h, policy) for h in self.holders]
        return min(times) if times else None

    def kv_ttl(self, now: float) -> int:
        """The per-key TTL for the KV entry: the latest holder expiry, whole seconds >= 1."""
        latest = max((h.expires for h in self.holders), default=now)
        return wire_ttl(latest - now)


_HOLDER_FIELDS = tuple(f.name for f in fields(Holder))
# Agent ids, modes and hosts repeat across thousands of held claims: one string each, not one
# per decoded record (the claims view holds every record in memory).
_SHARED_STRINGS = ("agent", "mode", "host")


def _with_token(h: Holder, token: int) -> Holder:
    """``replace(h, token=token)`` spelled out: on every grant, and dataclasses.replace walks
    the fields by name (tests/stores/test_pure.py keeps the two in step)."""
    return Holder(
        h.agent,
        h.mode,
        h.ttl,
        h.acquired,
        h.expires,
        token,
        h.purpose,
        h.pid,
        h.pid_start,
        h.heartbeat,
        h.host,
    )


def _holder(body: dict[str, Any]) -> Holder:
    for name in _SHARED_STRINGS:
        value = body.get(name)
        if type(value) is str:
            body[name] = sys.intern(value)
    return Holder(**body)


def _compact(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None and v != ""}


def wire_ttl(seconds: float) -> int:
    """TTLs are whole seconds >= 1 on the wire (docs/claims.md "How it works"): round up, never to
    zero."""
    return max(1, math.ceil(seconds - 1e-6))


def _holder_deadline(h: Holder, policy: ClaimPolicy) -> float:
    times = [h.expires, h.acquired + policy.max_age]
    if h.heartbeat is not None:
        times.append(h.heartbeat + policy.heartbeat_grace)
    return min(times)


def due_reason(h: Holder, now: float, policy: ClaimPolicy) -> ReleaseReason | None:
    """Why ``h`` must be released automatically at ``now``, or None while it stands."""
    if h.acquired + policy.max_age <= now:
        return "max-age"
    if h.heartbeat is not None and h.heartbeat + policy.heartbeat_grace <= now:
        return "heartbeat-lost"
    if h.expires <= now:
        return "expired"
    return None


@dataclass(frozen=True)
class Contention:
    """The request conflicts with a live holder; contention is a result, not an error."""

    holder: Holder


def grant(
    current: ClaimRecord | None, key: str, wanted: Holder, now: float, policy: ClaimPolicy
) -> tuple[ClaimRecord, list[tuple[Holder, ReleaseReason]]] | Contention:
    """The record after granting ``wanted``, plus holders dropped on the way (and why).

    Holders that are due for release are dropped first; the caller's own earlier grant on the
    key is replaced (a new grant, a new token); any other live incompatible holder wins.
    """
    dropped: list[tuple[Holder, ReleaseReason]] = []
    kept: list[Holder] = []
    for h in current.holders if current else ():
        reason = due_reason(h, now, policy)
        if reason is not None:
            dropped.append((h, reason))
        elif h.agent == wanted.agent:
            dropped.append((h, "released"))
        else:
            kept.append(h)
    for h in kept:
        if not compatible(h.mode, wanted.mode):
            return Contention(h)
    return ClaimRecord(key=key, holders=(*kept, wanted)), dropped


def _live(cur: ClaimRecord | None, now: float, policy: ClaimPolicy) -> list[Holder]:
    return [h for h in (cur.holders if cur else ()) if due_reason(h, now, policy) is None]


def _stale(key: str, token: int, current: Holder) -> StaleToken:
    return StaleToken(
        f"token {token} is stale on {key}: {current.agent}'s current grant there is token "
        f"{current.token}"
    )


def release(
    cur: ClaimRecord | None,
    key: str,
    agent: str,
    token: int | None,
    now: float,
    policy: ClaimPolicy,
) -> tuple[ClaimRecord | None, Holder] | None:
    """The record without ``agent``'s live grant on ``key`` (None when empty) and that grant;
    None when ``agent`` holds nothing live there (``{"released": false}``: docs/claims.md "Tools").
    Someone else's claim raises :class:`NotHolder`. ``token``, when given, must be the grant's own:
    an agent that lost the lease and took it again is not released by its old token."""
    live = _live(cur, now, policy)
    mine = next((h for h in live if h.agent == agent), None)  # grant() keeps one per agent
    if mine is None or cur is None:
        if live:
            raise NotHolder(f"claim on {key} is held by {live[0].agent}, not {agent}")
        return None
    if token is not None and mine.token != token:
        raise _stale(key, token, mine)
    rest = tuple(h for h in cur.holders if h is not mine)
    return (replace(cur, holders=rest) if rest else None), mine


def renew(
    cur: ClaimRecord | None,
    key: str,
    agent: str,
    token: int | None,
    ttl: float | None,
    now: float,
    policy: ClaimPolicy,
) -> tuple[ClaimRecord, Holder]:
    """The record with ``agent``'s live grant on ``key`` extended to ``now + ttl`` (default: its
    own ttl), and the renewed grant. ``token``, when given, must be that grant's."""
    live = _live(cur, now, policy)
    mine = next((h for h in live if h.agent == agent), None)
    if mine is None or cur is None:
        if live:
            raise NotHolder(f"claim on {key} is held by {live[0].agent}, not {agent}")
        raise NotHolder(f"you hold no claim on {key}")
    if token is not None and mine.token != token:
        raise _stale(key, token, mine)
    span = ttl if ttl is not None else mine.ttl
    new = replace(mine, expires=now + span, ttl=span)
    return replace(cur, holders=tuple(new if h is mine else h for h in cur.holders)), new


def beat(
    cur: ClaimRecord | None, agent: str, now: float, policy: ClaimPolicy
) -> ClaimRecord | None:
    """The record with each of ``agent``'s live grants renewed by its ttl and marked as
    heartbeating (docs/claims.md "Rules"), or None when nothing changes."""
    if cur is None:
        return None
    holders = tuple(
        replace(h, heartbeat=now, expires=now + h.ttl)
        if h.agent == agent and due_reason(h, now, policy) is None
        else h
        for h in cur.holders
    )
    return None if holders == cur.holders else replace(cur, holders=holders)


def drop(
    cur: ClaimRecord | None, why: Callable[[Holder], ReleaseReason | None]
) -> tuple[ClaimRecord | None, list[tuple[Holder, ReleaseReason]]] | None:
    """The record without the holders ``why`` gives a reason for (None when empty), and
    those holders with their reasons; None when nobody goes."""
    if cur is None:
        return None
    gone: list[tuple[Holder, ReleaseReason]] = []
    kept: list[Holder] = []
    for h in cur.holders:
        reason = why(h)
        if reason is None:
            kept.append(h)
        else:
            gone.append((h, reason))
    if not gone:
        return None
    return (replace(cur, holders=tuple(kept)) if kept else None), gone
