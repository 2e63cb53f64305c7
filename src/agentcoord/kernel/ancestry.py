"""Pure rules that turn a peer's process ancestry into a caller (docs/security.md "By transport").

The walk takes values (:class:`ProcInfo` rows, nearest first) and returns a decision, so it is
unit-tested without processes; :mod:`agentcoord.identity.procprobe` reads the rows with psutil.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Decision", "ProcInfo", "decide", "is_claude_process", "session_agent_stem"]

# Claude Code's native install runs from ~/.local/share/claude/versions/<ver>
# (docs/localagents.md "Sessions").
_NATIVE_PATH = re.compile(r"/\.local/share/claude/versions/[^/]+$")


@dataclass(frozen=True)
class ProcInfo:
    """What the daemon knows about one process in the chain."""

    pid: int
    create_time: float
    name: str
    argv0: str = ""
    exe: str = ""
    cwd: str | None = None
    environ: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    """The outcome of an ancestry walk."""

    kind: str  # "runner" | "session" | "none"
    proc: ProcInfo | None = None  # the runner or the claude process found
    runner_key: tuple[int, float] | None = None


def is_claude_process(proc: ProcInfo) -> bool:
    """A ``claude`` process by name, argv[0] basename, or the native install path."""
    if proc.name == "claude" or os.path.basename(proc.argv0) == "claude":
        return True
    return bool(proc.exe and _NATIVE_PATH.search(proc.exe))


def decide(chain: Sequence[ProcInfo], runners: Mapping[tuple[int, float], object]) -> Decision:
    """Walk from the peer upward; the nearest runner wins, else the nearest ``claude`` process.

    ``runners`` maps ``(pid, create_time)`` of processes the daemon started; keying on the
    start time too means a recycled pid is never mistaken for a runner.
    """
    # A runner's own ``claude -p`` sits between the runner and the shim: everything below a
    # runner belongs to that runner's agent, so runners are looked for first (docs/localagents.md
    # "Local dispatch").
    for proc in chain:
        key = (proc.pid, proc.create_time)
        if key in runners:
            return Decision("runner", proc, key)
    for proc in chain:
        if is_claude_process(proc):
            return Decision("session", proc)
    return Decision("none")


_STEM_BAD = re.compile(r"[^a-z0-9-]+")


def session_agent_stem(cwd: str | None) -> str:
    """The readable part of a session agent's name: its directory, DNS-label safe."""
    base = os.path.basename((cwd or "").rstrip("/")) or "session"
    stem = _STEM_BAD.sub("-", base.lower()).strip("-")[:40].strip("-")
    return stem or "session"
