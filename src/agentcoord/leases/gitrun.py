"""One way to ask git about a worktree: its own environment's ``GIT_*`` left out (a hook's
``GIT_DIR`` would point every call at the caller's repository), no stdin, bounded in time, and
a failure of any kind as a code rather than an exception."""

from __future__ import annotations

import os
import subprocess

__all__ = ["git", "git_out"]


def git(directory: str, *args: str, timeout: float) -> tuple[int, str]:
    """``git args`` in ``directory``: (exit code, stdout); (-1, "") when it could not run or
    did not end within ``timeout`` s."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        out = subprocess.run(
            ["git", *args],
            cwd=directory,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return -1, ""
    return out.returncode, out.stdout.decode("utf-8", "surrogateescape")


def git_out(directory: str, *args: str, timeout: float) -> str | None:
    """The stdout of a ``git args`` that succeeded, else None."""
    code, out = git(directory, *args, timeout=timeout)
    return out if code == 0 else None
