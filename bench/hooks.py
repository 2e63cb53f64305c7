"""Hook benchmark: what one Claude Code hook costs per tool call, the http hooks ``agentcoord
setup claude`` writes against a bare ``true`` command hook and the ``agentcoord hook`` command
hook, measured in the same run (docs/claude-code.md "Hooks").

    PYTHONPATH=src python bench/hooks.py [--runs N]

A daemon on temp dirs; the measuring process is installed as an executable named ``claude``,
so the daemon resolves it as a Claude Code session: for an http hook the TCP peer is the
``claude`` process itself, as here, and a command hook is its child. Cases:

- bare ``true`` command hook: ``sh -c true`` with the hook JSON on stdin, what Claude Code pays
  to fork and exec any command hook (the raw baseline);
- ``agentcoord hook pre-tool-use``: the command hook setup wrote before (a Python process, the
  unix socket, the daemon's answer);
- http PreToolUse for a Write to an unclaimed file (the usual case: allowed, an empty 200) and
  to a file another agent write-claimed (the deny), on one keep-alive connection as Claude
  Code keeps it (seen with 2.1.328: one connection for a session's hooks);
- http PostToolUse with an empty inbox (every tool call pays it);
- http PermissionRequest answered "allow" by a standing approval (docs/approvals.md: the
  rule's match, the session's settings read for deny rules, the use counted on the
  approval and audited), and one no approval covers (no decision), on one keep-alive
  connection: what a permission dialog waits before it is drawn or closed;
- http PreToolUse on a new connection each time, as after an idle pause (Claude Code opens a
  new one after a few idle seconds): the daemon finds the peer among the processes of earlier
  connections (mcp/http.py ``HookPeers``); a session's very first connection pays a scan
  of every process's sockets once, which this case leaves out (warm-up).

Goal: each http hook's p50 <= 3 ms; every figure is printed with its ratio to the bare hook.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import Figure, human_token, median_ms, pct
from messaging import start_daemon

from agentcoord.client.rpc import call_unix

GOAL_MS = 3.0
BARE = "bare `true` command hook"
COMMAND = "`agentcoord hook pre-tool-use` command hook"
HTTP_ALLOW = "http PreToolUse, Write allowed (keep-alive)"
HTTP_DENY = "http PreToolUse, Write denied: claimed (keep-alive)"
HTTP_POST = "http PostToolUse, empty inbox (keep-alive)"
HTTP_NEW = "http PreToolUse, Write allowed (new connection)"
HTTP_APPROVED = "http PermissionRequest, allowed by a standing approval (keep-alive)"
HTTP_ASKS = "http PermissionRequest, no approval covers it (keep-alive)"


def _write(path: Path, cwd: Path) -> bytes:
    return json.dumps(
        {
            "session_id": "bench",
            "hook_event_name": "PreToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": str(path), "content": "x = 1\n"},
            "cwd": str(cwd),
        }
    ).encode()


def _post_tool() -> bytes:
    return json.dumps(
        {
            "session_id": "bench",
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "README\n", "stderr": ""},
        }
    ).encode()


def _permission(command: str, cwd: Path) -> bytes:
    return json.dumps(
        {
            "session_id": "bench",
            "hook_event_name": "PermissionRequest",
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "cwd": str(cwd),
            "permission_mode": "default",
        }
    ).encode()


def warm_sample(run: Callable[[], float], n: int) -> list[float]:
    """``n`` timed runs after three warm-up runs."""
    for _ in range(3):
        run()  # warm: page cache, the daemon's first resolution of this peer
    return [run() for _ in range(n)]


def command_timer(shell: str, stdin: bytes, expect: bytes | None = None) -> Callable[[], float]:
    """One run of a command hook, timed; ``expect``: bytes its output must hold."""

    def run() -> float:
        t0 = time.perf_counter()
        out = subprocess.run(["/bin/sh", "-c", shell], input=stdin, capture_output=True, check=True)
        took = time.perf_counter() - t0
        if expect is not None and expect not in out.stdout:
            raise SystemExit(f"{shell}: {out.stdout[:200]!r}")
        return took

    return run


def _http(
    addr: str, path: str, body: bytes, expect: bytes | None, keep: bool
) -> Callable[[], float]:
    host, port = addr.rsplit(":", 1)
    conn: list[http.client.HTTPConnection] = []
    headers = {"content-type": "application/json"}

    def run() -> float:
        t0 = time.perf_counter()
        if not conn:
            conn.append(http.client.HTTPConnection(host, int(port), timeout=10))
        c = conn[0]
        c.request("POST", path, body, headers)
        resp = c.getresponse()
        got = resp.read()
        took = time.perf_counter() - t0
        if not keep:
            c.close()
            conn.clear()
        if resp.status != 200 or (expect is not None and expect not in got):
            raise SystemExit(f"{path}: {resp.status} {got[:200]!r}")
        return took

    return run


def worker() -> None:
    """Runs as ``claude`` (argv: addr, agentcoord command, work dir, claimed file, runs);
    prints {case: [seconds, ...]}."""
    addr, agentcoord, work, claimed, runs = sys.argv[1:6]
    n, cwd = int(runs), Path(work)
    free = _write(cwd / "free.py", cwd)
    # The http cases first, so the command hooks' processes are gone when they are timed.
    out = {
        HTTP_ALLOW: warm_sample(_http(addr, "/hooks/pre-tool-use", free, None, True), n),
        HTTP_DENY: warm_sample(
            _http(addr, "/hooks/pre-tool-use", _write(Path(claimed), cwd), b"deny", True), n
        ),
        HTTP_POST: warm_sample(_http(addr, "/hooks/post-tool-use", _post_tool(), None, True), n),
        HTTP_NEW: warm_sample(_http(addr, "/hooks/pre-tool-use", free, None, False), n),
        HTTP_APPROVED: warm_sample(
            _http(addr, "/hooks/permission-request", _permission("npm test", cwd), b"allow", True),
            n,
        ),
        HTTP_ASKS: warm_sample(
            _http(addr, "/hooks/permission-request", _permission("make all", cwd), None, True), n
        ),
        BARE: warm_sample(command_timer("true", free), n),
        COMMAND: warm_sample(command_timer(f"{agentcoord} hook pre-tool-use", free), n),
    }
    print(json.dumps(out))


def measure(root: Path, runs: int) -> dict[str, list[float]]:
    """Every case's samples, on a daemon started under ``root``."""
    proc, env = start_daemon(root / "daemon")
    try:
        sock = root / "daemon" / "run" / "agentcoord.sock"
        token = human_token(root / "daemon" / "state")
        addr = (root / "daemon" / "run" / "http.addr").read_text().strip()
        work = root / "work"
        work.mkdir()
        claimed = work / "claimed.py"
        params = {
            "name": "claim",
            "arguments": {"resource_key": f"file:{claimed}", "mode": "write", "ttl": "1h"},
        }
        got = call_unix(sock, "tools/call", params, token=token)
        if not got["structuredContent"]["acquired"]:
            raise SystemExit(f"could not claim {claimed}: {got}")
        grant = {"op": "grant", "rule": "Bash(npm test:*)"}
        call_unix(sock, "agentcoord/approvals", grant, token=token)
        own = Path(sys.executable).parent / "agentcoord"
        agentcoord = str(own) if own.is_file() else shutil.which("agentcoord")
        if agentcoord is None:
            raise SystemExit("agentcoord is not installed (no script beside the interpreter)")
        claude = root / "bin" / "claude"
        claude.parent.mkdir()
        bench = str(Path(__file__).resolve().parent)
        claude.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {bench!r})\n"
            "import hooks\nhooks.worker()\n"
        )
        claude.chmod(0o755)
        argv = [str(claude), addr, agentcoord, str(work), str(claimed), str(runs)]
        out = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"the measuring session failed: {out.stderr[-2000:]}")
        samples: dict[str, list[float]] = json.loads(out.stdout)
        return samples
    finally:
        proc.terminate()
        proc.wait(10)


def figures(samples: dict[str, list[float]]) -> list[Figure]:
    """The report's rows: each case against the bare hook of the same run."""
    base = median_ms(samples[BARE])
    rows = []
    for name in (HTTP_ALLOW, HTTP_DENY, HTTP_POST, HTTP_NEW, HTTP_APPROVED, HTTP_ASKS, COMMAND):
        goal = "-" if name == COMMAND else f"<= {GOAL_MS:g} ms"
        rows.append(Figure(name, median_ms(samples[name]), BARE, base, "ms", goal))
    return rows


def report(ctx: Any) -> Any:
    """bench/run's area (bench/_areas.py): the figures and each case's latency samples."""
    from _areas import Area

    tmp = ctx.tmp / "hooks"
    tmp.mkdir()
    samples = measure(tmp, ctx.size(30, 200))
    notes = [
        "The measuring process runs as `claude` (a session): an http hook's TCP peer is the "
        "claude process itself, a command hook its child.",
    ]
    return Area("Hooks", figures(samples), latency=dict(samples), notes=notes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentcoord-bench-hooks-") as tmp:
        samples = measure(Path(tmp), a.runs)
    base = median_ms(samples[BARE])
    print(f"one hook per tool call, {a.runs} runs each")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| case | p50 | p90 | p50 ratio to the bare `true` hook | goal |")
    print("|---|---|---|---|---|")
    for name, xs in samples.items():
        med = median_ms(xs)
        goal = ""
        if name not in (BARE, COMMAND):
            goal = f"<= {GOAL_MS:g} ms: {'met' if med <= GOAL_MS else 'NOT met'}"
        print(f"| {name} | {med:.2f} ms | {pct(xs, 0.9):.2f} ms | {med / base:.3f}x | {goal} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
