"""Fixtures of the reliability suite: a rig per test (a daemon with local agents on: the
stand-in ``claude -p`` answers asks in real bubblewrap), an optional tmpfs state dir, and the
counts printed at the end of the run."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.localagents.conftest import (  # noqa: F401  (fixtures)
    make_package,
    runner_bin,
    visible_root,
)
from tests.reliability._rig import ASK_AGENT, Rig, Tally

TALLIES: dict[str, Tally] = {}


@pytest.fixture
def make_tmpfs() -> Iterator[Callable[[str], Path]]:
    """Mount a tmpfs of a given size (``"48m"``) for a daemon's state dir, a real filesystem
    that fills; each is unmounted at the end (skipped where mounting is impossible)."""
    mounts: list[Path] = []

    def make(size: str) -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a tmpfs needs root; the disk-full fault is not injected")
        mnt = Path(tempfile.mkdtemp(prefix="agentcoord-statefs-"))
        out = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mnt)],
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            mnt.rmdir()
            pytest.skip(f"cannot mount a tmpfs here ({out.stderr.strip()}); disk-full not injected")
        mounts.append(mnt)
        return mnt

    yield make
    for mnt in mounts:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
        mnt.rmdir()


@pytest.fixture
def small_tmpfs(make_tmpfs: Callable[[str], Path]) -> Path:
    """A 256 MiB tmpfs for a daemon's state dir: room for the load, the fault fills the rest."""
    return make_tmpfs("256m")


@pytest.fixture
def make_rig(
    request: pytest.FixtureRequest,
    daemon_factory: Any,
    claude_bin: Path,
    runner_bin: Path,  # noqa: F811  (the fixture imported above)
    visible_root: Path,  # noqa: F811
    tmp_path: Path,
) -> Iterator[Any]:
    """Build a rig on a fresh daemon (extra env for it as keyword arguments) whose local
    agent ``ASK_AGENT`` is a package in a hub outside /tmp (the sandbox hides /tmp)."""
    made: list[Rig] = []
    hub = visible_root / "agentihub"
    make_package(hub, ASK_AGENT)
    (visible_root / "home").mkdir()
    local = {
        "AGENTIBRIDGE_LOCAL_AGENTS_ENABLED": "true",
        "AGENTIHUB_DIR": str(hub),
        "AGENTCOORD_RUNNER_COMMAND": f"{runner_bin} -p --output-format json",
        "HOME": str(visible_root / "home"),
    }

    def make(name: str = "rig", **extra: str) -> Rig:
        env = {**local, **extra}
        d = daemon_factory(name, AGENTCOORD_LOG_LEVEL="WARNING", **env).start()
        rig = Rig(d, claude_bin, tmp_path / f"{name}-ctl")
        made.append(rig)
        return rig

    yield make
    total = Tally()
    for rig in made:
        total.merge(rig.tally)
    if total.phases:  # a self-test of the checks resets its tally: nothing to count
        TALLIES[request.node.name] = total


@pytest.fixture
def soak_minutes(request: pytest.FixtureRequest) -> float:
    minutes = float(request.config.getoption("--soak"))
    if minutes <= 0:
        pytest.skip("soak run only with --soak MINUTES")
    return minutes


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not TALLIES:
        return
    terminalreporter.section("reliability counts")
    total = Tally()
    for name, tally in TALLIES.items():
        terminalreporter.write_line(f"{name}: {tally.line()}")
        total.merge(tally)
    terminalreporter.write_line(f"TOTAL: {total.line()}")
