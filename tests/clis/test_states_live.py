"""Codex, Gemini CLI and OpenCode sessions' states, live, from the hooks and the plugin their
setups install (docs/activity.md "Other CLIs"): the real binaries, offline against scripted
model APIs. A turn that ends shows the session idle in ``list_agents``; a call that waits for
the user's permission shows it waiting, with the tool and its input."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import urllib.request
from pathlib import Path
from typing import Any

from agentcoord.activity.states import after_hook, describe
from agentcoord.gemini.hookshape import gemini_input
from tests.agentops.conftest import wait_for
from tests.clis.model_apis import Call, Say, Scripted
from tests.clis.test_real_codex import codex_home
from tests.clis.test_real_gemini import gemini_home
from tests.clis.test_real_opencode import OFFLINE, opencode_config
from tests.conftest import Daemon
from tests.tools.conftest import AgentProc, cli

_WAIT_S = 120.0  # a CLI's start on a loaded machine; only a state that never comes fails


def _holder(tmp_path: Path) -> tuple[Path, Path]:
    """A hook command that holds the CLI at its turn's end until :func:`_release` (a named
    pipe), so the state is read while the session still runs, before its SessionEnd."""
    fifo = tmp_path / "release"
    os.mkfifo(fifo)
    script = tmp_path / "hold.sh"
    script.write_text(f"#!/bin/sh\ncat > /dev/null\nread line < '{fifo}'\n")
    script.chmod(0o755)
    return script, fifo


def _release(fifo: Path) -> None:
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # nobody holds there (the hook never ran, or has gone)
        return
    with os.fdopen(fd, "w") as f:
        f.write("go\n")


def _stop(proc: Any) -> None:
    """End ``proc`` and every process of its group: the CLIs start themselves again as a child
    (Gemini CLI's node with a larger heap), and their MCP servers and hooks run beside."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=30)
            break
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


def _state(peer: AgentProc, prefix: str) -> Any:
    """The state ``list_agents`` (as a model reads it) says of the session named ``prefix-*``."""
    rows = [r for r in peer.call("list_agents")["agents"] if r["name"].startswith(prefix + "-")]
    return rows[0].get("state") if rows else None


def _until(peer: AgentProc, prefix: str, want: str) -> str:
    found = wait_for(
        lambda: (s := _state(peer, prefix)) == want and s,
        _WAIT_S,
        f"{prefix}-* to be {want!r} (last: {_state(peer, prefix)!r})",
    )
    return str(found)


_ESCALATED = {
    "cmd": "touch made.txt",
    "sandbox_permissions": "require_escalated",
    "justification": "make the file",
}


def _codex(
    daemon: Daemon, real_codex: Path, api: Scripted, tmp_path: Path, hold: Path | None
) -> tuple[list[str], dict[str, str], Path]:
    """`agentcoord setup codex` in a CODEX_HOME on ``api`` (with ``hold`` as a second Stop
    hook); the argv of a headless run whose approvals go to Codex's automatic reviewer (a
    model request: the only way `codex exec` asks, and so runs its PermissionRequest hook)."""
    project = tmp_path / "shop"
    project.mkdir()
    home = codex_home(tmp_path, api, server=False)
    setup = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "codex"],
        env={**daemon.env, "CODEX_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr
    if hold is not None:
        with (home / "config.toml").open("a") as f:
            f.write(
                f'\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\n'
                f'command = "{hold}"\ntimeout = 600\n'
            )
    env = {
        "HOME": daemon.env["HOME"],
        "PATH": daemon.env["PATH"],
        "CODEX_HOME": str(home),
        "STAND_IN_KEY": "sk-offline",
    }
    argv = [str(real_codex), "exec", "--json", "--skip-git-repo-check", "--approve-for-me"]
    return [*argv, "--dangerously-bypass-hook-trust", "make the file"], env, project


def test_codex_waits_for_permission_with_its_call_then_is_idle_when_its_turn_ends(
    daemon: Daemon, real_codex: Path, responses_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """codex exec asking to run `touch made.txt` outside its sandbox shows waiting for
    permission with the call (PermissionRequest) while its reviewer has not answered; once the
    turn ends (Stop) it shows idle."""
    hold, fifo = _holder(tmp_path)
    argv, env, project = _codex(daemon, real_codex, responses_api, tmp_path, hold)
    responses_api.hold_side = threading.Event()  # the reviewer's request waits for the test
    responses_api.script(Call("exec_command", _ESCALATED), Say("done"))
    peer = AgentProc(daemon, claude_bin, tmp_path / "work" / "peer")
    run = subprocess.Popen(
        argv, env=env, cwd=project, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        waiting = _until(peer, "shop", "waiting for permission: Bash touch made.txt")
        assert waiting == "waiting for permission: Bash touch made.txt"
        responses_api.hold_side.set()
        assert _until(peer, "shop", "idle") == "idle"
        _release(fifo)
        out, _ = run.communicate(timeout=180)
        assert run.returncode == 0, out[-3000:]
        assert not (project / "made.txt").exists()  # the reviewer's answer was no approval
    finally:
        responses_api.hold_side.set()
        _release(fifo)
        if run.poll() is None:
            _stop(run)
        peer.close()


def test_a_standing_approval_answers_codexs_permission_request(
    daemon: Daemon, real_codex: Path, responses_api: Scripted, tmp_path: Path
) -> None:
    """With the human's standing approval for `touch`, codex exec's PermissionRequest is
    answered "allow" and Codex honours it: the command runs outside the sandbox, and the
    approval counts a use (docs/approvals.md)."""
    argv, env, project = _codex(daemon, real_codex, responses_api, tmp_path, None)
    granted = cli(daemon, "allow", "Bash(touch:*)")
    assert granted.returncode == 0, granted.stderr
    responses_api.script(Call("exec_command", _ESCALATED), Say("done"))
    out = subprocess.run(argv, env=env, cwd=project, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    assert (project / "made.txt").exists(), responses_api.tool_outputs()
    [approval] = json.loads(cli(daemon, "allow", "--list", "--json").stdout)
    assert approval["uses"] == 1, approval


def test_gemini_is_idle_when_its_turn_ends(
    daemon: Daemon, real_gemini: Path, gemini_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """gemini -p's AfterAgent hook from `agentcoord setup gemini` shows the session idle once
    its turn ends."""
    project = tmp_path / "blog"
    project.mkdir()
    home = gemini_home(tmp_path, project, daemon.env)
    hold, fifo = _holder(tmp_path)
    settings_file = home / ".gemini" / "settings.json"
    settings = json.loads(settings_file.read_text())
    held = {"type": "command", "command": str(hold), "timeout": 600_000}
    settings["hooks"]["AfterAgent"].append({"hooks": [held]})
    settings_file.write_text(json.dumps(settings))
    gemini_api.script(Say("done"))
    env = {
        **daemon.env,
        "HOME": str(home),
        "GEMINI_API_KEY": "offline",
        "GOOGLE_GEMINI_BASE_URL": gemini_api.url,
    }
    peer = AgentProc(daemon, claude_bin, tmp_path / "work" / "peer")
    argv = [str(real_gemini), "-p", "hello", "--output-format", "json"]
    run = subprocess.Popen(
        argv, env=env, cwd=project, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert _until(peer, "blog", "idle") == "idle"
        _release(fifo)
        out, _ = run.communicate(timeout=180)
        assert run.returncode == 0, out[-3000:]
    finally:
        _release(fifo)
        if run.poll() is None:
            _stop(run)
        peer.close()


def _terminal(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[Any, threading.Thread]:
    """``argv`` on a pseudo-terminal of its own (an interactive session), its screen drained
    so that it never blocks on writing it."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
    )
    os.close(slave)

    def drain() -> None:
        try:
            while os.read(master, 65536):
                pass
        except OSError:  # the terminal's other side closed: the session exited
            pass
        finally:
            os.close(master)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    return proc, reader


def test_gemini_waits_for_permission_with_its_shell_command(
    daemon: Daemon, real_gemini: Path, gemini_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """An interactive Gemini CLI session (on a terminal: `gemini -p` never asks) whose model
    runs `touch made.txt` shows waiting for permission with the command while its dialog is
    open (the Notification hook's ToolPermission), and the command has not run."""
    project = tmp_path / "blog"
    project.mkdir()
    home = gemini_home(tmp_path, project, daemon.env)
    gemini_api.script(Call("run_shell_command", {"command": "touch made.txt"}), Say("done"))
    env = {
        **daemon.env,
        "HOME": str(home),
        "GEMINI_API_KEY": "offline",
        "GOOGLE_GEMINI_BASE_URL": gemini_api.url,
        "TERM": "xterm-256color",
    }
    peer = AgentProc(daemon, claude_bin, tmp_path / "work" / "peer")
    argv = [str(real_gemini), "-i", "make the file"]
    session, reader = _terminal(argv, env, project)
    try:
        want = "waiting for permission: run_shell_command touch made.txt"
        assert _until(peer, "blog", want) == want
        assert not (project / "made.txt").exists()
    finally:
        _stop(session)
        reader.join(timeout=30)
        peer.close()


def test_geminis_recorded_tool_permission_notification_is_a_wait_for_that_call() -> None:
    """Gemini CLI's ToolPermission notification as its Notification hook got it (recorded from
    the real binary's interactive dialog), through the hook adapter, is a wait for permission
    naming the shell command; any other notification goes through as it came."""
    payload = {
        "session_id": "38326416-53d7-472b-8137-2dec27c7edef",
        "cwd": "/home/u/blog",
        "hook_event_name": "Notification",
        "timestamp": "2026-12-02T13:38:29.682Z",
        "notification_type": "ToolPermission",
        "message": "Tool Confirm Shell Command requires execution",
        "details": {
            "type": "exec",
            "title": "Confirm Shell Command",
            "command": "touch made.txt",
            "rootCommand": "touch",
        },
    }
    said = gemini_input("notification", payload)
    assert said["notification_type"] == "permission_prompt"
    assert (said["tool_name"], said["tool_input"]) == (
        "run_shell_command",
        {"command": "touch made.txt"},
    )
    state = after_hook(None, "Notification", said, 1.0, summary="touch made.txt")
    assert state is not None
    assert describe(state) == "waiting for permission: run_shell_command touch made.txt"
    other = {**payload, "notification_type": "Other"}
    assert gemini_input("notification", other) == other


def _serve(argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> tuple[Any, str]:
    """`opencode serve` and the address it says it listens on."""
    with log.open("w") as out:  # the child keeps its own copy
        proc = subprocess.Popen(
            argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )

    def address() -> str | None:
        if proc.poll() is not None:
            raise AssertionError(f"opencode serve exited: {log.read_text()[-3000:]}")
        found = re.search(r"listening on (http://[0-9.:]+)", log.read_text())
        return found.group(1) if found else None

    return proc, str(wait_for(address, _WAIT_S, "opencode serve's address"))


def _http(url: str, method: str = "GET", body: object = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        text = answer.read()
    return json.loads(text) if text else None


def test_opencode_waits_for_permission_with_its_call_then_is_idle(
    daemon: Daemon, real_opencode: Path, chat_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """An OpenCode session (headless, `opencode serve`) whose bash call needs the user's
    permission shows waiting for permission with the command (the plugin's permission.asked);
    once allowed the command runs, and when the turn ends (session.idle) it shows idle."""
    project = tmp_path / "api"
    project.mkdir()
    bin_dir = str(Path(sys.executable).parent)
    env = {**daemon.env, **OFFLINE, "HOME": str(tmp_path / "opencode-home"), "PWD": str(project)}
    env = {k: v for k, v in env.items() if not k.startswith("XDG_") or k == "XDG_RUNTIME_DIR"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    opencode_config(project, chat_api, env)
    config = json.loads((project / "opencode.json").read_text())
    config["permission"]["bash"] = "ask"
    (project / "opencode.json").write_text(json.dumps(config))
    chat_api.script(Call("bash", {"command": "touch made.txt", "description": "make it"}))
    chat_api.script(Say("done"))
    peer = AgentProc(daemon, claude_bin, tmp_path / "work" / "peer")
    argv = [str(real_opencode), "serve", "--port", "0"]
    serve, url = _serve(argv, env, project, tmp_path / "serve.log")
    try:
        session = _http(f"{url}/session", "POST", {})["id"]
        prompt = {
            "parts": [{"type": "text", "text": "make the file"}],
            "model": {"providerID": "standin", "modelID": "m"},
        }
        _http(f"{url}/session/{session}/prompt_async", "POST", prompt)
        waiting = _until(peer, "api", "waiting for permission: bash touch made.txt")
        assert waiting == "waiting for permission: bash touch made.txt"
        [asked] = _http(f"{url}/permission")
        _http(f"{url}/permission/{asked['id']}/reply", "POST", {"reply": "once"})
        assert _until(peer, "api", "idle") == "idle"
        assert (project / "made.txt").exists()
    finally:
        _stop(serve)
        peer.close()
