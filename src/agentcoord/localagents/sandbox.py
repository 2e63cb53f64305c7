"""The sandbox seam for runners: bubblewrap on Linux, else a weaker mode that says so.

bubblewrap (FACTS.md "Sandbox"): read-only root, private /dev, /proc and /tmp, writable package
dir and ``~/.claude``, every namespace unshared but the network, a new session, die-with-parent,
no capabilities. rlimits and PR_SET_PDEATHSIG are applied between fork and exec in both modes.
"""

from __future__ import annotations

import ctypes
import resource
import shutil
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Limits", "Sandbox", "bwrap_argv", "child_setup", "detect_sandbox"]

_PR_SET_PDEATHSIG = 1
WEAKER = (
    "none: bubblewrap not found; the runner ran with rlimits, a new session and "
    "die-with-parent only"
)


@dataclass(frozen=True)
class Limits:
    """rlimits for a runner (CPU seconds, largest file written, open files, no core dumps)."""

    cpu_s: int = 1800
    fsize_bytes: int = 1 << 30
    nofile: int = 4096


@dataclass(frozen=True)
class Sandbox:
    """Which isolation runners get; ``bwrap`` None means the weaker mode."""

    bwrap: str | None

    @property
    def mode(self) -> str:
        return "bwrap" if self.bwrap else WEAKER

    def describe(self) -> dict[str, object]:
        """For ``doctor`` and results: what isolation is in force."""
        return {"sandbox": "bwrap" if self.bwrap else "none", "path": self.bwrap, "note": self.mode}


def detect_sandbox(choice: str = "auto") -> Sandbox:
    """``auto``: bubblewrap from PATH, else the weaker mode; ``none``: the weaker mode;
    anything else is the path of a bwrap binary."""
    if choice == "none":
        return Sandbox(None)
    if choice in ("auto", ""):
        return Sandbox(shutil.which("bwrap"))
    return Sandbox(choice if shutil.which(choice) else None)


def bwrap_argv(
    bwrap: str,
    command: Sequence[str],
    *,
    package: Path,
    writable: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    network: bool = True,
) -> list[str]:
    """The bwrap command line; later binds override earlier ones, so the package comes last.

    ``network=False`` (a profile's ``spec.network: false``) keeps the network namespace
    unshared: only loopback inside, and the daemon's unix socket still works (a bind mount).
    """
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in readable:  # things under /tmp the runner must still reach (socket, config)
        argv += ["--ro-bind", str(path), str(path)]
    for path in writable:
        argv += ["--bind", str(path), str(path)]
    argv += ["--bind", str(package), str(package)]
    argv += ["--unshare-all", *(["--share-net"] if network else [])]
    argv += [
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--chdir",
        str(package),
        "--",
        *command,
    ]
    return argv


def child_setup(limits: Limits) -> Callable[[], None]:
    """A ``preexec_fn``: die with the daemon, and apply the rlimits."""

    # dlopen in the parent: between fork and exec in a threaded daemon only plain syscalls
    # are safe (the loader's lock may be held by a thread that does not exist in the child).
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl

    def setup() -> None:  # runs in the child between fork and exec: no locks, no logging
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        for which, value in (
            (resource.RLIMIT_CPU, limits.cpu_s),
            (resource.RLIMIT_FSIZE, limits.fsize_bytes),
            (resource.RLIMIT_NOFILE, limits.nofile),
            (resource.RLIMIT_CORE, 0),
        ):
            _soft, hard = resource.getrlimit(which)
            cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (cap, cap))

    return setup
