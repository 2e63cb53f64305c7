"""agentcoord: one local daemon that coordinates the coding agents on one machine.

Kept import-light on purpose: the stdio shim (``agentcoord mcp``) is started by every
Claude Code session and must not pay for the daemon's imports.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.2.0"
