"""OpenCode as a session kind (docs/opencode.md).

- **Recognised** by the ``opencode`` process (the npm package's ``bin/opencode`` is the native
  binary itself, ``opencode.exe`` on disk), the direct parent of the MCP servers it starts.
- **Session id**: OpenCode gives its MCP servers no session id (its plugins see ``sessionID``),
  so the session is the process: one ``opencode`` process, one agent.
- **cwd**: the process's working directory.
- **Markers**: ``OPENCODE``, ``OPENCODE_PID`` and ``AGENT``, set for everything it starts.
- **Name**: the basename of its cwd.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from agentcoord.identity.kinds.processkind import ProcessSessionKind
from agentcoord.identity.procinfo import ProcInfo

if TYPE_CHECKING:
    from agentcoord.identity.kinds.protocol import SessionKind

__all__ = ["OpenCode"]

_NAMES = frozenset({"opencode", "opencode.exe"})


@dataclass(frozen=True)
class OpenCode(ProcessSessionKind):
    """OpenCode sessions (its TUI or ``opencode run``)."""

    name: ClassVar[str] = "opencode"
    markers: ClassVar[tuple[str, ...]] = ("OPENCODE", "OPENCODE_PID", "AGENT")

    def recognise(self, proc: ProcInfo) -> bool:
        """The ``opencode`` process, by name or argv[0] basename."""
        return proc.name in _NAMES or os.path.basename(proc.argv0) in _NAMES


if TYPE_CHECKING:

    def _satisfies_protocol() -> SessionKind:
        return OpenCode()
