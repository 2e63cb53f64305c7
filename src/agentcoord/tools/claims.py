"""Claim tools (seed 000 claim/release/check_claims; seed 003 locks and heartbeats;
docs/claims.md "Tools"): claim, release, renew, heartbeat, check_claims, and the audit query."""

from __future__ import annotations

import datetime as dt
import math
import time
from typing import Any

from agentcoord.errors import InvalidArguments
from agentcoord.kernel.caller import Caller
from agentcoord.stores.audit import AuditLog
from agentcoord.stores.kv import (
    ClaimStore,
    Contention,
    Holder,
    format_duration,
    parse_duration,
    parse_mode,
)
from agentcoord.stores.kv._procwatch import ProcKey, proc_key
from agentcoord.tools._base import Tool, obj_schema
from agentcoord.tools._caller import acting_agent

__all__ = ["tools"]

_STR: dict[str, Any] = {"type": "string"}
_AGENT: dict[str, Any] = {"type": "string", "description": "optional; must be you"}
_KEY: dict[str, Any] = {"type": "string", "maxLength": 512}
_TOKEN: dict[str, Any] = {"type": "integer", "minimum": 1, "description": "from claim"}
_LIMIT: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 1000}


def _iso(ts: float) -> str:
    """``datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")``, without building
    a datetime (two per claim result): microseconds rounded as datetime rounds them, then
    truncated to milliseconds as isoformat truncates them."""
    secs = math.floor(ts)
    micros = round((ts - secs) * 1e6)
    if micros >= 1_000_000:
        secs, micros = secs + 1, micros - 1_000_000
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(secs))}.{micros // 1000:03d}+00:00"


def _claim_row(key: str, h: Holder) -> dict[str, Any]:
    """One claim as the tools show it (seed 000's row plus token, purpose, acquired_at)."""
    row: dict[str, Any] = {
        "resource_key": key,
        "agent": h.agent,
        "mode": h.mode,
        "ttl": format_duration(h.ttl),
        "expires_at": _iso(h.expires),
        "acquired_at": _iso(h.acquired),
        "token": h.token,
    }
    if h.purpose:
        row["purpose"] = h.purpose
    return row


def _ttl(args: dict[str, Any], default: float | None) -> float | None:
    text = args.get("ttl")
    if not text:
        return default
    seconds = parse_duration(text)
    if seconds < 1:
        raise InvalidArguments(f"`ttl` must be at least 1s (got {text!r})")
    return seconds


def _holder_process(caller: Caller) -> ProcKey | None:
    """The process whose exit releases the caller's claims: a session's ``claude``, a runner's
    peer; a human's CLI call is short-lived, so human claims are bound to no process."""
    pid = caller.session_pid if caller.kind == "session" else None
    if caller.kind == "runner":
        pid = caller.pid
    return proc_key(pid) if pid else None


def _render_claim(r: dict[str, Any]) -> str:
    if r["acquired"]:
        c = r["claim"]
        return (
            f"acquired {c['mode']} claim on {c['resource_key']} until {c['expires_at']}"
            f" (token {r['token']})"
        )
    h = r["holder"]
    return (
        f"not acquired: {h['resource_key']} is held by {h['agent']} ({h['mode']})"
        f" until {h['expires_at']}"
    )


def _render_claims(r: dict[str, Any]) -> str:
    if not r["claims"]:
        return "no live claims"
    lines = [
        f"{c['resource_key']}  {c['agent']}  {c['mode']}  until {c['expires_at']}"
        f"  token {c['token']}"
        for c in r["claims"]
    ]
    if r["total"] > len(lines):
        lines.append(f"... {r['total'] - len(lines)} more")
    return "\n".join(lines)


def parse_since(text: str, now: float | None = None) -> float:
    """``since`` as a wall time: a Go duration ago (``10m``) or an ISO 8601 timestamp."""
    now = time.time() if now is None else now
    try:
        return now - parse_duration(text)
    except InvalidArguments:
        pass
    try:
        stamp = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArguments(
            f"`since` must be a duration ago (10m) or an ISO timestamp (got {text!r})"
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=dt.UTC)
    return stamp.timestamp()


def _render_audit(r: dict[str, Any]) -> str:
    from agentcoord.eventtext import render_event  # the one rendering of an event

    return "\n".join(render_event(e) for e in r["events"]) or "no events"


def tools(claims: ClaimStore, audit: AuditLog) -> list[Tool]:
    """The claim tools over the claim store, and the audit query over the audit log."""

    async def claim(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        agent = acting_agent(caller, args)
        mode = parse_mode(args.get("mode") or "write")
        ttl = _ttl(args, claims.policy.default_ttl)
        assert ttl is not None
        key = args["resource_key"]
        out = await claims.claim(
            agent, key, mode, ttl, purpose=args.get("purpose", ""), proc=_holder_process(caller)
        )
        if isinstance(out, Contention):
            return {"acquired": False, "holder": _claim_row(key, out.holder)}
        return {
            "acquired": True,
            "revision": out.revision,
            "token": out.holder.token,
            "claim": _claim_row(key, out.holder),
        }

    async def release(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        agent = acting_agent(caller, args)
        released = await claims.release(agent, args["resource_key"], args["token"])
        return {"released": released}

    async def renew(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        agent = acting_agent(caller, args)
        key = args["resource_key"]
        holder = await claims.renew(agent, key, args["token"], _ttl(args, None))
        return {"renewed": True, "claim": _claim_row(key, holder)}

    async def heartbeat(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        agent = acting_agent(caller, args)
        keys = await claims.heartbeat(agent)
        return {
            "renewed": keys,
            "grace": format_duration(claims.policy.heartbeat_grace),
        }

    async def check_claims(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        rows = claims.check(args.get("prefix", ""), args.get("holder", ""))
        limit = args.get("limit", 200)
        return {"claims": [_claim_row(k, h) for k, h in rows[:limit]], "total": len(rows)}

    async def audit_query(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        since = parse_since(args["since"]) if args.get("since") else None
        events = await audit.query(
            since=since,
            agent=args.get("actor", ""),
            type_=args.get("type", "").upper(),
            limit=args.get("limit", 100),
        )
        return {"events": [e.as_dict() for e in events]}

    return [
        Tool(
            "claim",
            "Lease a resource key before touching it. mode: write (exclusive, default), read "
            "(shared), intent (advisory). ttl: Go duration, default 5m. Returns a token for "
            "release/renew, or the holder.",
            obj_schema(
                ("resource_key",),
                resource_key=_KEY,
                mode={"type": "string", "enum": ["write", "read", "intent"]},
                ttl=_STR,
                purpose=_STR,
                agent=_AGENT,
            ),
            claim,
            _render_claim,
        ),
        Tool(
            "release",
            "Drop your claim on a key (needs its token).",
            obj_schema(("resource_key", "token"), resource_key=_KEY, token=_TOKEN, agent=_AGENT),
            release,
        ),
        Tool(
            "renew",
            "Extend your claim on a key (needs its token); ttl defaults to the claim's own.",
            obj_schema(
                ("resource_key", "token"), resource_key=_KEY, token=_TOKEN, ttl=_STR, agent=_AGENT
            ),
            renew,
        ),
        Tool(
            "heartbeat",
            "Renew all your claims; send every 30s. "
            "After one heartbeat, 2m of silence releases them.",
            obj_schema(agent=_AGENT),
            heartbeat,
        ),
        Tool(
            "check_claims",
            "Live claims whose key starts with prefix (all when empty), optionally one holder's.",
            obj_schema(prefix=_STR, holder=_STR, limit=_LIMIT),
            check_claims,
            _render_claims,
        ),
        Tool(
            "audit",
            "Audit events, newest last. since: duration ago (1h) or ISO time; actor: an agent; "
            "type e.g. CLAIM_RELEASED.",
            obj_schema(since=_STR, actor=_STR, type=_STR, limit=_LIMIT),
            audit_query,
            _render_audit,
        ),
    ]
