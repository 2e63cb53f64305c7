"""Cluster benchmark (docs/one-host-to-many.md): claim+release through the daemon's unix
socket with the embedded single nats-server, then with the daemon pointed at a three-node
loopback cluster (``--nats-url``, R3 buckets and streams), in one run, printed as ratios
cluster/embedded.

Usage: PYTHONPATH=src python bench/cluster.py [--pairs 300] [--clients 8]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import human_token  # noqa: E402
from claims import Mcp, _daemon_pair, _pct  # noqa: E402

from tests.cluster.natscluster import NatsCluster  # noqa: E402
from tests.conftest import Daemon, make_env  # noqa: E402


async def _measure(d: Daemon, label: str, pairs: int, clients: int) -> tuple[list[float], float]:
    """Sequential round trips, then ``clients`` connections at once, as the human;
    (latencies, pairs/s)."""
    token = human_token(d.state_dir)
    conns = [await Mcp.open(d.socket, token) for _ in range(clients)]
    try:
        for i in range(30):  # warm up: buckets, watches, connections
            await _daemon_pair(conns[0], f"warm-{label}-{i}")
        seq = [await _daemon_pair(conns[0], f"s-{label}-{i}") for i in range(pairs)]
        per = max(1, pairs // clients) * 2

        async def worker(w: int) -> int:
            for i in range(per):
                await _daemon_pair(conns[w], f"p-{label}-{w}-{i}")
            return per

        t = time.perf_counter()
        done = sum(await asyncio.gather(*(worker(w) for w in range(clients))))
        return seq, done / (time.perf_counter() - t)
    finally:
        for c in conns:
            await c.close()


def _run_daemon(
    root: Path, name: str, pairs: int, clients: int, **env: str
) -> tuple[list[float], float]:
    d_root = root / name
    d_root.mkdir()
    d = Daemon(d_root, make_env(d_root, AGENTCOORD_LOG_LEVEL="WARNING", **env))
    d.start(timeout=30)
    try:
        return asyncio.run(_measure(d, name, pairs, clients))
    finally:
        d.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--clients", type=int, default=8)
    ns = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="agentcoord-bench-cluster-"))
    embedded = _run_daemon(root, "embedded", ns.pairs, ns.clients)
    cluster = NatsCluster(root / "nats").start()
    try:
        clustered = _run_daemon(
            root,
            "cluster",
            ns.pairs,
            ns.clients,
            AGENTCOORD_NATS_URL=cluster.seeds,
            AGENTCOORD_NATS_REPLICAS="3",
            AGENTCOORD_HOST_ID="bench",
        )
    finally:
        cluster.stop()

    (e_lat, e_tp), (c_lat, c_tp) = embedded, clustered
    print(f"claim+release pairs: {ns.pairs} sequential; {ns.clients} clients in parallel")
    for label, lat, tp in (("embedded R1", e_lat, e_tp), ("cluster  R3", c_lat, c_tp)):
        print(
            f"{label}: p50 {_pct(lat, 0.5) * 1e3:.2f} ms p99 {_pct(lat, 0.99) * 1e3:.2f} ms "
            f"| {ns.clients} clients {tp:,.0f} pairs/s"
        )
    print(
        f"ratio cluster/embedded: p50 {_pct(c_lat, 0.5) / _pct(e_lat, 0.5):.2f}x "
        f"p99 {_pct(c_lat, 0.99) / _pct(e_lat, 0.99):.2f}x throughput {c_tp / e_tp:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
