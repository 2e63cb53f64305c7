"""Where packages live, and the path checks of local dispatch
(docs/localagents.md "Local dispatch").

Pure functions over paths (they read the filesystem, never write it). The directory a runner is
started in always comes from :func:`package_dir`, never from a record someone persisted.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["is_safe_agent_id", "package_dir", "resolve_agentihub_dir"]

_MAX_ID = 128


def is_safe_agent_id(agent_id: str) -> bool:
    """A single, traversal-free path component (rejects ``.``, ``..``, ``/``, ``\\``)."""
    return (
        bool(agent_id)
        and len(agent_id) <= _MAX_ID
        and agent_id not in (".", "..")
        and "/" not in agent_id
        and "\\" not in agent_id
        and "\x00" not in agent_id
        and not agent_id.startswith(".")
        and agent_id.isprintable()
    )


def resolve_agentihub_dir(configured: Path | None, start: Path | None = None) -> Path | None:
    """The AgentiHub root: the configured one, else the nearest ancestor of ``start`` (this
    module's location by default) that has a sibling ``agentihub/agents/`` directory.

    Empty means unset and nothing is guessed beyond that walk (docs/localagents.md "Configuration").
    """
    if configured is not None and str(configured):
        return configured.expanduser()
    here = (start or Path(__file__)).resolve()
    for ancestor in (here, *here.parents):
        candidate = ancestor / "agentihub"
        if (candidate / "agents").is_dir():
            return candidate
    return None


def package_dir(hub: Path, agent_id: str) -> Path | None:
    """``<hub>/agents/<id>/package`` when it is a real package inside the hub, else None.

    Both checks of local dispatch: a safe single component, a ``CLAUDE.md`` present, and (symlinks
    resolved) the package is a descendant of the resolved hub root.
    """
    if not is_safe_agent_id(agent_id):
        return None
    candidate = hub / "agents" / agent_id / "package"
    try:
        root = hub.resolve(strict=True)
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not real.is_dir() or not (real / "CLAUDE.md").is_file():
        return None
    if os.path.commonpath([root, real]) != str(root) or real == root:
        return None
    return real
