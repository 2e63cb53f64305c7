"""Claim tools (seed 000 claim/release/check_claims; seed 003 locks and heartbeats;
docs/claims.md "Tools"): claim, release, renew, heartbeat, check_claims, and the audit query.

A file key (``file:<path>``, or a bare absolute path) is resolved against the caller's cwd to
its canonical key (:mod:`agentcoord.filekeys`; docs/claims.md "Claiming files"), so the same
file claimed from any worktree of one repository is one lease; other keys are kept as given.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import time
import weakref
from dataclasses import dataclass
from typing import Any

from agentcoord.errors import InvalidArguments
from agentcoord.filekeys import FILE_PREFIX, FileKey, resolve_file_key, split_file_key
from agentcoord.kernel.caller import Caller
from agentcoord.keytext import repo_name
from agentcoord.stores.audit import AuditLog
from agentcoord.stores.kv import (
    ClaimStore,
    Contention,
    Holder,
    format_duration,
    parse_duration,
    parse_mode,
)
from agentcoord.stores.kv._keys import MAX_KEY_CHARS
from agentcoord.stores.kv._procwatch import ProcKey, proc_key
from agentcoord.tools._base import Tool, obj_schema, unlisted
from agentcoord.tools._caller import acting_agent
from agentcoord.tools._shape import compact, for_model, short_time

__all__ = [
    "ClaimSites",
    "Site",
    "canonical_key",
    "holder_process",
    "holder_site",
    "shown_key",
    "sites_of",
    "tools",
]

_STR: dict[str, Any] = {"type": "string"}
_AGENT: dict[str, Any] = {"type": "string"}
_KEY: dict[str, Any] = {"type": "string", "maxLength": 512}
_EVENT_TYPE = re.compile(r"[A-Z0-9_]{1,64}")
_TOKEN: dict[str, Any] = {"type": "integer", "minimum": 1}
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


@dataclass(frozen=True)
class Site:
    """Where a file claim's holder works: its worktree's top level and branch."""

    worktree: str | None
    branch: str | None


_SITES_KEEP = 4096


class ClaimSites:
    """Each live file claim's :class:`Site`, by (key, token). The claim store's Holder has no
    place for them, so they are kept beside it, in this daemon: a claim granted before a
    restart, or by another host's daemon, shows none."""

    def __init__(self, claims: ClaimStore) -> None:
        self._claims = weakref.ref(claims)
        self._by: dict[tuple[str, int], Site] = {}
        self._keep = _SITES_KEEP

    def note(self, key: str, token: int | None, site: Site) -> None:
        if token is None:
            return
        self._by[(key, token)] = site
        if len(self._by) > self._keep:
            self._prune()

    def get(self, key: str, token: int | None) -> Site | None:
        return None if token is None else self._by.get((key, token))

    def _prune(self) -> None:
        """Forget released grants; once in a while (when the map doubles), not per claim."""
        claims = self._claims()
        live = {(k, h.token) for k, h in claims.check("")} if claims is not None else set()
        self._by = {k: v for k, v in self._by.items() if k in live}
        self._keep = max(_SITES_KEEP, 2 * len(self._by))


_SITES: weakref.WeakKeyDictionary[ClaimStore, ClaimSites] = weakref.WeakKeyDictionary()


def sites_of(claims: ClaimStore) -> ClaimSites:
    """The sites of ``claims``' file claims (one map per claim store: the tools and the write
    guard's automatic edit leases share it)."""
    sites = _SITES.get(claims)
    if sites is None:
        sites = _SITES[claims] = ClaimSites(claims)
    return sites


def _names_file(key: str) -> bool:
    """A ``file:`` key, or a bare absolute path; other keys (``symbol:``, ``lock:``, a bare
    name) are opaque, as in seed 000."""
    return key.startswith(FILE_PREFIX) or key.startswith("/")


def canonical_key(key: str, cwd: str | None) -> tuple[str, FileKey | None]:
    """The key a claim is stored under: a file key resolved against ``cwd`` (the caller's) to
    its canonical form, with its identity; any other key unchanged, with None."""
    if not _names_file(key):
        return key, None
    fk = resolve_file_key(key, cwd)
    return fk.key, fk


def holder_site(fk: FileKey, cwd: str | None) -> Site:
    """The holder's worktree and branch: its cwd's when that is in the file's repository (an
    absolute path into another worktree is still claimed from the holder's own), else the
    file's."""
    if cwd:
        here = resolve_file_key(os.path.join(cwd, "_"), None)
        if here.repo is not None and here.repo == fk.repo:
            return Site(here.worktree, here.branch)
    return Site(fk.worktree, fk.branch)


def _with_canonical_key(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
    key = args.get("resource_key")
    if not isinstance(key, str):
        return args
    return {**args, "resource_key": canonical_key(key, caller.cwd)[0]}


def shown_key(row: dict[str, Any]) -> str:
    """A claim row's key as people read it: a file's repository-relative path, the repository
    and the holder's worktree and branch; any other key as it is."""
    if "path" not in row:
        return str(row["resource_key"])
    where = [f"repo {repo_name(row['repository'])}"] if row.get("repository") else []
    if row.get("worktree"):
        where.append(f"worktree {row['worktree']}")
    if row.get("branch"):
        where.append(f"branch {row['branch']}")
    return f"{row['path']} ({', '.join(where)})" if where else str(row["path"])


def _claim_row(key: str, h: Holder, site: Site | None = None) -> dict[str, Any]:
    """One claim as the tools show it (seed 000's row plus token, purpose, acquired_at; a file
    claim adds its repository, repository-relative path, and the holder's worktree and
    branch)."""
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
    if key.startswith(FILE_PREFIX):
        repo, path = split_file_key(key)
        row["path"] = path
        if repo is not None:
            row["repository"] = repo
        if site is not None:
            row["worktree"] = site.worktree
            row["branch"] = site.branch
    return row


def _model_row(row: dict[str, Any], mine: Site | None = None) -> dict[str, Any]:
    """A claim row as a model reads it (docs/claude-code.md "Results for the model"): seed
    000's resource_key, agent, mode, ttl and expires_at (to the second), then the token, purpose
    and a file's path and repository, and the holder's worktree and branch when known and not
    ``mine`` (the reader's own); not when it was acquired (ttl and expires_at say how long it
    holds)."""
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


def _own_site(cwd: str | None) -> Site | None:
    """The worktree and branch ``cwd`` is in, or None outside git (or without a cwd)."""
    if not cwd:
        return None
    here = resolve_file_key(os.path.join(cwd, "_"), None)
    return Site(here.worktree, here.branch) if here.repo is not None else None


def _ttl(args: dict[str, Any], default: float | None) -> float | None:
    text = args.get("ttl")
    if not text:
        return default
    seconds = parse_duration(text)
    if seconds < 1:
        raise InvalidArguments(f"`ttl` must be at least 1s (got {text!r})")
    return seconds


def holder_process(caller: Caller) -> ProcKey | None:
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
            f"acquired {c['mode']} claim on {shown_key(c)} until {c['expires_at']}"
            f" (token {r['token']})"
        )
    h = r["holder"]
    return (
        f"not acquired: {shown_key(h)} is held by {h['agent']} ({h['mode']})"
        f" until {h['expires_at']}"
    )


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
    from agentcoord.eventtext import render_event  # the one rendering of an event

    return "\n".join(render_event(e) for e in r["events"]) or "no events"


def _prefix_key(prefix: str, cwd: str | None) -> str:
    """check_claims' prefix in canonical form: ``file:src/`` (a directory, by its trailing
    slash) is every claim under the repository's ``src/``; ``file:`` alone is every file
    claim; any other prefix as given."""
    if not _names_file(prefix) or prefix == FILE_PREFIX:
        return prefix
    raw = prefix.removeprefix(FILE_PREFIX)
    if raw in (".", "..") or raw.endswith(("/", "/.", "/..")):
        # resolve a name inside the directory, then cut the name: the directory's key + "/"
        return resolve_file_key(os.path.join(raw, "_"), cwd).key[:-1]
    return resolve_file_key(raw, cwd).key


def tools(claims: ClaimStore, audit: AuditLog) -> list[Tool]:
    """The claim tools over the claim store, and the audit query over the audit log."""
    sites = sites_of(claims)

    def row(key: str, h: Holder) -> dict[str, Any]:
        return _claim_row(key, h, sites.get(key, h.token))

    async def claim(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        agent = acting_agent(caller, args)
        mode = parse_mode(args.get("mode") or "write")
        ttl = _ttl(args, claims.policy.default_ttl)
        assert ttl is not None
        # Resolved against the claimer's cwd, not whoever later writes (docs/claims.md
        # "Claiming files").
        key, fk = canonical_key(args["resource_key"], caller.cwd)
        out = await claims.claim(
            agent, key, mode, ttl, purpose=args.get("purpose", ""), proc=holder_process(caller)
        )
        model = for_model(caller)
        if isinstance(out, Contention):
            held = row(key, out.holder)
            if model:
                held = _model_row(held, _own_site(caller.cwd) if fk is not None else None)
            return {"acquired": False, "holder": held}
        if fk is not None:
            sites.note(key, out.holder.token, holder_site(fk, caller.cwd))
        granted = row(key, out.holder)
        if model:  # the token once, beside revision, as seed 000's claim result puts it
            granted = _model_row(granted, _own_site(caller.cwd) if fk is not None else None)
            del granted["token"]
        return {
            "acquired": True,
            "revision": out.revision,
            "token": out.holder.token,
            "claim": granted,
        }

    async def release(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        args = _with_canonical_key(caller, args)  # a file key as claim stored it
        # Seed 000 "release": `release {resource_key}` drops the caller's own claim; a token,
        # when given, fences it (docs/claims.md "Tools").
        agent = acting_agent(caller, args)
        released = await claims.release(agent, args["resource_key"], args.get("token"))
        return {"released": released}

    async def renew(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        args = _with_canonical_key(caller, args)  # a file key as claim stored it
        agent = acting_agent(caller, args)
        key = args["resource_key"]
        holder = await claims.renew(agent, key, args.get("token"), _ttl(args, None))
        row = _claim_row(key, holder)
        return {"renewed": True, "claim": _model_row(row) if for_model(caller) else row}

    async def heartbeat(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        agent = acting_agent(caller, args)
        keys = await claims.heartbeat(agent)
        return {
            "renewed": keys,
            "grace": format_duration(claims.policy.heartbeat_grace),
        }

    async def check_claims(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        prefix = _prefix_key(args.get("prefix", ""), caller.cwd)
        rows = claims.check(prefix, args.get("holder", ""))
        limit = args.get("limit", 200)
        if for_model(caller):
            mine = _own_site(caller.cwd)
            shown: dict[str, Any] = {
                "claims": [_model_row(row(k, h), mine) for k, h in rows[:limit]]
            }
            if len(rows) > limit:
                shown["total"] = len(rows)
            return shown
        return {"claims": [row(k, h) for k, h in rows[:limit]], "total": len(rows)}

    async def audit_query(caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        if len(args.get("actor", "")) > MAX_KEY_CHARS:  # the audit's subject token bound
            raise InvalidArguments(f"`actor` is longer than {MAX_KEY_CHARS} characters")
        since = parse_since(args["since"]) if args.get("since") else None
        type_ = args.get("type", "").upper()
        if type_ and not _EVENT_TYPE.fullmatch(type_):
            # A subject token of the query's filter (docs/security.md "Input at the boundary").
            raise InvalidArguments(
                "`type` is an event type: letters, digits and _, e.g. CLAIM_RELEASED"
            )
        events = await audit.query(
            since=since,
            agent=args.get("actor", ""),
            type_=type_,
            limit=args.get("limit", 100),
        )
        return {"events": [e.as_dict() for e in events]}

    return [
        Tool(
            "claim",
            "Lease a key (file:<path> or a name) before editing; write excludes. ttl e.g. 10m "
            "(5m).",
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
            "Drop your claim on a key.",
            obj_schema(("resource_key",), resource_key=_KEY, token=_TOKEN, agent=_AGENT),
            release,
        ),
        Tool(
            "renew",
            "Extend your claim on a key (by its ttl).",
            obj_schema(
                ("resource_key",), resource_key=_KEY, token=_TOKEN, ttl=_STR, agent=unlisted(_AGENT)
            ),
            renew,
        ),
        Tool(
            "heartbeat",
            "Renew all your claims; then 2m without one releases them.",
            obj_schema(agent=unlisted(_AGENT)),
            heartbeat,
        ),
        Tool(
            "check_claims",
            "Live claims by key prefix, or one holder's.",
            obj_schema(prefix=_STR, holder=_STR, limit=unlisted(_LIMIT)),
            check_claims,
            _render_claims,
        ),
        Tool(
            "audit",
            "Audit events, oldest first; since 1h or an ISO time; type e.g. CLAIM_RELEASED.",
            obj_schema(since=_STR, actor=_STR, type=_STR, limit=_LIMIT),
            audit_query,
            _render_audit,
            listed=False,  # the human's record (agentcoord tail, the console), not a work tool
        ),
    ]
