"""Agent to agent, and the daemon as operator (seed 004, seed 000 "Lifecycle";
docs/ask-and-operator.md).

:mod:`.rules` (pure: depth, cycles, rules, linked sessions, reconcile decisions),
:mod:`.checkpoints` (git WIP bundles, content-addressed blobs), :mod:`.controller` (Agent
objects -> runner processes), :mod:`.asks` (send_message/ask), :mod:`.lifecycle` (spawn,
cancel, checkpoint, resume, merge).
"""

from __future__ import annotations

from agentcoord.agentops.asks import AgentOps
from agentcoord.agentops.controller import AgentController

__all__ = ["AgentController", "AgentOps"]
