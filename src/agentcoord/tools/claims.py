"""Claim tools (docs/claims.md "Tools"): claim, release, renew, heartbeat, check_claims, and
the audit query; thin adapters over the leases service (:class:`agentcoord.leases.leasing.Leases`:
file keys, holders and their sites live there).
"""

from __future__ import annotations

import datetime as dt
import re
import time
from typing import TYPE_CHECKING, Any

from agentcoord.errors import InvalidArguments
from agentcoord.kernel.caller import Caller
from agentcoord.leases.patterns import Overlap
from agentcoord.leases.refusal import claim_text
from agentcoord.leases.rows import claim_row, shown_key
from agentcoord.leases.sites import Site
from agentcoord.stores.audit import AuditLog
from agentcoord.stores.kv import Contention, Holder, format_duration, parse_duration, parse_mode
from agentcoord.stores.kv.keys import MAX_KEY_CHARS
from agentcoord.tools._acting import acting_agent
from agentcoord.tools._shape import compact, for_model, short_time
from agentcoord.tools.base import obj_schema, tool, unlisted

if TYPE_CHECKING:
    from agentcoord.leases.leasing import Leases

__all__ = ["ClaimTools", "parse_since"]

_STR: dict[str, Any] = {"type": "string"}
_AGENT: dict[str, Any] = {"type": "string"}
_KEY: dict[str, Any] = {"type": "string", "maxLength": 512}
_EVENT_TYPE = re.compile(r"[A-Z0-9_]{1,64}")
_TOKEN: dict[str, Any] = {"type": "integer", "minimum": 1}
_LIMIT: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 1000}


def _model_row(row: dict[str, Any], mine: Site | None = None) -> dict[str, Any]:
    """A claim row as a model reads it (docs/claude-code.md "Results for the model"): the documented
    resource_key, agent, mode, ttl and expires_at (to the second), then the token, purpose and a
    file's path and repository, and the holder's worktree and branch when known and not ``mine``
    (the reader's own); not when it was acquired (ttl and expires_at say how long it holds)."""
    out = compact(row, keep=("resource_key", "agent", "mode", "ttl", "expires_at"))
    out.pop("acquired_at", None)
    out["expires_at"] = short_time(row["expires_at"])
    if mine is not None and (row.get("worktree"), row.get("branch")) == (
        mine.worktree,
        mine.branch,
    ):
        out.pop("worktree", None)
        out.pop("branch", None)
    return out


def _ttl(args: dict[str, Any], default: float | None) -> float | None:
    text = args.get("ttl")
    if not text:
        return default
    seconds = parse_duration(text)
    if seconds < 1:
        raise InvalidArguments(f"`ttl` must be at least 1s (got {text!r})")
    return seconds


def _render_claims(r: dict[str, Any]) -> str:
    if not r["claims"]:
        return "no live claims"
    lines = [
        f"{shown_key(c)}  {c['agent']}  {c['mode']}  until {c['expires_at']}  token {c['token']}"
        for c in r["claims"]
    ]
    total = r.get("total", len(lines))  # a model's result says total only when cut short
    if total > len(lines):
        lines.append(f"... {total - len(lines)} more")
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
    from agentcoord.text.events import render_event  # the one rendering of an event

    return "\n".join(render_event(e) for e in r["events"]) or "no events"


class ClaimTools:
    """The claim tools over the leases service, and the audit query over the audit log."""

    def __init__(self, leases: Leases, audit: AuditLog) -> None:
        self._leases = leases
        self._audit = audit

    def _row(self, key: str, h: Holder) -> dict[str, Any]:
        return claim_row(key, h, self._leases.site(key, h.token))

    @tool(
        description="Lease file:<path> or a name before editing; write excludes. ttl e.g. "
        "10m (5m).",
        schema=obj_schema(
            ("resource_key",),
            resource_key=_KEY,
            mode={"type": "string", "enum": ["write", "read", "intent"]},
            ttl=_STR,
            purpose=_STR,
            agent=_AGENT,
        ),
        render=claim_text,
    )
    async def claim(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        leases = self._leases
        agent = acting_agent(caller, args)
        mode = parse_mode(args.get("mode") or "write")
        ttl = _ttl(args, leases.default_ttl)
        assert ttl is not None
        key, fk, out = await leases.claim(
            caller, agent, args["resource_key"], mode, ttl, args.get("purpose", "")
        )
        model = for_model(caller)
        if isinstance(out, Contention):
            # An overlapping claim on another key (a folder or glob, docs/claims.md "Folders
            # and globs") is shown under its own key.
            held = self._row(out.key if isinstance(out, Overlap) else key, out.holder)
            if model:
                held = _model_row(held, leases.own_site(caller.cwd) if fk is not None else None)
            return {"acquired": False, "holder": held}
        granted = self._row(key, out.holder)
        if model:  # the token once, beside revision (docs/claims.md "Tools")
            granted = _model_row(granted, leases.own_site(caller.cwd) if fk is not None else None)
            del granted["token"]
        return {
            "acquired": True,
            "revision": out.revision,
            "token": out.holder.token,
            "claim": granted,
        }

    @tool(
        description="Drop your claim.",
        schema=obj_schema(("resource_key",), resource_key=_KEY, token=_TOKEN, agent=_AGENT),
    )
    async def release(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        # `release {resource_key}` drops the caller's own claim (a file key as claim stored it);
        # a token, when given, fences it (docs/claims.md "Tools").
        agent = acting_agent(caller, args)
        released = await self._leases.release(
            caller, agent, args["resource_key"], args.get("token")
        )
        return {"released": released}

    @tool(
        description="Extend your claim (by its ttl).",
        schema=obj_schema(
            ("resource_key",), resource_key=_KEY, token=_TOKEN, ttl=_STR, agent=unlisted(_AGENT)
        ),
    )
    async def renew(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        agent = acting_agent(caller, args)
        key, holder = await self._leases.renew(  # a file key as claim stored it
            caller, agent, args["resource_key"], args.get("token"), _ttl(args, None)
        )
        row = claim_row(key, holder)
        return {"renewed": True, "claim": _model_row(row) if for_model(caller) else row}

    @tool(
        description="Renew all your claims; 2m without one releases them.",
        schema=obj_schema(agent=unlisted(_AGENT)),
    )
    async def heartbeat(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        agent = acting_agent(caller, args)
        keys = await self._leases.heartbeat(agent)
        return {"renewed": keys, "grace": format_duration(self._leases.heartbeat_grace)}

    @tool(
        description="Live claims by key prefix, or one holder's.",
        schema=obj_schema(prefix=_STR, holder=_STR, limit=unlisted(_LIMIT)),
        render=_render_claims,
        read_only=True,
    )
    async def check_claims(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        rows = self._leases.listing(args.get("prefix", ""), caller.cwd, args.get("holder", ""))
        limit = args.get("limit", 200)
        if for_model(caller):
            mine = self._leases.own_site(caller.cwd)
            shown: dict[str, Any] = {
                "claims": [_model_row(self._row(k, h), mine) for k, h in rows[:limit]]
            }
            if len(rows) > limit:
                shown["total"] = len(rows)
            return shown
        return {"claims": [self._row(k, h) for k, h in rows[:limit]], "total": len(rows)}

    @tool(
        description="Audit events, oldest first; since 1h or an ISO time; type e.g. "
        "CLAIM_RELEASED.",
        schema=obj_schema(since=_STR, actor=_STR, type=_STR, limit=_LIMIT),
        render=_render_audit,
        listed=False,  # the human's record (agentcoord tail, the console), not a work tool
    )
    async def audit(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        if len(args.get("actor", "")) > MAX_KEY_CHARS:  # the audit's subject token bound
            raise InvalidArguments(f"`actor` is longer than {MAX_KEY_CHARS} characters")
        since = parse_since(args["since"]) if args.get("since") else None
        type_ = args.get("type", "").upper()
        if type_ and not _EVENT_TYPE.fullmatch(type_):
            # A subject token of the query's filter (docs/security.md "Input at the boundary").
            raise InvalidArguments(
                "`type` is an event type: letters, digits and _, e.g. CLAIM_RELEASED"
            )
        events = await self._audit.query(
            since=since,
            agent=args.get("actor", ""),
            type_=type_,
            limit=args.get("limit", 100),
        )
        return {"events": [e.as_dict() for e in events]}
