"""Per-agent NATS users with subject permissions (DESIGN.md "Identity and trust").

An agent that connects to NATS directly gets its own user that may subscribe only to its inbox
and status, the broadcast subject, the channels it takes part in and its private reply prefix,
and may publish only its status. It can neither read another agent's inbox or a channel it is
not in, nor forge messages (those go through the tools, which stamp ``from``), nor touch
JetStream (``$JS.>``), which stays daemon-only. Changes are written into nats.conf and applied
with SIGHUP; a reload counts as done when nats-server logs it.

:class:`ScopedNatsSupervisor` extends :class:`NatsSupervisor`: its config gets the agent users
added inside the ``users = [`` list, and its output drain watches for reload lines.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import secrets
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentcoord.daemon.natsd import NatsSupervisor
from agentcoord.errors import OperationFailed
from agentcoord.kernel.files import write_private

__all__ = ["AgentAccess", "AgentUser", "ScopedNatsSupervisor", "render_user", "user_name"]

log = logging.getLogger(__name__)

_USERS_MARKER = "  users = ["
_RELOADED = b"Reloaded server configuration"
_RELOAD_FAILED = re.compile(rb"\[ERR\].*reload", re.IGNORECASE)
_RELOAD_TIMEOUT = 3.0


class AgentAccess(Protocol):
    """What messaging needs from NATS auth: credentials, and channel grants."""

    async def credentials(self, agent: str) -> AgentUser: ...

    async def allow(self, agent: str, subjects: list[str]) -> None: ...


def user_name(agent: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", agent)[:48]
    return f"agent_{safe}_{hashlib.sha256(agent.encode()).hexdigest()[:10]}"


@dataclass
class AgentUser:
    """One agent's NATS login and what it may touch."""

    agent: str
    user: str
    password: str
    inbox_prefix: str
    channels: set[str] = field(default_factory=set)

    @property
    def subscribe(self) -> list[str]:
        own = [f"agents.{self.agent}.inbox", f"agents.{self.agent}.status", "agents.broadcast"]
        return [*own, *sorted(self.channels), f"{self.inbox_prefix}.>"]

    @property
    def publish(self) -> list[str]:
        return [f"agents.{self.agent}.status"]


def render_user(u: AgentUser) -> str:
    """One entry of the nats.conf ``users`` list (JSON strings are valid config strings)."""
    perms = {"publish": {"allow": u.publish}, "subscribe": {"allow": u.subscribe}}
    return (
        f"    {{ user: {json.dumps(u.user)}, password: {json.dumps(u.password)}, "
        f"permissions: {json.dumps(perms)} }}"
    )


class _Tap:
    """A stand-in process whose stdout lines are also shown to ``on_line``."""

    def __init__(self, proc: asyncio.subprocess.Process, on_line: Callable[[bytes], None]):
        self._proc = proc
        self._on_line = on_line

    @property
    def stdout(self) -> AsyncIterator[bytes]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[bytes]:
        assert self._proc.stdout is not None
        async for line in self._proc.stdout:
            self._on_line(line)
            yield line


class ScopedNatsSupervisor(NatsSupervisor):
    """The embedded nats-server, plus per-agent users reloaded with SIGHUP."""

    def __init__(self, state_dir: Path, binary: Path | None = None, sync: str = "always") -> None:
        super().__init__(state_dir, binary, sync)
        self._agents: dict[str, AgentUser] = {}  # agents that asked for credentials
        self._channels: dict[str, set[str]] = {}  # channel subjects granted, per agent
        self._reload_lock = asyncio.Lock()
        self._reload_done = asyncio.Event()
        self._reload_error: str | None = None

    def _write_config(self) -> Path:
        conf = super()._write_config()
        text = conf.read_text()
        if _USERS_MARKER not in text:
            log.error("nats.conf has no users list; per-agent NATS users are disabled")
            return conf
        lines = "".join("\n" + render_user(u) for u in self._agents.values())
        write_private(conf, text.replace(_USERS_MARKER, _USERS_MARKER + lines, 1))
        return conf

    async def _drain_output(self, proc: asyncio.subprocess.Process) -> None:
        await super()._drain_output(_Tap(proc, self._on_line))  # type: ignore[arg-type]

    def _on_line(self, line: bytes) -> None:
        if _RELOADED in line:
            self._reload_done.set()
        elif _RELOAD_FAILED.search(line):
            self._reload_error = line.decode("utf-8", "replace").strip()
            self._reload_done.set()

    async def _reload(self) -> None:
        async with self._reload_lock:
            self._write_config()
            pid = self.pid
            if pid is None or not self.alive:
                return  # the restart will start from the new config
            self._reload_done.clear()
            self._reload_error = None
            os.kill(pid, signal.SIGHUP)
            try:
                async with asyncio.timeout(_RELOAD_TIMEOUT):
                    await self._reload_done.wait()
            except TimeoutError:
                raise OperationFailed("nats-server did not confirm the permission reload") from None
            if self._reload_error:
                raise OperationFailed(f"nats-server refused the reload: {self._reload_error}")

    async def credentials(self, agent: str) -> AgentUser:
        """``agent``'s NATS user, created (and the server reloaded) on first request."""
        user = self._agents.get(agent)
        if user is None:
            user = AgentUser(
                agent=agent,
                user=user_name(agent),
                password=secrets.token_urlsafe(24),
                inbox_prefix="_INBOX_" + user_name(agent),
                channels=set(self._channels.get(agent, ())),
            )
            self._agents[agent] = user
            await self._reload()
        return user

    async def allow(self, agent: str, subjects: list[str]) -> None:
        """Let ``agent`` subscribe to ``subjects`` (a channel it joined)."""
        granted = self._channels.setdefault(agent, set())
        new = set(subjects) - granted
        if not new:
            return
        granted |= new
        user = self._agents.get(agent)
        if user is not None:
            user.channels |= new
            await self._reload()


def credentials_view(user: AgentUser, url: str) -> dict[str, Any]:
    return {
        "url": url,
        "user": user.user,
        "password": user.password,
        "inbox_prefix": user.inbox_prefix,
        "subscribe": user.subscribe,
        "publish": user.publish,
    }
