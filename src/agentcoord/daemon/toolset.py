"""The tool registry of one daemon: each tool module gets the services its tools use, and
nothing else (docs/architecture.md "Tools")."""

from __future__ import annotations

from typing import Any, TypeVar

from agentcoord.tools import a2a, agents, claims, discovery, handoff, humans, identity, lifecycle
from agentcoord.tools import messaging as messaging_tools
from agentcoord.tools._base import Tool
from agentcoord.tools.registry import ToolRegistry

__all__ = ["build_registry"]

T = TypeVar("T")


def _need(service: T | None, what: str) -> T:
    """``service``; the registry is built once every part has started (daemon/compose.py), so
    a missing one is a start-up bug, not a tool error."""
    if service is None:
        raise RuntimeError(f"{what} is not started; the tools cannot be built")
    return service


def build_registry(app: Any) -> ToolRegistry:
    """Every tool family the daemon ships, in ``tools/list`` order."""
    local_agents = _need(app.local_agents, "the local-agents service")
    operator = _need(app.operator, "the agent operator")
    families: list[Tool] = [
        *identity.tools(),
        *discovery.tools(
            _need(app.agents, "the agent list"), _need(app.focus, "agent focus"), local_agents
        ),
        *claims.tools(_need(app.claims, "claims"), _need(app.audit, "the audit log")),
        *agents.tools(local_agents),
        *messaging_tools.tools(_need(app.messaging, "messaging")),
        *handoff.tools(_need(app.messaging, "messaging")),
        *humans.tools(_need(app.messaging, "messaging")),
        *a2a.tools(operator),
        *lifecycle.tools(operator),
    ]
    return ToolRegistry(families, human_only=humans.HUMAN_ONLY)
