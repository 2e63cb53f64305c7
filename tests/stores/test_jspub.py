"""The claim path's JetStream publisher: nats-py's errors and results, on a real nats-server."""

from __future__ import annotations

import asyncio
from typing import Any

import nats.errors
import nats.js.errors
import pytest
from nats.js import api

from agentcoord.stores._jspub import AckedPublisher


async def test_publish_returns_the_sequence_and_stores_headers(js: Any) -> None:
    """A publish is stored with its headers, and the result is its stream sequence."""
    await js.add_stream(api.StreamConfig(name="P", subjects=["p.>"], allow_msg_ttl=True))
    async with AckedPublisher(js._nc) as pub:
        first = await pub.publish("p.a", b"one", {"Nats-TTL": "60"})
        second = await pub.publish("p.b", b"two", {"X-Test": "yes"})
    assert (first, second) == (1, 2)
    msg = await js.get_msg("P", 2)
    assert msg.data == b"two"
    assert msg.headers["X-Test"] == "yes"


async def test_refused_write_raises_apierror_with_its_code(js: Any) -> None:
    """A failed compare-and-set is nats-py's APIError with the wrong-last-sequence code."""
    await js.add_stream(api.StreamConfig(name="Q", subjects=["q.>"]))
    async with AckedPublisher(js._nc) as pub:
        await pub.publish("q.k", b"v", {"Nats-Expected-Last-Subject-Sequence": "0"})
        with pytest.raises(nats.js.errors.APIError) as info:
            await pub.publish("q.k", b"w", {"Nats-Expected-Last-Subject-Sequence": "0"})
    assert info.value.err_code == 10071


async def test_no_stream_is_no_stream_response(js: Any) -> None:
    """A subject no stream takes answers at once with NoStreamResponseError (503)."""
    async with AckedPublisher(js._nc) as pub:
        with pytest.raises(nats.js.errors.NoStreamResponseError):
            await pub.publish("nobody.listens", b"v", {})


async def test_no_ack_times_out_and_close_fails_the_waiting(js: Any) -> None:
    """No ack within the timeout is nats-py's TimeoutError; closing fails writes still waiting."""
    nc = js._nc
    arrived = asyncio.Event()

    async def silent(msg: Any) -> None:  # takes the request, never answers
        arrived.set()

    await nc.subscribe("silent.sink", cb=silent)
    async with AckedPublisher(nc, timeout=0.2) as pub:
        with pytest.raises(nats.errors.TimeoutError):
            await pub.publish("silent.sink", b"v", {})
    arrived.clear()
    pub = await AckedPublisher(nc, timeout=30).__aenter__()
    waiting = asyncio.create_task(pub.publish("silent.sink", b"v", {}))
    await arrived.wait()  # the write is out and waits for its ack
    await pub.__aexit__(None, None, None)
    with pytest.raises(nats.errors.ConnectionClosedError):
        await waiting


async def test_concurrent_writes_each_get_their_own_ack(js: Any) -> None:
    """Replies handed over by the reader reach the write they answer, 200 writes at once."""
    await js.add_stream(api.StreamConfig(name="C", subjects=["c.>"]))
    async with AckedPublisher(js._nc) as pub:
        seqs = await asyncio.gather(*(pub.publish(f"c.{i}", b"v", {}) for i in range(200)))
    assert sorted(seqs) == list(range(1, 201))
    for i in (0, 99, 199):  # each write got the sequence its own message was stored at
        assert (await js.get_msg("C", seqs[i])).subject == f"c.{i}"


async def test_a_stray_reply_on_the_inbox_leaves_the_connection_working(js: Any) -> None:
    """A reply nobody waits for (a write given up on, a forged token) is dropped by the reader
    without breaking the connection: the next write is acknowledged."""
    await js.add_stream(api.StreamConfig(name="S", subjects=["s.>"]))
    nc = js._nc
    async with AckedPublisher(nc) as pub:
        await nc.publish(f"{pub._prefix}.999", b'{"seq": 7}')
        await nc.publish(f"{pub._prefix}.not-a-token", b"not json")
        await nc.flush()
        assert await pub.publish("s.k", b"v", {}) == 1
    assert nc.is_connected
