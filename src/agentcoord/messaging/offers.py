"""Handoff offers: the offer -> accept/reject handshake (seed 000, seed 003).

The offer is an OFFER ``ChannelMessage`` carrying a ``HandoffContext`` (seed 003's handoff
document), stored in the successor's durable inbox, so a successor that is not reading yet still
finds it. The offerer listens on its own inbox subject *before* publishing, and blocks for the
ACCEPT/REJECT with the offer's correlation id, or its deadline. On accept the daemon writes the
successor's AgentTask with its lineage (the operator's half, which the seed left out) and emits
HANDED_OFF.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import dataclass
from typing import Any, Literal

from agentcoord.errors import InvalidArguments, NotAllowed, NotFound, StateConflict, TimedOut
from agentcoord.kernel import wire
from agentcoord.messaging.recipients import QUEUED_NOTE, Recipients
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.stores.audit import AuditSink
from agentcoord.stores.messagebus import MessageBus, check_agent_id, inbox_subject
from agentcoord.stores.records import TaskRecords

__all__ = ["Handoffs", "Offer", "OfferBook", "OfferState"]

OfferState = Literal["open", "accepted", "rejected", "expired"]

_GRACE_S = 2.0  # an answer settled just before the deadline is still awaited this long


@dataclass
class Offer:
    """A handoff offer waiting for its successor's answer."""

    id: str
    from_agent: str
    to_agent: str
    task: str
    context: dict[str, Any]
    deadline: float
    state: OfferState = "open"
    successor_task: str | None = None


class OfferBook:
    """Open offers by id. ``settle`` is the one atomic transition out of ``open``."""

    def __init__(self) -> None:
        self._offers: dict[str, Offer] = {}

    def add(self, offer: Offer) -> None:
        self._offers[offer.id] = offer

    def get(self, offer_id: str) -> Offer | None:
        return self._offers.get(offer_id)

    def settle(self, offer_id: str, state: OfferState) -> bool:
        """Move an open offer to ``state``; False when it was settled already."""
        offer = self._offers.get(offer_id)
        if offer is None or offer.state != "open":
            return False
        offer.state = state
        return True

    def drop(self, offer_id: str) -> None:
        self._offers.pop(offer_id, None)

    def pending(self) -> list[Offer]:
        """Offers still waiting for an answer (the console's "who waits on whom")."""
        return [o for o in self._offers.values() if o.state == "open"]


class Handoffs:
    """The offer protocol over the bus, the open offers and the AgentTask records."""

    def __init__(
        self,
        nc: Any,
        bus: MessageBus,
        book: OfferBook,
        tasks: TaskRecords,
        audit: AuditSink,
        recipients: Recipients,
    ) -> None:
        self._nc = nc
        self._recipients = recipients
        self._bus = bus
        self._book = book
        self._tasks = tasks
        self._audit = audit

    async def offer(
        self, me: str, to: str, context: Any, timeout: float, *, queue_unknown: bool = False
    ) -> dict[str, Any]:
        """Offer ``context`` (a HandoffContext) to ``to``; wait for its answer up to
        ``timeout`` s. A name no agent has is refused unless ``queue_unknown``
        (docs/messaging.md "Recipients"): then the offer waits in its inbox."""
        check_agent_id(to)
        if to == me:
            raise InvalidArguments("you cannot hand off to yourself")
        timed_out = f"handoff offer to {to} timed out"
        if not queue_unknown:
            await self._recipients.check([to])
        elif not self._recipients.exists(to):
            timed_out += f"; {QUEUED_NOTE.format(name=to)}"
        offer = Offer(
            id="ho-" + secrets.token_hex(8),
            from_agent=me,
            to_agent=to,
            task=context.task,
            context=wire.handoff_view(context),
            deadline=time.monotonic() + timeout,
        )
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        async def on_reply(raw: Any) -> None:
            try:
                msg = wire.decode(raw.data)
            except ValueError:
                return
            answers_offer = msg.kind in (pb.MESSAGE_ACCEPT, pb.MESSAGE_REJECT)
            if msg.correlation_id == offer.id and answers_offer and not answer.done():
                answer.set_result(msg)

        await self._bus.ensure_inbox(to)
        await self._bus.ensure_inbox(me)
        # Listen before the offer exists, so an instant answer cannot slip past.
        sub = await self._nc.subscribe(inbox_subject(me), cb=on_reply)
        self._book.add(offer)
        try:
            msg = wire.make_message(
                sender=me,
                kind=pb.MESSAGE_OFFER,
                body=context.SerializeToString(),
                to=to,
                correlation_id=offer.id,
                msg_id=offer.id,
            )
            await self._bus.publish(inbox_subject(to), msg, f"{me}:{offer.id}")
            try:
                reply = await asyncio.wait_for(asyncio.shield(answer), timeout)
            except TimeoutError:
                if self._book.settle(offer.id, "expired"):
                    raise TimedOut(timed_out) from None
                # The successor settled it at the deadline; its reply is on the way.
                try:
                    reply = await asyncio.wait_for(answer, _GRACE_S)
                except TimeoutError:
                    raise TimedOut(timed_out) from None
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
            self._book.drop(offer.id)
        accepted = reply.kind == pb.MESSAGE_ACCEPT
        out: dict[str, Any] = {
            "accepted": accepted,
            "reply_kind": int(reply.kind),
            "from": getattr(reply, "from"),
            "offer": offer.id,
        }
        if reply.body:
            out["reason"] = reply.body.decode("utf-8", "replace")
        if accepted and offer.successor_task:
            out["task"] = offer.successor_task
        return out

    async def answer(self, me: str, offer_id: str, accept: bool, reason: str) -> dict[str, Any]:
        """Settle an open offer addressed to ``me`` and tell the offerer (its inbox,
        durably)."""
        offer = self._book.get(offer_id)
        if offer is None:
            raise NotFound(f"no open handoff offer {offer_id}")
        if offer.to_agent != me:
            raise NotAllowed(f"handoff offer {offer_id} is addressed to {offer.to_agent}, not {me}")
        if not self._book.settle(offer_id, "accepted" if accept else "rejected"):
            raise StateConflict(f"handoff offer {offer_id} is no longer open ({offer.state})")
        out: dict[str, Any] = {"answered": True, "offer": offer_id, "accepted": accept}
        if accept:
            task = await self._tasks.record_handoff(
                offer=offer_id,
                task=offer.task,
                from_agent=offer.from_agent,
                to_agent=me,
                context=offer.context,
            )
            offer.successor_task = out["task"] = task.name
            self._audit.emit(
                "HANDED_OFF",
                offer.from_agent,
                offer=offer_id,
                to=me,
                task=task.name,
                lineage=task.lineage,
            )
        msg = wire.make_message(
            sender=me,
            kind=pb.MESSAGE_ACCEPT if accept else pb.MESSAGE_REJECT,
            body=reason.encode(),
            to=offer.from_agent,
            correlation_id=offer_id,
        )
        await self._bus.publish(inbox_subject(offer.from_agent), msg, f"{me}:answer:{offer_id}")
        out["to"] = offer.from_agent
        if accept:
            out["handoff"] = offer.context
        return out
