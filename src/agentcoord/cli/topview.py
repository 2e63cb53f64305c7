"""What ``agentcoord top`` shows, as rows (pure, but :func:`fetch`; docs/top.md).

One :class:`Snapshot` of the daemon (the agents with their states, the open prompts, the
claims, the standing approvals) is fetched as the human, the same calls the CLI's views make,
and turned into the rows of each table: what waits on the human first (prompts, then sessions
waiting for permission or input, longest first), the agents, the claims (each with the other
agents whose focus names a file held for writing), the conflicts between worktrees the daemon
tracks (the ``check_conflicts`` rows the console shows too: docs/claims.md "Conflicts between
worktrees"), the approvals.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentcoord.kernel.duration import format_duration
from agentcoord.kernel.timetext import human_time
from agentcoord.leases.conflictnotes import verdict_text
from agentcoord.leases.keytext import display_key, repo_name

__all__ = [
    "Snapshot",
    "WaitRow",
    "agent_rows",
    "approval_rows",
    "budget_line",
    "claim_rows",
    "conflict_rows",
    "fetch",
    "waiting_rows",
]


@dataclass(frozen=True)
class Snapshot:
    """The daemon's state as ``top`` last read it."""

    agents: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    approvals: list[dict[str, Any]] = field(default_factory=list)
    budgets: dict[str, Any] = field(default_factory=dict)
    conflicts: list[dict[str, Any]] = field(default_factory=list)  # check_conflicts rows
    held: list[dict[str, Any]] = field(default_factory=list)  # dialogs held for the human
    at: float = 0.0


@dataclass(frozen=True)
class WaitRow:
    """One thing that waits on the human: a prompt (``key`` its id) or a session (its name)."""

    kind: str  # "prompt" or "session"
    key: str
    who: str
    what: str
    since: float | None

    def cells(self, now: float) -> tuple[str, str, str, str]:
        return (self.kind, self.who, self.what, _age(self.since, now))


def _age(since: float | None, now: float) -> str:
    if since is None:
        return "-"
    return format_duration(max(0, round(now - since)))


def _epoch(value: Any) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value:
        import datetime as dt

        try:
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def waiting_rows(snap: Snapshot) -> list[WaitRow]:
    """Prompts (oldest first), then sessions waiting for permission or input (longest first)."""
    prompts = [
        WaitRow(
            "prompt",
            str(p["id"]),
            str(p.get("agent", "")),
            str(p.get("question", ""))
            + (f" [{' | '.join(p['choices'])}]" if p.get("choices") else ""),
            _epoch(p.get("created_at")),
        )
        for p in snap.prompts
        if p.get("phase", "Open") == "Open"
    ]
    held = {str(h.get("session")) for h in snap.held}
    sessions = [
        WaitRow(
            "session",
            str(a["name"]),
            str(a["name"]),
            # A held dialog is answered here (a); any other in the session (docs/top.md).
            str(a["state"]) + (" (held for you: a answers)" if a["name"] in held else ""),
            _epoch(a.get("state_since")),
        )
        for a in snap.agents
        if str(a.get("state", "")).startswith("waiting")
    ]
    prompts.sort(key=lambda r: r.since or 0.0)
    sessions.sort(key=lambda r: r.since or 0.0)
    return prompts + sessions


def agent_rows(snap: Snapshot, now: float) -> list[tuple[str, str, str, str]]:
    """name, state (or phase) with how long, kind, focus."""
    rows = []
    for a in snap.agents:
        focus = a.get("focus") or {}
        state = a.get("state") or a.get("phase") or a.get("effective_status") or "-"
        since = _epoch(a.get("state_since"))
        shown = f"{state} ({_age(since, now)})" if since is not None else str(state)
        intent = focus.get("intent") if isinstance(focus, dict) else ""
        rows.append((str(a["name"]), shown, str(a.get("transport", "session")), intent or "-"))
    return rows


def _wanted_by(claim: dict[str, Any], agents: Sequence[dict[str, Any]]) -> list[str]:
    """Agents other than the holder whose focus names the claimed file."""
    if claim.get("mode") != "write":
        return []
    path = str(claim.get("path") or "")
    if not path:
        return []
    out = []
    for a in agents:
        if a.get("name") == claim.get("agent"):
            continue
        focus = a.get("focus") or {}
        files = focus.get("files", []) if isinstance(focus, dict) else []
        if any(isinstance(f, str) and f and (f == path or f.endswith("/" + path)) for f in files):
            out.append(str(a["name"]))
    return out


def claim_rows(snap: Snapshot, now: float) -> list[tuple[str, str, str, str, str]]:
    """key (``repo:path``), holder, mode, expires in, others' focus (other agents whose
    focus names a file held for writing: not a conflict, a heads-up)."""
    rows = []
    for c in snap.claims:
        key = display_key(c["resource_key"], c.get("worktree"), c.get("branch"))
        expires = _epoch(c.get("expires_at"))
        left = format_duration(max(0, round(expires - now))) if expires is not None else "-"
        wanted = _wanted_by(c, snap.agents)
        focus = ("focus on it: " + ", ".join(wanted)) if wanted else "-"
        rows.append((key, str(c["agent"]), str(c["mode"]), left, focus))
    return rows


def _tree(side: dict[str, Any]) -> str:
    top = str(side.get("worktree") or "")
    name = os.path.basename(top.rstrip("/")) or top
    who = f" {', '.join(side['sessions'])}" if side.get("sessions") else ""
    return f"{name} ({side.get('branch') or 'detached'}){who}"


def conflict_rows(snap: Snapshot, now: float) -> list[tuple[str, str, str, str, str]]:
    """repository, the two worktrees (branch, sessions), the files both change, what git says,
    since how long: the daemon's tracked conflicts, as the console's "Conflicts" shows them."""
    rows = []
    for o in snap.conflicts:
        found = o.get("conflicts")
        verdict = verdict_text(None if found is None else tuple(found))
        rows.append(
            (
                repo_name(str(o.get("repo") or "")),
                f"{_tree(o['a'])} and {_tree(o['b'])}",
                ", ".join(o.get("files") or []),
                verdict,
                _age(_epoch(o.get("since")), now),
            )
        )
    return rows


def approval_rows(snap: Snapshot) -> list[tuple[str, str, str, str, str]]:
    """id, rule, scope, until, uses."""
    out = []
    for r in snap.approvals:
        scope = r.get("scope")
        shown = f"{scope} {r.get('label')}" if scope in ("repository", "session") else "all"
        out.append(
            (
                str(r["id"]),
                str(r["rule"]),
                shown,
                human_time(r.get("expires_at")),
                str(r.get("uses", 0)),
            )
        )
    return out


def budget_line(budgets: dict[str, Any]) -> str:
    """``sessions 3/10 · agents 1/4 · spend $0.12/$5.00``; a ceiling reached is marked ``!``."""
    parts = []
    for name, key, fmt in (
        ("sessions", "sessions", str),
        ("agents", "agents", str),
        ("spend", "spend_usd", lambda v: f"${float(v):.2f}"),
    ):
        v = budgets.get(key)
        if not isinstance(v, dict):
            continue
        used, ceiling = v.get("used", 0), v.get("ceiling", 0)
        mark = "!" if ceiling and used >= ceiling else ""
        parts.append(f"{name} {fmt(used)}" + (f"/{fmt(ceiling)}{mark}" if ceiling else ""))
    return " · ".join(parts)


def fetch(cfg: Any) -> Snapshot:
    """One snapshot, read as the human over the unix socket (blocking: run it in a thread)."""
    from agentcoord.cli.allow import METHOD
    from agentcoord.cli.views import call_tool
    from agentcoord.client.rpc import call_unix
    from agentcoord.identity.humanproof import read_human_token

    agents, _ = call_tool(cfg, "list_agents", {})
    prompts, _ = call_tool(cfg, "list_prompts", {})
    claims, _ = call_tool(cfg, "check_claims", {})
    token = read_human_token(cfg.state_dir)
    approvals = call_unix(cfg.socket_path, METHOD, {"op": "list"}, token=token)
    held = call_unix(cfg.socket_path, METHOD, {"op": "held"}, token=token)
    budgets = call_unix(cfg.socket_path, "agentcoord/budgets", {}, token=token)
    conflicts, _ = call_tool(cfg, "check_conflicts", {"every": True})
    return Snapshot(
        agents=list(agents.get("agents", [])),
        prompts=list(prompts.get("prompts", [])),
        claims=list(claims.get("claims", [])),
        approvals=list(approvals.get("approvals", [])),
        budgets=dict(budgets),
        conflicts=list(conflicts.get("overlaps", [])),
        held=list(held.get("held", [])),
        at=time.time(),
    )
