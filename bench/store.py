"""Object store benchmark: our store against raw sqlite3 (and aiosqlite) in the same run.

    PYTHONPATH=src python bench/store.py [--scale 1.0]

Prints writes/s for create and CAS-update at 1 and 16 writers, point reads/s, watch fan-out
latency to 100 watchers (p50/p99, from the write call to each watcher holding the event) and
the time to list 10k objects. Ratios are ours / raw sqlite3 doing the same transactions
(WAL, synchronous=NORMAL, one BEGIN IMMEDIATE transaction per write, event row + object row).
Goals (bench/REPORT.md "Object store"): >= 10k writes/s at 16 writers; fan-out p99 <= 10 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sqlite3
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from agentcoord.stores.objects import ObjectStore, Watcher

NS = "default"
DDL = [
    "CREATE TABLE objects (resource TEXT, namespace TEXT, name TEXT, rv INTEGER, object BLOB,"
    " PRIMARY KEY (resource, namespace, name)) WITHOUT ROWID",
    "CREATE TABLE events (rv INTEGER PRIMARY KEY, type TEXT, resource TEXT, namespace TEXT,"
    " name TEXT, object BLOB)",
]


def _body(name: str, i: int = 0) -> dict:
    return {"metadata": {"name": name, "labels": {"bench": "1"}}, "spec": {"profile": f"p{i}"}}


def _raw_open(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=10000")
    return conn


def _raw_setup(path: Path) -> None:
    conn = _raw_open(path)
    for stmt in DDL:
        conn.execute(stmt)
    conn.close()


class Raw:
    """Raw sqlite3 doing the store's transactions; rv from a shared counter."""

    def __init__(self, path: Path) -> None:
        _raw_setup(path)
        self.path = path
        self.rv = 0
        self.lock = threading.Lock()

    def next_rv(self) -> int:
        with self.lock:
            self.rv += 1
            return self.rv

    def create(self, conn: sqlite3.Connection, name: str) -> None:
        rv = self.next_rv()
        raw = json.dumps(_body(name)).encode()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO events VALUES (?,?,?,?,?,?)", (rv, "ADDED", "agents", NS, name, raw)
        )
        conn.execute("INSERT INTO objects VALUES (?,?,?,?,?)", ("agents", NS, name, rv, raw))
        conn.execute("COMMIT")

    def cas_update(self, conn: sqlite3.Connection, name: str, i: int) -> None:
        conn.execute("BEGIN IMMEDIATE")
        (old_rv,) = conn.execute(
            "SELECT rv FROM objects WHERE resource='agents' AND namespace=? AND name=?",
            (NS, name),
        ).fetchone()
        rv = self.next_rv()
        raw = json.dumps(_body(name, i)).encode()
        cur = conn.execute(
            "UPDATE objects SET rv=?, object=? WHERE resource='agents' AND namespace=? AND name=?"
            " AND rv=?",
            (rv, raw, NS, name, old_rv),
        )
        assert cur.rowcount == 1
        conn.execute(
            "INSERT INTO events VALUES (?,?,?,?,?,?)", (rv, "MODIFIED", "agents", NS, name, raw)
        )
        conn.execute("COMMIT")


def raw_rate(raw: Raw, writers: int, per: int, op: str) -> float:
    """Writes/s of raw sqlite3 with ``writers`` threads, one connection each."""
    conns = [_raw_open(raw.path) for _ in range(writers)]
    barrier = threading.Barrier(writers + 1)

    def run(w: int) -> None:
        barrier.wait()
        for i in range(per):
            if op == "create":
                raw.create(conns[w], f"{op}-{writers}-{w}-{i}")
            else:
                raw.cas_update(conns[w], f"seed-{w}", i)

    if op == "update":
        for w in range(writers):
            if not _exists(conns[0], f"seed-{w}"):
                raw.create(conns[0], f"seed-{w}")
    threads = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    for c in conns:
        c.close()
    return writers * per / elapsed


def _exists(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM objects WHERE name=?", (name,)).fetchone()
    return row is not None


async def ours_rate(store: ObjectStore, writers: int, per: int, op: str) -> float:
    """Writes/s of the store with ``writers`` concurrent tasks."""
    if op == "update":
        for w in range(writers):
            name = f"seed-{writers}-{w}"
            await store.create("agents", NS, _body(name))

    async def run(w: int) -> None:
        for i in range(per):
            if op == "create":
                await store.create("agents", NS, _body(f"{op}-{writers}-{w}-{i}"))
            else:
                name = f"seed-{writers}-{w}"
                cur = await store.get("agents", NS, name)
                cur["spec"]["profile"] = f"p{i}"
                await store.update("agents", NS, cur)  # CAS on metadata.resourceVersion

    start = time.perf_counter()
    await asyncio.gather(*(run(w) for w in range(writers)))
    return writers * per / (time.perf_counter() - start)


async def aiosqlite_rate(path: Path, writers: int, per: int) -> float:
    """Writes/s of aiosqlite with one await per statement (four per transaction)."""
    _raw_setup(path)
    rv = 0
    lock = asyncio.Lock()
    async with aiosqlite.connect(path, isolation_level=None) as db:
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA synchronous=NORMAL")

        async def run(w: int) -> None:
            nonlocal rv
            for i in range(per):
                name = f"a-{w}-{i}"
                raw = json.dumps(_body(name)).encode()
                async with lock:  # one connection: transactions must not interleave
                    rv += 1
                    await db.execute("BEGIN IMMEDIATE")
                    await db.execute(
                        "INSERT INTO events VALUES (?,?,?,?,?,?)",
                        (rv, "ADDED", "agents", NS, name, raw),
                    )
                    await db.execute(
                        "INSERT INTO objects VALUES (?,?,?,?,?)", ("agents", NS, name, rv, raw)
                    )
                    await db.execute("COMMIT")

        start = time.perf_counter()
        await asyncio.gather(*(run(w) for w in range(writers)))
        return writers * per / (time.perf_counter() - start)


async def reads(store: ObjectStore, raw: Raw, n: int) -> tuple[float, float]:
    names = [o["metadata"]["name"] for o in (await store.list("agents"))[0][:100]]
    start = time.perf_counter()
    for i in range(n):
        await store.get("agents", NS, names[i % len(names)])
    ours = n / (time.perf_counter() - start)
    conn = _raw_open(raw.path)
    raw_names = [r[0] for r in conn.execute("SELECT name FROM objects LIMIT 100")]
    start = time.perf_counter()
    for i in range(n):
        row = conn.execute(
            "SELECT object FROM objects WHERE resource='agents' AND namespace=? AND name=?",
            (NS, raw_names[i % len(raw_names)]),
        ).fetchone()
        json.loads(row[0])
    theirs = n / (time.perf_counter() - start)
    conn.close()
    return ours, theirs


async def fanout(store: ObjectStore, watchers: int, writes: int) -> tuple[float, float]:
    """p50/p99 ms from the write call to each watcher holding the event."""
    sent: dict[int, float] = {}
    lat: list[float] = []
    ws = [await store.watch("agentchannels", since=store.revision) for _ in range(watchers)]

    async def consume(w: Watcher) -> None:
        for _ in range(writes):
            e = await w.next(timeout=10)
            assert e is not None
            lat.append(time.perf_counter() - sent[int(e.object["spec"]["topic"])])

    tasks = [asyncio.create_task(consume(w)) for w in ws]
    for i in range(writes):
        sent[i] = time.perf_counter()
        body = {"metadata": {"name": f"ch{i}"}, "spec": {"participants": ["a"], "topic": str(i)}}
        await store.create("agentchannels", NS, body)
        await asyncio.sleep(0.002)  # a steady trickle, not one burst
    await asyncio.gather(*tasks)
    for w in ws:
        w.end()
    q = statistics.quantiles(lat, n=100)
    return q[49] * 1000, q[98] * 1000


LIST_ROUNDS = 5  # listings of each kind, alternating; the median of each is reported


@dataclass(frozen=True)
class Listing:
    """Listing ``n`` objects, in ms (medians of LIST_ROUNDS)."""

    after_write: float  # the bytes kubectl gets, the first list after a write to the resource
    unchanged: float  # the same list again, nothing written in between
    dicts: float  # ``store.list``: decoded copies
    raw: float  # raw sqlite3 selecting the same rows and decoding them


async def listing(store: ObjectStore, raw: Raw, n: int) -> Listing:
    """Each round updates one object (untimed), then times the list after that write, the
    same list again, the decoded list and the baseline, in turn.

    The collector is frozen (``gc.freeze``, as the daemon does after start-up,
    daemon/run.py) while timing, so the baseline's 10,000 decoded dicts pay no collections over
    whatever the benchmark's process allocated before."""
    have = len((await store.list("humanprompts"))[0])
    await asyncio.gather(
        *(
            store.create(
                "humanprompts", NS, {"metadata": {"name": f"hp{i}"}, "spec": {"kind": "notify"}}
            )
            for i in range(have, n)
        )
    )
    raws, _, _ = store.list_raw("humanprompts")
    assert len(raws) == n
    conn = _raw_open(raw.path)  # the same rows in raw sqlite3, then read back and decoded
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT OR IGNORE INTO objects VALUES ('humanprompts', ?, ?, ?, ?)",
        [(NS, f"hp{i}", i, raws[i]) for i in range(n)],
    )
    conn.execute("COMMIT")
    samples: dict[str, list[float]] = {"after_write": [], "unchanged": [], "dicts": [], "raw": []}

    def timed_list(into: str) -> None:
        start = time.perf_counter()
        got, _, _ = store.list_raw("humanprompts")
        body = b"[" + b",".join(got) + b"]"
        samples[into].append(time.perf_counter() - start)
        assert len(got) == n
        assert body

    gc.collect()
    gc.freeze()
    try:
        for i in range(LIST_ROUNDS):
            await store.patch("humanprompts", NS, "hp0", {"spec": {"message": f"round {i}"}})
            timed_list("after_write")
            timed_list("unchanged")
            start = time.perf_counter()
            items, _ = await store.list("humanprompts")
            samples["dicts"].append(time.perf_counter() - start)
            assert len(items) == n
            start = time.perf_counter()
            rows = conn.execute("SELECT object FROM objects WHERE resource='humanprompts'")
            decoded = [json.loads(r[0]) for r in rows.fetchall()]
            samples["raw"].append(time.perf_counter() - start)
            assert len(decoded) == n
            del items, decoded
    finally:
        gc.unfreeze()
        conn.close()
    return Listing(**{k: statistics.median(v) * 1000 for k, v in samples.items()})


async def main(scale: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        raw = Raw(root / "raw.db")
        print(f"{'measure':<34}{'ours':>12}{'raw sqlite3':>14}{'ratio':>8}")

        def row(label: str, ours: float, theirs: float, unit: str = "/s") -> None:
            print(f"{label:<34}{ours:>10.0f}{unit:<2}{theirs:>12.0f}{unit:<2}{ours / theirs:>8.2f}")

        async with ObjectStore(root / "ours.db", retention=1_000_000) as store:
            for op in ("create", "update"):
                for writers, per in ((1, int(1500 * scale)), (16, int(400 * scale))):
                    ours = await ours_rate(store, writers, per, op)
                    theirs = raw_rate(raw, writers, per, op)
                    row(f"{op} writes, {writers} writer(s)", ours, theirs)
            a1 = await aiosqlite_rate(root / "aio1.db", 1, int(600 * scale))
            a16 = await aiosqlite_rate(root / "aio16.db", 16, int(60 * scale))
            print(f"{'  (aiosqlite, 4 awaits per tx)':<34}{a1:>10.0f}/s at 1, {a16:.0f}/s at 16")
            ours_r, theirs_r = await reads(store, raw, int(50_000 * scale))
            row("point reads", ours_r, theirs_r)
            p50, p99 = await fanout(store, 100, int(200 * scale))
            print(f"{'watch fan-out to 100 watchers':<34}p50 {p50:.2f} ms, p99 {p99:.2f} ms")
            lst = await listing(store, raw, 10_000)
            print(
                f"{'list 10k objects':<34}{lst.after_write:>10.1f}ms (bytes, after a write),"
                f" {lst.unchanged:.1f}ms (again), {lst.dicts:.1f}ms (dicts);"
                f" raw sqlite3 {lst.raw:.1f}ms; ratio {lst.after_write / lst.raw:.2f}"
            )
            print(
                f"batches {store.stats.batches}, writes {store.stats.writes}, "
                f"largest batch {store.stats.max_batch}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the workload")
    args = parser.parse_args()
    asyncio.run(main(args.scale))
