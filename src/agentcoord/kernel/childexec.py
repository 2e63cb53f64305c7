"""How the daemon's children start: the death signal and rlimits set before exec.

Every child the daemon starts (nats-server, runners) gets SIGKILL when the daemon dies and,
for runners, its rlimits, both before its first instruction and without a ``preexec_fn``
(unsafe in a threaded process): ``setpriv``/``prlimit`` from util-linux exec the command, or a
small shim on this interpreter does (docs/localagents.md "Lifetime and rlimits").
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Limits", "exec_prefix", "rlimit_caps", "util_linux"]


@dataclass(frozen=True)
class Limits:
    """rlimits for a runner (CPU seconds, largest file written, open files, no core dumps)."""

    cpu_s: int = 1800
    fsize_bytes: int = 1 << 30
    nofile: int = 4096


def rlimit_caps(
    limits: Limits, hard: Callable[[int], int] = lambda which: resource.getrlimit(which)[1]
) -> list[tuple[str, int]]:
    """The runner's rlimits as (prlimit(1) resource name, value), each at most the hard limit
    the daemon has (``hard``): the child inherits it and an unprivileged process cannot raise
    it. Soft and hard are both set to the value, so the runner cannot raise its own."""
    wanted = (
        ("cpu", resource.RLIMIT_CPU, limits.cpu_s),
        ("fsize", resource.RLIMIT_FSIZE, limits.fsize_bytes),
        ("nofile", resource.RLIMIT_NOFILE, limits.nofile),
        ("core", resource.RLIMIT_CORE, 0),
    )
    caps = []
    for name, which, value in wanted:
        ceiling = hard(which)
        caps.append((name, value if ceiling == resource.RLIM_INFINITY else min(value, ceiling)))
    return caps


@functools.cache
def util_linux() -> tuple[str, str] | None:
    """``(setpriv, prlimit)`` when both are on PATH and setpriv knows ``--pdeathsig``
    (util-linux 2.33 and later), else None."""
    setpriv, prlimit = shutil.which("setpriv"), shutil.which("prlimit")
    if setpriv is None or prlimit is None:
        return None
    try:
        usage = subprocess.run(
            [setpriv, "--help"], capture_output=True, text=True, timeout=5, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (setpriv, prlimit) if "--pdeathsig" in usage else None


# The fallback of exec_prefix where util-linux is missing or too old: this interpreter,
# isolated (-I) and without site (-S), sets the death signal, follows a parent that died
# before that (prctl(2): the signal is only sent for a death after it was set), sets the
# rlimits and execs the command. argv: parent pid, NAME=VALUE..., "--", command...
_SHIM = """\
import ctypes, os, resource, sys
if ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG, SIGKILL
    sys.exit("agentcoord exec shim: prctl(PR_SET_PDEATHSIG): " + os.strerror(ctypes.get_errno()))
if os.getppid() != int(sys.argv[1]):
    os._exit(70)
end = sys.argv.index("--")
for spec in sys.argv[2:end]:
    name, value = spec.split("=")
    resource.setrlimit(getattr(resource, "RLIMIT_" + name.upper()), (int(value), int(value)))
os.execvp(sys.argv[end + 1], sys.argv[end + 1 :])
"""


def exec_prefix(limits: Limits | None = None, *, with_util_linux: bool = True) -> list[str]:
    """The argv to put before a command so that it gets SIGKILL when the thread that started
    it ends (PR_SET_PDEATHSIG, prctl(2)) and has ``limits`` (:func:`rlimit_caps`), both set
    before the command's first instruction: each step execs the next in the same process, so
    the pid the daemon gets is the command's and rlimits and the death signal carry over
    execve(2) (bwrap's own ``--die-with-parent`` keeps the sandbox's inner processes bound).

    With util-linux (:func:`util_linux`; ``with_util_linux=False`` skips it): ``setpriv
    --pdeathsig KILL -- prlimit --cpu=N:N ... -- command`` (setpriv(1), prlimit(1)), about
    2 ms. Without it, :data:`_SHIM` on this interpreter, about 12 ms. Start the child from
    the event loop's thread (asyncio does; a plain ``Popen`` in a coroutine does): the signal
    follows the thread that forked, and the loop's lives as long as the daemon.
    """
    found = util_linux() if with_util_linux else None
    caps = rlimit_caps(limits) if limits is not None else []
    if found is not None:
        setpriv, prlimit = found
        argv = [setpriv, "--pdeathsig", "KILL", "--"]
        if caps:
            argv += [prlimit, *(f"--{name}={value}:{value}" for name, value in caps), "--"]
        return argv
    return [
        sys.executable,
        "-I",
        "-S",
        "-c",
        _SHIM,
        str(os.getpid()),
        *(f"{name}={value}" for name, value in caps),
        "--",
    ]
