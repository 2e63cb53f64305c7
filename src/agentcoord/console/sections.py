"""What each part of the daemon shows in the console, registered once at start-up."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from agentcoord.eventtext import render_event

if TYPE_CHECKING:
    from agentcoord.daemon.app import App
    from agentcoord.kernel.caller import Caller

__all__ = ["install_sections"]


def install_sections(app: App) -> None:
    """Register the console sections and the prompt answerer for the parts ``app`` has."""
    claim_store, focus, agent_source, local = app.claims, app.focus, app.agents, app.local_agents

    if claim_store is not None:

        async def claims() -> list[dict[str, Any]]:
            return [
                {
                    "resource_key": key,
                    "agent": h.agent,
                    "mode": h.mode,
                    "expires_at": time.strftime("%H:%M:%S", time.localtime(h.expires)),
                    "purpose": h.purpose,
                }
                for key, h in claim_store.check("")
            ]

        app.console_sections["claims"] = claims

    async def agents() -> list[dict[str, Any]]:
        held: dict[str, list[str]] = {}
        if claim_store is not None:
            for key, h in claim_store.check(""):
                held.setdefault(h.agent, []).append(key)
        rows = []
        for row in await agent_source.list_agents() if agent_source is not None else []:
            f = focus.get(row["name"]) if focus is not None else None
            rows.append(
                {
                    "name": row["name"],
                    "status": row.get("phase", ""),
                    "focus": f.intent if f else "",
                    "claims": held.get(row["name"], []),
                    # Ended sessions are sent too; the page shows them on request.
                    "ended": row.get("phase") == "Ended",
                    "ended_at": row.get("ended_at", ""),
                    "reason": row.get("reason", ""),
                }
            )
        if local is not None:
            await local.refresh_sessions()
            rows += [
                {"name": r["agent_id"], "status": r["effective_status"], "focus": "", "claims": []}
                for r in local.merged(limit=200)
            ]
        return rows

    app.console_sections["agents"] = agents

    messaging = app.messaging

    async def waits() -> list[dict[str, Any]]:
        """Who waits on whom: open prompts, pending handoffs, recent claim contention."""
        out: list[dict[str, Any]] = []
        if messaging is not None:
            out += [
                {"waiter": p.agent, "on": "you", "kind": f"prompt {p.id}", "since": p.created_at}
                for p in await messaging.prompts.list(open_only=True)
            ]
            out += [
                {"waiter": o.from_agent, "on": o.to_agent, "kind": f"handoff {o.task}"}
                for o in messaging.offers.pending()
            ]
        if claim_store is not None:
            out += [
                {"waiter": agent, "on": holder, "kind": f"claim {key}", "since": when}
                for agent, key, holder, when in claim_store.contention()
            ]
        return out

    app.console_sections["waits"] = waits
    audit_log = app.audit
    if audit_log is not None:

        async def audit() -> list[dict[str, Any]]:
            rows = []
            for e in await audit_log.query(limit=50):
                row = {"type": e.type, "agent": e.agent, "ts": e.as_dict()["ts"], "data": e.data}
                rows.append({**row, "text": render_event(row)})  # the CLI's line, as is
            return rows

        app.console_sections["audit"] = audit
    if messaging is not None:
        from agentcoord.tools.humans import answer_prompt

        async def prompts() -> list[dict[str, Any]]:
            return [
                {
                    "id": p.id,
                    "kind": p.kind,
                    "from": p.agent,
                    "question": p.question,
                    "context": p.context,
                    "choices": p.choices,
                    "since": p.created_at,
                }
                for p in await messaging.prompts.list(open_only=True)
            ]

        async def channels() -> list[dict[str, Any]]:
            now = time.time()
            return [c.view(now) for c in await messaging.channels.list()]

        async def answer(prompt_id: str, value: Any, human: Caller) -> None:
            await answer_prompt(messaging, prompt_id, str(value), human)

        app.console_sections.update(prompts=prompts, channels=channels)
        app.prompt_answerer = answer
