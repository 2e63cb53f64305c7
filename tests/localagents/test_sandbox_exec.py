"""The death signal and rlimits of a started child, set before exec by ``exec_prefix``
(util-linux's setpriv and prlimit, else the interpreter shim): the limits hold in the child,
a SIGKILL of its parent takes it along, and the shim follows a parent already gone."""

from __future__ import annotations

import os
import resource
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcoord.localagents.sandbox import Limits, exec_prefix, rlimit_caps, util_linux

LIMITS = Limits(cpu_s=77, fsize_bytes=12345678, nofile=321)
_ROWS = {
    "cpu": "Max cpu time",
    "fsize": "Max file size",
    "nofile": "Max open files",
    "core": "Max core file size",
}

# The daemon's part, in miniature: build the prefix (it names this process as the parent) and
# start the command from the main thread, say the child's pid, and say so if the child exits
# (a prefix that refused); then wait to be SIGKILLed by the test. The child gets its own
# channel (the pipe whose write end is argv[2]) and no share of this process's stdout.
_PARENT = f"""\
import os, subprocess, sys
from agentcoord.localagents.sandbox import Limits, exec_prefix
prefix = exec_prefix({LIMITS!r}, with_util_linux=sys.argv[1] == "util-linux")
ready = int(sys.argv[2])
child = subprocess.Popen(
    [*prefix, *sys.argv[3:]], start_new_session=True, pass_fds=(ready,),
    stdout=subprocess.DEVNULL,
)
os.close(ready)
print(child.pid, flush=True)
print("exited", child.wait(), flush=True)
sys.stdin.read()
"""
# The started command: says "running" on the pipe it is given (past every step of the prefix),
# then becomes a long sleep under the same pid.
_CHILD = (
    "import os, sys; fd = int(sys.argv[1]); os.write(fd, b'running\\n'); os.close(fd); "
    "os.execvp('sleep', ['sleep', '618.03'])"
)
WAIT_S = 60.0  # generous: a busy machine is slow, and only what never comes fails


def limits_of(pid: int) -> dict[str, tuple[str, str]]:
    """(soft, hard) per prlimit resource name, from ``/proc/<pid>/limits``."""
    rows = Path(f"/proc/{pid}/limits").read_text().splitlines()
    out = {}
    for name, label in _ROWS.items():
        row = next(r for r in rows if r.startswith(label))
        soft, hard = row[len(label) :].split()[:2]
        out[name] = (soft, hard)
    return out


def exited_within(pid: int, timeout: float) -> bool:
    """Wait on a pidfd (readable once ``pid`` has exited, zombie or reaped) for ``timeout``."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        return bool(ready)
    finally:
        os.close(fd)


def expected(limits: Limits) -> dict[str, tuple[str, str]]:
    """The limits as /proc shows them: each at most this process's hard limit."""
    hard = {
        "cpu": resource.RLIMIT_CPU,
        "fsize": resource.RLIMIT_FSIZE,
        "nofile": resource.RLIMIT_NOFILE,
        "core": resource.RLIMIT_CORE,
    }
    wanted = {"cpu": limits.cpu_s, "fsize": limits.fsize_bytes, "nofile": limits.nofile, "core": 0}
    out = {}
    for name, value in wanted.items():
        ceiling = resource.getrlimit(hard[name])[1]
        cap = value if ceiling == resource.RLIM_INFINITY else min(value, ceiling)
        out[name] = (str(cap), str(cap))
    return out


@pytest.fixture(params=["util-linux", "shim"])
def way(request: pytest.FixtureRequest) -> str:
    """exec_prefix both ways: setpriv + prlimit, and the interpreter shim."""
    if request.param == "util-linux" and util_linux() is None:
        pytest.skip("util-linux setpriv (--pdeathsig) or prlimit not installed")
    return str(request.param)


def _said_running(fd: int) -> bytes:
    """What the child wrote on its own pipe before closing it (b"" if it never ran)."""
    out = b""
    while select.select([fd], [], [], WAIT_S)[0]:
        chunk = os.read(fd, 64)
        if not chunk:
            return out
        out += chunk
    raise AssertionError(f"the child said nothing in {WAIT_S}s: {out!r}")


@pytest.fixture
def started(way: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A parent process that started a command through exec_prefix: (parent, the child's
    pid), once the command has said it runs (past every step of the prefix). The parent
    answers on its stdout, the child on a pipe of its own."""
    read_end, write_end = os.pipe()
    command = [sys.executable, "-c", _CHILD, str(write_end)]
    pid = None
    try:
        with subprocess.Popen(
            [sys.executable, "-c", _PARENT, way, str(write_end), *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            pass_fds=(write_end,),
        ) as parent:
            os.close(write_end)
            write_end = -1
            assert parent.stdout is not None
            try:
                first = parent.stdout.readline().strip()
                assert first.isdigit(), f"the parent said {first!r}, not the child's pid"
                pid = int(first)
                said = _said_running(read_end)
                assert said == b"running\n", (said, parent.stdout.readline())
                yield parent, pid
            finally:
                parent.kill()
                if pid is not None and not exited_within(pid, 0):
                    os.kill(pid, signal.SIGKILL)
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


def test_the_child_has_the_limits_from_its_first_instruction(
    started: tuple[subprocess.Popen[str], int],
) -> None:
    """The started command runs with exactly the configured rlimits, soft and hard."""
    _parent, pid = started
    assert limits_of(pid) == expected(LIMITS)


def test_the_child_dies_when_its_parent_is_sigkilled(
    started: tuple[subprocess.Popen[str], int],
) -> None:
    """SIGKILL of the parent delivers SIGKILL to the child (PR_SET_PDEATHSIG), long before its
    sleep would end."""
    parent, pid = started
    assert not exited_within(pid, 0)
    parent.kill()
    parent.wait()
    assert exited_within(pid, WAIT_S), f"{pid} outlived its parent"


def test_the_shim_follows_a_parent_that_is_already_gone() -> None:
    """The shim exits without running the command when its parent is not the one that asked
    (the daemon died before the death signal was set)."""
    argv = exec_prefix(LIMITS, with_util_linux=False)
    argv[argv.index(str(os.getpid()))] = "1"  # as if re-parented to init
    done = subprocess.run([*argv, "sh", "-c", "echo ran"], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (70, "")


@pytest.mark.unit
def test_caps_never_exceed_the_hard_limit() -> None:
    """A limit above the daemon's hard limit is capped at it; an unlimited one is not."""
    hard = {resource.RLIMIT_NOFILE: 100, resource.RLIMIT_CPU: resource.RLIM_INFINITY}
    caps = dict(rlimit_caps(LIMITS, lambda which: hard.get(which, resource.RLIM_INFINITY)))
    assert caps == {"cpu": 77, "fsize": 12345678, "nofile": 100, "core": 0}


@pytest.mark.unit
def test_util_linux_prefix_sets_the_signal_before_the_limits() -> None:
    """With util-linux: setpriv --pdeathsig KILL first, then prlimit with soft = hard."""
    if util_linux() is None:
        pytest.skip("util-linux setpriv (--pdeathsig) or prlimit not installed")
    setpriv, prlimit = util_linux() or ("", "")
    argv = exec_prefix(LIMITS)
    assert argv[:4] == [setpriv, "--pdeathsig", "KILL", "--"]
    assert argv[4] == prlimit
    assert argv[-1] == "--"
    assert {"--cpu=77:77", "--fsize=12345678:12345678", "--core=0:0"} <= set(argv)
    assert exec_prefix() == argv[:4]  # no limits asked: no prlimit


@pytest.mark.unit
def test_a_missing_runner_command_fails_the_start(tmp_path: Path) -> None:
    """A runner command that is not there raises FileNotFoundError before anything starts
    (a start error, as when Popen ran it directly), a present one does not."""
    from agentcoord.localagents.runner import _must_exist

    with pytest.raises(FileNotFoundError):
        _must_exist("no-such-runner-here", str(tmp_path))
    with pytest.raises(FileNotFoundError):
        _must_exist(str(tmp_path), None)  # a directory is not a program
    _must_exist("sh", os.environ.get("PATH"))
    _must_exist(sys.executable, None)
