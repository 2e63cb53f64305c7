"""What each part of the daemon shows in the console, read from the services it is built with.

Times and claim keys are written here as everywhere people read them (agentcoord.kernel.timetext,
agentcoord.leases.keytext; docs/architecture.md "Times and keys shown to people"); a claim row keeps
its real key beside the shown one."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agentcoord.errors import InvalidArguments, NotFound
from agentcoord.kernel.timetext import human_time
from agentcoord.leases.keytext import display_key
from agentcoord.text.events import render_event

if TYPE_CHECKING:
    from agentcoord.approvals import Approvals
    from agentcoord.budgets import Budgets
    from agentcoord.kernel.caller import Caller
    from agentcoord.localagents import LocalAgents
    from agentcoord.messaging import Messaging
    from agentcoord.stores.agentsource import AgentSource
    from agentcoord.stores.audit import AuditLog
    from agentcoord.stores.kv import ClaimStore, FocusStore

__all__ = ["ConsoleSections"]

Section = Callable[[], Awaitable[Any]]
# (key, token) -> the holder's (worktree, branch) for a file claim, when this daemon knows them
SiteLookup = Callable[[str, int | None], tuple[str | None, str | None] | None]


def _no_site(key: str, token: int | None) -> None:
    return None


class ConsoleSections:
    """The console's sections (agents, claims, channels, prompts, waits, audit) and its one
    write: the human answering a prompt."""

    def __init__(
        self,
        *,
        claims: ClaimStore,
        focus: FocusStore,
        agents: AgentSource,
        local_agents: LocalAgents,
        messaging: Messaging,
        audit: AuditLog,
        site: SiteLookup = _no_site,
        approvals: Approvals | None = None,
        budgets: Budgets | None = None,
    ) -> None:
        self._claims = claims
        self._site = site
        self._focus = focus
        self._agents = agents
        self._local = local_agents
        self._messaging = messaging
        self._audit = audit
        self._approvals = approvals
        self._budgets = budgets
        self.providers: dict[str, Section] = {
            "budgets": self.budgets,
            "approvals": self.approvals,
            "claims": self.claims,
            "agents": self.agents,
            "waits": self.waits,
            "audit": self.audit,
            "prompts": self.prompts,
            "channels": self.channels,
        }

    async def claims(self) -> list[dict[str, Any]]:
        return [
            {
                "resource_key": key,
                "key": display_key(key, *(self._site(key, h.token) or (None, None))),
                "agent": h.agent,
                "mode": h.mode,
                "expires_at": human_time(h.expires),
                "purpose": h.purpose,
            }
            for key, h in self._claims.check("")
        ]

    async def agents(self) -> list[dict[str, Any]]:
        held: dict[str, list[str]] = {}
        for key, h in self._claims.check(""):
            held.setdefault(h.agent, []).append(display_key(key))
        rows = []
        for row in await self._agents.list_agents():
            f = self._focus.get(row["name"])
            rows.append(
                {
                    "name": row["name"],
                    "status": row.get("phase", ""),
                    # What it does now (docs/activity.md): working, waiting for ..., idle.
                    "state": row.get("state", ""),
                    "state_since": human_time(row["state_since"]) if row.get("state_since") else "",
                    "focus": f.intent if f else "",
                    "claims": held.get(row["name"], []),
                    # Ended sessions are sent too; the page shows them on request.
                    "ended": row.get("phase") == "Ended",
                    "ended_at": human_time(row["ended_at"]) if row.get("ended_at") else "",
                    "reason": row.get("reason", ""),
                }
            )
        await self._local.refresh_sessions()
        rows += [
            {"name": r["agent_id"], "status": r["effective_status"], "focus": "", "claims": []}
            for r in self._local.merged(limit=200)
        ]
        return rows

    async def waits(self) -> list[dict[str, Any]]:
        """Who waits on whom: open prompts, sessions waiting for permission or input, pending
        handoffs, recent claim contention."""
        m = self._messaging
        out: list[dict[str, Any]] = [
            {
                "waiter": p.agent,
                "on": "you",
                "kind": f"prompt {p.id}",
                "since": human_time(p.created_at),
            }
            for p in await m.open_prompts()
        ]
        out += [
            {
                "waiter": row["name"],
                "on": "you",
                "kind": row["state"],
                "since": human_time(row.get("state_since")),
                "session": True,
            }
            for row in await self._agents.list_agents()
            if str(row.get("state", "")).startswith("waiting")
        ]
        out += [
            {"waiter": o.from_agent, "on": o.to_agent, "kind": f"handoff {o.task}"}
            for o in m.pending_handoffs()
        ]
        out += [
            {
                "waiter": agent,
                "on": holder,
                "kind": f"claim {display_key(key)}",
                "since": human_time(when),
            }
            for agent, key, holder, when in self._claims.contention()
        ]
        return out

    async def audit(self) -> list[dict[str, Any]]:
        rows = []
        for e in await self._audit.query(limit=50):
            row = {"type": e.type, "agent": e.agent, "ts": e.as_dict()["ts"], "data": e.data}
            rows.append({**row, "text": render_event(row)})  # the CLI's line, as is
        return rows

    async def prompts(self) -> list[dict[str, Any]]:
        return [
            {
                "id": p.id,
                "kind": p.kind,
                "from": p.agent,
                "question": p.question,
                "context": p.context,
                "choices": p.choices,
                "since": human_time(p.created_at),
            }
            for p in await self._messaging.open_prompts()
        ]

    async def channels(self) -> list[dict[str, Any]]:
        now = time.time()
        return [c.view(now) for c in await self._messaging.all_channels()]

    async def budgets(self) -> dict[str, Any]:
        """Each ceiling and what is used of it (docs/budgets.md)."""
        return {} if self._budgets is None else await self._budgets.report()

    async def approvals(self) -> list[dict[str, Any]]:
        """The standing approvals (docs/approvals.md), with their times as people read them."""
        if self._approvals is None:
            return []
        return [
            {**row, "until": human_time(row["expires_at"]), "last": human_time(row["last_used"])}
            if row.get("last_used")
            else {**row, "until": human_time(row["expires_at"]), "last": ""}
            for row in await self._approvals.listing()
        ]

    async def grant(self, body: dict[str, Any], human: Caller) -> dict[str, Any]:
        """The human grants an approval from the console (the CLI's ``allow``)."""
        if self._approvals is None:
            raise NotFound("standing approvals are not served by this daemon")
        values = {k: body.get(k) or None for k in ("rule", "repo", "session", "duration")}
        if not isinstance(values["rule"], str) or any(
            v is not None and not isinstance(v, str) for v in values.values()
        ):
            raise InvalidArguments("rule (and repo, session, duration) are strings")
        return await self._approvals.grant(
            values["rule"],
            human,
            repo=values["repo"],
            session=values["session"],
            duration=values["duration"],
        )

    async def revoke(self, approval_id: str, human: Caller) -> dict[str, Any]:
        if self._approvals is None:
            raise NotFound(f"no approval {approval_id!r}")
        return await self._approvals.revoke(approval_id, human)

    async def answer(self, prompt_id: str, value: Any, human: Caller) -> None:
        """The human's answer from the console (the same path as the answer_prompt tool)."""
        await self._messaging.answer_prompt(prompt_id, str(value), human)
