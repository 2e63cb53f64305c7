"""Google's Gemini CLI as a session kind (docs/gemini.md).

- **Recognised** by a ``node`` process whose script (argv[1]) is ``gemini`` or ``gemini.js``
  (the npm package's ``bin/gemini`` links to ``bundle/gemini.js``), or a process whose argv[0]
  basename (or process name) is ``gemini``. Gemini runs as two such processes (it starts
  itself again with more memory); the nearer one, the MCP server's parent, is the session.
- **Session id**: ``GEMINI_SESSION_ID`` in the caller's or the session's environment, when set.
- **cwd**: the process's working directory.
- **Markers**: ``GEMINI_CLI`` (set for the commands and MCP servers it starts) and
  ``GEMINI_SESSION_ID``.
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

__all__ = ["Gemini"]

_SESSION_ENV = "GEMINI_SESSION_ID"
_SCRIPTS = frozenset({"gemini", "gemini.js"})


def _script(proc: ProcInfo) -> str:
    """The first argument that is not a node option: the script node runs."""
    for word in proc.args[1:]:
        if not word.startswith("-"):
            return word
    return ""


@dataclass(frozen=True)
class Gemini(ProcessSessionKind):
    """Gemini CLI sessions (interactive or ``gemini -p``)."""

    name: ClassVar[str] = "gemini"
    markers: ClassVar[tuple[str, ...]] = ("GEMINI_CLI", _SESSION_ENV)

    def recognise(self, proc: ProcInfo) -> bool:
        """Node running the gemini script, or a ``gemini`` executable."""
        if proc.name == "gemini" or os.path.basename(proc.argv0) == "gemini":
            return True
        node = proc.name == "node" or os.path.basename(proc.argv0) in ("node", "nodejs")
        return node and os.path.basename(_script(proc)) in _SCRIPTS

    def session_id(self, peer: ProcInfo | None, session: ProcInfo) -> str | None:
        for source in (peer, session):
            if source is not None and source.environ.get(_SESSION_ENV):
                return source.environ[_SESSION_ENV]
        return None


if TYPE_CHECKING:

    def _satisfies_protocol() -> SessionKind:
        return Gemini()
