"""Default directories, importable without cost (the stdio shim needs them at every start)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["default_runtime_dir", "default_state_dir"]


def default_runtime_dir(env: Mapping[str, str], uid: int) -> Path:
    """``$AGENTCOORD_RUNTIME_DIR``, ``$XDG_RUNTIME_DIR/agentcoord``, else /tmp/agentcoord-UID."""
    if env.get("AGENTCOORD_RUNTIME_DIR"):
        return Path(env["AGENTCOORD_RUNTIME_DIR"])
    runtime_home = env.get("XDG_RUNTIME_DIR")
    return Path(runtime_home) / "agentcoord" if runtime_home else Path(f"/tmp/agentcoord-{uid}")


def default_state_dir(env: Mapping[str, str]) -> Path:
    """``$AGENTCOORD_STATE_DIR``, else ``$XDG_STATE_HOME/agentcoord``."""
    if env.get("AGENTCOORD_STATE_DIR"):
        return Path(env["AGENTCOORD_STATE_DIR"])
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    return Path(env.get("XDG_STATE_HOME") or home / ".local" / "state") / "agentcoord"
