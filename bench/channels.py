"""send -> channel notification on a Claude Code session's connection, against raw NATS in the
same run (docs/claude-code.md "Channels").

    PYTHONPATH=src python bench/channels.py [--n 1000]

Starts a real daemon (embedded NATS) on temp dirs and one push session: the real shim
(``python -m agentcoord mcp``) under a stand-in ``claude`` process with ``AGENTCOORD_CHANNELS=1``,
as ``agentcoord claude`` starts it, initialized as Claude Code initializes. One message at a
time, the human ``send``s to the session's agent; the figure is ``send`` start -> the
``notifications/claude/channel`` line read from the shim's stdout (what Claude Code reads: the
daemon's write on the session's socket plus the shim's relay). The raw baselines on the same
server: a core NATS publish -> subscriber round trip, and a JetStream publish -> pull. Prints
p50/p99 and the ratios; the goal is p50 <= 2 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop
from _common import human_token
from messaging import Mcp, core_latency, js_latency, nats_user, pct, start_daemon

GOAL_P50_MS = 2.0
GOAL = f"<= {GOAL_P50_MS:g} ms"
OURS, CORE, JETSTREAM = "send -> notification", "raw core pub/sub", "raw JetStream"

# A process named ``claude`` whose child is the shim: the daemon resolves the shim's caller to a
# session agent through it (docs/security.md "By transport").
_STANDIN = "import subprocess, sys\nsys.exit(subprocess.call(sys.argv[1:]))\n"


class PushSession:
    """The shim under a stand-in ``claude``, spoken to over its stdio."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.notes: asyncio.Queue[tuple[float, dict[str, Any]]] = asyncio.Queue()
        self._replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._next = 0
        self._task = asyncio.create_task(self._pump())

    @classmethod
    async def start(cls, root: Path, env: dict[str, str]) -> PushSession:
        claude = root / "bin" / "claude"
        claude.parent.mkdir(exist_ok=True)
        claude.write_text(f"#!{sys.executable}\n{_STANDIN}")
        claude.chmod(0o755)
        proc = await asyncio.create_subprocess_exec(
            str(claude),
            sys.executable,
            "-m",
            "agentcoord",
            "mcp",
            env={**env, "AGENTCOORD_CHANNELS": "1"},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=16 * 1024 * 1024,
        )
        return cls(proc)

    async def _pump(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            now = time.perf_counter()
            msg = json.loads(line)
            if "method" in msg:
                self.notes.put_nowait((now, msg))
            else:
                self._replies.pop(msg["id"]).set_result(msg)

    def _write(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._replies[self._next] = fut
        self._write({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        return (await fut)["result"]  # type: ignore[no-any-return]

    async def initialize(self) -> str:
        """The handshake Claude Code sends; the session's agent name."""
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "claude-code", "version": "2.1.328"},
        }
        result = await self.request("initialize", params)
        if "claude/channel" not in result["capabilities"].get("experimental", {}):
            raise RuntimeError("the daemon declared no channel to the push session")
        self._write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        who = await self.request("tools/call", {"name": "whoami", "arguments": {}})
        return str(who["structuredContent"]["agent"])

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self._task.cancel()
        await self.proc.wait()


async def push_latency(human: Mcp, session: PushSession, agent: str, n: int) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        await human.call("send", to=agent, text=f"m{i}")
        t1, note = await asyncio.wait_for(session.notes.get(), 10)
        if note["method"] != "notifications/claude/channel" or not note["params"][
            "content"
        ].endswith(f": m{i}"):
            raise RuntimeError(f"unexpected notification {note}")
        out.append(t1 - t0)
    return out


async def measure(n: int) -> dict[str, list[float]]:
    """Seconds per message: ours (send -> the shim's notification line) and the two raw
    baselines, on one daemon's nats-server."""
    import nats

    from agentcoord.client.rpc import call_unix

    with tempfile.TemporaryDirectory(prefix="agentcoord-bench-channels-") as tmp:
        root = Path(tmp)
        proc, env = start_daemon(root)
        session: PushSession | None = None
        try:
            sock = root / "run" / "agentcoord.sock"
            token = human_token(root / "state")
            url = call_unix(sock, "agentcoord/status", {}, token=token)["nats_url"]
            user, pw = nats_user(root / "state")
            session = await PushSession.start(root, env)
            agent = await session.initialize()
            human = await Mcp.connect(sock, token)
            await push_latency(human, session, agent, min(50, n))  # warm up
            ours = await push_latency(human, session, agent, n)
            await human.close()
            nc_a = await nats.connect(url, user=user, password=pw)
            nc_b = await nats.connect(url, user=user, password=pw)
            core = await core_latency(nc_a, nc_b, n)
            js, _ = await js_latency(nc_a, n)
            await nc_a.close()
            await nc_b.close()
        finally:
            if session is not None:
                await session.close()
            proc.terminate()
            proc.wait(10)
    return {OURS: ours, CORE: core, JETSTREAM: js}


async def run(n: int) -> None:
    samples = await measure(n)
    ours, core, js = samples[OURS], samples[CORE], samples[JETSTREAM]
    print(f"messages: {n} (one at a time)")
    print(f"{'':6}{'send->notification':>20}{'raw core pub/sub':>18}{'raw JetStream':>16}")
    for label, q in (("p50", 0.5), ("p99", 0.99)):
        a, c, j = pct(ours, q) * 1e3, pct(core, q) * 1e3, pct(js, q) * 1e3
        print(
            f"{label:6}{a:>17.3f} ms{c:>15.3f} ms{j:>13.3f} ms"
            f"   {a / c:.1f}x core, {a / j:.1f}x JetStream"
        )
    p50 = pct(ours, 0.5) * 1e3
    print(f"goal p50 <= {GOAL_P50_MS:g} ms: {'met' if p50 <= GOAL_P50_MS else 'not met'}")


def report(ctx: Any) -> Any:
    """bench/run's area (bench/_areas.py): p50 and p99 against the raw JetStream round trip
    (a message the daemon stores, then delivers), with the core pub/sub floor beside it."""
    from _areas import Area
    from _common import Figure

    os.environ.pop("AGENTCOORD_CHANNELS", None)  # only the session opts in
    samples = uvloop.run(asyncio.wait_for(measure(ctx.size(200, 1000)), 300))
    ours, core, js = samples[OURS], samples[CORE], samples[JETSTREAM]

    def ms(xs: list[float], q: float) -> float:
        return pct(xs, q) * 1e3

    js50 = "raw JetStream publish -> pull, p50"
    rows = [
        Figure("send -> channel notification, p50", ms(ours, 0.5), js50, ms(js, 0.5), "ms", GOAL),
        Figure(
            "send -> channel notification, p99",
            ms(ours, 0.99),
            "raw JetStream publish -> pull, p99",
            ms(js, 0.99),
            "ms",
        ),
        Figure("raw core pub/sub, p50 (the floor)", ms(core, 0.5), js50, ms(js, 0.5), "ms"),
    ]
    notes = [
        "One message at a time from the human's MCP connection to a session started as "
        "`agentcoord claude` starts it (the real shim under a process named claude); the time "
        "ends when the shim's notification line is read from its stdout, as Claude Code reads it."
    ]
    return Area("Channels", rows, latency=dict(samples), notes=notes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    args = parser.parse_args()
    os.environ.pop("AGENTCOORD_CHANNELS", None)  # only the session opts in
    uvloop.run(run(args.n))  # as in the daemon; the raw baselines run on it too


if __name__ == "__main__":
    main()
