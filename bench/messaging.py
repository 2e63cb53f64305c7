"""send -> inbox through the daemon's MCP tools, against raw nats-py in the same run.

    PYTHONPATH=src python bench/messaging.py [--n 2000] [--window 64]

Starts a real daemon (embedded NATS) on temp dirs, then measures over its unix socket:
  latency    one message at a time: ``send`` start -> the reader's ``inbox`` reply (p50/p99)
  throughput ``send`` with a window of requests in flight while a reader drains ``inbox``
and the same two things with raw nats-py on the same server: core publish/subscribe, and
JetStream publish + pull consumer. Prints each figure and the ratio MCP / raw.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop
from _common import human_token, login, private_home, wait_ready


class Mcp:
    """Pipelined JSON-RPC over the daemon's unix socket, logged in as the human."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._r, self._w = reader, writer
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._task = asyncio.create_task(self._pump())

    @classmethod
    async def connect(cls, path: Path, token: str) -> Mcp:
        reader, writer = await asyncio.open_unix_connection(str(path), limit=16 * 1024 * 1024)
        await login(reader, writer, token)
        return cls(reader, writer)

    async def _pump(self) -> None:
        while line := await self._r.readline():
            reply = json.loads(line)
            self._pending.pop(reply["id"]).set_result(reply)

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        rid = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        req = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        self._w.write(json.dumps(req).encode() + b"\n")
        result = (await fut)["result"]
        if result.get("isError"):
            raise RuntimeError(result["content"][0]["text"])
        return result["structuredContent"]  # type: ignore[no-any-return]

    async def close(self) -> None:
        self._w.close()
        self._task.cancel()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def mcp_latency(send: Mcp, recv: Mcp, me: str, n: int) -> list[float]:
    out = []
    for i in range(n):
        poll = asyncio.create_task(recv.call("inbox", wait_secs=5, limit=1))
        await asyncio.sleep(0)
        t0 = time.perf_counter()
        await send.call("send", to=me, text=str(i))
        got = await poll
        while not got["messages"]:
            got = await recv.call("inbox", wait_secs=5, limit=1)
        out.append(time.perf_counter() - t0)
    return out


async def mcp_throughput(send: Mcp, recv: Mcp, me: str, n: int, window: int) -> float:
    sem = asyncio.Semaphore(window)

    async def one(i: int) -> None:
        async with sem:
            await send.call("send", to=me, text=str(i))

    async def drain() -> None:
        got = 0
        while got < n:
            got += len((await recv.call("inbox", wait_secs=5, limit=1000))["messages"])

    t0 = time.perf_counter()
    await asyncio.gather(drain(), *(one(i) for i in range(n)))
    return n / (time.perf_counter() - t0)


LOST_AFTER_S = 5.0  # a core message not seen by then is taken as lost and sent again
lost_core = 0  # core messages the raw baseline sent again (printed by ``run``)


async def core_latency(nc_a: Any, nc_b: Any, n: int) -> list[float]:
    """Core NATS is at-most-once: a message can be lost (seen about once in 20 runs on a busy
    machine), and waiting for it would hang the run; a sample whose message is not seen within
    LOST_AFTER_S is dropped and sent again, and counted in ``lost_core``."""
    global lost_core
    got: asyncio.Queue[tuple[int, float]] = asyncio.Queue()

    async def on_msg(msg: Any) -> None:
        got.put_nowait((int(msg.data[:8]), time.perf_counter()))

    await nc_b.subscribe("bench.core", cb=on_msg)
    await nc_b.flush()
    out: list[float] = []
    for seq in itertools.count():
        if len(out) == n:
            break
        t0 = time.perf_counter()
        await nc_a.publish("bench.core", b"%08d" % seq + b"x" * 56)
        await nc_a.flush()
        try:
            async with asyncio.timeout(LOST_AFTER_S):
                while (seen := await got.get())[0] != seq:
                    pass  # a late copy of a sample already given up on
        except TimeoutError:
            lost_core += 1
            continue
        out.append(seen[1] - t0)
    return out


async def core_throughput(nc_a: Any, nc_b: Any, n: int) -> float:
    done = asyncio.Event()
    count = 0

    async def on_msg(msg: Any) -> None:
        nonlocal count
        count += 1
        if count == n:
            done.set()

    await nc_b.subscribe("bench.tput", cb=on_msg)
    await nc_b.flush()
    t0 = time.perf_counter()
    for _ in range(n):
        await nc_a.publish("bench.tput", b"x" * 64)
    await nc_a.flush()
    try:
        async with asyncio.timeout(LOST_AFTER_S):
            await done.wait()
    except TimeoutError:  # lost on the way (see core_latency): the rate of those that came
        global lost_core
        lost_core += n - count
        return count / (time.perf_counter() - t0 - LOST_AFTER_S)
    return n / (time.perf_counter() - t0)


async def js_latency(nc: Any, n: int) -> tuple[list[float], float]:
    from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="BENCH", subjects=["bench.js"]))
    await js.add_consumer("BENCH", ConsumerConfig(durable_name="b", ack_policy=AckPolicy.ALL))
    psub = await js.pull_subscribe_bind("b", "BENCH")
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        await js.publish("bench.js", b"x" * 64)
        (msg,) = await psub.fetch(1, timeout=5)
        await msg.ack_sync()
        lat.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(n):
        await js.publish("bench.js", b"x" * 64)
    got = 0
    while got < n:
        msgs = await psub.fetch(1000, timeout=5)
        await msgs[-1].ack_sync()
        got += len(msgs)
    return lat, n / (time.perf_counter() - t0)


def start_daemon(
    root: Path, extra: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTCOORD_", "CLAUDE"))}
    env.update(
        **private_home(root),
        AGENTCOORD_STATE_DIR=str(root / "state"),
        AGENTCOORD_RUNTIME_DIR=str(root / "run"),
        AGENTCOORD_HTTP_ADDR="127.0.0.1:0",
        CLAUDE_CONFIG_DIR=str(root / "claude"),
        AGENTCOORD_LOG_LEVEL="WARNING",
    )
    env.update(extra or {})
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentcoord", "serve"], env=env, stderr=subprocess.DEVNULL
    )
    # Ready when the socket answers (it is the last listener to open).
    wait_ready(root / "run" / "agentcoord.sock", root / "state", proc)
    return proc, env


async def measure(
    sock: Path, token: str, url: str, user: str, pw: str, n: int, window: int
) -> dict[str, Any]:
    """Every figure's samples on a running daemon, sending as the human (``token``); ``run``
    prints them, bench/run reports."""
    import nats

    send, recv = await Mcp.connect(sock, token), await Mcp.connect(sock, token)
    me = (await send.call("whoami"))["agent"]
    await recv.call("inbox")
    await mcp_latency(send, recv, me, min(50, n))  # warm up
    lat = await mcp_latency(send, recv, me, n)
    tput = await mcp_throughput(send, recv, me, n, window)
    await send.close()
    await recv.close()
    nc_a = await nats.connect(url, user=user, password=pw)
    nc_b = await nats.connect(url, user=user, password=pw)
    core_lat = await core_latency(nc_a, nc_b, n)
    core_tput = await core_throughput(nc_a, nc_b, n)
    js_lat, js_tput = await js_latency(nc_a, n)
    await nc_a.close()
    await nc_b.close()
    return {
        "lat": lat,
        "tput": tput,
        "core_lat": core_lat,
        "core_tput": core_tput,
        "js_lat": js_lat,
        "js_tput": js_tput,
    }


def nats_user(state_dir: Path) -> tuple[str, str]:
    """The daemon's own NATS user and password, read from its 0600 config as its owner can."""
    conf = (state_dir / "nats" / "nats.conf").read_text()
    user = re.search(r'user: "(agentcoord)"', conf)
    pw = re.search(r'user: "agentcoord", password: "([^"]+)"', conf)
    assert user is not None
    assert pw is not None
    return user.group(1), pw.group(1)


async def run(n: int, window: int) -> None:
    from agentcoord.client.rpc import call_unix

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        proc, _env = start_daemon(root)
        try:
            sock = root / "run" / "agentcoord.sock"
            token = human_token(root / "state")
            url = call_unix(sock, "agentcoord/status", {}, token=token)["nats_url"]
            user, pw = nats_user(root / "state")
            r = await measure(sock, token, url, user, pw, n, window)
        finally:
            proc.terminate()
            proc.wait(10)
    lat, tput, core_lat, core_tput = r["lat"], r["tput"], r["core_lat"], r["core_tput"]
    js_lat, js_tput = r["js_lat"], r["js_tput"]

    def ms(v: float) -> str:
        return f"{v * 1000:.3f} ms"

    rows = [
        ("p50 latency", lat, core_lat, js_lat, 0.5),
        ("p99 latency", lat, core_lat, js_lat, 0.99),
    ]
    print(f"messages: {n}, send window: {window}")
    print(
        f"{'':14}{'MCP send->inbox':>18}{'raw core pub/sub':>18}{'raw JetStream':>16}"
        f"{'MCP/core':>10}{'MCP/JS':>9}"
    )
    for label, a, c, j, q in rows:
        pa, pc, pj = pct(a, q), pct(c, q), pct(j, q)
        print(f"{label:14}{ms(pa):>18}{ms(pc):>18}{ms(pj):>16}{pa / pc:>9.1f}x{pa / pj:>8.1f}x")
    print(
        f"{'throughput':14}{tput:>14,.0f}/s  {core_tput:>14,.0f}/s  {js_tput:>12,.0f}/s"
        f"{tput / core_tput:>10.3f}{tput / js_tput:>9.2f}"
    )
    print(f"mean latency MCP {ms(statistics.fmean(lat))}")
    if lost_core:
        print(f"raw core messages lost and sent again: {lost_core}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--window", type=int, default=64)
    args = parser.parse_args()
    uvloop.run(run(args.n, args.window))  # as in the daemon; the raw baseline runs on it too


if __name__ == "__main__":
    main()
