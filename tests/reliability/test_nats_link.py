"""The daemon's NATS link heals by itself (docs/reliability.md "The NATS link"): an error the
server reports on the connection, which closes it, is followed by a reconnect, not a client
closed for good; a subject the server would refuse is refused before it is sent."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import nats.errors
import pytest

from agentcoord.daemon.natsd import NatsSupervisor
from agentcoord.daemon.natslink import NatsLink
from agentcoord.kernel.config import Config


async def _round_trip(link: NatsLink) -> bytes:
    """A request to a responder on the link's own client: the link carries traffic."""
    nc = link.client

    async def echo(msg: Any) -> None:
        await msg.respond(msg.data)

    sub = await nc.subscribe("probe.echo", cb=echo)
    try:
        msg = await nc.request("probe.echo", b"ping", timeout=10)
        return msg.data
    finally:
        await sub.unsubscribe()


async def _healed(link: NatsLink, reconnects: int) -> None:
    async with asyncio.timeout(30):
        while not (link.healthy()[0] and link.reconnects > reconnects):
            assert not link.client.is_closed, "the NATS client closed for good"
            await asyncio.sleep(0.02)


async def test_a_protocol_error_from_the_server_reconnects(tmp_path: Path) -> None:
    """nats-server answers a bad line with -ERR and closes the connection: the link reconnects,
    /healthz's check says ok again and requests work (nats-py alone closes the client)."""
    cfg = Config(state_dir=tmp_path / "state", runtime_dir=tmp_path / "run")
    async with NatsSupervisor(cfg.state_dir) as sup, NatsLink(cfg, sup) as link:
        assert await _round_trip(link) == b"ping"
        before = link.reconnects
        # What a too-long subject did: a line the server refuses ("Unknown Protocol Operation"
        # here; "Maximum Control Line Exceeded" there), then the server closes the connection.
        transport = link.client._transport
        assert transport is not None
        transport.write(b"BOGUS LINE\r\n")
        await transport.drain()
        await _healed(link, before)
        assert await _round_trip(link) == b"ping"


async def test_a_subject_past_the_control_line_is_refused_before_sending(tmp_path: Path) -> None:
    """A 5 KB subject raises BadSubjectError in the daemon; the connection stays up."""
    cfg = Config(state_dir=tmp_path / "state", runtime_dir=tmp_path / "run")
    async with NatsSupervisor(cfg.state_dir) as sup, NatsLink(cfg, sup) as link:
        before = link.reconnects
        with pytest.raises(nats.errors.BadSubjectError):
            await link.client.publish("x" * 5000, b"")
        with pytest.raises(nats.errors.BadSubjectError):
            await link.client.subscribe("y" * 5000)
        assert await _round_trip(link) == b"ping"
        assert link.reconnects == before
        assert link.healthy() == (True, "ok")
