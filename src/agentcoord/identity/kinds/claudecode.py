"""Claude Code as a session kind (docs/architecture.md "Session kinds").

- **Recognised** by the process's name ``claude`` (the npm build's process title), its argv[0]
  basename, or the native install's path ``~/.local/share/claude/versions/<version>``.
- **Session id**: ``CLAUDE_CODE_SESSION_ID`` in the calling process's environment (Claude Code
  sets it for what it starts, since 2.1.154), else ``sessionId`` of its session registry,
  ``<claude dir>/sessions/<pid>.json``, written while the session runs (docs/localagents.md
  "Local agents: packages and sessions"). The id survives ``claude --resume``; the process
  does not.
- **cwd**: the ``claude`` process's own working directory.
- **Markers**: ``CLAUDECODE``, ``CLAUDE_CODE_SESSION_ID`` and ``CLAUDE_CODE_ENTRYPOINT``, set
  for every command it runs; ``setsid`` keeps them.
- **Name**: the ``name`` Claude Code gives the session in its registry (``<cwd basename>-<2
  hex>``, ``app-7f``: what its ``ListAgents`` shows) when the record is there at the session's
  first contact; else the basename of its cwd (``/home/me/app`` reads as ``app``, so its agent
  is ``app-1``). docs/claude-code.md "Names".
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from agentcoord.identity.procinfo import ProcInfo

if TYPE_CHECKING:
    from agentcoord.identity.kinds.protocol import SessionKind
    from agentcoord.kernel.config import Config

__all__ = ["ClaudeCode"]

# Claude Code's native install runs from ~/.local/share/claude/versions/<ver>.
_NATIVE_PATH = re.compile(r"/\.local/share/claude/versions/[^/]+$")
_SESSION_ENV = "CLAUDE_CODE_SESSION_ID"


@dataclass(frozen=True)
class ClaudeCode:
    """Claude Code's interactive sessions; ``claude_dir`` (``~/.claude``, or
    ``CLAUDE_CONFIG_DIR``) is where its session registry is read, None: not read."""

    claude_dir: Path | None = None
    name: ClassVar[str] = "claude"
    markers: ClassVar[tuple[str, ...]] = ("CLAUDECODE", _SESSION_ENV, "CLAUDE_CODE_ENTRYPOINT")
    has_native_inbox: ClassVar[bool] = True  # its sessions are the team inbox's own members

    def recognise(self, proc: ProcInfo) -> bool:
        """A ``claude`` process by name, argv[0] basename, or the native install path."""
        if proc.name == "claude" or os.path.basename(proc.argv0) == "claude":
            return True
        return bool(proc.exe and _NATIVE_PATH.search(proc.exe))

    def refusal(self, session: ProcInfo) -> str | None:
        return None  # one claude process is one session

    def session_id(self, peer: ProcInfo | None, session: ProcInfo) -> str | None:
        found = peer.environ.get(_SESSION_ENV) if peer is not None else None
        if found:
            return found
        sid = self._registry(session.pid).get("sessionId")
        return sid if isinstance(sid, str) and sid else None

    def cwd(self, session: ProcInfo) -> str | None:
        return session.cwd

    def name_base(self, session: ProcInfo) -> str | None:
        return os.path.basename((session.cwd or "").rstrip("/")) or None

    def native_name(self, session: ProcInfo) -> str | None:
        name = self._registry(session.pid).get("name")
        return name if isinstance(name, str) and name else None

    def configured(self, cfg: Config) -> ClaudeCode:
        return replace(self, claude_dir=cfg.claude_dir)

    def _registry(self, pid: int) -> dict[str, object]:
        """The session registry entry of the ``claude`` process ``pid``, {} when unreadable."""
        if self.claude_dir is None:
            return {}
        try:
            data = json.loads((self.claude_dir / "sessions" / f"{pid}.json").read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}


if TYPE_CHECKING:

    def _satisfies_protocol() -> SessionKind:
        return ClaudeCode()
