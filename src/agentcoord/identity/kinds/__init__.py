"""The agent CLIs whose sessions the daemon recognises, one module each (docs/architecture.md
"Session kinds").

:data:`KINDS` is the registry: the identity rules (ancestry, the human's proof) read it, and a
new CLI is one module here plus its entry below (and its setup module, which registers the
daemon with that CLI). :func:`configured` gives the daemon's kinds, which know where each CLI
keeps its files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentcoord.identity.kinds.claudecode import ClaudeCode
from agentcoord.identity.kinds.codex import Codex
from agentcoord.identity.kinds.gemini import Gemini
from agentcoord.identity.kinds.opencode import OpenCode
from agentcoord.identity.kinds.protocol import SessionKind

if TYPE_CHECKING:
    from agentcoord.kernel.config import Config

__all__ = [
    "KINDS",
    "ClaudeCode",
    "Codex",
    "Gemini",
    "OpenCode",
    "SessionKind",
    "configured",
    "kind_markers",
]

# Nearest first wins in a process chain; where one process is a session of two kinds (none is
# today), the earlier entry wins.
KINDS: tuple[SessionKind, ...] = (ClaudeCode(), Codex(), Gemini(), OpenCode())


def configured(cfg: Config, kinds: tuple[SessionKind, ...] = KINDS) -> tuple[SessionKind, ...]:
    """``kinds`` with the daemon's settings."""
    return tuple(kind.configured(cfg) for kind in kinds)


def kind_markers(kinds: tuple[SessionKind, ...] = KINDS) -> tuple[str, ...]:
    """Every kind's environment markers, in registry order, each once."""
    return tuple(dict.fromkeys(m for kind in kinds for m in kind.markers))
