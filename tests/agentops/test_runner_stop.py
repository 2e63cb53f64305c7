"""Stopping a runner ends its sandbox too, even while bubblewrap is still setting the sandbox
up (no death signal armed inside yet, SIGTERM ignored by the sandbox's init): with the real
bwrap, and with the real daemon stopped by SIGTERM right as its runners start."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import psutil

from agentcoord.localagents.proctree import stop_tree
from agentcoord.localagents.sandbox import detect_sandbox, exec_prefix
from tests.agentops.conftest import needs_bwrap, ok, stored, wait_for

pytestmark = needs_bwrap

_ROUNDS = 10  # daemon stops, each with runners at different points of their start
_RUNNERS = 3


def _marked(marker: str) -> list[psutil.Process]:
    """Live (not zombie) processes whose command line carries ``marker``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if any(marker in part for part in proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _sandbox_held_in_setup(package: Path, marker: str) -> tuple[subprocess.Popen[bytes], int]:
    """A runner launched as the daemon launches one, whose sandbox is held, by bwrap's
    ``--block-fd``, after its mounts and before its death signal is armed: the window a stop
    can land in. The runner and the write end of the block pipe (never written)."""
    read_end, write_end = os.pipe()
    sandbox = detect_sandbox("auto")
    inner = sandbox.argv(["sleep", "600", marker], package=package, env=dict(os.environ))
    inner[1:1] = ["--block-fd", str(read_end)]
    proc = subprocess.Popen(
        [*exec_prefix(), *inner],
        pass_fds=(read_end,),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(read_end)
    return proc, write_end


def test_a_stop_during_the_sandbox_setup_ends_the_sandbox(tmp_path: Path) -> None:
    """The sandbox's first process, still setting up (no death signal, out of reach of
    SIGTERM), is gone when the stop returns; a SIGTERM of the group alone leaves it running."""
    marker = f"held-in-setup-{os.getpid()}"
    proc, block = _sandbox_held_in_setup(tmp_path, marker)
    try:
        inits = wait_for(lambda: psutil.Process(proc.pid).children(), what="bwrap's clone")
        init = inits[0]
        asyncio.run(stop_tree(proc.pid, reaped=lambda: proc.returncode is not None))
        assert proc.wait() != 0
        assert not init.is_running() or init.status() == psutil.STATUS_ZOMBIE
        # What the stop used to do: SIGTERM the group; the launcher dies, the sandbox's init
        # (ignoring SIGTERM, no death signal yet) stays, reparented away from the launcher.
        again, block2 = _sandbox_held_in_setup(tmp_path, marker)
        try:
            init2 = wait_for(lambda: psutil.Process(again.pid).children(), what="clone")[0]
            os.killpg(again.pid, signal.SIGTERM)
            again.wait()
            assert init2.is_running()
            assert init2.status() != psutil.STATUS_ZOMBIE
            assert init2.ppid() != again.pid
        finally:
            os.close(block2)
            for p in _marked(marker):
                p.kill()
    finally:
        os.close(block)


def _phase(d: Any, name: str) -> str | None:
    obj = stored(d, "agents", name)
    return None if obj is None else (obj.get("status") or {}).get("phase")


def test_sigterm_of_the_daemon_as_runners_start_leaves_no_sandbox(local_daemon: Any) -> None:
    """Round after round, the daemon is stopped (SIGTERM) the moment its newest runner is
    Running, while that runner's sandbox is being set up and others run: every time the
    stop is clean and no runner's process is left once it returns."""
    d, _, call = local_daemon()
    for round_ in range(_ROUNDS):
        marker = f"stop-race-{os.getpid()}-{round_}"
        names = [f"r{round_}-{n}" for n in range(_RUNNERS)]
        for name in names:
            ok(call, "spawn_subagent", name=name, prompt=f"sleep 600\n# {marker}")
        wait_for(lambda n=names[-1]: _phase(d, n) == "Running", what=f"{names[-1]} running")  # type: ignore[misc]
        assert d.stop(signal.SIGTERM, timeout=60) == 0, d.log()[-4000:]
        left = _marked(marker)
        assert left == [], [(p.pid, p.ppid(), p.cmdline()[:3]) for p in left]
        d.start()
