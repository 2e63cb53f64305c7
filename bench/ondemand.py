"""Daemon on demand: the real `claude mcp list` with no daemon running (the shim starts one)
against the same command with the daemon already up, both measured in this run.

    PYTHONPATH=src python bench/ondemand.py [--runs N] [--claude PATH]

Each run stops the daemon, times a cold `claude mcp list` (its health check spawns the shim,
which starts the daemon and relays the handshake once it serves), then a warm one against the
daemon that cold run left. Everything lives in a private HOME and runtime dir (set up with
`agentcoord setup claude` as a user would), with Claude Code's offline switches; the daemon is
stopped at the end. Goal: cold <= 2 s (docs/claude-code.md "Daemon on demand"); the ratio
cold / warm says what the start adds to a session's first connection.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_ms, table

from agentcoord.kernel.locate import default_state_dir

_CLAUDE = "/opt/claude-code-2.1.328/bin/claude"
# tests/claude/conftest.py OFFLINE: no telemetry, no updater, no side requests.
_OFFLINE = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "ANTHROPIC_API_KEY": "sk-bench-offline",
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
}


def user_env(root: Path) -> dict[str, str]:
    home, run = root / "h", root / "r"
    for path in (home, run, home / "claude-tmp"):
        path.mkdir(mode=0o700)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENTCOORD_", "CLAUDE", "XDG_", "KUBE"))
    }
    env.update(
        HOME=str(home),
        XDG_RUNTIME_DIR=str(run),
        CLAUDE_CODE_TMPDIR=str(home / "claude-tmp"),
        AGENTCOORD_HTTP_ADDR="127.0.0.1:0",  # leave this machine's 7420 alone
        **_OFFLINE,
    )
    subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "claude"],
        env=env,
        check=True,
        capture_output=True,
    )
    return env


def mcp_list(claude: str, env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(
        [claude, "mcp", "list"], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    took = time.perf_counter() - t0
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("agent-coord:")]
    if not line or "✔ Connected" not in line[0]:
        raise RuntimeError(f"agent-coord did not connect:\n{out.stdout}{out.stderr}")
    return took


def daemons(state: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if proc.info["cmdline"][-2:] == ["agentcoord", "serve"] and (
                default_state_dir(proc.environ()) == state
            ):
                found.append(proc)
        except (psutil.Error, TypeError):
            continue
    return found


def stop(state: Path) -> None:
    procs = daemons(state)
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs(procs, timeout=10)
    for proc in alive:
        proc.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--claude", default=os.environ.get("AGENTCOORD_TEST_CLAUDE", _CLAUDE))
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="agentcoord-ondemand-"))
    env = user_env(root)
    state = default_state_dir(env)
    project = root / "project"
    project.mkdir()
    cold: list[float] = []
    warm: list[float] = []
    try:
        mcp_list(args.claude, env, project)  # untimed: the state dir's first start, caches
        for _ in range(args.runs):
            stop(state)
            if daemons(state):
                raise RuntimeError("the daemon did not stop")
            cold.append(mcp_list(args.claude, env, project))
            warm.append(mcp_list(args.claude, env, project))
        if len(daemons(state)) != 1:
            raise RuntimeError(f"expected one daemon, found {daemons(state)}")
    finally:
        stop(state)
        shutil.rmtree(root, ignore_errors=True)
    print(f"claude mcp list, {args.runs} runs each ({args.claude})")
    print(
        table(
            [
                (
                    "cold (daemon started on demand)",
                    median_ms(cold),
                    "warm (daemon up)",
                    median_ms(warm),
                    "<= 2000 ms",
                )
            ]
        )
    )
    print(f"ratio cold / warm: {median_ms(cold) / median_ms(warm):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
