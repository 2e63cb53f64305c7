"""Start-up benchmark: daemon exec -> /healthz ok, and a whole shim round trip, against raw
baselines measured in the same run (bare nats-server start to ready; bare `python -c pass`).

    python bench/startup.py [--runs N] [--used-claims N --used-messages N]

Goals: daemon ready <= 300 ms; shim spawn + initialize + tools/list <= 3x a bare Python start;
a restart on a state dir that has seen 10,000 claims released and 100,000 messages sent (the
defaults of ``--used-claims`` / ``--used-messages``) <= 1.5x a restart on a fresh state dir,
both measured in this run.

The commands run as installed: with bytecode caches, which ``pip install`` writes and an editable
install writes on first import. They go to a private PYTHONPYCACHEPREFIX, filled by one untimed
start, so a PYTHONDONTWRITEBYTECODE in the environment does not turn every timed start into a
compile of the whole package (~120 ms more) and nothing is written beside the sources.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import median_ms, private_home, table, wait_ready

from agentcoord.kernel.natsbin import find_nats_server


def bare_python() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


def bare_nats(tmp: Path) -> float:
    store = tmp / "js"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(find_nats_server()), "-js", "-sd", str(store), "-a", "127.0.0.1", "-p", "-1"],
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if b"Server is ready" in line:
            break
    elapsed = time.perf_counter() - t0
    proc.terminate()
    proc.wait()
    shutil.rmtree(store, ignore_errors=True)
    return elapsed


# --from-source: every start compiles the package (no bytecode cache of it), for comparison.
_FROM_SOURCE = False


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCOORD_")}
    if _FROM_SOURCE:
        # The package is compiled on every start; the standard library and the dependencies
        # keep their installed caches (a prefix would hide those too).
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.environ.get("PYTHONPYCACHEPREFIX") or str(_PYCACHE)
    env.update(
        AGENTCOORD_STATE_DIR=str(tmp / "state"),
        AGENTCOORD_RUNTIME_DIR=str(tmp / "run"),
        AGENTCOORD_HTTP_ADDR="127.0.0.1:0",
        **private_home(tmp),
    )
    return env


# The bytecode cache of the measured commands (see the module docstring); pyc files are
# checked against their source, so one cache serves every run.
_PYCACHE = Path(tempfile.gettempdir()) / "agentcoord-bench-pycache"


def daemon_ready(tmp: Path, agentcoord: str) -> float:
    env = _env(tmp)
    addr_file = tmp / "run" / "http.addr"
    t0 = time.perf_counter()
    proc = subprocess.Popen([agentcoord, "serve"], env=env, stderr=subprocess.DEVNULL)
    try:
        while True:
            if addr_file.exists():
                try:
                    url = f"http://{addr_file.read_text().strip()}/healthz"
                    with urllib.request.urlopen(url, timeout=1) as resp:
                        if resp.read() == b"ok":
                            return time.perf_counter() - t0
                except OSError:
                    pass
            if proc.poll() is not None:
                raise RuntimeError("daemon exited during start")
            time.sleep(0.0005)
    finally:
        proc.terminate()
        proc.wait()


async def _drive(socket_path: Path, token: str, claims: int, messages: int) -> None:
    """Age a state dir the way use does: ``claims`` claim + release cycles and ``messages``
    sends, pipelined over a few connections as the human (logged in with its token)."""
    import asyncio
    import itertools

    async def connection(jobs: list[tuple[str, int]]) -> None:
        reader, writer = await asyncio.open_unix_connection(str(socket_path), limit=1 << 24)
        ids = itertools.count(1)

        async def rpc(method: str, params: dict[str, object]) -> dict[str, object]:
            writer.write(
                json.dumps(
                    {"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params}
                ).encode()
                + b"\n"
            )
            reply = json.loads(await reader.readline())
            if "error" in reply or reply["result"].get("isError"):
                raise RuntimeError(f"{method} {params}: {reply}")
            return reply["result"]  # type: ignore[no-any-return]

        await rpc("agentcoord/login", {"token": token})
        for kind, i in jobs:
            if kind == "claim":  # a claim, then its release with the grant's token
                key = f"aged/{i}"
                got = await rpc("tools/call", {"name": "claim", "arguments": {"resource_key": key}})
                grant = got["structuredContent"]["token"]  # type: ignore[index]
                args = {"resource_key": key, "token": grant}
                await rpc("tools/call", {"name": "release", "arguments": args})
            else:
                # No such agent: queued on purpose (docs/messaging.md "Recipients").
                args = {"to": "aged-peer", "text": f"message {i}", "queue_unknown": True}
                await rpc("tools/call", {"name": "send", "arguments": args})
        writer.close()

    jobs = [("claim", i) for i in range(claims)] + [("send", i) for i in range(messages)]
    width = 16
    await asyncio.gather(*(connection(jobs[w::width]) for w in range(width)))


def used_state(tmp: Path, agentcoord: str, claims: int, messages: int) -> Path:
    """A state dir that has seen ``claims`` released claims and ``messages`` sent; stopped."""
    import asyncio

    env = _env(tmp)
    proc = subprocess.Popen([agentcoord, "serve"], env=env, stderr=subprocess.DEVNULL)
    try:
        sock = tmp / "run" / "agentcoord.sock"
        token = wait_ready(sock, tmp / "state", proc)
        asyncio.run(_drive(sock, token, claims, messages))
    finally:
        proc.terminate()
        proc.wait()
    return tmp


def shim_round_trip(env: dict[str, str], agentcoord: str) -> float:
    msgs = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "b"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    payload = "".join(json.dumps(m) + "\n" for m in msgs).encode()
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [agentcoord, "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    out, _ = proc.communicate(payload)
    elapsed = time.perf_counter() - t0
    replies = [json.loads(line) for line in out.splitlines()]
    assert {r["id"] for r in replies} == {1, 2}, replies
    assert all("result" in r for r in replies), replies  # answered, not refused
    return elapsed


_AS_SESSION = """
import json, sys
sys.path.insert(0, {bench!r})
from startup import shim_round_trip
env, agentcoord, runs = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
print(json.dumps([shim_round_trip(env, agentcoord) for _ in range(runs)]))
"""


def shims_as_session(tmp: Path, env: dict[str, str], agentcoord: str, runs: int) -> list[float]:
    """``runs`` shim round trips timed inside a process named ``claude`` (its child shims are
    then a session's, as under Claude Code), each round trip as :func:`shim_round_trip`."""
    claude = tmp / "bin" / "claude"
    claude.parent.mkdir(exist_ok=True)
    bench = str(Path(__file__).resolve().parent)
    claude.write_text(f"#!{sys.executable}\n" + _AS_SESSION.format(bench=bench))
    claude.chmod(0o755)
    out = subprocess.run(
        [str(claude), json.dumps(env), agentcoord, str(runs)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return [float(x) for x in json.loads(out.stdout)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument(
        "--from-source",
        action="store_true",
        help="no bytecode cache of the package: every start compiles it (for comparison)",
    )
    parser.add_argument("--used-claims", type=int, default=10_000)
    parser.add_argument("--used-messages", type=int, default=100_000)
    args = parser.parse_args()
    global _FROM_SOURCE
    _FROM_SOURCE = args.from_source
    agentcoord = shutil.which("agentcoord") or sys.exit("agentcoord is not on PATH")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        daemon_ready(tmp / "warmup", agentcoord)  # untimed: fills the bytecode cache
        py = [bare_python() for _ in range(args.runs)]
        nats = [bare_nats(tmp) for _ in range(args.runs)]
        # First start on fresh dirs (CA, JetStream streams and the database are created),
        # then restarts on the same dirs (the everyday case: login, crash, upgrade).
        cold = [daemon_ready(tmp / f"d{i}", agentcoord) for i in range(args.runs)]
        warm = [daemon_ready(tmp / "d0", agentcoord) for _ in range(args.runs)]
        # The same restart on a state dir aged by use; interleaved with fresh restarts so
        # both see the same machine.
        t_used = time.perf_counter()
        used_state(tmp / "used", agentcoord, args.used_claims, args.used_messages)
        aging_s = time.perf_counter() - t_used
        aged: list[float] = []
        fresh: list[float] = []
        for _ in range(args.runs):
            aged.append(daemon_ready(tmp / "used", agentcoord))
            fresh.append(daemon_ready(tmp / "d0", agentcoord))
        used_mib = sum(f.stat().st_size for f in (tmp / "used").rglob("*") if f.is_file()) / 2**20
        # One long-lived daemon for the shim round trips, timed from a process named
        # ``claude``: the shim's path is a Claude session's (a plain process is refused).
        env = _env(tmp / "shim")
        proc = subprocess.Popen([agentcoord, "serve"], env=env, stderr=subprocess.DEVNULL)
        try:
            wait_ready(tmp / "shim" / "run" / "agentcoord.sock", tmp / "shim" / "state", proc)
            shim = shims_as_session(tmp, env, agentcoord, args.runs)
        finally:
            proc.terminate()
            proc.wait()
    print(f"startup benchmark, {args.runs} runs each, medians")
    print(f"(aging the used state dir took {aging_s:.1f} s)\n")
    print(
        table(
            [
                (
                    "daemon first start -> /healthz ok",
                    median_ms(cold),
                    "bare nats-server ready",
                    median_ms(nats),
                    "<= 300 ms",
                ),
                (
                    "daemon restart -> /healthz ok",
                    median_ms(warm),
                    "bare nats-server ready",
                    median_ms(nats),
                    "<= 300 ms",
                ),
                (
                    f"restart on a used state dir ({args.used_claims:,} claims released, "
                    f"{args.used_messages:,} messages; {used_mib:.1f} MiB)",
                    median_ms(aged),
                    "restart on a fresh state dir",
                    median_ms(fresh),
                    "<= 1.5x",
                ),
                (
                    "shim spawn + initialize + tools/list",
                    median_ms(shim),
                    "bare python -c pass",
                    median_ms(py),
                    "<= 3x",
                ),
            ]
        )
    )


if __name__ == "__main__":
    main()
