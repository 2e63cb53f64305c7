"""The daemon's services, handed to every tool call (the one place that holds them)."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentcoord import __version__
from agentcoord.config import Config
from agentcoord.daemon.hooks import HookHandlers, default_handlers
from agentcoord.daemon.identity import IdentityResolver
from agentcoord.kernel.caller import Caller

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient

    from agentcoord.agentops import AgentOps
    from agentcoord.daemon.messaging import Messaging
    from agentcoord.daemon.natsd import NatsSupervisor
    from agentcoord.kernel.httpserver import HttpServer
    from agentcoord.localagents import LocalAgents
    from agentcoord.localagents.session_end import SessionWatch
    from agentcoord.stores.agentsource import AgentSource
    from agentcoord.stores.audit import AuditLog
    from agentcoord.stores.kv import ClaimStore, FocusStore
    from agentcoord.stores.objects.backend import ObjectBackend

__all__ = ["App"]


@dataclass
class App:
    """Long-lived services of one daemon; built by :mod:`agentcoord.daemon.run`."""

    config: Config
    identity: IdentityResolver
    nats: NatsSupervisor | None = None
    nc: NatsClient | None = None
    nats_url: str = ""
    http_server: HttpServer | None = None
    hooks: HookHandlers = field(default_factory=default_handlers)
    # Console sections (agents, claims, channels, prompts, waits) contributed by each part.
    console_sections: dict[str, Callable[[], Awaitable[Any]]] = field(default_factory=dict)
    # Answers a HumanPrompt: (prompt id, answer, the human who answered); set by the prompts part.
    prompt_answerer: Callable[[str, Any, Caller], Awaitable[None]] | None = None
    messaging: Messaging | None = None  # send/inbox/channels/handoff/prompts (docs/messaging.md)
    store: ObjectBackend | None = None  # SQLite or Kubernetes (docs/store.md)
    started_monotonic: float = field(default_factory=time.monotonic)
    started_wall: float = field(default_factory=time.time)
    unix_connections: int = 0
    # registry, package index, dispatch (docs/localagents.md)
    local_agents: LocalAgents | None = None
    # claims, focus and audit (NATS KV / JetStream; docs/claims.md), agent rows for list_agents
    audit: AuditLog | None = None
    claims: ClaimStore | None = None
    focus: FocusStore | None = None
    agents: AgentSource | None = None
    # session agents' end and retention (docs/localagents.md "Session lifetime")
    sessions: SessionWatch | None = None
    # ask/send_message and the Agent controller (docs/ask-and-operator.md)
    agentops: AgentOps | None = None

    def healthy(self) -> tuple[bool, str]:
        """Readiness for ``/healthz``: NATS is up and our client is connected."""
        if self.nats is not None and not self.nats.alive:
            return False, "nats-server is down"
        if self.nc is None or not self.nc.is_connected:
            return False, "not connected to NATS"
        return True, "ok"

    def status(self) -> dict[str, Any]:
        ok, why = self.healthy()
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - self.started_monotonic, 3),
            "healthy": ok,
            "health": why,
            "nats_url": self.nats_url,
            "nats_pid": self.nats.pid if self.nats else None,
            "nats_restarts": self.nats.restarts if self.nats else 0,
            "state_dir": str(self.config.state_dir),
            "store_path": (
                str(self.config.state_dir / "objects.db")
                if self.config.store == "sqlite"
                else f"kubernetes {self.config.kubeconfig} ns={self.config.kube_namespace}"
            ),
            "socket": str(self.config.socket_path),
            "http_addr": self.config.http_addr,
            "connections": {
                "unix": self.unix_connections,
                "http": self.http_server.open_connections if self.http_server else 0,
            },
            "local_agents": self.local_agents.describe() if self.local_agents else None,
        }
