"""The tool registry of one daemon: each tool family is built with the services its tools use,
and nothing else (docs/architecture.md "Tools")."""

from __future__ import annotations

from agentcoord.daemon.services import Services
from agentcoord.tools.a2a import A2ATools
from agentcoord.tools.agents import AgentTools
from agentcoord.tools.base import tools_of
from agentcoord.tools.claims import ClaimTools
from agentcoord.tools.discovery import DiscoveryTools
from agentcoord.tools.handoff import HandoffTools
from agentcoord.tools.humans import HUMAN_ONLY, HumanTools
from agentcoord.tools.identity import IdentityTools
from agentcoord.tools.lifecycle import LifecycleTools
from agentcoord.tools.messaging import MessagingTools
from agentcoord.tools.overlaps import ConflictTools
from agentcoord.tools.registry import ToolRegistry

__all__ = ["build_registry", "families"]


def families(s: Services) -> list[object]:
    """Every tool family the daemon ships, built with its services, in ``tools/list`` order."""
    return [
        IdentityTools(),
        DiscoveryTools(s.agents, s.focus, s.local_agents),
        ClaimTools(s.leases, s.audit),
        ConflictTools(s.conflicts),
        AgentTools(s.local_agents),
        MessagingTools(s.messaging),
        HandoffTools(s.messaging),
        HumanTools(s.messaging),
        A2ATools(s.operator),
        LifecycleTools(s.operator),
    ]


def build_registry(s: Services) -> ToolRegistry:
    """The registry of every family's tools (:func:`agentcoord.tools.base.tools_of`)."""
    return ToolRegistry(
        [t for family in families(s) for t in tools_of(family)], human_only=HUMAN_ONLY
    )
