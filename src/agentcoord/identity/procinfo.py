"""One process as the identity rules see it: a value read once by the probe
(:class:`agentcoord.identity.procprobe.PsutilProbe`), so every rule over it is pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ProcInfo"]


@dataclass(frozen=True)
class ProcInfo:
    """What the daemon knows about one process in the chain."""

    pid: int
    create_time: float
    name: str
    argv0: str = ""
    exe: str = ""
    cwd: str | None = None
    # The whole command line (argv[0] too), for CLIs told apart by their arguments: a node
    # script's path, or a subcommand such as ``codex app-server``.
    args: tuple[str, ...] = ()
    environ: Mapping[str, str] = field(default_factory=dict)
