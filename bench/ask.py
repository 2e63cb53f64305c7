"""ask benchmark: the round trip of ``ask`` through a real daemon to an agent whose turn is the
stand-in ``claude -p``, against spawning the stand-in directly, interleaved in the same run.

- ask, warm: the idle linked session "From <you>" is resumed (``--resume``) each time;
- ask, cold: a fresh agent each time (new session, ``--session-id``);
- baselines: the stand-in spawned directly (no daemon, no sandbox), and the same stand-in
  through the runner launcher under the same bubblewrap sandbox (no daemon), which isolates
  what the daemon adds (tool call, store writes, linked session, result) from the sandbox.

    PYTHONPATH=src python bench/ask.py [--runs 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import human_token, median_ms, pct, private_home, table, wait_ready

from agentcoord.client.rpc import call_unix
from agentcoord.identity.runners import RunnerInfo, Runners
from agentcoord.localagents.runner import RunnerSpec, run_local
from agentcoord.localagents.sandbox import Sandbox

ROOT = Path(__file__).resolve().parent.parent
STANDIN = ROOT / "tests" / "fakes" / "claude_runner.py"


def tool_call(sock_path: Path, token: str, name: str, args: dict[str, Any]) -> Any:
    """One tools/call on a fresh connection as the human (``token``), as the CLI calls."""
    params = {"name": name, "arguments": args}
    result = call_unix(sock_path, "tools/call", params, timeout=300, token=token)
    if result.get("isError"):
        raise RuntimeError(result["content"][0]["text"])
    return result["structuredContent"]


def start_daemon(tmp: Path, runner: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTCOORD_", "CLAUDE"))}
    env.update(
        AGENTCOORD_STATE_DIR=str(tmp / "state"),
        AGENTCOORD_RUNTIME_DIR=str(tmp / "run"),
        AGENTCOORD_HTTP_ADDR="127.0.0.1:0",
        AGENTCOORD_RUNNER_COMMAND=f"{runner} -p --output-format json",
        CLAUDE_CONFIG_DIR=str(tmp / "claude"),
        **private_home(tmp),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentcoord", "serve"], env=env, stderr=subprocess.DEVNULL
    )
    wait_ready(tmp / "run" / "agentcoord.sock", tmp / "state", proc)
    return proc


def ask_once(sock: Path, token: str, agent: str) -> float:
    t0 = time.perf_counter()
    res = tool_call(sock, token, "ask", {"agent": agent, "text": "answer pong"})
    took = time.perf_counter() - t0
    assert res["answer"] == "pong", res
    return took


def direct_spawn(runner: Path, cwd: Path) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(
        [str(runner), "-p", "answer pong", "--output-format", "json"],
        cwd=cwd,
        capture_output=True,
        check=True,
        env={**os.environ, "CLAUDE_CONFIG_DIR": str(cwd / "claude")},
    )
    took = time.perf_counter() - t0
    assert json.loads(out.stdout)["result"] == "pong"
    return took


async def sandboxed_spawn(runner: Path, tmp: Path, n: int) -> float:
    job = tmp / "jobs" / f"j{n}"
    pkg = tmp / "pkg"
    pkg.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    outcome = await run_local(
        spec=RunnerSpec(command=(str(runner), "-p", "--output-format", "json")),
        sandbox=Sandbox(shutil.which("bwrap")),
        prompt="answer pong",
        package=pkg,
        job_dir=job,
        runtime_dir=tmp / "run",
        claude_dir=tmp / "claude",
        base_env=dict(os.environ),
        runners=Runners(),
        runner_info=RunnerInfo("bench"),
    )
    took = time.perf_counter() - t0
    assert outcome.parsed is not None, outcome
    assert outcome.parsed["result"] == "pong", outcome
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentcoord-bench-ask-") as t:
        tmp = Path(t)
        runner = tmp / "bin" / "claude"
        runner.parent.mkdir()
        runner.write_text(f"#!{sys.executable}\n" + STANDIN.read_text())
        runner.chmod(0o755)
        direct_cwd = tmp / "direct"
        direct_cwd.mkdir()
        daemon = start_daemon(tmp, runner)
        sock = tmp / "run" / "agentcoord.sock"
        token = human_token(tmp / "state")
        try:
            tool_call(sock, token, "spawn_subagent", {"name": "bench"})
            ask_once(sock, token, "bench")  # opens the linked session (and warms caches)
            direct_spawn(runner, direct_cwd)
            warm: list[float] = []
            cold: list[float] = []
            direct: list[float] = []
            boxed: list[float] = []
            bwrap = shutil.which("bwrap")
            for i in range(args.runs):
                tool_call(sock, token, "spawn_subagent", {"name": f"cold-{i}"})
                steps = [
                    lambda: warm.append(ask_once(sock, token, "bench")),
                    lambda i=i: cold.append(ask_once(sock, token, f"cold-{i}")),
                    lambda: direct.append(direct_spawn(runner, direct_cwd)),
                ]
                if bwrap:
                    steps.append(
                        lambda i=i: boxed.append(asyncio.run(sandboxed_spawn(runner, tmp, i)))
                    )
                random.shuffle(steps)  # same run, random order: the machine's noise hits all alike
                for step in steps:
                    step()
        finally:
            daemon.terminate()
            daemon.wait(10)
    d = median_ms(direct)
    rows = [
        ("ask round trip, warm (--resume)", median_ms(warm), "direct spawn", d, "-"),
        ("ask round trip, cold (new agent)", median_ms(cold), "direct spawn", d, "-"),
    ]
    if boxed:
        b = median_ms(boxed)
        rows.append(("ask round trip, warm (--resume)", median_ms(warm), "same sandbox", b, "-"))
    print(f"runs: {args.runs}; sandbox: {'bwrap' if bwrap else 'none'}")
    print(table(rows))
    print(f"\nask warm p90 {pct(warm, 0.9):.1f} ms; direct spawn p90 {pct(direct, 0.9):.1f} ms")


if __name__ == "__main__":
    main()
