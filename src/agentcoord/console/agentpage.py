"""One agent's page in the console, ``/console/agents/<name>`` (docs/console.md "An agent's
page"): its state and focus, its claims, the messages to and from it, the audit lines that name
it, and, for a Claude Code session whose process is alive, the last turns of its transcript.

Nothing here trusts a path from the request: the name only selects an Agent; the transcript is
found from that Agent's session-id label and the working directory of its live ``claude``
process (:mod:`agentcoord.console.transcripts`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcoord.console.auditrows import MESSAGE_TYPES, audit_row
from agentcoord.console.transcripts import last_turns, transcript_path
from agentcoord.errors import NotFound
from agentcoord.kernel.timetext import human_time
from agentcoord.leases.filekeys import split_file_key
from agentcoord.leases.keytext import display_key, repo_name
from agentcoord.stores.objects.agentdirectory import PROC_LABEL, SESSION_LABEL, parse_proc

if TYPE_CHECKING:
    from agentcoord.localagents.sessions import LiveSession
    from agentcoord.stores.agentsource import AgentSource
    from agentcoord.stores.audit import AuditLog
    from agentcoord.stores.kv import ClaimStore, FocusStore

__all__ = ["AgentPages", "SiteLookup", "claim_row"]

_RECENT_S = 24 * 3600.0  # how far back the page looks for audit lines naming the agent
_ABOUT = 60  # audit lines shown
_MESSAGES = 30  # message events shown

# (key, token) -> the holder's (worktree, branch) for a file claim, when this daemon knows them
SiteLookup = Callable[[str, int | None], tuple[str | None, str | None] | None]


def claim_row(key: str, holder: Any, site: SiteLookup) -> dict[str, Any]:
    """A claim as the console shows it: ``repo:path`` (with the holder's worktree and branch
    where known), the repository on its own for grouping, and the real key."""
    where = site(key, holder.token) or (None, None)
    common, path = split_file_key(key)
    return {
        "resource_key": key,
        "key": display_key(key, *where),
        "repo": repo_name(common) if common else "",
        "path": path,
        "worktree": where[0] or "",
        "agent": holder.agent,
        "mode": holder.mode,
        "expires_at": human_time(holder.expires),
        "purpose": holder.purpose,
    }


class AgentPages:
    """Builds one agent's page from the services the console is given."""

    def __init__(
        self,
        *,
        agents: AgentSource,
        focus: FocusStore,
        claims: ClaimStore,
        audit: AuditLog,
        sessions: Callable[[], Sequence[LiveSession]],
        claude_dir: Path | None,
        site: SiteLookup,
    ) -> None:
        self._agents = agents
        self._focus = focus
        self._claims = claims
        self._audit = audit
        self._sessions = sessions
        self._claude_dir = claude_dir
        self._site = site

    async def live_session(self, row: dict[str, Any]) -> LiveSession | None:
        """The live ``claude`` process of an Agent row (by its session-proc label), or None."""
        proc = parse_proc((row.get("labels") or {}).get(PROC_LABEL))
        if proc is None:
            return None
        found = await asyncio.to_thread(self._sessions)
        return next((s for s in found if s.pid == proc[0]), None)

    async def page(self, name: str) -> dict[str, Any]:
        row = await self._agents.get_agent(name)
        held = [claim_row(k, h, self._site) for k, h in self._claims.check("", agent=name)]
        about = await self._about(name)
        if row is None and not held and not about:
            raise NotFound(f"no agent named {name!r} (the console's agents list names them)")
        row = row or {"name": name, "labels": {}}
        focus = self._focus.get(name)
        live = await self.live_session(row)
        session_id = (row.get("labels") or {}).get(SESSION_LABEL, "")
        path = None
        if live is not None and session_id and self._claude_dir is not None:
            path = transcript_path(self._claude_dir, live.cwd, session_id)
        return {
            "name": name,
            "phase": row.get("phase", ""),
            "state": row.get("state", ""),
            "state_since": human_time(row["state_since"]) if row.get("state_since") else "",
            "ended_at": human_time(row["ended_at"]) if row.get("ended_at") else "",
            "reason": row.get("reason", ""),
            "profile": row.get("profile", ""),
            "focus": focus.intent if focus else "",
            "files": list(focus.files) if focus else [],
            "cwd": live.cwd if live else "",
            "session_id": session_id,
            "claims": held,
            "messages": [r for r in about if r["type"] in MESSAGE_TYPES][-_MESSAGES:],
            "audit": about[-_ABOUT:],
            "transcript": "found" if path is not None and path.is_file() else "",
            "turns": await asyncio.to_thread(last_turns, path),
        }

    async def _about(self, name: str) -> list[dict[str, Any]]:
        """The audit lines that name ``name`` in the last day, oldest first: its own events
        (filtered by the stream's subject) and the ones that name it in a detail."""
        own = await self._audit.query(agent=name, limit=_ABOUT)
        recent = await self._audit.query(since=time.time() - _RECENT_S, limit=5000)
        rows: dict[Any, dict[str, Any]] = {}
        for e in (*own, *recent):
            event = {"type": e.type, "agent": e.agent, "ts": e.ts, "data": e.data, "seq": e.seq}
            row = audit_row(event)
            if name in row["names"]:
                rows[e.seq] = row
        return [rows[k] for k in sorted(rows)]
