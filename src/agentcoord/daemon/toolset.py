"""The tool registry of one daemon: each tool module gets the services its tools use, and
nothing else (docs/architecture.md "Tools")."""

from __future__ import annotations

from agentcoord.daemon.services import Services
from agentcoord.tools import a2a, agents, claims, discovery, handoff, humans, identity, lifecycle
from agentcoord.tools import messaging as messaging_tools
from agentcoord.tools.registry import ToolRegistry

__all__ = ["build_registry"]


def build_registry(s: Services) -> ToolRegistry:
    """Every tool family the daemon ships, in ``tools/list`` order."""
    return ToolRegistry(
        [
            *identity.tools(),
            *discovery.tools(s.agents, s.focus, s.local_agents),
            *claims.tools(s.claims, s.audit),
            *agents.tools(s.local_agents),
            *messaging_tools.tools(s.messaging),
            *handoff.tools(s.messaging),
            *humans.tools(s.messaging),
            *a2a.tools(s.operator),
            *lifecycle.tools(s.operator),
        ],
        human_only=humans.HUMAN_ONLY,
    )
