"""Faults under mixed load from 32 client processes (docs/reliability.md): SIGKILL of the
daemon, kill of nats-server, a full state disk, corrupted frames on the socket. After each
fault every acknowledged claim and message is present exactly once, no two write holders
overlapped, and the daemon answers again."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from tests.reliability._rig import Rig, call, nats_pid, wait_answers, wait_gone
from tests.tools.session_helpers import human_token


def sigkill_daemon(rig: Rig) -> None:
    """kill -9 the daemon (its nats-server dies with it), then start it on the same dirs."""
    d = rig.daemon
    npid = nats_pid(d)
    assert d.proc is not None
    d.proc.kill()
    d.proc.wait()
    wait_gone(npid)
    d.start()
    rig.tally.faults["daemon SIGKILL"] += 1


def kill_nats(rig: Rig) -> None:
    """kill -9 nats-server; the daemon's supervisor restarts it on the same port."""
    before = nats_pid(rig.daemon)
    os.kill(before, signal.SIGKILL)
    wait_gone(before)
    wait_answers(rig.daemon)
    assert nats_pid(rig.daemon) != before
    rig.tally.faults["nats-server SIGKILL"] += 1


def fill_disk(rig: Rig, kill_nats: bool = True) -> None:
    """Fill the state dir's filesystem; kill nats-server while it is full; free the space."""
    filler = rig.daemon.state_dir / "filler"
    with filler.open("wb") as fh:
        try:
            while True:
                fh.write(b"\0" * (1 << 20))
                fh.flush()
        except OSError:
            pass
    st = os.statvfs(rig.daemon.state_dir)
    assert st.f_bavail == 0, "the state filesystem is not full"
    rig.tally.faults["state disk full"] += 1
    time.sleep(1.0)  # load runs against a full disk
    if kill_nats:
        os.kill(nats_pid(rig.daemon), signal.SIGKILL)  # a restart now cannot write its config
        rig.tally.faults["nats-server SIGKILL (disk full)"] += 1
    time.sleep(1.0)
    filler.unlink()


def fill_disk_alone(rig: Rig) -> None:
    """Fill the state dir's filesystem under load and free it, nats-server left running: the
    daemon heals by itself (docs/reliability.md "A full disk")."""
    fill_disk(rig, kill_nats=False)


CORRUPT_FRAMES = [
    # a claim request with one byte flipped: no longer JSON
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"claim","argu\x00ents":',
    # a claim whose key holds invalid UTF-8
    b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"claim",'
    b'"arguments":{"resource_key":"corrupt/\xff\xfe"}}}',
    # a frame cut short, then the next frame's tail
    b'{"jsonrpc":"2.0","id":9,"method":"tools/ca',
    b'll","params":{"name":"claim","arguments":{"resource_key":"corrupt/tail"}}}',
    # bit rot in the method name
    b'{"jsonrpc":"2.0","id":10,"method":"tools/c\x01ll","params":{"name":"claim",'
    b'"arguments":{"resource_key":"corrupt/method"}}}',
    # pure noise
    bytes(range(1, 10)) + b"\xff" * 32,
]


def corrupt_frames(rig: Rig) -> None:
    """Corrupted frames on one connection each get an error; none acts; the link survives."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(20)
        s.connect(str(rig.daemon.socket))
        reader = s.makefile("rb")
        # The human's connection, logged in as the CLI does (docs/security.md "Who a caller
        # is"): what is refused below is the frame, not the caller.
        login = {"jsonrpc": "2.0", "id": 6, "method": "agentcoord/login"}
        s.sendall(json.dumps({**login, "params": {"token": human_token(rig.daemon)}}).encode())
        s.sendall(b"\n")
        assert "result" in json.loads(reader.readline())
        for frame in CORRUPT_FRAMES:
            s.sendall(frame + b"\n")
            reply = json.loads(reader.readline())
            assert "error" in reply, reply
            assert reply["error"]["code"] in (-32700, -32600, -32601, -32602), reply
            rig.tally.faults["corrupted frame"] += 1
        s.sendall(b'{"jsonrpc":"2.0","id":11,"method":"ping"}\n')
        assert json.loads(reader.readline()) == {"jsonrpc": "2.0", "id": 11, "result": {}}
    rows = call(rig.daemon, "check_claims", {"prefix": "corrupt"})["claims"]
    assert rows == [], rows


def test_daemon_sigkill_under_load(make_rig: Any) -> None:
    """SIGKILL of the daemon under 32 clients: nothing acknowledged is lost or doubled."""
    make_rig().phase(sigkill_daemon)


def test_nats_kill_under_load(make_rig: Any) -> None:
    """kill -9 of nats-server under 32 clients: nothing acknowledged is lost or doubled."""
    make_rig().phase(kill_nats)


def test_disk_full_under_load(make_rig: Any, small_tmpfs: Path) -> None:
    """A full state disk and a NATS crash while full, under load: recovery, nothing lost."""
    make_rig(AGENTCOORD_STATE_DIR=str(small_tmpfs / "state")).phase(fill_disk)


def test_disk_full_heals_under_load(make_rig: Any, small_tmpfs: Path) -> None:
    """A full state disk under load, nats-server not killed: it heals, nothing lost."""
    make_rig(AGENTCOORD_STATE_DIR=str(small_tmpfs / "state")).phase(fill_disk_alone)


def test_corrupt_frames_under_load(make_rig: Any) -> None:
    """Corrupted frames on the socket under load: refused, none acts, others unaffected."""
    make_rig().phase(corrupt_frames)


def test_checker_catches_a_lost_claim(make_rig: Any) -> None:
    """The rig's checks fail when held claims vanish (deleted from the KV behind the daemon)."""
    import asyncio

    import nats

    from agentcoord.stores.kv.keys import escape_key
    from tests.tools.conftest import nats_login

    def steal(rig: Rig) -> None:
        time.sleep(1.0)
        live = call(rig.daemon, "check_claims", {"prefix": "k", "limit": 1000})["claims"]
        assert live, "no client held a claim"

        async def purge() -> None:
            url, user, pw = nats_login(rig.daemon)
            nc = await nats.connect(url, user=user, password=pw)
            kv = await nc.jetstream().key_value("agent-claims")
            for row in live:
                await kv.purge(escape_key(row["resource_key"]))
            await nc.close()

        asyncio.run(purge())

    rig = make_rig()
    rig.clients = 4
    with pytest.raises(AssertionError, match="claim"):
        rig.phase(steal)
    assert rig.tally.lost_claims > 0
    rig.tally = type(rig.tally)()  # expected losses: keep them out of the printed counts


@pytest.mark.timeout(0)  # bounded by --soak itself, not by the suite's per-test timeout
def test_soak(make_rig: Any, small_tmpfs: Path, soak_minutes: float) -> None:
    # A long load would fill the 64 MiB tmpfs by itself, so only the disk-full phases use it.
    """--soak MINUTES: the four faults in rotation (disk-full each time on a fresh tmpfs daemon)."""
    rig = make_rig()
    faults = [sigkill_daemon, kill_nats, fill_disk, corrupt_frames]
    deadline = time.monotonic() + soak_minutes * 60
    i = 0
    while time.monotonic() < deadline:
        fault = faults[i % len(faults)]
        if fault is fill_disk:
            state = small_tmpfs / f"state-{i}"
            disk = make_rig(f"disk{i}", AGENTCOORD_STATE_DIR=str(state))
            try:
                disk.phase(fill_disk)
            finally:
                disk.daemon.stop()
                shutil.rmtree(state, ignore_errors=True)
        else:
            rig.phase(fault, load_s=10.0)
        i += 1
