"""MessageBus against a real nats-server: consumer start, order, ack-once, channel joins."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from agentcoord.kernel import wire
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.stores.messagebus import (
    BROADCAST_SUBJECT,
    MessageBus,
    check_agent_id,
    consumer_name,
    inbox_subject,
)


@pytest.fixture
def nats_url(tmp_path: Path) -> Iterator[str]:
    """A bare nats-server with JetStream on an ephemeral port."""
    binary = Path(sys.executable).parent / "nats-server"
    proc = subprocess.Popen(
        [str(binary), "-js", "-sd", str(tmp_path / "js"), "-a", "127.0.0.1", "-p", "-1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    url = ""
    for line in proc.stderr:  # readiness from the server's own log lines
        found = re.search(r"client connections on ([\d.]+:\d+)", line)
        if found:
            url = f"nats://{found.group(1)}"
        if "Server is ready" in line:
            break
    try:
        assert url, "nats-server did not start"
        yield url
    finally:
        proc.terminate()
        proc.wait(5)
        proc.stderr.close()


@pytest.fixture
async def bus(nats_url: str) -> AsyncIterator[tuple[MessageBus, Any]]:
    nc = await nats.connect(nats_url)
    async with MessageBus(nc) as b:
        yield b, nc
    await nc.close()


def _text(sender: str, text: str) -> Any:
    return wire.make_message(sender=sender, kind=pb.MESSAGE_TEXT, body=text.encode())


async def test_new_inbox_skips_older_broadcasts(bus: tuple[MessageBus, Any]) -> None:
    """A consumer created now starts after the stream's end: old broadcasts are not replayed."""
    b, _ = bus
    await b.publish(BROADCAST_SUBJECT, _text("x", "old"))
    await b.ensure_inbox("late")
    await b.publish(BROADCAST_SUBJECT, _text("x", "new"))
    got = await b.read("late", 10)
    assert [r.message.body for r in got] == [b"new"]


async def test_read_acks_and_keeps_stream_order(bus: tuple[MessageBus, Any]) -> None:
    """Reads return messages once, in stream order, across limit-sized batches."""
    b, _ = bus
    await b.ensure_inbox("r")
    for i in range(25):
        await b.publish(inbox_subject("r"), _text("s", str(i)))
    seen = []
    while got := await b.read("r", 10):
        seen += [int(r.message.body) for r in got]
    assert seen == list(range(25))
    assert await b.delivered("r", 25)


async def test_joined_channel_delivered_without_reconsuming(bus: tuple[MessageBus, Any]) -> None:
    """Adding a channel subject to a consumer brings its later posts and nothing re-read."""
    b, _ = bus
    await b.ensure_inbox("p")
    await b.publish(inbox_subject("p"), _text("s", "direct"))
    assert len(await b.read("p", 10)) == 1
    await b.subscribe_subjects("p", ["channels.room"])
    await b.publish("channels.room", _text("s", "post"))
    # The consumer's new filter takes effect on the server a moment after the update is
    # acknowledged: the read waits for the post (it returns as soon as one is there).
    assert [r.subject for r in await b.read("p", 10, wait=30)] == ["channels.room"]


async def test_long_poll_returns_on_arrival(bus: tuple[MessageBus, Any]) -> None:
    """A waiting read wakes on a new message and the sender sees it as delivered."""
    import asyncio

    b, _ = bus
    await b.ensure_inbox("w")
    reader = asyncio.create_task(b.read("w", 10, wait=5))
    for _ in range(100):  # wait until the long poll is registered
        if b._waiting["w"]:
            break
        await asyncio.sleep(0.01)
    pub = await b.publish(inbox_subject("w"), _text("s", "hi"))
    assert await b.delivered("w", pub.seq)
    assert [r.message.body for r in await reader] == [b"hi"]


def test_ids_and_consumer_names() -> None:
    """Agent ids are single subject tokens; consumer names differ for ids that sanitize alike."""
    assert check_agent_id("human:alice") == "human:alice"
    for bad in ("a.b", "a b", "*", ">", ""):
        with pytest.raises(Exception, match="not a valid agent id"):
            check_agent_id(bad)
    assert consumer_name("a:b") != consumer_name("a_b")


async def test_read_with_after_gives_again_until_confirmed(bus: tuple[MessageBus, Any]) -> None:
    """With ``after``: unconfirmed messages are given again, confirmed ones never."""
    b, _ = bus
    await b.ensure_inbox("c")
    for i in range(3):
        await b.publish(inbox_subject("c"), _text("s", str(i)))
    first = await b.read("c", 10, after=0)
    assert [r.message.body for r in first] == [b"0", b"1", b"2"]
    again = await b.read("c", 10, after=0)  # the reply was lost: nothing was confirmed
    assert [r.seq for r in again] == [r.seq for r in first]
    await b.publish(inbox_subject("c"), _text("s", "3"))
    rest = await b.read("c", 10, after=first[1].seq)  # confirms 0 and 1 only
    assert [r.message.body for r in rest] == [b"2"]
    rest = await b.read("c", 10, after=first[2].seq)
    assert [r.message.body for r in rest] == [b"3"]
    assert await b.read("c", 10, after=rest[0].seq) == []


async def test_new_bus_gives_unconfirmed_messages_again_in_order(nats_url: str) -> None:
    """Messages a dead daemon gave out unconfirmed come back at once, before newer ones."""
    nc = await nats.connect(nats_url)
    async with MessageBus(nc) as b:
        await b.ensure_inbox("d")
        for i in range(3):
            await b.publish(inbox_subject("d"), _text("s", str(i)))
        got = await b.read("d", 2, after=0)
        assert [r.message.body for r in got] == [b"0", b"1"]
    await nc.close()  # the daemon is gone; its held messages were never acknowledged
    nc = await nats.connect(nats_url)
    async with MessageBus(nc) as b:
        await b.publish(inbox_subject("d"), _text("s", "3"))
        got = await b.read("d", 10, after=0)
        assert [r.message.body for r in got] == [b"0", b"1", b"2", b"3"]
    await nc.close()
