"""Local-agents benchmark, each figure against a raw baseline measured in the same run:

- ``discover_local_agents`` over 1,000 packages (in-process service call, and the whole tool
  call over the daemon's unix socket) vs a raw ``os.scandir`` + ``stat`` walk of the same tree;
  goal p50 <= 20 ms.
- index update after a new ``CLAUDE.md`` vs the raw watchfiles (Rust notify) event latency on
  the same tree; goal <= 500 ms.
- cold start of the stand-in ``claude -p`` sandboxed (bwrap) vs unsandboxed (ratio), and the
  unsandboxed one vs a bare ``python -c pass``.

    PYTHONPATH=src python bench/localagents.py [--packages 1000] [--runs 15]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_ms, pct, private_home, table, wait_ready

from agentcoord.client.rpc import call_unix
from agentcoord.identity.runners import RunnerInfo, Runners
from agentcoord.localagents import LocalAgents, PackageIndex
from agentcoord.localagents.launch import Launcher
from agentcoord.localagents.runner import RunnerSpec, run_local
from agentcoord.localagents.sandbox import Sandbox
from agentcoord.localagents.sessions import PsutilSessionProbe

ROOT = Path(__file__).resolve().parent.parent
STANDIN = ROOT / "tests" / "fakes" / "claude_runner.py"


def make_hub(hub: Path, n: int) -> None:
    for i in range(n):
        pkg = hub / "agents" / f"agent-{i:04d}" / "package"
        pkg.mkdir(parents=True)
        (pkg / "CLAUDE.md").write_text(f"# agent {i}\n")
        (pkg / "command.yml").write_text(
            f"name: agent-{i:04d}\ndescription: bench agent\ncapabilities: [cap-{i % 7}]\n"
        )


def _packages(hub: Path) -> int:
    return sum(1 for _ in (hub / "agents").iterdir())


def raw_scan(hub: Path) -> float:
    t0 = time.perf_counter()
    found = 0
    for entry in os.scandir(hub / "agents"):
        try:
            os.stat(os.path.join(entry.path, "package", "CLAUDE.md"))
            found += 1
        except OSError:
            pass
    assert found
    return time.perf_counter() - t0


@contextlib.asynccontextmanager
async def _service(hub: Path, tmp: Path, cache_s: float) -> AsyncIterator[LocalAgents]:
    """LocalAgents over a real SQLite object store (its records), entered."""
    from agentcoord.stores.objects import ObjectStore

    async with ObjectStore(tmp / "objects.db") as store, _local(hub, tmp, cache_s, store) as svc:
        yield svc


def _local(hub: Path, tmp: Path, cache_s: float, store: Any) -> LocalAgents:
    from agentcoord.stores.objects.repository import StoreAgentRecords, StoreJobRecords

    return LocalAgents(
        enabled=True,
        hub=hub,
        session_ttl=3600,
        state_dir=tmp,
        runtime_dir=tmp,
        claude_dir=tmp / "claude",
        spec=RunnerSpec(),
        sandbox=Sandbox(None),
        base_env={},
        records=StoreAgentRecords(store),
        tasks=StoreJobRecords(store),
        launcher=Launcher.for_spec(RunnerSpec(), store, base_env={}, runtime_dir=tmp),
        probe=PsutilSessionProbe(tmp / "claude", cache_s=cache_s),
    )


async def discover_in_process(hub: Path, tmp: Path, runs: int, cache_s: float) -> list[float]:
    samples = []
    async with _service(hub, tmp, cache_s) as svc:
        for _ in range(runs):
            t0 = time.perf_counter()
            out = svc.discover()
            samples.append(time.perf_counter() - t0)
            assert out["count"] >= _packages(hub)
    return samples


def tool_call(sock_path: Path, token: str, name: str, args: dict[str, Any]) -> Any:
    """One tools/call on a fresh connection as the human (``token``), as the CLI calls."""
    params = {"name": name, "arguments": args}
    return call_unix(sock_path, "tools/call", params, timeout=60, token=token)


def discover_over_socket(hub: Path, tmp: Path, runs: int) -> list[float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCOORD_")}
    env.update(
        AGENTCOORD_STATE_DIR=str(tmp / "state"),
        AGENTCOORD_RUNTIME_DIR=str(tmp / "run"),
        AGENTCOORD_HTTP_ADDR="127.0.0.1:0",
        AGENTIBRIDGE_LOCAL_AGENTS_ENABLED="true",
        AGENTIHUB_DIR=str(hub),
        **private_home(tmp),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentcoord", "serve"], env=env, stderr=subprocess.DEVNULL
    )
    try:
        sock = tmp / "run" / "agentcoord.sock"
        token = wait_ready(sock, tmp / "state", proc)
        result = tool_call(sock, token, "discover_local_agents", {})  # warm-up
        assert result["structuredContent"]["count"] >= _packages(hub), result
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            tool_call(sock, token, "discover_local_agents", {})
            samples.append(time.perf_counter() - t0)
        return samples
    finally:
        proc.terminate()
        proc.wait()


async def index_update(hub: Path, runs: int) -> list[float]:
    samples = []
    async with PackageIndex(hub) as index:
        for i in range(runs):
            pkg = hub / "agents" / f"new-{i}" / "package"
            pkg.mkdir(parents=True)
            t0 = time.perf_counter()
            (pkg / "CLAUDE.md").write_text("# new\n")
            while index.get(f"new-{i}") is None:
                await index.wait_generation(index.generation)
            samples.append(time.perf_counter() - t0)
    return samples


def raw_notify(hub: Path, runs: int) -> list[float]:
    from watchfiles._rust_notify import RustNotify

    samples = []
    with RustNotify([str(hub)], False, False, 300, True, True) as watcher:
        for i in range(runs):
            target = hub / "agents" / f"raw-{i}.txt"
            stamp: list[float] = []

            def touch(path: Path = target, stamp: list[float] = stamp) -> None:
                time.sleep(0.05)
                stamp.append(time.perf_counter())
                path.write_text("x")

            t = threading.Thread(target=touch)
            t.start()
            while True:
                changes = watcher.watch(200, 20, 5000, None)
                if isinstance(changes, set) and any(str(target) == p for _, p in changes):
                    break
            samples.append(time.perf_counter() - stamp[0])
            t.join()
    return samples


async def cold_start(tmp: Path, runner: Path, sandbox: Sandbox, runs: int) -> list[float]:
    pkg = tmp / "hub-cold" / "agents" / "a" / "package"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "CLAUDE.md").write_text("# a\n")
    spec = RunnerSpec(command=(str(runner), "-p", "--output-format", "json"), timeout_s=30)
    samples = []
    for i in range(runs):
        t0 = time.perf_counter()
        out = await run_local(
            spec=spec,
            sandbox=sandbox,
            prompt="",
            package=pkg,
            job_dir=tmp / "jobs" / f"{sandbox.mode[:4]}-{time.monotonic_ns()}-{i}",
            runtime_dir=tmp,
            claude_dir=tmp / "claude",
            base_env=dict(os.environ),
            runners=Runners(),
            runner_info=RunnerInfo("a"),
        )
        samples.append(time.perf_counter() - t0)
        assert out.success, out
    return samples


def bare_python() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


def measure(packages: int, runs: int) -> dict[str, Any]:
    """Every figure's samples (seconds); ``main`` prints them, bench/run reports them."""
    bwrap = shutil.which("bwrap")
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        tmp = Path(d)
        hub = tmp / "agentihub"
        make_hub(hub, packages)
        scan = [raw_scan(hub) for _ in range(runs)]
        cached = asyncio.run(discover_in_process(hub, tmp, runs, cache_s=1.0))
        cold_probe = asyncio.run(discover_in_process(hub, tmp, runs, cache_s=0.0))
        wire = discover_over_socket(hub, tmp, runs)
        notify = raw_notify(hub, runs)
        update = asyncio.run(index_update(hub, runs))
        runner = tmp / "bin" / "claude"
        runner.parent.mkdir()
        runner.write_text(f"#!{sys.executable}\n" + STANDIN.read_text())
        runner.chmod(0o755)
        py = [bare_python() for _ in range(runs)]
        plain: list[float] = []
        boxed: list[float] = []
        for _ in range(runs):  # interleaved, so drift on a shared machine hits both
            plain += asyncio.run(cold_start(tmp, runner, Sandbox(None), 1))
            if bwrap:
                boxed += asyncio.run(cold_start(tmp, runner, Sandbox(bwrap), 1))
    return {
        "scan": scan,
        "cached": cached,
        "cold_probe": cold_probe,
        "wire": wire,
        "notify": notify,
        "update": update,
        "py": py,
        "plain": plain,
        "boxed": boxed,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--packages", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    r = measure(args.packages, args.runs)
    scan, cached, cold_probe, wire = r["scan"], r["cached"], r["cold_probe"], r["wire"]
    notify, update, py, plain, boxed = r["notify"], r["update"], r["py"], r["plain"], r["boxed"]
    n = args.packages
    print(f"local-agents benchmark: {n} packages, {args.runs} runs each, medians")
    print(
        f"discover p50/p95: in-process {pct(cached, 0.5):.1f}/{pct(cached, 0.95):.1f} ms, "
        f"cold probe {pct(cold_probe, 0.5):.1f}/{pct(cold_probe, 0.95):.1f} ms, "
        f"tool call over the socket {pct(wire, 0.5):.1f}/{pct(wire, 0.95):.1f} ms\n"
    )
    rows = [
        (
            f"discover_local_agents, {n} pkgs (service)",
            median_ms(cached),
            "raw scandir+stat",
            median_ms(scan),
            "<= 20 ms",
        ),
        (
            f"discover_local_agents, {n} pkgs, process probe uncached",
            median_ms(cold_probe),
            "raw scandir+stat",
            median_ms(scan),
            "<= 20 ms",
        ),
        (
            f"discover_local_agents, {n} pkgs, MCP call over unix socket",
            median_ms(wire),
            "raw scandir+stat",
            median_ms(scan),
            "<= 20 ms",
        ),
        (
            "index update after new CLAUDE.md",
            median_ms(update),
            "raw watchfiles event",
            median_ms(notify),
            "<= 500 ms",
        ),
        (
            "cold start stand-in, no sandbox",
            median_ms(plain),
            "bare python -c pass",
            median_ms(py),
            "-",
        ),
    ]
    if boxed:
        rows.append(
            (
                "cold start stand-in, bwrap",
                median_ms(boxed),
                "same, no sandbox",
                median_ms(plain),
                "-",
            )
        )
    print(table(rows))
    if not boxed:
        print("\nbwrap not found: sandboxed cold start not measured")


if __name__ == "__main__":
    main()
