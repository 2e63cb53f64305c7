"""Standing approvals: the human's rules that answer every session's permission dialog that
would ask the same thing (docs/approvals.md).

The human grants a rule (Claude Code's permission-rule syntax, :mod:`.rules`) for all
sessions, for the sessions of one repository (every worktree of it: the git common dir, as
claims use) or for one session, until it expires. Claude Code's PermissionRequest hook asks
:meth:`Approvals.decide` before it draws a dialog; a live approval that allows the call, where
no deny or ask rule of the session's own settings covers it (:mod:`.settings`), answers
"allow". Grants, revokes, expiries and each use are audited (``APPROVAL_GRANTED``,
``APPROVAL_REVOKED``, ``APPROVAL_EXPIRED``, ``APPROVAL_USED``); a use also counts on the
approval itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcoord.approvals.held import HeldDialogs
from agentcoord.approvals.rules import Request, allows, forbids, parse_rule
from agentcoord.approvals.settings import MANAGED_SETTINGS, HeldRule, session_rules
from agentcoord.errors import IdentityError, InvalidArguments, NotFound
from agentcoord.kernel.caller import Caller, decision_fields
from agentcoord.kernel.duration import format_duration, parse_duration

if TYPE_CHECKING:
    from agentcoord.leases.filekeys import FileKeys
    from agentcoord.stores.audit import AuditSink
    from agentcoord.stores.kv.approvalstore import ApprovalStore

__all__ = ["DEFAULT_FOR", "Approvals", "Decision", "Repository", "repository_of"]

log = logging.getLogger(__name__)

DEFAULT_FOR = "1h"  # how long a grant lasts when the human gives no --for
_MAX_FOR = 366 * 24 * 3600.0
_USE_TRIES = 5  # compare-and-set tries to count one use (other uses race for the record)
_INPUT_SHOWN = 300  # characters of a tool's input the audit keeps


@dataclass(frozen=True)
class Repository:
    """A git repository as approvals scope it: its common dir, and the worktree's top level."""

    common: str
    toplevel: str


def repository_of(keys: FileKeys, directory: str) -> Repository | None:
    """The repository ``directory`` is in (None outside git); runs git unless ``keys`` knows
    it (blocking)."""
    # A name below the directory: the top level itself resolves to no path inside the tree.
    key = keys.file_key(os.path.join(directory, ".agentcoord-approval"), None)
    if key.repo is None or key.worktree is None:
        return None
    return Repository(key.repo, key.worktree)


@dataclass(frozen=True)
class Decision:
    """An approval that allows one request."""

    approval: dict[str, Any]


def input_summary(tool: str, tool_input: Mapping[str, Any]) -> str:
    """What a person reads of a tool call: a command, a file, a URL, else its input as JSON."""
    for field in ("command", "file_path", "notebook_path", "url", "path", "pattern"):
        value = tool_input.get(field)
        if isinstance(value, str) and value:
            return value[:_INPUT_SHOWN]
    text = json.dumps(dict(tool_input), separators=(",", ":"), sort_keys=True, default=str)
    return text[:_INPUT_SHOWN]


class Approvals:
    """The standing approvals service over its KV store (:class:`ApprovalStore`)."""

    def __init__(
        self,
        store: ApprovalStore,
        audit: AuditSink,
        *,
        home: Path,
        claude_dir: Path,
        file_keys: FileKeys,
        agent_exists: Callable[[str], Awaitable[bool]] | None = None,
        managed: Path = MANAGED_SETTINGS,
        clock: Callable[[], float] = time.time,
        hold_s: float = 0.0,
    ) -> None:
        self._store = store
        # Dialogs no approval answered, held open for the human's answer (docs/approvals.md
        # "Answering an open dialog"); off (0) by default.
        self.held = HeldDialogs(hold_s, clock)
        self._audit = audit
        self._home = home
        self._claude_dir = claude_dir
        self._file_keys = file_keys  # the leases service's: git asked once per directory
        self._agent_exists = agent_exists
        self._managed = managed
        self._clock = clock

    # -- the human's verbs ---------------------------------------------------------------

    async def grant(
        self,
        rule_text: str,
        by: Caller,
        *,
        repo: str | None = None,
        session: str | None = None,
        duration: str | None = None,
    ) -> dict[str, Any]:
        """A new approval of ``rule_text`` for all sessions, the sessions of the repository
        ``repo`` is in, or the session named ``session``, for ``duration`` (Go duration,
        default :data:`DEFAULT_FOR`)."""
        _human_only(by, "grant an approval")
        rule = parse_rule(rule_text)
        if repo and session:
            raise InvalidArguments("give a repository or a session, not both")
        seconds = parse_duration(duration or DEFAULT_FOR)
        if seconds <= 0 or seconds > _MAX_FOR:
            raise InvalidArguments(f"--for must be between 1s and 366 days, not {duration!r}")
        scope, target, label = "all", "", "all sessions"
        if repo:
            found = await asyncio.to_thread(_repository_at, self._file_keys, repo)
            from agentcoord.leases.keytext import repo_name

            scope, target, label = "repository", found.common, repo_name(found.common)
        elif session:
            if self._agent_exists is not None and not await self._agent_exists(session):
                raise NotFound(f"no session named {session!r} (agentcoord agents lists them)")
            scope, target, label = "session", session, session
        now = self._clock()
        approval_id = secrets.token_hex(4)
        record: dict[str, Any] = {
            "id": approval_id,
            "rule": rule.text,
            "scope": scope,
            "target": target,
            "label": label,
            "granted_by": by.agent,
            "granted_at": now,
            "expires_at": now + seconds,
            "uses": 0,
            "last_used": None,
        }
        await self._store.create(approval_id, record)
        self._audit.emit(
            "APPROVAL_GRANTED",
            by.agent,
            id=record["id"],
            rule=rule.text,
            scope=label,
            expires_in=format_duration(seconds),
            **decision_fields(by),
        )
        self.held.granted()  # a held dialog the new rule covers is allowed now
        return self._row(record, now)

    async def revoke(self, approval_id: str, by: Caller) -> dict[str, Any]:
        """Remove approval ``approval_id``; :class:`NotFound` when there is none."""
        _human_only(by, "revoke an approval")
        found = self._store.get(approval_id)
        if found is None or not await self._store.remove(approval_id):
            raise NotFound(f"no approval {approval_id!r} (agentcoord allow --list lists them)")
        record = found[0]
        self._audit.emit(
            "APPROVAL_REVOKED",
            by.agent,
            id=approval_id,
            rule=record.get("rule"),
            scope=record.get("label"),
            uses=record.get("uses", 0),
            **decision_fields(by),
        )
        return self._row(record, self._clock())

    async def listing(self) -> list[dict[str, Any]]:
        """The live approvals, soonest to expire first; expired ones are removed (audited)."""
        now = self._clock()
        rows = []
        for record, _rev in self._store.all():
            if float(record.get("expires_at", 0)) <= now:
                await self._expire(record)
                continue
            rows.append(self._row(record, now))
        return sorted(rows, key=lambda r: (r["expires_at"], r["id"]))

    async def _expire(self, record: dict[str, Any]) -> None:
        if await self._store.remove(str(record["id"])):
            self._audit.emit(
                "APPROVAL_EXPIRED",
                str(record.get("granted_by") or "-"),
                id=record["id"],
                rule=record.get("rule"),
                scope=record.get("label"),
                uses=record.get("uses", 0),
            )

    @staticmethod
    def _row(record: Mapping[str, Any], now: float) -> dict[str, Any]:
        out = dict(record)
        out["expires_in"] = format_duration(max(0.0, round(float(record["expires_at"]) - now)))
        return out

    # -- the PermissionRequest hook ------------------------------------------------------

    async def decide(self, caller: Caller, payload: Mapping[str, Any]) -> Decision | None:
        """The approval that allows this PermissionRequest, counted and audited; None when
        none does (or the session's own deny or ask rules cover the call)."""
        if caller.kind not in ("session", "runner"):
            return None
        tool = payload.get("tool_name")
        tool_input = payload.get("tool_input")
        if not isinstance(tool, str) or not tool:
            return None
        if not isinstance(tool_input, dict):
            tool_input = {}
        now = self._clock()
        live = [
            (rec, rev)
            for rec, rev in self._store.all()
            if float(rec.get("expires_at", 0)) > now and _parses(rec)
        ]
        if not live:
            return None
        cwd = _cwd(caller, payload)
        repo = await asyncio.to_thread(repository_of, self._file_keys, cwd) if cwd else None
        request = Request(tool, tool_input, cwd, str(self._home))
        for record, rev in sorted(live, key=lambda rr: str(rr[0].get("id"))):
            if not _in_scope(record, caller, repo):
                continue
            root = repo.toplevel if repo is not None else None
            if not allows(parse_rule(str(record["rule"])), request, root):
                continue
            held = self._held_by_settings(request, cwd, repo)
            if held is not None:
                self._audit.emit(
                    "APPROVAL_HELD",
                    caller.agent,
                    id=record["id"],
                    rule=record["rule"],
                    tool=tool,
                    input=input_summary(tool, tool_input),
                    by_rule=held.rule.text,
                    source=held.source,
                )
                return None
            await self._count_use(str(record["id"]), rev, now)
            self._audit.emit(
                "APPROVAL_USED",
                caller.agent,
                id=record["id"],
                rule=record["rule"],
                tool=tool,
                input=input_summary(tool, tool_input),
                cwd=cwd,
            )
            return Decision(record)
        return None

    async def hold(
        self,
        caller: Caller,
        payload: Mapping[str, Any],
        still_open: Callable[[], bool] = lambda: True,
    ) -> str | None:
        """Hold a dialog :meth:`decide` did not answer for the human (``permission_hold``):
        "allow" (a grant made meanwhile allows it, or the human allowed it), "deny", or None
        (the time ran out; Claude Code's dialog stays for the terminal). ``still_open``: whether
        the session still waits on this dialog (a grant never counts a use on one the terminal
        answered)."""
        tool = payload.get("tool_name")
        if caller.kind not in ("session", "runner") or not isinstance(tool, str) or not tool:
            return None
        tool_input = payload.get("tool_input")
        summary = input_summary(tool, tool_input if isinstance(tool_input, dict) else {})

        async def again() -> bool:
            return await self.decide(caller, payload) is not None

        return await self.held.hold(caller.agent, tool, summary, again, still_open)

    def answer_held(self, session: str, verdict: str, by: Caller) -> dict[str, Any]:
        """The human answers ``session``'s held dialog "allow" or "deny" (audited
        ``PERMISSION_ANSWERED``); :class:`NotFound` when none is held."""
        _human_only(by, "answer a permission dialog")
        row = self.held.answer(session, verdict)
        self._audit.emit(
            "PERMISSION_ANSWERED",
            by.agent,
            session=session,
            answer=verdict,
            tool=row["tool"],
            input=row["input"],
            **decision_fields(by),
        )
        return row

    def _held_by_settings(
        self, request: Request, cwd: str | None, repo: Repository | None
    ) -> HeldRule | None:
        projects = [p for p in (cwd, repo.toplevel if repo else None) if p]
        for held in session_rules(self._home, self._claude_dir, projects, self._managed):
            if forbids(held.rule, request, held.root):
                return held
        return None

    async def _count_use(self, approval_id: str, rev: int, now: float) -> None:
        for _ in range(_USE_TRIES):
            found = self._store.get(approval_id)
            if found is None:
                return  # revoked meanwhile: the use was decided while it stood
            record, rev = found
            updated = {**record, "uses": int(record.get("uses", 0)) + 1, "last_used": now}
            if await self._store.update(approval_id, updated, rev) is not None:
                return
        log.warning("approval %s: a use was not counted (the record kept changing)", approval_id)


def _repository_at(keys: FileKeys, directory: str) -> Repository:
    """The repository of the directory the human named (re-derived here, never taken as
    given); :class:`InvalidArguments` when there is none."""
    if not os.path.isabs(directory):
        raise InvalidArguments(f"the repository must be an absolute path, not {directory!r}")
    if not os.path.isdir(directory):
        raise InvalidArguments(f"no such directory: {directory}")
    found = repository_of(keys, directory)
    if found is None:
        raise InvalidArguments(f"{directory} is not in a git repository")
    return found


def _human_only(by: Caller, what: str) -> None:
    if by.kind != "human":
        raise IdentityError(f"only the human may {what}")


def _parses(record: Mapping[str, Any]) -> bool:
    try:
        parse_rule(str(record.get("rule", "")))
    except InvalidArguments:
        return False
    return True


def _cwd(caller: Caller, payload: Mapping[str, Any]) -> str | None:
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) and os.path.isabs(cwd) else caller.cwd


def _in_scope(record: Mapping[str, Any], caller: Caller, repo: Repository | None) -> bool:
    scope = record.get("scope")
    if scope == "all":
        return True
    if scope == "session":
        return bool(record.get("target")) and record.get("target") == caller.agent
    if scope == "repository":
        return repo is not None and repo.common == record.get("target")
    return False
