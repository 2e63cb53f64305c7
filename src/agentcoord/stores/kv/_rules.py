"""Pure claim rules: modes, who may share a key, what a grant or release does, and when an
automatic release is due (seed 000 "claim"; seed 003 "Lock Rules", "Heartbeat Pattern").

Everything here takes values and returns values; :mod:`.claims` does the NATS I/O.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from agentcoord.errors import InvalidArguments

__all__ = [
    "MODES",
    "ClaimPolicy",
    "ClaimRecord",
    "Contention",
    "Holder",
    "Mode",
    "ReleaseReason",
    "compatible",
    "due_reason",
    "grant",
    "parse_mode",
    "wire_ttl",
]

Mode = Literal["write", "read", "intent"]
MODES: tuple[Mode, ...] = ("write", "read", "intent")
ReleaseReason = Literal["released", "expired", "holder-exited", "heartbeat-lost", "max-age"]


@dataclass(frozen=True)
class ClaimPolicy:
    """Limits of the claim plane; seed 003: heartbeat every 30 s, silence for 2 min releases."""

    default_ttl: float = 300.0  # seed 003: short-lived locks, 5 minutes, renewable
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


@dataclass(frozen=True)
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

    def live(self, now: float) -> bool:
        return self.expires > now


@dataclass(frozen=True)
class ClaimRecord:
    """The KV value of one resource key: its original key and its holders."""

    key: str
    holders: tuple[Holder, ...] = field(default_factory=tuple)

    def with_tokens(self, revision: int) -> ClaimRecord:
        """Fill in the tokens of holders granted by the write that produced ``revision``."""
        if all(h.token is not None for h in self.holders):
            return self
        return replace(
            self,
            holders=tuple(
                h if h.token is not None else replace(h, token=revision) for h in self.holders
            ),
        )

    def encode(self) -> bytes:
        body = {"key": self.key, "holders": [_compact(h.__dict__) for h in self.holders]}
        return json.dumps(body, separators=(",", ":")).encode()

    @staticmethod
    def decode(data: bytes) -> ClaimRecord:
        body = json.loads(data)
        return ClaimRecord(
            key=str(body["key"]), holders=tuple(Holder(**h) for h in body.get("holders", ()))
        )

    def deadline(self, policy: ClaimPolicy) -> float | None:
        """The earliest wall time at which some holder's automatic release is due."""
        times = [_holder_deadline(h, policy) for h in self.holders]
        return min(times) if times else None

    def kv_ttl(self, now: float) -> int:
        """The per-key TTL for the KV entry: the latest holder expiry, whole seconds >= 1."""
        latest = max((h.expires for h in self.holders), default=now)
        return wire_ttl(latest - now)


def _compact(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None and v != ""}


def wire_ttl(seconds: float) -> int:
    """TTLs are whole seconds >= 1 on the wire (FACTS.md "NATS"): round up, never to zero."""
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
