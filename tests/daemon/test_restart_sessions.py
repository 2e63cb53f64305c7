"""Sessions outlive a restart of the real daemon, and every client finds the user's one daemon
whatever its environment (docs/claude-code.md "When the daemon restarts", docs/daemon.md
"Finding the daemon", "The HTTP address").

Clients are the official MCP SDK client through ``agentcoord mcp`` under the stand-in
``claude`` (so the daemon sees a Claude session), the hook command and the CLI. Each test's
HOME is its own, with ``runtime_roots`` in its config file, so a client with a stripped
environment never looks at the real ``/run/user`` or ``/tmp``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from agentcoord.kernel.locate import read_pointer
from tests.conftest import Daemon, make_env
from tests.daemon.test_on_demand import assert_one_daemon, stop_daemons

VENV_BIN = str(Path(sys.executable).parent)
# What the clients pass their MCP servers: the MCP SDK's stdio default (its
# DEFAULT_INHERITED_ENV_VARS on POSIX) and Codex CLI's filtered environment.
SDK_DEFAULT = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
CODEX = ("HOME", "PATH", "LANG", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A private HOME whose config file keeps the runtime fallbacks inside the test."""
    home = tmp_path / "home"
    roots = tmp_path / "roots"
    (roots / "run-user").mkdir(parents=True)
    (roots / "tmp").mkdir()
    config = home / ".config" / "agentcoord" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'runtime_roots = ["{roots / "run-user"}", "{roots / "tmp"}"]\n')
    return home


def stripped(home: Path, keep: tuple[str, ...] = ("HOME", "PATH")) -> dict[str, str]:
    """An environment with only ``keep`` (HOME the test's, PATH with the venv first)."""
    full = {
        "HOME": str(home),
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "LOGNAME": "u",
        "USER": "u",
        "SHELL": "/bin/sh",
        "TERM": "dumb",
        "LANG": "C.UTF-8",
        "TMPDIR": str(home.parent),
    }
    return {k: full[k] for k in keep}


def _session(claude_bin: Path, env: dict[str, str], cwd: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(claude_bin), args=["--", "agentcoord", "mcp"], env=env, cwd=str(cwd)
    )


async def _whoami(client: Client) -> dict[str, Any]:
    result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    who = result.structured_content
    assert isinstance(who, dict)
    return who


def _shim_env(d: Daemon, **extra: str) -> dict[str, str]:
    return {
        "AGENTCOORD_RUNTIME_DIR": str(d.runtime_dir),
        "AGENTCOORD_STATE_DIR": str(d.state_dir),
        "CLAUDE_CONFIG_DIR": d.env["CLAUDE_CONFIG_DIR"],
        "PATH": f"{VENV_BIN}:{os.environ['PATH']}",
        **extra,
    }


async def test_a_session_calls_again_after_the_daemon_restarts(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """A session's tool call works after SIGTERM and a new start of the daemon, through the
    same shim and MCP session, as the same agent; the HTTP address is the same."""
    project = tmp_path / "proj"
    project.mkdir()
    env = _shim_env(daemon, AGENTCOORD_NO_AUTOSTART="1")
    addr = daemon.http_addr
    async with Client(_session(claude_bin, env, project), mode="legacy") as client:
        before = await _whoami(client)
        assert daemon.stop() == 0, daemon.log()
        daemon.start()
        after = await _whoami(client)  # waits in the shim until the daemon is back
        listed = await client.list_tools()
    assert after["agent"] == before["agent"], daemon.log()
    assert after["kind"] == before["kind"] == "session"
    assert "whoami" in {t.name for t in listed.tools}
    assert daemon.http_addr == addr, daemon.log()


async def test_a_stopped_daemon_is_started_again_by_the_session(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """With the daemon stopped and no one starting it, the session's shim starts it on
    demand on the same dirs and the next call answers as the same agent."""
    project = tmp_path / "proj"
    project.mkdir()
    env = _shim_env(daemon)  # starting on demand allowed
    try:
        async with Client(_session(claude_bin, env, project), mode="legacy") as client:
            before = await _whoami(client)
            assert daemon.stop() == 0, daemon.log()
            after = await _whoami(client)
        assert after["agent"] == before["agent"]
        assert_one_daemon(daemon.state_dir)
        assert "agentcoord ready" in (daemon.state_dir / "daemon.log").read_text()
    finally:
        stop_daemons(daemon.state_dir)


def test_the_http_address_survives_a_restart_and_a_taken_one_is_reported(
    daemon_factory: Any,
) -> None:
    """A daemon whose address was not chosen serves on the same port after a restart (its
    hooks reach it); when another program took that port meanwhile, the log says so."""
    d: Daemon = daemon_factory("d")
    d.start()
    addr = d.http_addr
    d.stop()
    d.start()
    assert d.http_addr == addr, d.log()
    d.stop()
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT
    try:
        squatter.bind(("127.0.0.1", int(addr.rsplit(":", 1)[1])))
        squatter.listen(1)
        d.start()
        assert d.http_addr != addr
        assert f"{addr}, where this daemon served before its restart, is in use" in d.log()
    finally:
        squatter.close()


def test_a_chosen_default_address_that_is_taken_fails_the_start(tmp_path: Path) -> None:
    """`serve --http-addr 127.0.0.1:7420` with the port taken exits with one line naming it
    (never a move to another port, README "Where things live")."""
    squatter = socket.socket()
    try:
        try:
            squatter.bind(("127.0.0.1", 7420))
            squatter.listen(1)
        except OSError:
            pass  # something already holds it: the premise holds all the same
        env = make_env(tmp_path, AGENTCOORD_LOG_LEVEL="ERROR")
        del env["AGENTCOORD_HTTP_ADDR"]
        proc = subprocess.run(
            [sys.executable, "-m", "agentcoord", "serve", "--http-addr", "127.0.0.1:7420"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        squatter.close()
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode != 0, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert "127.0.0.1:7420 is in use" in lines[0]


# -- one daemon per user ------------------------------------------------------------------


@pytest.fixture
def user_daemon(daemon_factory: Any, home: Path) -> Daemon:
    """The user's daemon, started with every AGENTCOORD_* variable set (a shell profile)."""
    d: Daemon = daemon_factory("user", HOME=str(home))
    d.start()
    assert read_pointer({"HOME": str(home)}, os.getuid()) == (d.runtime_dir, d.state_dir)
    return d


@pytest.mark.parametrize(
    "keep", [("HOME", "PATH"), SDK_DEFAULT, CODEX], ids=["env-i", "sdk", "codex"]
)
async def test_a_stripped_environment_reaches_the_users_daemon(
    user_daemon: Daemon, home: Path, claude_bin: Path, tmp_path: Path, keep: tuple[str, ...]
) -> None:
    """A shim with only HOME and PATH (``env -i``), the MCP SDK's default environment, or
    Codex's reaches the running daemon through its pointer, and no other daemon starts."""
    project = tmp_path / "proj"
    project.mkdir()
    async with Client(_session(claude_bin, stripped(home, keep), project)) as client:
        who = await _whoami(client)
    assert who["kind"] == "session", user_daemon.log()
    assert_one_daemon(user_daemon.state_dir)
    assert not (home / ".local" / "state" / "agentcoord" / "daemon.log").exists()


def test_hooks_and_the_cli_with_a_stripped_environment_reach_the_users_daemon(
    user_daemon: Daemon, home: Path
) -> None:
    """`agentcoord hook session-start` and `agentcoord status` with only HOME and PATH reach
    the daemon the pointer names (the CLI also finds the human token in its state dir)."""
    env = stripped(home)
    status = subprocess.run(
        ["agentcoord", "status", "--json"], env=env, capture_output=True, text=True, timeout=30
    )
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["http_addr"] == user_daemon.http_addr
    hook = subprocess.run(
        ["agentcoord", "hook", "session-start"],
        env=env,
        input="{}",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert hook.returncode == 0
    assert "not running" not in hook.stdout, hook.stdout


@pytest.fixture
def cleanup(home: Path) -> Iterator[list[Path]]:
    """State dirs whose daemons (started on demand) are stopped at the end."""
    states: list[Path] = [home / ".local" / "state" / "agentcoord"]
    yield states
    for state in states:
        stop_daemons(state)


def _init_line() -> bytes:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    return json.dumps(init).encode() + b"\n"


def test_stripped_shims_at_once_start_exactly_one_daemon(home: Path, cleanup: list[Path]) -> None:
    """With no daemon, three shims with different stripped environments started together end
    with one daemon, which they all reach."""
    procs = [
        subprocess.Popen(
            ["agentcoord", "mcp"],
            env=stripped(home, keep),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for keep in (("HOME", "PATH"), SDK_DEFAULT, CODEX)
    ]
    outs = [p.communicate(_init_line(), timeout=60) for p in procs]
    for proc, (out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err
        # Not under a `claude`, the caller is refused by name: by the daemon, and only it.
        assert "neither an agent nor the human" in out.decode(), (out, err)
    assert_one_daemon(cleanup[0])


def test_a_stopped_users_daemon_is_started_again_on_its_own_dirs(
    user_daemon: Daemon, home: Path, cleanup: list[Path]
) -> None:
    """With the user's daemon (custom state dir) stopped, a shim with a stripped environment
    starts it again on the dirs its pointer names, not on the default state dir."""
    cleanup.append(user_daemon.state_dir)
    assert user_daemon.stop() == 0
    proc = subprocess.run(
        ["agentcoord", "mcp"],
        env=stripped(home, CODEX),
        input=_init_line(),
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert b"neither an agent nor the human" in proc.stdout, proc.stderr
    assert_one_daemon(user_daemon.state_dir)
    assert not (home / ".local" / "state" / "agentcoord" / "daemon.lock").exists()


def test_a_removed_runtime_dir_is_made_again_while_the_daemon_runs(daemon: Daemon) -> None:
    """`rm -r` of the runtime dir: within seconds the daemon has made it again (0700), with
    its socket (0600) and http.addr, and the CLI reaches it without a restart."""
    import shutil
    import stat
    import time

    shutil.rmtree(daemon.runtime_dir)
    deadline = time.monotonic() + 30  # generous; the daemon checks every 2 s
    while time.monotonic() < deadline:
        if daemon.socket.exists() and (daemon.runtime_dir / "http.addr").exists():
            break
        time.sleep(0.1)  # polling a file the daemon makes: it has no event to wait on
    else:
        raise AssertionError(f"runtime dir not made again:\n{daemon.log()}")
    assert stat.S_IMODE(daemon.runtime_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(daemon.socket.stat().st_mode) == 0o600
    status = subprocess.run(
        [sys.executable, "-m", "agentcoord", "status", "--json"],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert status.returncode == 0, status.stderr + daemon.log()
    assert "was removed: made again" in daemon.log()
    assert daemon.proc is not None
    assert (daemon.runtime_dir / "daemon.lock").read_text().strip() == str(daemon.proc.pid)


def test_the_commit_guard_with_another_runtime_dir_reaches_the_users_daemon(
    user_daemon: Daemon, home: Path, tmp_path: Path
) -> None:
    """The pre-commit guard run with a different $XDG_RUNTIME_DIR and no AGENTCOORD_* finds
    the daemon through its pointer: it checks the commit instead of saying it is off."""
    from tests.test_commitguard import change, git, git_env, make_worktrees, setup_git

    other = tmp_path / "other-run"
    other.mkdir(mode=0o700)
    env = git_env(other)
    del env["AGENTCOORD_RUNTIME_DIR"]
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(other))
    w1, _ = make_worktrees(tmp_path, env)
    assert setup_git(env, str(w1)).returncode == 0
    change(w1, env, "src/util.py")
    done = git(w1, env, "commit", "-q", "-m", "x")
    assert done.returncode == 0, done.stderr
    assert "commit guard is off" not in done.stderr, done.stderr + user_daemon.log()
