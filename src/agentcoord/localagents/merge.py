"""Pure rules over agent records: effective status, the registered + local merge, routing.

Values in, values out (docs/architecture.md "Pure rules, thin I/O"). The discovery tools
(``list_agents``, ``get_agent``, ``find_agents(capability=...)``) and the dispatch tools call these;
docs/localagents.md "Routing".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from agentcoord.localagents.index import Package
from agentcoord.localagents.sessions import LiveSession, package_status
from agentcoord.stores.agentrecords import AgentRecord

__all__ = [
    "available_capacity",
    "effective_status",
    "find_by_capability",
    "iso",
    "local_records",
    "merged_records",
    "parse_iso",
    "pick_for_capability",
    "registered_view",
]

HTTP_STATUSES = ("online", "offline", "degraded")
LOCAL_STATUSES = ("online", "idle")
_IDLE: tuple[str, LiveSession | None] = ("idle", None)  # no live session: every package idle


def iso(ts: float) -> str:
    """Unix seconds as an RFC 3339 UTC string."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(text: str) -> float | None:
    """RFC 3339 to unix seconds; None when empty or unparsable."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def effective_status(record: AgentRecord, now: float) -> str:
    """A registered agent's status as callers should see it.

    ``offline`` once the last heartbeat is older than its ``heartbeat_ttl`` (or it never sent
    one, or it said so); otherwise what it last reported (``online`` or ``degraded``).
    """
    beat = parse_iso(record.last_heartbeat) or parse_iso(record.registered_at)
    if beat is None or now - beat > record.heartbeat_ttl:
        return "offline"
    return record.status if record.status in HTTP_STATUSES else "online"


def available_capacity(record: AgentRecord) -> int:
    """Free job slots an HTTP agent reports in ``metadata.available_capacity`` (default 1)."""
    raw = record.metadata.get("available_capacity", 1)
    if isinstance(raw, bool):
        return int(raw)
    try:
        return int(raw)
    except (TypeError, ValueError):
        return 0


def registered_view(record: AgentRecord, now: float) -> dict[str, Any]:
    """A registered record as the tools show it, with ``effective_status``."""
    out = record.as_dict()
    out["effective_status"] = effective_status(record, now)
    out["available_capacity"] = 1 if record.transport == "local" else available_capacity(record)
    if record.transport == "local":
        out["dispatchable"] = True
    else:
        out["dispatchable"] = out["effective_status"] == "online" and out["available_capacity"] > 0
    return out


def local_records(
    packages: Iterable[Package], sessions: Sequence[LiveSession], ttl: float, now: float
) -> list[dict[str, Any]]:
    """AgentRecord-shaped dicts for indexed packages (``transport="local"``:
    docs/localagents.md "Records")."""
    out: list[dict[str, Any]] = []
    for pkg in packages:
        status, session = package_status(pkg.path_text, sessions, ttl, now) if sessions else _IDLE
        meta: dict[str, Any] = {
            "package_path": pkg.path_text,
            "description": pkg.manifest.description,
            "cold_start_on_dispatch": status == "idle",
        }
        if pkg.manifest.name:
            meta["manifest_name"] = pkg.manifest.name
        if session is not None:
            meta["session_id"] = session.session_id
            meta["session_pid"] = session.pid
            meta["last_activity"] = iso(session.last_activity)
        out.append(
            {
                "agent_id": pkg.agent_id,
                "agent_name": pkg.manifest.name or pkg.agent_id,
                "agent_type": "local",
                "capabilities": list(pkg.tags),
                "endpoint": "",
                "transport": "local",
                "status": status,
                "effective_status": status,
                "metadata": meta,
                "registered_at": "",
                "last_heartbeat": "",
                "heartbeat_ttl": int(ttl),
                "dispatchable": True,
                "available_capacity": 1,
            }
        )
    return out


def merged_records(
    registered: Iterable[AgentRecord],
    local: Iterable[dict[str, Any]],
    *,
    now: float,
    agent_type: str | None = None,
    capability: str | None = None,
    status: str | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """Registered agents first, then local ones not shadowed by a registered id; filtered.

    ``status`` matches ``effective_status``; ``capability`` matches a tag exactly.
    """
    views = [registered_view(r, now) for r in registered]
    seen = {v["agent_id"] for v in views}
    views.sort(key=lambda v: str(v["agent_id"]))
    rows = views + [dict(rec) for rec in local if rec["agent_id"] not in seen]
    out: list[dict[str, Any]] = []
    for row in rows:
        if agent_type and row.get("agent_type") != agent_type:
            continue
        if capability and capability not in row.get("capabilities", []):
            continue
        if status and row.get("effective_status") != status:
            continue
        out.append(row)
        if len(out) >= max(0, limit):
            break
    return out


def _rank(row: dict[str, Any]) -> tuple[int, int, str]:
    warm = 0 if row.get("effective_status") == "online" else 1
    return (warm, -int(row.get("available_capacity", 0)), str(row.get("agent_id")))


def find_by_capability(rows: Iterable[dict[str, Any]], capability: str) -> list[dict[str, Any]]:
    """Rows advertising ``capability``, warm first, then by free capacity, then id."""
    return sorted((r for r in rows if capability in r.get("capabilities", [])), key=_rank)


def pick_for_capability(rows: Iterable[dict[str, Any]], capability: str) -> dict[str, Any] | None:
    """The best dispatch target: HTTP agents only when online with capacity; local always."""
    candidates = [
        r
        for r in find_by_capability(rows, capability)
        if r.get("transport") == "local"
        or (r.get("effective_status") == "online" and int(r.get("available_capacity", 0)) > 0)
    ]
    return candidates[0] if candidates else None
