"""Interactive Codex (its TUI, on a pseudo-terminal), offline against a scripted Responses API
(docs/codex.md "The shared app-server"): with ``daemon_auto_start`` on, its default, Codex runs
agent-coord under its shared app-server, and what the user sees is the daemon's one-line
refusal naming the cause and the fix; after `agentcoord setup codex` the same session's
agent-coord server is its own, and whoami answers a codex session."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

import pyte

from tests.clis.model_apis import Call, Say, Scripted
from tests.clis.test_codex_setup_daemon import _trust_as_the_user
from tests.clis.test_real_codex import answer, codex_home
from tests.conftest import Daemon


def _interactive(
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    done: Callable[[str], bool],
    press: list[tuple[str, bytes]] | None = None,
) -> str:
    """Run ``argv`` (interactive codex) on a wide pseudo-terminal until ``done(screen text)`` (or
    Codex exits, or 50 s pass); the screen's text as a terminal shows it (pyte). Codex asks the
    terminal where its cursor is: the answer is row 1, column 1. ``press`` is a list of
    (text, keys), in order: the keys typed once the screen shows that text."""
    press = list(press or [])
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec at once
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 400, 0, 0))
    screen = pyte.Screen(400, 60)
    stream = pyte.ByteStream(screen)
    text = ""
    try:
        deadline = time.monotonic() + 50  # a stuck run fails inside the test's timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # Codex exited
                break
            stream.feed(chunk)
            if b"\x1b[6n" in chunk:
                os.write(fd, b"\x1b[1;1R")
            text = "\n".join(line.rstrip() for line in screen.display)
            if done(text):
                break
            if press and press[0][0] in text:
                os.write(fd, press.pop(0)[1])
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return text


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _stop_shared_daemon(home: Path) -> None:
    """Stop the managed app-server Codex started under ``home`` (it outlives the session), by
    the pids it recorded, and drop the copy of Codex it runs from."""
    for name in ("daemon.pid", "daemon-updater.pid"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            pid = int(json.loads((home / "app-server-daemon" / name).read_text())["pid"])
            exe = os.readlink(f"/proc/{pid}/exe")
            if exe.startswith(str(home)):  # that pid is still Codex's daemon from this home
                os.kill(pid, signal.SIGKILL)
    shutil.rmtree(home / "packages", ignore_errors=True)


def test_interactive_codex_shows_the_refusal_then_works_after_setup(
    daemon: Daemon, real_codex: Path, responses_api: Scripted, tmp_path: Path
) -> None:
    """Interactive codex with agent-coord registered by hand and the shared daemon on (its
    default) shows agent-coord refused, naming the shared app-server and both fixes; after
    `agentcoord setup codex` (hooks trusted as the user would), its whoami answers a codex
    session of that project."""
    project = tmp_path / "shop"
    project.mkdir()
    home = codex_home(tmp_path, responses_api, server=False)
    config = home / "config.toml"
    # The project is trusted, so Codex asks nothing before the prompt. No command-line
    # overrides (`-c`, `--enable`): with one, Codex runs without its shared daemon.
    base = config.read_text() + f'\n[projects."{project}"]\ntrust_level = "trusted"\n'
    by_hand = f"""
[mcp_servers.agent-coord]
command = "{sys.executable}"
args = ["-m", "agentcoord", "mcp"]
"""
    config.write_text(base + by_hand)
    env = {
        "HOME": daemon.env["HOME"],
        "PATH": daemon.env["PATH"],
        "CODEX_HOME": str(home),
        "STAND_IN_KEY": "sk-offline",
        "TERM": "xterm-256color",
    }
    responses_api.script(Say("hello"))
    try:
        screen = _interactive(
            [str(real_codex), "hi"],
            env,
            project,
            lambda s: "--disabledaemon_auto_start" in _squeezed(s),
            # The answer is in: F2 opens the warnings, → pages through them.
            press=[("Worked for", b"\x1bOQ"), *((f"{n} of", b"\x1b[C") for n in range(1, 6))],
        )
    finally:
        _stop_shared_daemon(home)
    # A warning wraps at the pager's width: the words are compared without the line breaks.
    seen = _squeezed(screen)
    for words in (
        "shared app-server",
        "run `agentcoord setup codex`",
        "--disable daemon_auto_start",
    ):
        assert _squeezed(words) in seen, screen

    config.write_text(base)
    setup = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "codex"],
        env={**daemon.env, "CODEX_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr
    # Nobody is at this terminal to approve the tool call, nor to trust the hooks.
    config.write_text(
        config.read_text().replace(
            'args = ["mcp"]\n', 'args = ["mcp"]\ndefault_tools_approval_mode = "approve"\n'
        )
    )
    _trust_as_the_user(real_codex, env)
    responses_api.script(Call("whoami"), Say("done"))
    try:
        _interactive([str(real_codex), "who am I?"], env, project, lambda _s: bool(
            responses_api.tool_outputs()))  # fmt: skip
    finally:
        _stop_shared_daemon(home)
    outputs = responses_api.tool_outputs()
    assert len(outputs) == 1, outputs
    me = answer(outputs[0])
    assert (me["session_kind"], me["cwd"]) == ("codex", str(project)), me
