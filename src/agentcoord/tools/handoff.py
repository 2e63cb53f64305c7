"""handoff and answer_handoff: the offer -> accept/reject handshake (seed 000, seed 003).

The offer is an OFFER ``ChannelMessage`` carrying a ``HandoffContext`` (seed 003's handoff
document), stored in the successor's durable inbox, so a successor that is not reading yet still
finds it. The offering call listens on its own inbox subject *before* publishing, and blocks for
the ACCEPT/REJECT with the offer's correlation id, or its deadline. On accept the daemon writes
the successor's AgentTask with its lineage (the operator's half, which the seed left out) and
emits HANDED_OFF.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from typing import Any

from agentcoord import wire
from agentcoord.daemon.messaging import Messaging, Offer, require
from agentcoord.errors import InvalidArguments, NotFound, ToolError
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.stores.messagebus import check_agent_id, inbox_subject
from agentcoord.tools._base import Tool, ToolContext, obj_schema
from agentcoord.tools._caller import acting_agent

__all__ = ["TOOLS", "answer_offer"]

_STR = {"type": "string"}
_LIST = {"type": "array", "items": _STR}
_GRACE_S = 2.0  # an answer settled just before the deadline is still awaited this long


async def _handoff(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    me = acting_agent(ctx, args)
    m = require(ctx.app)
    to = check_agent_id(args["to"])
    if to == me:
        raise InvalidArguments("you cannot hand off to yourself")
    timeout = float(args.get("timeout_secs", 60))
    context = wire.handoff_context(
        task=args["task"],
        current_state=args.get("current_state", ""),
        in_progress=args.get("in_progress", ""),
        decisions=args.get("decisions"),
        next_steps=args.get("next_steps"),
        reason=args.get("reason", ""),
    )
    offer = Offer(
        id="ho-" + secrets.token_hex(8),
        from_agent=me,
        to_agent=to,
        task=args["task"],
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

    await m.bus.ensure_inbox(to)
    await m.bus.ensure_inbox(me)
    # Listen before the offer exists, so an instant answer cannot slip past.
    sub = await m.nc.subscribe(inbox_subject(me), cb=on_reply)
    m.offers.add(offer)
    try:
        msg = wire.make_message(
            sender=me,
            kind=pb.MESSAGE_OFFER,
            body=context.SerializeToString(),
            to=to,
            correlation_id=offer.id,
            msg_id=offer.id,
        )
        await m.bus.publish(inbox_subject(to), msg, f"{me}:{offer.id}")
        try:
            reply = await asyncio.wait_for(asyncio.shield(answer), timeout)
        except TimeoutError:
            if m.offers.settle(offer.id, "expired"):
                raise ToolError(f"handoff offer to {to} timed out") from None
            # The successor settled it at the deadline; its reply is on the way.
            try:
                reply = await asyncio.wait_for(answer, _GRACE_S)
            except TimeoutError:
                raise ToolError(f"handoff offer to {to} timed out") from None
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
        m.offers.drop(offer.id)
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


def _render_handoff(r: dict[str, Any]) -> str:
    verb = "accepted" if r["accepted"] else "rejected"
    text = f"{r['from']} {verb} the handoff"
    if r.get("task"):
        text += f"; successor task {r['task']}"
    if r.get("reason"):
        text += f": {r['reason']}"
    return text


async def answer_offer(
    ctx: ToolContext, m: Messaging, me: str, offer_id: str, accept: bool, reason: str
) -> dict[str, Any]:
    """Settle an open offer addressed to ``me`` and tell the offerer (its inbox, durably)."""
    offer = m.offers.get(offer_id)
    if offer is None:
        raise NotFound(f"no open handoff offer {offer_id}")
    if offer.to_agent != me:
        raise ToolError(f"handoff offer {offer_id} is addressed to {offer.to_agent}, not {me}")
    if not m.offers.settle(offer_id, "accepted" if accept else "rejected"):
        raise ToolError(f"handoff offer {offer_id} is no longer open ({offer.state})")
    out: dict[str, Any] = {"answered": True, "offer": offer_id, "accepted": accept}
    if accept:
        task = await m.tasks.record_handoff(
            offer=offer_id,
            task=offer.task,
            from_agent=offer.from_agent,
            to_agent=me,
            context=offer.context,
        )
        offer.successor_task = out["task"] = task.name
        m.emit(
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
    await m.bus.publish(inbox_subject(offer.from_agent), msg, f"{me}:answer:{offer_id}")
    out["to"] = offer.from_agent
    if accept:
        out["handoff"] = offer.context
    return out


async def _answer_handoff(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    me = acting_agent(ctx, args)
    return await answer_offer(
        ctx, require(ctx.app), me, args["offer"], bool(args["accept"]), args.get("reason", "")
    )


TOOLS = [
    Tool(
        "handoff",
        "Hand a task to another agent with a handoff document; blocks until it accepts or "
        "rejects, or timeout_secs passes.",
        obj_schema(
            ("to", "task"),
            to=_STR,
            task={"type": "string", "maxLength": 4096},
            current_state=_STR,
            in_progress=_STR,
            decisions=_LIST,
            next_steps=_LIST,
            reason=_STR,
            timeout_secs={"type": "number", "minimum": 0.1, "maximum": 3600},
            **{"from": _STR},
        ),
        _handoff,
        _render_handoff,
    ),
    Tool(
        "answer_handoff",
        "Accept or reject a handoff offer from your inbox (offer = its correlation_id).",
        obj_schema(
            ("offer", "accept"),
            offer=_STR,
            accept={"type": "boolean"},
            reason=_STR,
            agent=_STR,
        ),
        _answer_handoff,
        lambda r: (
            f"{'accepted' if r['accepted'] else 'rejected'} handoff offer {r['offer']}"
            + (f"; your task {r['task']}" if r.get("task") else "")
        ),
    ),
]
