"""Codex hook benchmark: what one command hook costs per tool call for a Codex session, which
has no http hooks, against a bare ``true`` command hook measured in the same run
(docs/other-clis.md "Setup").

    PYTHONPATH=src python bench/clihooks.py [--runs N]

A daemon on temp dirs; the measuring process is installed as an executable named ``codex``,
so the daemon resolves its children as a Codex session. Cases, each a ``/bin/sh -c`` with the
hook JSON on stdin, as Codex runs a command hook:

- bare ``true``: what any command hook costs to fork and exec (the raw baseline);
- ``agentcoord hook pre-tool-use`` on an ``apply_patch`` of an unclaimed file (allowed, the
  usual case) and of a file another agent write-claimed (denied);
- ``agentcoord hook pre-tool-use`` on a shell call (``Bash``) of ``git checkout -q -b topic``
  in a repository no other session works in (allowed after the working-tree guard reads it;
  every shell call pays the hook, docs/claims.md "The guards in each CLI");
- ``agentcoord hook post-tool-use`` with an empty inbox (every tool call pays it).

Every figure is printed with its ratio to the bare hook.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import human_token, median_ms, pct
from hooks import command_timer, warm_sample
from messaging import start_daemon

from agentcoord.client.rpc import call_unix

BARE = "bare `true` command hook"
ALLOW = "`agentcoord hook pre-tool-use`, apply_patch allowed"
DENY = "`agentcoord hook pre-tool-use`, apply_patch denied: claimed"
SHELL = "`agentcoord hook pre-tool-use`, Bash `git checkout -b` allowed: tree unshared"
POST = "`agentcoord hook post-tool-use`, empty inbox"


def _patch(path: Path, cwd: Path) -> bytes:
    text = f"*** Begin Patch\n*** Update File: {path}\n@@\n-x = 1\n+x = 2\n*** End Patch\n"
    return json.dumps(
        {
            "session_id": "bench",
            "hook_event_name": "PreToolUse",
            "tool_name": "apply_patch",
            "tool_input": {"command": text},
            "cwd": str(cwd),
        }
    ).encode()


def _shell(cwd: Path) -> bytes:
    payload = {
        "session_id": "bench",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "git checkout -q -b topic"},
        "cwd": str(cwd),
    }
    return json.dumps(payload).encode()


def _post() -> bytes:
    payload = {"session_id": "bench", "hook_event_name": "PostToolUse", "tool_name": "Bash"}
    return json.dumps(payload).encode()


def worker() -> None:
    """Runs as ``codex`` (argv: agentcoord command, work dir, claimed file, runs); prints
    {case: [seconds, ...]}."""
    agentcoord, work, claimed, runs = sys.argv[1:5]
    n, cwd = int(runs), Path(work)
    out = {
        BARE: warm_sample(command_timer("true", _patch(cwd / "free.py", cwd)), n),
        ALLOW: warm_sample(
            command_timer(f"{agentcoord} hook pre-tool-use", _patch(cwd / "free.py", cwd)), n
        ),
        DENY: warm_sample(
            command_timer(f"{agentcoord} hook pre-tool-use", _patch(Path(claimed), cwd), b"deny"), n
        ),
        SHELL: warm_sample(
            command_timer(f"{agentcoord} hook pre-tool-use", _shell(cwd / "repo")), n
        ),
        POST: warm_sample(command_timer(f"{agentcoord} hook post-tool-use", _post()), n),
    }
    print(json.dumps(out))


def measure(root: Path, runs: int) -> dict[str, list[float]]:
    """Every case's samples, on a daemon started under ``root``."""
    proc, env = start_daemon(root / "daemon")
    try:
        sock = root / "daemon" / "run" / "agentcoord.sock"
        token = human_token(root / "daemon" / "state")
        work = root / "work"
        work.mkdir()
        claimed = work / "claimed.py"
        # The shell case's repository: the guard asks git for its worktree (on main, no commit).
        subprocess.run(["git", "init", "-q", "-b", "main", str(work / "repo")], check=True)
        params = {
            "name": "claim",
            "arguments": {"resource_key": f"file:{claimed}", "mode": "write", "ttl": "1h"},
        }
        got = call_unix(sock, "tools/call", params, token=token)
        if not got["structuredContent"]["acquired"]:
            raise SystemExit(f"could not claim {claimed}: {got}")
        own = Path(sys.executable).parent / "agentcoord"
        agentcoord = str(own) if own.is_file() else shutil.which("agentcoord")
        if agentcoord is None:
            raise SystemExit("agentcoord is not installed (no script beside the interpreter)")
        codex = root / "bin" / "codex"
        codex.parent.mkdir()
        bench = str(Path(__file__).resolve().parent)
        codex.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {bench!r})\n"
            "import clihooks\nclihooks.worker()\n"
        )
        codex.chmod(0o755)
        argv = [str(codex), agentcoord, str(work), str(claimed), str(runs)]
        out = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"the measuring session failed: {out.stderr[-2000:]}")
        samples: dict[str, list[float]] = json.loads(out.stdout)
        return samples
    finally:
        proc.terminate()
        proc.wait(10)


def report(ctx: Any) -> Any:
    """bench/run's area (bench/_areas.py): each hook's p50 against the bare ``true`` hook of
    the same run, and every case's latency samples."""
    from _areas import Area
    from _common import Figure

    tmp = ctx.tmp / "clihooks"
    tmp.mkdir()
    samples = measure(tmp, ctx.size(20, 100))
    base = median_ms(samples[BARE])
    figures = [
        Figure(f"{name}, p50", median_ms(xs), BARE, base, "ms")
        for name, xs in samples.items()
        if name != BARE
    ]
    notes = [
        "The measuring process runs as `codex` (a session): Codex, Gemini CLI and OpenCode "
        'have no http hooks, so each hook is a process (docs/other-clis.md "Setup").',
    ]
    return Area("CLI command hooks", figures, latency=dict(samples), notes=notes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentcoord-bench-clihooks-") as tmp:
        samples = measure(Path(tmp), a.runs)
    base = median_ms(samples[BARE])
    print(f"one Codex command hook per tool call, {a.runs} runs each")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| case | p50 | p90 | p50 ratio to the bare `true` hook |")
    print("|---|---|---|---|")
    for name, xs in samples.items():
        med = median_ms(xs)
        print(f"| {name} | {med:.2f} ms | {pct(xs, 0.9):.2f} ms | {med / base:.3f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
