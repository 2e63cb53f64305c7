"""Direct messages, channel posts, broadcasts and inbox reads (docs/messaging.md "Tools").

Bytes are agent.v1 ``ChannelMessage`` protobufs on NATS; inboxes and channels are durable on
JetStream (:mod:`agentcoord.stores.messagebus`). A direct send says honestly whether a live reader
took the message (``delivered``) or it waits in the inbox (``queued``).
"""

from __future__ import annotations

from typing import Any

from agentcoord.kernel import wire
from agentcoord.messaging.channels import Channels
from agentcoord.messaging.recipients import QUEUED_NOTE, Recipients
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.stores.messagebus import (
    BROADCAST_SUBJECT,
    MessageBus,
    channel_subject,
    check_agent_id,
    inbox_subject,
)

__all__ = ["Sending"]


class Sending:
    """Publishing into inboxes, channels and the broadcast subject, and reading inboxes."""

    def __init__(self, bus: MessageBus, channels: Channels, recipients: Recipients) -> None:
        self._bus = bus
        self._channels = channels
        self._recipients = recipients

    async def to_agent(
        self,
        me: str,
        to: str,
        kind: int,
        text: str,
        correlation_id: str = "",
        key: str = "",
        *,
        queue_unknown: bool = False,
    ) -> dict[str, Any]:
        """Into ``to``'s durable inbox; ``key`` de-duplicates retries (docs/messaging.md "Tools"). A
        name no agent has is refused unless ``queue_unknown`` (docs/messaging.md "Recipients")."""
        check_agent_id(to)
        unknown = False
        if queue_unknown:
            unknown = not self._recipients.exists(to)
        else:
            await self._recipients.check([to])
        msg = wire.make_message(
            sender=me,
            kind=kind,
            body=text.encode(),
            to=to,
            correlation_id=correlation_id,
            msg_id=key,
        )
        await self._bus.ensure_inbox(to)
        subject = inbox_subject(to)
        pub = await self._bus.publish(subject, msg, f"{me}:{key}" if key else None)
        if pub.duplicate:
            taken = await self._bus.taken(to, pub.seq)
        else:
            taken = await self._bus.delivered(to, pub.seq)
        out: dict[str, Any] = {
            "sent": True,
            "to": to,
            "subject": subject,
            "delivery": "delivered" if taken else "queued",
            "seq": pub.seq,
        }
        if pub.duplicate:
            out["duplicate"] = True
        if unknown:
            out["note"] = QUEUED_NOTE.format(name=to)
        return out

    async def to_channel(
        self, me: str, channel: str, kind: int, text: str, correlation_id: str = "", key: str = ""
    ) -> dict[str, Any]:
        """A post on a channel ``me`` takes part in, routed to its participants as the record
        names them now (docs/messaging.md "Channels")."""
        rec = await self._channels.live(channel, me)
        await self._channels.route(rec)
        msg = wire.make_message(
            sender=me,
            kind=kind,
            body=text.encode(),
            channel=channel,
            correlation_id=correlation_id,
            msg_id=key,
        )
        subject = channel_subject(channel)
        pub = await self._bus.publish(subject, msg, f"{me}:{key}" if key else None)
        out: dict[str, Any] = {"sent": True, "channel": channel, "subject": subject, "seq": pub.seq}
        if pub.duplicate:
            out["duplicate"] = True
        return out

    async def broadcast(self, me: str, text: str) -> dict[str, Any]:
        """Text to every agent (``agents.broadcast``)."""
        await self._bus.ensure_inbox(me)
        msg = wire.make_message(sender=me, kind=pb.MESSAGE_TEXT, body=text.encode())
        pub = await self._bus.publish(BROADCAST_SUBJECT, msg)
        return {"sent": True, "subject": BROADCAST_SUBJECT, "seq": pub.seq}

    async def inbox(
        self, me: str, limit: int = 100, wait: float = 0.0, after: int | None = None
    ) -> dict[str, Any]:
        """Read (and acknowledge, or with ``after`` confirm) ``me``'s pending messages."""
        got = await self._bus.read(me, limit, wait, after=after)
        messages = []
        for r in got:
            if getattr(r.message, "from") == me and r.subject != inbox_subject(me):
                continue  # our own broadcast or channel post coming back
            messages.append(wire.message_view(r.message, r.seq))
        return {"agent": me, "count": len(messages), "messages": messages}
