"""The embedded nats-server's default sync interval keeps every acknowledged write on SIGKILL.

Config.nats_sync defaults to nats-server's own 2 minutes: the file store writes each message to
the OS before it acknowledges it and only the fsync is periodic, so killing the process (not
the OS) loses nothing. This pins that assumption to the nats-server binary we ship with.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import nats
from nats.js import api

from agentcoord.daemon.natsd import NatsSupervisor


async def _kill_under_load(state: Path) -> tuple[int, int]:
    async with NatsSupervisor(state) as sup:
        nc = await nats.connect(
            sup.url, user=sup.user, password=sup.password, max_reconnect_attempts=0
        )
        kv = await nc.jetstream().create_key_value(api.KeyValueConfig(bucket="k", history=1))
        acked: dict[str, int] = {}
        stop = asyncio.Event()

        async def writer(w: int) -> None:
            i = 0
            while not stop.is_set():
                key = f"w{w}-{i}"
                i += 1
                try:
                    acked[key] = await kv.create(key, b"x")
                except Exception:
                    return  # the server is gone: an unacknowledged write proves nothing

        tasks = [asyncio.create_task(writer(w)) for w in range(16)]
        await asyncio.sleep(0.6)
        pid = sup.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.2)
        stop.set()
        await asyncio.gather(*tasks)
        await nc.close()
        async with asyncio.timeout(60):  # the supervisor restarts it on the same store
            # The supervisor has no "restarted" event; a bounded poll of its counter will do.
            while sup.restarts == 0:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
            await sup.up.wait()
        nc = await nats.connect(sup.url, user=sup.user, password=sup.password)
        kv = await nc.jetstream().key_value("k")
        lost = 0
        for key, rev in acked.items():
            try:
                entry = await kv.get(key)
                lost += entry.revision != rev
            except Exception:
                lost += 1
        await nc.close()
        return len(acked), lost


def test_sigkill_of_nats_server_loses_no_acknowledged_kv_write(tmp_path: Path) -> None:
    """16 writers, nats-server SIGKILLed mid-load: every acknowledged KV create is there after."""
    acked, lost = asyncio.run(_kill_under_load(tmp_path))
    assert acked > 100, f"too little load to prove anything ({acked} writes)"
    assert lost == 0, f"{lost} of {acked} acknowledged writes lost"
