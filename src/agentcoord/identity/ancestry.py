"""Pure rules that turn a peer's process ancestry into a caller (docs/security.md "By transport").

The walk takes values (:class:`ProcInfo` rows, nearest first, the runners, the session kinds)
and returns a decision, so it is unit-tested without processes;
:mod:`agentcoord.identity.procprobe` reads the rows with psutil.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentcoord.identity.kinds.protocol import SessionKind
from agentcoord.identity.procinfo import ProcInfo
from agentcoord.identity.runners import RunnerInfo, RunnerKey, RunnerLookup

__all__ = ["Decision", "ProcInfo", "decide"]


@dataclass(frozen=True)
class Decision:
    """The outcome of an ancestry walk: a runner (with what it runs), a session (with its
    kind), or neither."""

    kind: Literal["runner", "session", "none"]
    proc: ProcInfo | None = None  # the runner, or the session's CLI process
    runner_key: RunnerKey | None = None
    runner: RunnerInfo | None = None
    session_kind: SessionKind | None = None


def decide(
    chain: Sequence[ProcInfo], runners: RunnerLookup, kinds: Sequence[SessionKind]
) -> Decision:
    """Walk from the peer upward; the nearest runner wins, else the nearest process a session
    kind recognises (the earlier kind where two would)."""
    # A runner's own ``claude -p`` sits between the runner and the shim: everything below a
    # runner belongs to that runner's agent, so runners are looked for first (docs/localagents.md
    # "Local dispatch").
    for proc in chain:
        key = (proc.pid, proc.create_time)
        info = runners.lookup(key)
        if info is not None:
            return Decision("runner", proc, runner_key=key, runner=info)
    for proc in chain:
        for kind in kinds:
            if kind.recognise(proc):
                return Decision("session", proc, session_kind=kind)
    return Decision("none")
