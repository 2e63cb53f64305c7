"""Claim keys and the write guard, through the daemon's unix socket, each figure a ratio against
a baseline measured in the same run (docs/claims.md "Benchmark"):

- the PreToolUse write guard (vendor method ``agentcoord/hook``, event ``pre-tool-use``, a
  Claude Code ``Write`` payload) with ``--claims`` live write claims held by other agents, of
  which ``--globs`` are folder and glob claims in the same repository (docs/claims.md "Folders
  and globs": each is matched against the written file), against an MCP ``ping`` on the same
  connection; hook p50 minus ping p50 is the decision's cost in the daemon (goal <= 1 ms);
- ``claim`` of a repository-relative ``file:src/x.py`` from a cwd inside a git repository
  against ``claim`` of the same kind of file by its absolute path (goal <= 1.2x). Whatever
  key resolution tools/claims.py does at run time is what is timed.

Usage: PYTHONPATH=src python bench/claimkeys.py [--n 1000] [--claims 1000] [--globs 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).parent))
import claims as bench_claims
from _common import median_ms, pct
from _daemon import running_daemon

from agentcoord.stores.kv import ClaimRecord, Holder, escape_key

DECISION_GOAL_MS = 1.0
KEY_RATIO_GOAL = 1.2
TREE_GOAL_MS = 2.0

__all__ = [
    "file_key",
    "fill_claims",
    "glob_key",
    "guard_latency",
    "key_latency",
    "make_repo",
    "measure",
]


def make_repo(root: Path) -> Path:
    """A real (empty) git repository with a ``src`` directory: what key resolution asks git."""
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)
    return repo.resolve()


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    """The daemon reads a unix caller's cwd from its process: open the connection in here."""
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def file_key(path: Path) -> str:
    """The key a claim of ``path`` is stored under: the canonical file key where the project
    resolves them (agentcoord.leases.filekeys), else the absolute path."""
    try:
        from agentcoord.leases.filekeys import FileKeys
    except ImportError:
        return f"file:{path}"
    return FileKeys().file_key(str(path), str(path.parent)).key


def glob_key(repo: Path, i: int) -> str:
    """The ``i``-th folder or glob claim of ``repo``: globs and folders by turns, none covering
    ``src/mine.py`` (the guard must look at each and allow the write)."""
    common = file_key(repo / "src" / "x.py").partition("//")[0]
    kinds = (f"src/g{i}/**/*.py", f"src/f{i}/", f"src/**/t{i}_*.py", f"docs/{i}/*.md")
    return f"{common}//{kinds[i % len(kinds)]}"


async def fill_claims(js: Any, repo: Path, n: int, globs: int = 0) -> None:
    """``n`` live write claims in ``repo``, each held by another agent, ``globs`` of them on
    folders and globs, the rest on files, written into the claims bucket directly (as another
    daemon's would arrive): the daemon's view picks them up."""
    kv = await js.key_value("agent-claims")
    now = time.time()
    keys = [glob_key(repo, i) for i in range(globs)]
    keys += [file_key(repo / "src" / f"other{i}.py") for i in range(n - globs)]
    records = [
        ClaimRecord(key, (Holder(f"bench-other-{i}", "write", 3600.0, now, now + 3600.0),))
        for i, key in enumerate(keys)
    ]
    for start in range(0, n, 200):
        batch = records[start : start + 200]
        await asyncio.gather(*(kv.put(escape_key(r.key), r.encode()) for r in batch))


async def _wait_claims(c: bench_claims.Mcp, n: int) -> None:
    deadline = time.monotonic() + 30
    while (await c.call("check_claims", {"holder": "", "limit": 1}))["total"] < n:
        if time.monotonic() > deadline:
            raise RuntimeError("the claims view did not fill")
        await asyncio.sleep(0.1)


async def guard_latency(c: bench_claims.Mcp, repo: Path, n: int) -> dict[str, list[float]]:
    """The write guard's answer for a Write of an unclaimed file (every claim is looked at and
    none denies: the common case) and ``ping`` on the same connection, alternating."""
    payload = {
        "session_id": "bench",
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(repo / "src" / "mine.py"), "content": "x = 1\n"},
        "cwd": str(repo),
    }
    params = {"event": "pre-tool-use", "payload": payload}
    hook: list[float] = []
    ping: list[float] = []
    for _ in range(n):
        t = time.perf_counter()
        await c.request("ping", {})
        ping.append(time.perf_counter() - t)
        t = time.perf_counter()
        out = await c.request("agentcoord/hook", params)
        hook.append(time.perf_counter() - t)
        if out.get("output") is not None:
            raise RuntimeError(f"the write guard did not allow an unclaimed file: {out}")
    return {"hook": hook, "ping": ping}


async def bash_latency(c: bench_claims.Mcp, repo: Path, n: int) -> dict[str, list[float]]:
    """The working-tree guard: the PreToolUse hook's answer for a Bash ``git checkout`` in
    ``repo`` (parsed with the shell parser, the worktree found, its sessions and claims looked
    at; nobody else works there, so it is allowed), against ``ping``, alternating."""
    payload = {
        "session_id": "bench",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "cd src && git checkout -q -b topic && git status"},
        "cwd": str(repo),
    }
    params = {"event": "pre-tool-use", "payload": payload}
    hook: list[float] = []
    ping: list[float] = []
    for _ in range(n):
        t = time.perf_counter()
        await c.request("ping", {})
        ping.append(time.perf_counter() - t)
        t = time.perf_counter()
        out = await c.request("agentcoord/hook", params)
        hook.append(time.perf_counter() - t)
        if out.get("output") is not None:
            raise RuntimeError(f"the working-tree guard refused a tree nobody else uses: {out}")
    return {"bash": hook, "bash_ping": ping}


async def key_latency(c: bench_claims.Mcp, repo: Path, n: int) -> dict[str, list[float]]:
    """``claim`` by ``file:src/...`` (relative to the caller's cwd in ``repo``) and by the
    absolute path, alternating, each released untimed."""
    rel: list[float] = []
    absolute: list[float] = []
    for i in range(n):
        for samples, key in (
            (rel, f"file:src/rel{i}.py"),
            (absolute, f"file:{repo}/src/abs{i}.py"),
        ):
            t = time.perf_counter()
            out = await c.call("claim", {"resource_key": key, "ttl": "5m"})
            samples.append(time.perf_counter() - t)
            if not out["acquired"]:
                raise RuntimeError(f"contention on {key}")
            await c.call("release", {"resource_key": key})
    return {"rel": rel, "abs": absolute}


async def measure(
    sock: Path,
    token: str,
    nats_url: str,
    user: str,
    pw: str,
    repo: Path,
    n: int,
    claims: int,
    globs: int = 0,
) -> dict[str, list[float]]:
    """Every figure's samples (seconds), as the human on a connection opened from ``repo``."""
    import nats

    nc = await nats.connect(nats_url, user=user, password=pw)
    with _cwd(repo):
        c = await bench_claims.Mcp.open(sock, token)
    try:
        await key_latency(c, repo, min(50, n))  # warm up both paths and git's answer
        keys = await key_latency(c, repo, n)
        await fill_claims(nc.jetstream(), repo, claims, globs)
        await _wait_claims(c, claims)
        await guard_latency(c, repo, min(50, n))
        guard = await guard_latency(c, repo, n)
        await bash_latency(c, repo, min(50, n))
        bash = await bash_latency(c, repo, n)
    finally:
        await c.close()
        await nc.close()
    return {**keys, **guard, **bash}


def report(
    r: dict[str, list[float]], claims: int, globs: int = 0
) -> list[tuple[str, float, str, float, str]]:
    """(figure, ours ms, baseline, baseline ms, goal) rows: what bench/run and main print."""
    hook, ping = median_ms(r["hook"]), median_ms(r["ping"])
    of_which = f" ({globs:,} folders and globs)" if globs else ""
    return [
        (
            f"write guard (PreToolUse hook), {claims:,} claims by others{of_which}, p50",
            hook,
            "MCP ping, same connection",
            ping,
            "-",
        ),
        (
            "write guard decision in the daemon (hook - ping), p50",
            hook - ping,
            "",
            0.0,
            f"<= {DECISION_GOAL_MS:g} ms",
        ),
        (
            "working-tree guard decision for a Bash git checkout (hook - ping), p50",
            median_ms(r["bash"]) - median_ms(r["bash_ping"]),
            "",
            0.0,
            f"<= {TREE_GOAL_MS:g} ms",
        ),
        (
            "claim file:src/x.py from a cwd in a git repository, p50",
            median_ms(r["rel"]),
            "claim by absolute path",
            median_ms(r["abs"]),
            f"<= {KEY_RATIO_GOAL:g}x",
        ),
    ]


def _print(r: dict[str, list[float]], claims: int, globs: int) -> None:
    for figure, ours, base_name, base, goal in report(r, claims, globs):
        if base_name:
            print(
                f"{figure}: ratio {ours / base:.2f}x {base_name} "
                f"({ours:.3f} vs {base:.3f} ms; goal {goal})"
            )
        else:
            print(f"{figure}: {ours:.3f} ms (goal {goal})")
    print(
        f"  hook p99 {pct(r['hook'], 0.99):.3f} ms, ping p99 {pct(r['ping'], 0.99):.3f} ms; "
        f"claim p99 relative {pct(r['rel'], 0.99):.3f} ms, absolute {pct(r['abs'], 0.99):.3f} ms"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--claims", type=int, default=1000)
    ap.add_argument("--globs", type=int, default=100, help="of --claims, on folders and globs")
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentcoord-bench-") as tmp:
        root = Path(tmp)
        repo = make_repo(root)
        with running_daemon(root / "d") as d:
            r = uvloop.run(
                measure(
                    d.sock,
                    d.token,
                    d.nats_url,
                    d.user,
                    d.password,
                    repo,
                    ns.n,
                    ns.claims,
                    min(ns.globs, ns.claims),
                )
            )
    _print(r, ns.claims, min(ns.globs, ns.claims))
    return 0


if __name__ == "__main__":
    sys.exit(main())
