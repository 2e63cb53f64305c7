"""MessageBus channel joins and leaves against a real nats-server: a consumer that is behind
the stream gets a channel's posts from its join to its leave, across restarts."""

from __future__ import annotations

from typing import Any

import nats
import pytest

from agentcoord.kernel import wire
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.stores.messagebus import MessageBus, inbox_subject
from tests.stores.test_inbox import bus, nats_url  # noqa: F401  (fixtures)


def _text(text: str) -> Any:
    return wire.make_message(sender="s", kind=pb.MESSAGE_TEXT, body=text.encode())


@pytest.mark.parametrize("after", [None, 0], ids=["ack-on-read", "after"])
async def test_join_skips_the_channels_earlier_posts(
    bus: tuple[MessageBus, Any],  # noqa: F811
    after: int | None,
) -> None:
    """An agent whose consumer predates a channel's posts gets only the posts after its join
    (and its own inbox messages from before, which were always its)."""
    b, _ = bus
    await b.ensure_inbox("late")
    await b.publish("channels.room", _text("before"))
    await b.publish(inbox_subject("late"), _text("direct"))
    await b.subscribe_subjects("late", ["channels.room"])
    await b.publish("channels.room", _text("after"))
    got = await b.read("late", 10, after=after)
    assert [r.message.body for r in got] == [b"direct", b"after"]


async def test_join_mark_survives_a_new_bus(nats_url: str) -> None:  # noqa: F811
    """The join mark is on the server (consumer metadata): a restarted daemon still skips the
    channel's posts from before the join."""
    nc = await nats.connect(nats_url)
    async with MessageBus(nc) as b:
        await b.ensure_inbox("r")
        await b.publish("channels.room", _text("before"))
        await b.subscribe_subjects("r", ["channels.room"])
        await b.publish("channels.room", _text("after"))
    await nc.close()
    nc = await nats.connect(nats_url)
    async with MessageBus(nc) as b:
        got = await b.read("r", 10)
        assert [r.message.body for r in got] == [b"after"]
    await nc.close()


@pytest.mark.parametrize("after", [None, 0], ids=["ack-on-read", "after"])
async def test_leave_keeps_earlier_posts_and_drops_later_ones(
    bus: tuple[MessageBus, Any],  # noqa: F811
    after: int | None,
) -> None:
    """Posts from while the agent took part still reach it after it leaves; later ones do
    not, and it is no longer among the channel's subscribers."""
    b, _ = bus
    await b.subscribe_subjects("x", ["channels.room"])
    await b.subscribe_subjects("y", ["channels.room"])
    await b.publish("channels.room", _text("while in"))
    await b.unsubscribe_subjects("x", ["channels.room"])
    await b.publish("channels.room", _text("after leaving"))
    await b.publish(inbox_subject("x"), _text("direct"))
    got = await b.read("x", 10, after=after)
    assert [r.message.body for r in got] == [b"while in", b"direct"]
    assert await b.subscribers("channels.room") == ["y"]


async def test_rejoin_gets_posts_from_the_rejoin_on(nats_url: str) -> None:  # noqa: F811
    """Leave, rejoin: the posts in between are skipped, later ones arrive, on a new bus too."""
    nc = await nats.connect(nats_url)
    async with MessageBus(nc) as b:
        await b.subscribe_subjects("z", ["channels.room"])
        await b.unsubscribe_subjects("z", ["channels.room"])
        await b.publish("channels.room", _text("while out"))
    await nc.close()
    nc = await nats.connect(nats_url)
    async with MessageBus(nc) as b:
        await b.subscribe_subjects("z", ["channels.room"])
        await b.publish("channels.room", _text("back"))
        got = await b.read("z", 10)
        assert [r.message.body for r in got] == [b"back"]
        assert await b.subscribers("channels.room") == ["z"]
    await nc.close()
