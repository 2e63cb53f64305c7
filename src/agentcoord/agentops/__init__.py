"""Agent to agent, and the daemon as operator (docs/ask-and-operator.md).

:mod:`.callrules` (pure: depth, cycles, rules, linked sessions, reconcile decisions),
:mod:`.checkpoints` (git WIP bundles, content-addressed blobs), :mod:`.controller` (Agent
objects -> runner processes), :mod:`.ops` (the facade: send_message/ask), :mod:`.asks` (asks
waiting in an interactive session's inbox), :mod:`.answerback` (a turn's answer returned to a
sender that did not wait), :mod:`.lifecycleops` (spawn, cancel, checkpoint,
resume, merge).
"""

from __future__ import annotations

from agentcoord.agentops.controller import AgentController
from agentcoord.agentops.ops import AgentOps

__all__ = ["AgentController", "AgentOps"]
