"""Stopping a runner with every process it started, the sandbox's included
(docs/localagents.md "Stopping a runner").

A runner's process group is not the whole runner. bubblewrap clones the sandbox's first
process (the init of its own pid namespace) at once, and that process spends its first
moments (a few hundred milliseconds on a busy machine) mounting the sandbox with no death
signal yet: bwrap arms ``--die-with-parent`` in it only after the mounts, and after its
``--new-session`` has moved it out of the runner's group. It also ignores SIGTERM: the init of
a pid namespace receives from outside only the signals it handles, and SIGKILL
(pid_namespaces(7)). A SIGTERM of the group in that window ends bwrap's launcher alone, and
the sandbox, reparented to pid 1, carries on. So a stop holds the tree still first:

1. SIGSTOP the runner (the group's leader): stopped, it starts nothing new, and everything it
   started is still its descendant, none reparented yet;
2. look up those descendants (psutil handles, so a pid reused later is never signalled);
3. SIGTERM the group and each descendant, then SIGCONT them (the runner's SIGTERM, pending,
   acts before it runs another instruction);
4. wait on pidfds, up to a grace period, for the runner and the descendants to exit; then
   SIGKILL the group and whichever descendant is left, wherever it was reparented, and wait.

SIGKILL of the sandbox's init ends its whole pid namespace, so what it started after step 2
goes with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from typing import Any

from agentcoord.kernel.pidfd import wait_pid

__all__ = ["stop_tree"]

_TERM_GRACE_S = 2.0
_KILL_WAIT_S = 5.0


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _term_held_still(pid: int, reaped: bool) -> list[Any]:
    """Steps 1 to 3: SIGSTOP ``pid``, look up its descendants (psutil handles) while it cannot
    start more, SIGTERM and SIGCONT the group and them; the descendants. One call in one
    thread, so a cancelled caller never leaves the runner stopped."""
    import psutil

    inside: list[Any] = []
    if not reaped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGSTOP)
        with contextlib.suppress(psutil.Error):
            inside = list(psutil.Process(pid).children(recursive=True))
    for sig in (signal.SIGTERM, signal.SIGCONT):
        _signal_group(pid, sig)
        _signal_each(inside, sig)
    return inside


def _signal_each(procs: list[Any], sig: int) -> None:
    import psutil

    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)  # psutil checks it is still the same process


async def _all_gone(pids: list[int], procs: list[Any], timeout: float) -> bool:
    """Wait on pidfds until ``pids`` and ``procs`` have exited; False if one is left."""
    import psutil

    def alive(proc: Any) -> bool:
        with contextlib.suppress(psutil.Error):
            return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
        return False

    waits = [*pids, *(p.pid for p in procs if alive(p))]
    results = await asyncio.gather(*(wait_pid(p, timeout) for p in waits))
    return all(results)


async def stop_tree(pid: int, *, reaped: Callable[[], bool] | None = None) -> None:
    """Stop the runner ``pid`` (the leader of its own process group) and every process it
    started (the module's docstring says how). ``reaped()``, when given, says whether the
    runner was already reaped: its pid may name another process then, so only its group is
    signalled and nothing waited on."""
    gone = reaped is not None and reaped()
    inside = await asyncio.to_thread(_term_held_still, pid, gone)
    leader = [] if gone else [pid]
    if await _all_gone(leader, inside, _TERM_GRACE_S):
        return
    _signal_group(pid, signal.SIGKILL)
    _signal_each(inside, signal.SIGKILL)
    await _all_gone(leader if not (reaped and reaped()) else [], inside, _KILL_WAIT_S)
