"""The areas of bench/run: each measures our figures and their raw baselines in the same run
and returns its table rows, latency samples and throughput-vs-concurrency curves.

Adding an area (the object store's writes, asks): write ``def area_x(ctx: Ctx) -> Area`` and
list it in ``AREAS``. ``area_store`` and ``area_asks`` already measure their raw baselines and
run ``bench/store.py`` / ``bench/ask.py``'s measurements once those exist (they do now); a
module ``store_report`` or ``ask_report`` in bench/ with ``report(ctx)`` overrides them.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import claims as bench_claims
import localagents as bench_localagents
import messaging as bench_messaging
import startup as bench_startup
import uvloop
from _common import Figure, human_token, wait_ready
from _daemon import RunningDaemon, rss_mb, running_daemon

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["AREAS", "Area", "Ctx"]


@dataclass
class Ctx:
    quick: bool
    tmp: Path

    def size(self, quick: int, full: int) -> int:
        return quick if self.quick else full


@dataclass
class Area:
    name: str
    figures: list[Figure]
    latency: dict[str, list[float]] = field(default_factory=dict)  # label -> seconds
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _bounded(coro: Any, seconds: float = 300.0) -> Any:
    """Run ``coro`` to completion, or fail the area after ``seconds`` instead of hanging the
    whole report (a lost message would leave a latency loop polling forever). uvloop, as in
    the daemon: the client's own overhead should not decide a figure, and the raw baseline
    runs on the same loop."""
    return uvloop.run(asyncio.wait_for(coro, seconds))


def _median(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def _p99(xs: list[float]) -> float:
    return bench_claims._pct(xs, 0.99) * 1000


# -- start-up --------------------------------------------------------------------------------


def area_startup(ctx: Ctx) -> Area:
    runs = ctx.size(5, 15)
    agentcoord = shutil.which("agentcoord") or sys.exit("agentcoord is not on PATH")
    tmp = ctx.tmp / "startup"
    tmp.mkdir()
    py = [bench_startup.bare_python() for _ in range(runs)]
    nats = [bench_startup.bare_nats(tmp) for _ in range(runs)]
    bench_startup.daemon_ready(tmp / "warmup", agentcoord)  # untimed: fills the bytecode cache
    ready = [bench_startup.daemon_ready(tmp / f"d{i}", agentcoord) for i in range(runs)]
    env = bench_startup._env(tmp / "shim")
    proc = subprocess.Popen([agentcoord, "serve"], env=env, stderr=subprocess.DEVNULL)
    try:
        wait_ready(tmp / "shim" / "run" / "agentcoord.sock", tmp / "shim" / "state", proc)
        shim = bench_startup.shims_as_session(tmp, env, agentcoord, runs)
    finally:
        proc.terminate()
        proc.wait()
    return Area(
        "Start-up",
        [
            Figure(
                "daemon exec -> /healthz ok",
                _median(ready),
                "bare nats-server ready",
                _median(nats),
                "ms",
                "<= 300 ms",
            ),
            Figure(
                "shim spawn + initialize + tools/list",
                _median(shim),
                "bare `python -c pass`",
                _median(py),
                "ms",
                "<= 3x",
            ),
        ],
        latency={
            "daemon ready": ready,
            "bare nats-server ready": nats,
            "shim round trip": shim,
            "python -c pass": py,
        },
    )


# -- claims ----------------------------------------------------------------------------------


async def _claims_sweep(
    d: RunningDaemon, levels: list[int], per: int
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """claim+release pairs/s at each concurrency, through MCP and with raw kv.create/delete."""
    import nats
    from nats.js import api

    nc = await nats.connect(d.nats_url, user=d.user, password=d.password)
    kv = await nc.jetstream().create_key_value(
        api.KeyValueConfig(bucket="bench-sweep", history=1, limit_marker_ttl=5)
    )
    conns = [await bench_claims.Mcp.open(d.sock, d.token) for _ in range(max(levels))]
    ours, raw = [], []
    for c in levels:
        t = time.perf_counter()
        await asyncio.gather(*(_raw_worker(kv, f"sw-{c}-{w}", per) for w in range(c)))
        raw.append((c, c * per / (time.perf_counter() - t)))
        t = time.perf_counter()
        await asyncio.gather(*(_mcp_worker(conns[w], f"sw-{c}-{w}", per) for w in range(c)))
        ours.append((c, c * per / (time.perf_counter() - t)))
    for conn in conns:
        await conn.close()
    await nc.close()
    return ours, raw


async def _raw_worker(kv: Any, prefix: str, n: int) -> None:
    for i in range(n):
        await bench_claims._raw_pair(kv, f"{prefix}-{i}")


async def _mcp_worker(conn: Any, prefix: str, n: int) -> None:
    for i in range(n):
        await bench_claims._daemon_pair(conn, f"{prefix}-{i}")


def area_claims(ctx: Ctx) -> Area:
    pairs, focus = ctx.size(300, 1000), ctx.size(2000, 10000)
    levels = [1, 4, 16, 32]
    with running_daemon(ctx.tmp / "claims") as d:
        r = _bounded(
            bench_claims.measure(pairs, 16, focus, d.sock, d.token, d.nats_url, d.password)
        )
        ours_c, raw_c = _bounded(_claims_sweep(d, levels, ctx.size(25, 100)))
    # The same with an fsync before every ack: what surviving an OS crash costs.
    with running_daemon(ctx.tmp / "claims-always", AGENTCOORD_NATS_SYNC="always") as d:
        lazy = _bounded(
            bench_claims.measure(pairs, 16, 10, d.sock, d.token, d.nats_url, d.password)
        )
    dmn_tput, raw_tput = r["dmn_rate"], r["raw_rate"]  # medians of bench_claims.ROUNDS rounds
    lazy_tput, lazy_raw = lazy["dmn_rate"], lazy["raw_rate"]
    return Area(
        "Claims",
        [
            Figure(
                "claim+release, 1 client, p50",
                _median(r["dmn1"]),
                "raw kv.create+delete",
                _median(r["raw1"]),
                "ms",
                "<= 2x",
            ),
            Figure(
                "release {resource_key} (no token), 1 client, p50",
                _median(r["rel_bare"]),
                "raw kv.delete",
                _median(r["rel_raw"]),
                "ms",
                "<= 2x",
            ),
            Figure(
                "release with its token, 1 client, p50",
                _median(r["rel_fenced"]),
                "raw kv.delete",
                _median(r["rel_raw"]),
                "ms",
                "<= 2x",
            ),
            Figure(
                "claim+release, 1 client, p99",
                _p99(r["dmn1"]),
                "raw kv.create+delete",
                _p99(r["raw1"]),
                "ms",
            ),
            Figure(
                "claim+release pairs/s, 16 clients",
                dmn_tput,
                "raw kv.create+delete",
                raw_tput,
                "/s",
                ">= 3,000/s",
            ),
            Figure(
                "claim+release pairs/s, 16 clients, AGENTCOORD_NATS_SYNC=always",
                lazy_tput,
                "raw, same server",
                lazy_raw,
                "/s",
            ),
            Figure(
                "claim+release, 1 client, p50, AGENTCOORD_NATS_SYNC=always",
                _median(lazy["dmn1"]),
                "raw, same server",
                _median(lazy["raw1"]),
                "ms",
            ),
            Figure(
                f"find_agents over {focus:,} annotations, p50",
                _median(r["find"]),
                "in-process rank",
                r["find_pure"] * 1000,
                "ms",
                "<= 5 ms",
            ),
        ],
        latency={
            "claim+release via MCP (1 client)": r["dmn1"],
            "raw kv.create+delete (1 client)": r["raw1"],
            "release via MCP (1 client)": r["rel_bare"],
            "raw kv.delete (1 client)": r["rel_raw"],
            "claim+release via MCP (16 clients)": r["dmnn"],
            "raw (16 clients)": r["rawn"],
        },
        curves={"claim+release via MCP": ours_c, "raw kv.create+delete": raw_c},
        notes=[
            "The 1-client pairs alternate ours and raw pair by pair. Release alone: each key "
            "is claimed (raw: created) untimed, then released; the raw delete, the release "
            "without a token and the one with it alternate key by key. "
            "Pairs are claim + release: two KV writes each. Throughput at 16 clients is the "
            "median of three rounds (about a second each), ours and raw alternating. "
            "The embedded server writes each "
            "message to the OS before acknowledging it (a SIGKILL loses nothing, see "
            "docs/reliability.md) and fsyncs every 2 minutes, nats-server's default; the "
            "`AGENTCOORD_NATS_SYNC=always` rows fsync before every ack, on a second daemon, "
            "to show what surviving an OS crash costs."
        ],
    )


def area_claimkeys(ctx: Ctx) -> Area:
    """The write guard's decision with many claims, and file keys relative vs absolute."""
    import claimkeys as bench_claimkeys

    n, held, globs = ctx.size(300, 1000), 1000, 100
    repo = bench_claimkeys.make_repo(ctx.tmp / "claimkeys")
    with running_daemon(ctx.tmp / "claimkeys-daemon") as d:
        r = _bounded(
            bench_claimkeys.measure(
                d.sock, d.token, d.nats_url, d.user, d.password, repo, n, held, globs
            )
        )
    figures = [
        Figure(figure, ours, base_name, base if base_name else None, "ms", goal)
        for figure, ours, base_name, base, goal in bench_claimkeys.report(r, held, globs)
    ]
    return Area(
        "Claim keys and the write guard",
        figures,
        latency={
            "PreToolUse write guard": r["hook"],
            "MCP ping": r["ping"],
            "claim file:src/x.py (relative)": r["rel"],
            "claim by absolute path": r["abs"],
        },
        notes=[
            f"The guard answers a Write of an unclaimed file with {held:,} live write claims "
            "held by other agents (written into the bucket, as another daemon's arrive), as "
            "the human (who takes no edit lease), alternating with a ping on the same "
            "connection; the decision row is hook p50 minus ping p50. The relative and "
            "absolute claims alternate from a connection opened in a git repository, each "
            "released untimed, through whatever key resolution tools/claims.py does."
        ],
    )


def area_conflicts(ctx: Ctx) -> Area:
    """The conflict watch's handling of one file change against a raw ``git status``."""
    import conflicts as bench_conflicts

    x, y = bench_conflicts.make_repo(ctx.tmp / "conflicts", ctx.size(500, 2000))
    r = _bounded(bench_conflicts.measure(x, y, ctx.size(50, 200)))
    figures = [
        Figure(figure, ours, base_name, base, "ms", goal)
        for figure, ours, base_name, base, goal in bench_conflicts.report(r)
    ]
    return Area(
        "Conflicts between worktrees",
        figures,
        latency={"conflict watch, one change": r["ours"], "raw git status": r["raw"]},
        notes=[
            "Two linked worktrees share a changed file; a file of one is rewritten and the "
            "watch handles the change (which worktree, one git status, the pair, the cached "
            "merge-tree verdict, the notices), alternating with a raw git status --porcelain "
            "of the same worktree after the same rewrite."
        ],
    )


def area_claims_stress(ctx: Ctx) -> Area:
    sys.path.insert(0, str(ROOT))
    from tests.conftest import FAKES, Daemon, make_env
    from tests.tools.test_claims_stress import check_shadow_log, run_stress

    clients, attempts = 32, ctx.size(20, 300)
    root = ctx.tmp / "stress"
    (root / "bin").mkdir(parents=True)
    claude = root / "bin" / "claude"
    claude.write_text(f"#!{sys.executable}\n" + (FAKES / "claude_standin.py").read_text())
    claude.chmod(0o755)
    (root / "d").mkdir()
    d = Daemon(root / "d", make_env(root / "d", AGENTCOORD_LOG_LEVEL="WARNING")).start()
    try:
        t = time.perf_counter()
        records = run_stress(d, claude, clients, attempts, 100)
        took = time.perf_counter() - t
    finally:
        d.stop()
    check_shadow_log(records)
    acquired = sum(1 for r in records if r["acquired"])
    return Area(
        "Claims under contention",
        [
            Figure(
                f"{clients} sessions x {attempts} claim attempts on 100 keys, attempts/s",
                len(records) / took,
                "",
                None,
                "/s",
                note="invariants hold",
            )
        ],
        notes=[
            f"{len(records)} attempts, {acquired} acquired, {len(records) - acquired} "
            "contended; no two write holders overlapped (fencing tokens + shadow log)."
        ],
    )


# -- messaging -------------------------------------------------------------------------------


async def _messaging_sweep(
    d: RunningDaemon, windows: list[int], n: int
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """send throughput through MCP with ``w`` requests in flight, and raw js.publish with ``w``
    publishers in flight (both stored in JetStream)."""
    import nats
    from nats.js.api import StreamConfig

    send = await bench_messaging.Mcp.connect(d.sock, d.token)
    ours, raw = [], []
    nc = await nats.connect(d.nats_url, user=d.user, password=d.password)
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="BENCHSWEEP", subjects=["benchsweep.>"]))
    for w in windows:
        sem = asyncio.Semaphore(w)

        async def one(i: int, sem: asyncio.Semaphore = sem, w: int = w) -> None:
            async with sem:
                # No such agent: queued on purpose (docs/messaging.md "Recipients").
                await send.call("send", to=f"sink-{w}", text=str(i), queue_unknown=True)

        t = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        ours.append((w, n / (time.perf_counter() - t)))

        async def pub(i: int, sem: asyncio.Semaphore = sem) -> None:
            async with sem:
                await js.publish(f"benchsweep.{i % 8}", b"x" * 64)

        t = time.perf_counter()
        await asyncio.gather(*(pub(i) for i in range(n)))
        raw.append((w, n / (time.perf_counter() - t)))
    await send.close()
    await nc.close()
    return ours, raw


def area_messaging(ctx: Ctx) -> Area:
    n = ctx.size(300, 2000)
    with running_daemon(ctx.tmp / "messaging") as d:
        r = _bounded(
            bench_messaging.measure(d.sock, d.token, d.nats_url, d.user, d.password, n, 64)
        )
        ours_c, raw_c = _bounded(_messaging_sweep(d, [1, 4, 16, 64], ctx.size(400, 2000)))
    return Area(
        "Messaging",
        [
            Figure(
                "send -> inbox, p50",
                _median(r["lat"]),
                "raw core pub/sub",
                _median(r["core_lat"]),
                "ms",
                "<= 1 ms",
            ),
            Figure(
                "send -> inbox, p99",
                _p99(r["lat"]),
                "raw core pub/sub",
                _p99(r["core_lat"]),
                "ms",
            ),
            Figure(
                "send -> inbox, p50 (durable)",
                _median(r["lat"]),
                "raw JetStream publish + pull",
                _median(r["js_lat"]),
                "ms",
            ),
            Figure(
                "send throughput, 64 in flight",
                r["tput"],
                "raw core publish",
                r["core_tput"],
                "/s",
                ">= 5,000/s",
            ),
            Figure(
                "send throughput, 64 in flight (durable)",
                r["tput"],
                "raw JetStream publish + pull",
                r["js_tput"],
                "/s",
            ),
        ],
        latency={
            "send -> inbox via MCP": r["lat"],
            "raw core pub/sub": r["core_lat"],
            "raw JetStream publish + pull": r["js_lat"],
        },
        curves={"send via MCP": ours_c, "raw js.publish": raw_c},
        notes=[f"raw core messages lost and sent again: {bench_messaging.lost_core}"]
        if bench_messaging.lost_core
        else [],
    )


# -- local agents ----------------------------------------------------------------------------


def area_localagents(ctx: Ctx) -> Area:
    n, runs = ctx.size(200, 1000), ctx.size(5, 15)
    r = bench_localagents.measure(n, runs)
    figures = [
        Figure(
            f"discover_local_agents, {n} packages (service)",
            _median(r["cached"]),
            "raw scandir+stat",
            _median(r["scan"]),
            "ms",
            "<= 20 ms",
        ),
        Figure(
            f"discover_local_agents, {n} packages, MCP over the socket",
            _median(r["wire"]),
            "raw scandir+stat",
            _median(r["scan"]),
            "ms",
            "<= 20 ms",
        ),
        Figure(
            "index update after a new CLAUDE.md",
            _median(r["update"]),
            "raw watchfiles event",
            _median(r["notify"]),
            "ms",
            "<= 500 ms",
        ),
        Figure(
            "cold start of the stand-in, no sandbox",
            _median(r["plain"]),
            "bare `python -c pass`",
            _median(r["py"]),
            "ms",
        ),
    ]
    notes = []
    if r["boxed"]:
        figures.append(
            Figure(
                "cold start of the stand-in, bwrap",
                _median(r["boxed"]),
                "same, no sandbox",
                _median(r["plain"]),
                "ms",
            )
        )
    else:
        notes.append("bwrap not found: the sandboxed cold start was not measured.")
    return Area(
        "Local agents",
        figures,
        latency={
            "discover via MCP": r["wire"],
            "raw scandir+stat": r["scan"],
            "cold start, no sandbox": r["plain"],
            "cold start, bwrap": r["boxed"],
        },
        notes=notes,
    )


# -- memory ----------------------------------------------------------------------------------


async def _hold_claims(d: RunningDaemon, n: int) -> None:
    conns = [await bench_messaging.Mcp.connect(d.sock, d.token) for _ in range(4)]
    sem = asyncio.Semaphore(64)

    async def one(i: int) -> None:
        async with sem:
            await conns[i % 4].call("claim", resource_key=f"mem/{i}", ttl="1h")

    await asyncio.gather(*(one(i) for i in range(n)))
    for c in conns:
        await c.close()


async def _queue_messages(d: RunningDaemon, n: int) -> None:
    conns = [await bench_messaging.Mcp.connect(d.sock, d.token) for _ in range(4)]
    sem = asyncio.Semaphore(128)

    async def one(i: int) -> None:
        async with sem:
            # Sinks that never connect: queued for agents that do not exist yet, on purpose.
            await conns[i % 4].call(
                "send", to=f"sink-{i % 50}", text=f"message {i}", queue_unknown=True
            )

    await asyncio.gather(*(one(i) for i in range(n)))
    for c in conns:
        await c.close()


async def _store_objects(d: RunningDaemon, n: int) -> None:
    """``n`` registered agents: each an Agent object in the daemon's store."""
    conns = [await bench_messaging.Mcp.connect(d.sock, d.token) for _ in range(4)]
    sem = asyncio.Semaphore(64)

    async def one(i: int) -> None:
        async with sem:
            await conns[i % 4].call(
                "register_agent", agent_id=f"mem-{i}", endpoint=f"http://127.0.0.1:9/{i}"
            )

    await asyncio.gather(*(one(i) for i in range(n)))
    for c in conns:
        await c.close()


async def _raw_load(url: str, user: str, pw: str, claims: int, messages: int) -> None:
    import nats
    from nats.js import api

    nc = await nats.connect(url, user=user, password=pw)
    js = nc.jetstream()
    kv = await js.create_key_value(api.KeyValueConfig(bucket="rawmem", history=1))
    for start in range(0, claims, 500):
        await asyncio.gather(
            *(kv.create(f"k{i}", b'{"agent":"x"}') for i in range(start, min(claims, start + 500)))
        )
    await js.add_stream(api.StreamConfig(name="RAWMEM", subjects=["rawmem.>"]))
    for start in range(0, messages, 1000):
        acks = [
            await js.publish_async(f"rawmem.{i % 50}", f"message {i}".encode())
            for i in range(start, min(messages, start + 1000))
        ]
        await asyncio.gather(*acks)
    await nc.close()


def _bare_nats_rss(tmp: Path, claims: int, messages: int) -> tuple[float, float]:
    """A bare nats-server (same binary, JetStream, a password user): RSS idle and loaded."""
    from agentcoord.kernel.natsbin import find_nats_server

    tmp.mkdir(parents=True, exist_ok=True)
    conf = tmp / "raw.conf"
    conf.write_text(
        f'port: -1\nhost: 127.0.0.1\njetstream {{ store_dir: "{tmp / "js"}" }}\n'
        'authorization { users = [ { user: "u", password: "p" } ] }\n'
    )
    proc = subprocess.Popen(
        [str(find_nats_server()), "-c", str(conf)], stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        url = ""
        for line in proc.stderr:
            if "client connections on" in line:
                url = "nats://" + line.rsplit("on ", 1)[1].strip()
            if "Server is ready" in line:
                break
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        time.sleep(0.5)
        idle = rss_mb(proc.pid)
        asyncio.run(_raw_load(url, "u", "p", claims, messages))
        return idle, rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait()


def _bare_python_rss() -> float:
    """A Python process holding the daemon's imports, doing nothing: the floor for our RSS."""
    code = (
        "import agentcoord.daemon.run, nats, uvloop, sys; "
        "print('ready', flush=True); sys.stdin.read()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        return rss_mb(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def area_memory(ctx: Ctx) -> Area:
    claims, messages = ctx.size(1000, 10_000), ctx.size(10_000, 100_000)
    objects = ctx.size(1000, 10_000)
    with running_daemon(ctx.tmp / "memory") as d:
        time.sleep(1.0)
        d_idle, n_idle = d.rss()
        _bounded(_hold_claims(d, claims))
        d_claims, _ = d.rss()
        _bounded(_queue_messages(d, messages), 900)
        d_msgs, n_msgs = d.rss()
        _bounded(_store_objects(d, objects))
        d_objs, _ = d.rss()
    raw_idle, raw_loaded = _bare_nats_rss(ctx.tmp / "rawnats", claims, messages)
    py = _bare_python_rss()
    loaded = f"after {claims:,} claims + {messages:,} messages"
    notes = [
        "RSS in MiB. The nats-server baseline is the same binary with the same data written "
        "straight with nats-py; the daemon's is a Python process holding the daemon's imports.",
        "The embedded nats-server runs with Go's soft memory limit GOMEMLIMIT=40MiB (unless "
        "the environment sets one); the bare baseline runs with Go's defaults.",
    ]
    if ctx.quick:
        notes.append(
            f"--quick scales the load down to {claims:,} claims / {messages:,} messages / "
            f"{objects:,} objects; the full run holds 10,000 claims, queues 100,000 messages "
            "and stores 10,000 objects."
        )
    notes.append("Objects are registered agents (Agent objects) written with register_agent.")
    return Area(
        "Memory",
        [
            Figure("daemon RSS, idle", d_idle, "python + daemon imports", py, "MB", "<= 80 MB"),
            Figure(
                f"daemon RSS, {claims:,} claims held",
                d_claims,
                "python + daemon imports",
                py,
                "MB",
                "<= 80 MB",
            ),
            Figure(
                f"daemon RSS, {loaded}", d_msgs, "python + daemon imports", py, "MB", "<= 80 MB"
            ),
            Figure(
                f"daemon RSS, {loaded} + {objects:,} objects in the store",
                d_objs,
                "python + daemon imports",
                py,
                "MB",
                "<= 80 MB",
            ),
            Figure("nats-server RSS, idle", n_idle, "bare nats-server", raw_idle, "MB", "<= 60 MB"),
            Figure(
                f"nats-server RSS, {loaded}",
                n_msgs,
                "bare nats-server, same data",
                raw_loaded,
                "MB",
                "<= 60 MB",
            ),
        ],
        notes=notes,
    )


# -- extension points: object store writes (docs/store.md), asks (docs/ask-and-operator.md) ---


def _plugin(name: str) -> Callable[[Ctx], Area] | None:
    """``bench/<name>.py``'s ``report(ctx) -> Area``, once that benchmark exists."""
    if importlib.util.find_spec(name) is None:
        return None
    module = importlib.import_module(name)
    report = getattr(module, "report", None)
    return report if callable(report) else None


def _raw_sqlite_writes(path: Path, writers: int, per: int) -> float:
    """Transactions/s of raw sqlite3 (WAL, synchronous=NORMAL): insert then CAS-update."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS objects (k TEXT PRIMARY KEY, rv INTEGER, v TEXT)")
    db.commit()
    db.close()

    def work(w: int) -> None:
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA synchronous=NORMAL")
        for i in range(per):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO objects VALUES (?, 1, ?)", (f"{w}-{i}", "{}"))
            conn.execute("COMMIT")
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "UPDATE objects SET rv = rv + 1, v = ? WHERE k = ? AND rv = 1", ("{}", f"{w}-{i}")
            )
            conn.execute("COMMIT")
        conn.close()

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return writers * per * 2 / (time.perf_counter() - t)


def area_store(ctx: Ctx) -> Area:
    plugin = _plugin("store_report")
    if plugin is not None:
        return plugin(ctx)
    if importlib.util.find_spec("agentcoord.stores.objects") is None:
        return _store_baseline_only(ctx)
    import store as bench_store

    from agentcoord.stores.objects import ObjectStore

    scale = 0.2 if ctx.quick else 1.0
    n = ctx.size(2000, 10_000)
    raw = bench_store.Raw(ctx.tmp / "raw.db")
    rates: dict[tuple[str, int], tuple[float, float]] = {}

    async def run() -> tuple[float, float, bench_store.Listing]:
        async with ObjectStore(ctx.tmp / "ours.db", retention=1_000_000) as store:
            for op in ("create", "update"):
                for writers, per in ((1, int(1500 * scale)), (16, int(400 * scale))):
                    ours = await bench_store.ours_rate(store, writers, per, op)
                    rates[(op, writers)] = (ours, bench_store.raw_rate(raw, writers, per, op))
            p50, p99 = await bench_store.fanout(store, 100, int(200 * scale))
            listed = await bench_store.listing(store, raw, n)
            return p50, p99, listed

    p50, p99, listed = asyncio.run(run())
    figures = []
    for (op, writers), (ours, theirs) in rates.items():
        label = "create" if op == "create" else "CAS update"
        goal = ">= 10,000/s" if writers == 16 else "-"
        figures.append(
            Figure(
                f"{label} writes/s, {writers} writer(s)", ours, "raw sqlite3", theirs, "/s", goal
            )
        )
    figures += [
        Figure("watch fan-out to 100 watchers, p50", p50, "", None, "ms"),
        Figure("watch fan-out to 100 watchers, p99", p99, "", None, "ms", "<= 10 ms"),
        Figure(f"list {n:,} objects", listed.after_write, "raw sqlite3 select", listed.raw, "ms"),
        Figure(
            f"list {n:,} objects again, nothing written since",
            listed.unchanged,
            "raw sqlite3 select",
            listed.raw,
            "ms",
        ),
    ]
    return Area(
        "Object store",
        figures,
        notes=[
            "In-process ObjectStore against raw sqlite3 doing the same transactions (WAL, "
            "synchronous=NORMAL, BEGIN IMMEDIATE, event row + object row), from bench/store.py. "
            "A listing is the first after a write to one object of the resource, or the same "
            "list again; each the median of 5, alternating with the baseline."
        ],
    )


def _store_baseline_only(ctx: Ctx) -> Area:
    per = ctx.size(300, 2000)
    one = _raw_sqlite_writes(ctx.tmp / "raw1.db", 1, per)
    many = _raw_sqlite_writes(ctx.tmp / "raw16.db", 16, max(1, per // 4))
    missing = "store not on main yet"
    return Area(
        "Object store",
        [
            Figure("create + CAS update, 1 writer", None, "raw sqlite3", one, "/s", note=missing),
            Figure(
                "create + CAS update, 16 writers",
                None,
                "raw sqlite3",
                many,
                "/s",
                ">= 10,000/s",
                note=missing,
            ),
        ],
    )


def area_asks(ctx: Ctx) -> Area:
    plugin = _plugin("ask_report")
    if plugin is not None:
        return plugin(ctx)
    if not (Path(__file__).parent / "ask.py").exists():
        return _asks_baseline_only(ctx)
    import ask as bench_ask

    runs = ctx.size(3, 10)
    runner = ctx.tmp / "bin" / "claude"
    runner.parent.mkdir(parents=True)
    runner.write_text(f"#!{sys.executable}\n" + bench_ask.STANDIN.read_text())
    runner.chmod(0o755)
    direct_cwd = ctx.tmp / "direct"
    direct_cwd.mkdir()
    daemon = bench_ask.start_daemon(ctx.tmp, runner)
    sock = ctx.tmp / "run" / "agentcoord.sock"
    token = human_token(ctx.tmp / "state")
    warm: list[float] = []
    cold: list[float] = []
    direct: list[float] = []
    try:
        bench_ask.tool_call(sock, token, "spawn_subagent", {"name": "bench"})
        bench_ask.ask_once(sock, token, "bench")  # opens the linked session
        bench_ask.direct_spawn(runner, direct_cwd)
        for i in range(runs):  # interleaved: the machine's noise hits all three alike
            bench_ask.tool_call(sock, token, "spawn_subagent", {"name": f"cold-{i}"})
            warm.append(bench_ask.ask_once(sock, token, "bench"))
            cold.append(bench_ask.ask_once(sock, token, f"cold-{i}"))
            direct.append(bench_ask.direct_spawn(runner, direct_cwd))
    finally:
        daemon.terminate()
        daemon.wait(10)
    return Area(
        "Asks",
        [
            Figure(
                "ask round trip, warm (linked session resumed)",
                _median(warm),
                "spawn the stand-in directly",
                _median(direct),
                "ms",
            ),
            Figure(
                "ask round trip, cold (new agent)",
                _median(cold),
                "spawn the stand-in directly",
                _median(direct),
                "ms",
            ),
        ],
        latency={"ask, warm": warm, "ask, cold": cold, "spawn the stand-in directly": direct},
        notes=["From bench/ask.py: the agent's turn is the stand-in `claude -p`, sandboxed."],
    )


def _asks_baseline_only(ctx: Ctx) -> Area:
    runner = ROOT / "tests" / "fakes" / "claude_runner.py"
    env = dict(os.environ)
    samples = []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(ctx.size(5, 15)):
            t = time.perf_counter()
            out = subprocess.run(
                [sys.executable, str(runner), "-p", "", "--output-format", "json"],
                capture_output=True,
                env=env,
                cwd=d,
                timeout=30,
            )
            samples.append(time.perf_counter() - t)
            json.loads(out.stdout.splitlines()[-1])
    return Area(
        "Asks",
        [
            Figure(
                "ask round trip with the stand-in",
                None,
                "spawn the stand-in directly",
                _median(samples),
                "ms",
                note="ask not on main yet",
            )
        ],
        latency={"spawn the stand-in directly": samples},
        notes=["bench/ask.py has no `report(ctx)` here, so only the stand-in's spawn is timed."],
    )


def area_week(ctx: Ctx) -> Area:
    """State retention: a simulated week of ten sessions (bench/week.py)."""
    import week

    return week.report(ctx)


def area_hooks(ctx: Ctx) -> Area:
    """One Claude Code hook per tool call: the http hooks against a bare `true` command hook
    (bench/hooks.py)."""
    import hooks

    return hooks.report(ctx)


def area_clihooks(ctx: Ctx) -> Area:
    """One command hook per tool call for Codex, Gemini CLI and OpenCode against a bare `true`
    command hook (bench/clihooks.py)."""
    import clihooks

    return clihooks.report(ctx)  # type: ignore[no-any-return]


def area_channels(ctx: Ctx) -> Area:
    """A message pushed into a Claude Code session: send -> notification (bench/channels.py)."""
    import channels

    return channels.report(ctx)  # type: ignore[no-any-return]


def area_native(ctx: Ctx) -> Area:
    """send -> model request in a live Claude Code session: its native inbox, the channel
    push and the next hook against a raw write on its socket (bench/native.py; needs the real
    binary and tmux, and says so when skipped)."""
    import native

    return native.report(ctx)  # type: ignore[no-any-return]


def area_results(ctx: Ctx) -> Area:
    """What the model reads: result and tools/list sizes (bench/results.py)."""
    import results

    return results.area(ctx)  # type: ignore[no-any-return]


AREAS: list[tuple[str, Callable[[Ctx], Area]]] = [
    ("startup", area_startup),
    ("claims", area_claims),
    ("claimkeys", area_claimkeys),
    ("conflicts", area_conflicts),
    ("claims_stress", area_claims_stress),
    ("messaging", area_messaging),
    ("localagents", area_localagents),
    ("store", area_store),
    ("asks", area_asks),
    ("memory", area_memory),
    ("week", area_week),
    ("hooks", area_hooks),
    ("clihooks", area_clihooks),
    ("channels", area_channels),
    ("native", area_native),
    ("results", area_results),
]
