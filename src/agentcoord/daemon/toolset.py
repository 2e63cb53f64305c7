"""The tool registry of one daemon: each tool module gets the services its tools use, and
nothing else (docs/architecture.md "Tools")."""

from __future__ import annotations

from agentcoord.daemon.services import Services
from agentcoord.tools import a2a, agents, claims, discovery, handoff, humans, identity, lifecycle
from agentcoord.tools import messaging as messaging_tools
from agentcoord.tools.registry import ToolRegistry

__all__ = ["READ_ONLY", "build_registry"]


# The tools that only read: listed with MCP's readOnlyHint, so a client (the shim, across a
# daemon restart) may send a call of one again when its answer was lost
# (docs/claude-code.md "When the daemon restarts").
READ_ONLY = frozenset(
    {
        "whoami",
        "list_agents",
        "get_agent",
        "find_agents",
        "check_claims",
        "list_channels",
        "list_profiles",
        "discover_local_agents",
    }
)


def build_registry(s: Services) -> ToolRegistry:
    """Every tool family the daemon ships, in ``tools/list`` order."""
    return ToolRegistry(
        [
            *identity.tools(),
            *discovery.tools(s.agents, s.focus, s.local_agents),
            *claims.tools(s.leases, s.audit),
            *agents.tools(s.local_agents),
            *messaging_tools.tools(s.messaging),
            *handoff.tools(s.messaging),
            *humans.tools(s.messaging),
            *a2a.tools(s.operator),
            *lifecycle.tools(s.operator),
        ],
        human_only=humans.HUMAN_ONLY,
        read_only=READ_ONLY,
    )
