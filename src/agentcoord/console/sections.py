"""What each part of the daemon shows in the console, read from the services it is built with.

Times and claim keys are written here as everywhere people read them (agentcoord.kernel.timetext,
agentcoord.leases.keytext; docs/architecture.md "Times and keys shown to people"); a claim row keeps
its real key beside the shown one."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcoord.approvals.fromprompt import grant_request, permission_call
from agentcoord.console.agentpage import AgentPages, SiteLookup, claim_row
from agentcoord.console.auditrows import audit_row
from agentcoord.console.conflictsource import ConflictSource, WorktreeConflicts
from agentcoord.console.queue import queue_items
from agentcoord.errors import InvalidArguments, NotFound
from agentcoord.kernel.timetext import human_time
from agentcoord.leases.filekeys import FILE_PREFIX, FileKeys, split_file_key
from agentcoord.leases.keytext import display_key, repo_name
from agentcoord.stores.objects.agentdirectory import PROC_LABEL, parse_proc

if TYPE_CHECKING:
    from agentcoord.approvals import Approvals
    from agentcoord.budgets import Budgets
    from agentcoord.kernel.caller import Caller
    from agentcoord.localagents import LocalAgents
    from agentcoord.localagents.sessions import LiveSession
    from agentcoord.messaging import Messaging
    from agentcoord.stores.agentsource import AgentSource
    from agentcoord.stores.audit import AuditLog
    from agentcoord.stores.kv import ClaimStore, FocusStore

__all__ = ["AUDIT_ROWS", "ConsoleSections"]

AUDIT_ROWS = 500  # audit lines the page loads, then follows live

Section = Callable[[], Awaitable[Any]]


def _no_site(key: str, token: int | None) -> None:
    return None


def _pid(row: dict[str, Any]) -> int | None:
    proc = parse_proc((row.get("labels") or {}).get(PROC_LABEL))
    return proc[0] if proc else None


class ConsoleSections:
    """The console's sections (queue, agents, claims, conflicts, channels, prompts, waits,
    approvals, budgets, audit), one agent's page, and the human's writes: answering a prompt,
    granting and revoking a standing approval."""

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
        claude_dir: Path | None = None,
        file_keys: FileKeys,
        conflicts: ConflictSource | None = None,
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
        self._conflicts = conflicts or WorktreeConflicts()
        self._repos: dict[str, str] = {}  # a session's cwd -> its repository's name
        self._file_keys = file_keys  # the leases service's
        self.pages = AgentPages(
            agents=agents,
            focus=focus,
            claims=claims,
            audit=audit,
            sessions=self._live_sessions,
            claude_dir=claude_dir,
            site=site,
        )
        self.providers: dict[str, Section] = {
            "budgets": self.budgets,
            "approvals": self.approvals,
            "queue": self.queue,
            "claims": self.claims,
            "conflicts": self.conflicts,
            "agents": self.agents,
            "waits": self.waits,
            "audit": self.audit,
            "prompts": self.prompts,
            "channels": self.channels,
        }

    def _live_sessions(self) -> Sequence[LiveSession]:
        """The live Claude Code sessions (the local agents' probe: psutil, cached; blocking)."""
        return self._local.probe.sessions()

    def _repo_of(self, cwd: str) -> str:
        """The name of the repository ``cwd`` is in, else the directory's (runs git once per
        directory; blocking)."""
        if cwd not in self._repos:
            key = self._file_keys.file_key(os.path.join(cwd, ".agentcoord-console"), None)
            self._repos[cwd] = repo_name(key.repo) if key.repo else os.path.basename(cwd)
        return self._repos[cwd]

    async def _session_repos(self, rows: list[dict[str, Any]]) -> dict[str, str]:
        """Agent name -> its session's repository, for the rows given (live sessions only)."""
        by_pid = {s.pid: s.cwd for s in await asyncio.to_thread(self._live_sessions)}

        def resolve() -> dict[str, str]:
            out = {}
            for row in rows:
                pid = _pid(row)
                live = by_pid.get(pid) if pid is not None else None
                if live is not None:
                    out[row["name"]] = self._repo_of(live)
            return out

        return await asyncio.to_thread(resolve)

    async def claims(self) -> list[dict[str, Any]]:
        """Every live claim, file claims grouped by repository, shown as ``repo:path``."""
        rows = [claim_row(key, h, self._site) for key, h in self._claims.check("")]
        return sorted(rows, key=lambda r: (r["repo"] == "", r["repo"], r["key"]))

    async def conflicts(self) -> list[dict[str, Any]]:
        """Worktrees of one repository changing the same files (docs/claims.md "Conflicts
        between worktrees"), from :mod:`agentcoord.console.conflictsource`, the one place the
        console reads them from."""
        directories: set[str] = set()
        for key, h in self._claims.check(FILE_PREFIX):
            common, _ = split_file_key(key)
            if common and os.path.basename(common) == ".git":
                directories.add(os.path.dirname(common))
            where = self._site(key, h.token)
            if where and where[0]:
                directories.add(where[0])
        directories |= {s.cwd for s in await asyncio.to_thread(self._live_sessions)}
        return await self._conflicts.rows(directories)

    async def queue(self) -> list[dict[str, Any]]:
        """What waits on the human, in the order the page's queue shows it."""
        rows = await self._agents.list_agents()
        waiting = [r for r in rows if str(r.get("state", "")).startswith("waiting")]
        repos = await self._session_repos(waiting) if waiting else {}
        held = {r["session"] for r in self._approvals.held.listing()} if self._approvals else set()
        return queue_items(await self._messaging.open_prompts(), waiting, repos, held)

    async def agents(self) -> list[dict[str, Any]]:
        held: dict[str, list[str]] = {}
        for key, h in self._claims.check(""):
            held.setdefault(h.agent, []).append(display_key(key))
        every = await self._agents.list_agents()
        repos = await self._session_repos([r for r in every if r.get("phase") != "Ended"])
        rows = []
        for row in every:
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
                    "repo": repos.get(row["name"], ""),
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
        """The newest :data:`AUDIT_ROWS` events, oldest first, each as the CLI's line with the
        names and repositories the page's filters use (agentcoord.console.auditrows)."""
        return [
            audit_row({"type": e.type, "agent": e.agent, "ts": e.ts, "data": e.data, "seq": e.seq})
            for e in await self._audit.query(limit=AUDIT_ROWS)
        ]

    async def agent_page(self, name: str) -> dict[str, Any]:
        """One agent's page (agentcoord.console.agentpage); NotFound for a name nothing knows."""
        return await self.pages.page(name)

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
        names = ("rule", "repo", "session", "duration", "repo_of")
        values = {k: body.get(k) or None for k in names}
        if not isinstance(values["rule"], str) or any(
            v is not None and not isinstance(v, str) for v in values.values()
        ):
            raise InvalidArguments("rule (and repo, session, duration, repo_of) are strings")
        if values["repo_of"] is not None:
            # "Allow for this repository": the directory is the session's own, read from its
            # process here, never taken from the request (docs/console.md "The queue").
            values["repo"] = await self._session_dir(values["repo_of"])
        return await self._approvals.grant(
            values["rule"],
            human,
            repo=values["repo"],
            session=values["session"],
            duration=values["duration"],
        )

    async def _session_dir(self, name: str) -> str:
        row = await self._agents.get_agent(name)
        live = await self.pages.live_session(row) if row is not None else None
        if live is None:
            raise NotFound(f"no live session named {name!r} to take the repository from")
        return live.cwd

    async def revoke(self, approval_id: str, human: Caller) -> dict[str, Any]:
        if self._approvals is None:
            raise NotFound(f"no approval {approval_id!r}")
        return await self._approvals.revoke(approval_id, human)

    async def answer_held(self, session: str, body: dict[str, Any], human: Caller) -> None:
        """The human answers a session's held permission dialog "allow" or "deny"
        (docs/approvals.md "Answering an open dialog")."""
        if self._approvals is None:
            raise NotFound("standing approvals are not served by this daemon")
        verdict = body.get("answer")
        if not isinstance(verdict, str):
            raise InvalidArguments('body must be {"answer": "allow" | "deny"}')
        self._approvals.answer_held(session, verdict, human)

    async def allow_for(self, prompt_id: str, body: dict[str, Any], human: Caller) -> None:
        """Allow a relayed permission prompt and grant the rule it offers, as ``agentcoord
        answer ID --allow-for D [--repo|--session]`` does (docs/approvals.md "From a permission
        prompt"): ``{duration?, scope: "repo" | "session" | "all"}``. The grant comes first;
        a refused one answers nothing."""
        if self._approvals is None:
            raise NotFound("standing approvals are not served by this daemon")
        scope, duration = body.get("scope", "all"), body.get("duration") or "1h"
        if scope not in ("repo", "session", "all") or not isinstance(duration, str):
            raise InvalidArguments('body must be {"scope": "repo" | "session" | "all", "duration"}')
        found = [p for p in await self._messaging.open_prompts() if p.id == prompt_id]
        if not found:
            raise NotFound(f"no open prompt {prompt_id!r}")
        p = found[0]
        call = permission_call({"id": p.id, "question": p.question, "context": p.context})
        if scope == "repo" and not call.cwd:
            # The relay did not say where it works: the session's own directory, read here.
            call = replace(call, cwd=await self._session_dir(call.session))
        wanted = grant_request(
            call, repo="" if scope == "repo" else None, session=scope == "session"
        )
        await self._approvals.grant(
            wanted["rule"],
            human,
            repo=wanted.get("repo"),
            session=wanted.get("session"),
            duration=duration,
        )
        await self._messaging.answer_prompt(prompt_id, "allow", human)

    async def answer(self, prompt_id: str, value: Any, human: Caller) -> None:
        """The human's answer from the console (the same path as the answer_prompt tool)."""
        await self._messaging.answer_prompt(prompt_id, str(value), human)
