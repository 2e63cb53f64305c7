"""The sessions' states as the daemon last heard them (docs/activity.md).

:class:`SessionActivity` keeps each session's :class:`~agentcoord.activity.states.SessionState`
from its hooks, in memory (it changes with every tool call, too often for the object store:
docs/activity.md "Where states live"), and corrects it with the session's registry entry
whenever it is read, so a session whose hooks the daemon never saw (started before it, or set
up without them) still shows working or idle. When a session starts to wait (a permission
dialog, or its turn ended and Claude Code says it waits for the user), it is audited
(``SESSION_WAITING``) and each listener (the desktop notices) is told which session, where
and why. A session's start and end are audited too (``SESSION_STARTED``, ``SESSION_ENDED``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcoord.activity.states import (
    ENDED,
    SessionState,
    after_hook,
    describe,
    same_wait,
    with_registry,
)
from agentcoord.kernel.caller import Caller
from agentcoord.stores.objects.agentdirectory import PROC_LABEL

if TYPE_CHECKING:
    from agentcoord.leases.filekeys import FileKeys
    from agentcoord.stores.audit import AuditSink

__all__ = ["SessionActivity", "StateChange"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StateChange:
    """A session began to wait: who, in which directory and repository, and why."""

    agent: str
    state: SessionState
    cwd: str | None
    repository: str | None

    @property
    def reason(self) -> str:
        return describe(self.state)


class SessionActivity:
    """Each session's state: its hooks, corrected by its registry entry when read."""

    def __init__(
        self,
        claude_dir: Path,
        audit: AuditSink,
        *,
        file_keys: FileKeys,
        on_wait: Sequence[Callable[[StateChange], None]] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``on_wait``: called (they must not block) each time a session starts a new wait."""
        self._sessions_dir = claude_dir / "sessions"
        self._audit = audit
        self._file_keys = file_keys  # the leases service's: a repository's name from git, kept
        self._clock = clock
        self._states: dict[str, SessionState] = {}
        self._pids: dict[str, int] = {}
        self._listeners = tuple(on_wait)

    async def hook(
        self, caller: Caller, event: str, payload: Mapping[str, Any], *, allowed: bool = False
    ) -> None:
        """Take what hook ``event`` (Claude Code's name) of ``caller`` says about its state;
        ``allowed``: the daemon answered its PermissionRequest "allow". Every CLI comes
        through here: the other CLIs' adapters send their events under Claude Code's names
        and payload shapes (docs/activity.md "Other CLIs")."""
        if caller.kind not in ("session", "runner"):
            return
        agent = caller.agent
        self._lifecycle(agent, event, payload, caller)
        prev = self._states.get(agent)
        summary = None
        if event in ("PermissionRequest", "Notification") and payload.get("tool_name"):
            from agentcoord.approvals import input_summary

            tool_input = payload.get("tool_input")
            summary = input_summary(
                str(payload.get("tool_name") or ""),
                tool_input if isinstance(tool_input, dict) else {},
            )
        # `claude -p` (a runner, or a registry entry of entrypoint sdk-cli) denies at once a
        # call nobody allowed: it never waits on a dialog (docs/activity.md "States").
        if event == "PermissionRequest" and not allowed and self._headless(caller):
            allowed = True
        new = after_hook(prev, event, payload, self._clock(), allowed=allowed, summary=summary)
        if new is None or new is prev:
            return
        self._states[agent] = new
        if caller.session_pid is not None:
            self._pids[agent] = caller.session_pid
        if not new.waiting or same_wait(prev, new):
            return
        cwd = payload.get("cwd")
        cwd = cwd if isinstance(cwd, str) and os.path.isabs(cwd) else caller.cwd
        repository = (
            await asyncio.to_thread(_repository_name, self._file_keys, cwd) if cwd else None
        )
        self._audit.emit(
            "SESSION_WAITING",
            agent,
            state=new.state,
            tool=new.tool,
            input=new.input,
            repository=repository,
        )
        change = StateChange(agent, new, cwd, repository)
        for listener in self._listeners:
            try:
                listener(change)
            except Exception:  # a listener must never fail the session's hook
                log.exception("session state listener failed")

    def _lifecycle(
        self, agent: str, event: str, payload: Mapping[str, Any], caller: Caller
    ) -> None:
        """A session's start and end in the audit, as Claude Code tells them (``source``:
        startup, resume, clear, compact; ``reason``: why it ended)."""
        if event == "SessionStart":
            cwd = payload.get("cwd")
            self._audit.emit(
                "SESSION_STARTED",
                agent,
                source=payload.get("source"),
                cwd=cwd if isinstance(cwd, str) else caller.cwd,
            )
        elif event == "SessionEnd":
            self._audit.emit("SESSION_ENDED", agent, reason=payload.get("reason"))

    def state_of(
        self, agent: str, labels: Mapping[str, str] | None = None, phase: str | None = None
    ) -> SessionState | None:
        """``agent``'s state now; None when nothing is known of it."""
        known = self._states.get(agent)
        if phase == "Ended":
            return known if known is not None and known.state == ENDED else None
        pid = self._pids.get(agent) or _pid_of(labels)
        status, updated = self._registry(pid) if pid is not None else (None, None)
        return with_registry(known, status, updated)

    def fields(
        self, agent: str, labels: Mapping[str, str] | None = None, phase: str | None = None
    ) -> dict[str, Any]:
        """What an agent row carries of its state: ``state`` in words, ``state_since``."""
        state = self.state_of(agent, labels, phase)
        if state is None:
            return {}
        return {"state": describe(state), "state_since": state.since}

    def waiting(self) -> list[tuple[str, SessionState]]:
        """The sessions waiting now, longest first."""
        found = [(a, s) for a in self._states if (s := self.state_of(a)) and s.waiting]
        return sorted(found, key=lambda pair: pair[1].since)

    async def forget(self, agent: str) -> None:
        """Drop a removed session's state."""
        self._states.pop(agent, None)
        self._pids.pop(agent, None)

    def _headless(self, caller: Caller) -> bool:
        if caller.kind == "runner":
            return True
        pid = caller.session_pid
        entry = self._entry(pid) if pid is not None else {}
        return entry.get("entrypoint") == "sdk-cli"

    def _entry(self, pid: int) -> dict[str, Any]:
        """The session registry's entry for the claude ``pid`` (empty when none)."""
        try:
            entry = json.loads((self._sessions_dir / f"{pid}.json").read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(entry, dict) or entry.get("pid") not in (pid, None):
            return {}
        return entry

    def _registry(self, pid: int) -> tuple[str | None, float | None]:
        """The registry's ``status`` and ``updatedAt`` (seconds) for the claude ``pid``."""
        entry = self._entry(pid)
        status, updated = entry.get("status"), entry.get("updatedAt")
        if not isinstance(status, str) or not isinstance(updated, int | float):
            return None, None
        return status, float(updated) / 1000.0


def _pid_of(labels: Mapping[str, str] | None) -> int | None:
    proc = (labels or {}).get(PROC_LABEL, "")  # "<pid>-<start ms>" of its claude process
    head = proc.split("-", 1)[0]
    return int(head) if head.isdigit() else None


def _repository_name(keys: FileKeys, cwd: str) -> str:
    """The repository's name (its main worktree's directory), else the directory's own."""
    from agentcoord.approvals.standing import repository_of
    from agentcoord.leases.keytext import repo_name

    found = repository_of(keys, cwd)
    return repo_name(found.common) if found is not None else os.path.basename(cwd) or cwd
