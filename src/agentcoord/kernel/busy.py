"""How much longer a bounded wait should allow on a busy machine.

A start-up phase that takes milliseconds on an idle machine can take many seconds when the
run queue is long or the daemon runs niced (a systemd user service at login, a test suite
beside a build): a fixed bound then fails a start that was only slow. Each bound is stretched
by how contended the CPUs are, so a wait still ends (start-up never hangs) but a loaded
machine is not mistaken for a dead part (docs/reliability.md "Start-up on a busy machine").
"""

from __future__ import annotations

import os

__all__ = ["MAX_SLACK", "slack", "slack_now"]

MAX_SLACK = 30.0  # the most a bound is stretched: 6 s becomes at most 3 minutes
# The kernel's CFS gives a task about 1.25x less CPU per nice level above its competitors
# (sched(7), "The nice value").
_NICE_STEP = 1.25


def slack(load1: float, cpus: int, nice: int) -> float:
    """The factor for a bound: 1 on an idle machine; the run queue per CPU when it is
    longer than one; times the share a positive nice value gives up; at most MAX_SLACK."""
    queue = max(1.0, load1 / max(1, cpus))
    return min(MAX_SLACK, queue * _NICE_STEP ** max(0, nice))


def slack_now() -> float:
    """:func:`slack` for this process, now (1 where the load average cannot be read)."""
    try:
        load1 = os.getloadavg()[0]
        cpus = len(os.sched_getaffinity(0))
        nice = os.nice(0)
    except OSError:
        return 1.0
    return slack(load1, cpus, nice)
