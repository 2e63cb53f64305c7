"""The daemon's services: one frozen, fully typed set, built once by
:mod:`agentcoord.daemon.compose` in dependency order (docs/architecture.md "Services").

Every field is a running service; none is optional. A part is handed the services it uses
(tools by :mod:`agentcoord.daemon.toolset`, hooks, the console), never this whole set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentcoord.activity import SessionActivity
    from agentcoord.agentops import AgentOps
    from agentcoord.approvals import Approvals
    from agentcoord.budgets import Budgets
    from agentcoord.daemon.natslink import NatsLink
    from agentcoord.identity.callers import IdentityResolver
    from agentcoord.kernel.config import Config
    from agentcoord.leases.conflictwatch import ConflictWatch
    from agentcoord.leases.leasing import Leases
    from agentcoord.localagents import LocalAgents
    from agentcoord.localagents.session_end import SessionWatch
    from agentcoord.messaging import Messaging
    from agentcoord.stores.agentsource import AgentSource
    from agentcoord.stores.audit import AuditLog
    from agentcoord.stores.kv import ClaimStore, FocusStore
    from agentcoord.stores.objects.backend import ObjectBackend

__all__ = ["Services"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Services:
    """What one running daemon is made of (each entry: who owns what, docs/architecture.md)."""

    config: Config  # as configured (the HTTP address bound is in DaemonStatus)
    identity: IdentityResolver  # who calls, from the transport (docs/security.md "By transport")
    nats: NatsLink  # the embedded or external NATS server and our client
    store: ObjectBackend  # SQLite or Kubernetes objects (docs/store.md)
    audit: AuditLog  # the AGENT_EVENTS stream (docs/claims.md "How it works")
    claims: ClaimStore  # TTL leases (docs/claims.md)
    focus: FocusStore  # intent annotations
    leases: Leases  # claims, the write guard, edit leases, the commit check (docs/claims.md)
    agents: AgentSource  # Agent rows for list_agents
    messaging: Messaging  # inboxes, channels, handoffs, prompts (docs/messaging.md)
    local_agents: LocalAgents  # registry, package index, dispatch (docs/localagents.md)
    operator: AgentOps  # the Agent controller, ask and send_message (docs/ask-and-operator.md)
    sessions: SessionWatch  # session agents' end and retention (docs/localagents.md)
    approvals: Approvals  # the human's standing approvals (docs/approvals.md)
    activity: SessionActivity  # every session's state, live (docs/activity.md)
    budgets: Budgets  # ceilings on sessions, started agents and spend (docs/budgets.md)
    conflicts: ConflictWatch  # files live worktrees both change (docs/claims.md)
