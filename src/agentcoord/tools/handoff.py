"""handoff and answer_handoff: the offer -> accept/reject handshake (docs/messaging.md "Handoff"),
as tools over :class:`agentcoord.messaging.offers.Handoffs`."""

from __future__ import annotations

from typing import Any

from agentcoord.kernel import wire
from agentcoord.kernel.caller import Caller
from agentcoord.messaging import Messaging
from agentcoord.tools._acting import acting_agent
from agentcoord.tools.base import obj_schema, tool, unlisted

__all__ = ["HandoffTools"]

_STR = {"type": "string"}
_NOTE = {"type": "string", "maxLength": 16384}  # a handoff's state, work and reasons
_LIST = {"type": "array", "items": {"type": "string", "maxLength": 4096}}


def _render_handoff(r: dict[str, Any]) -> str:
    verb = "accepted" if r["accepted"] else "rejected"
    text = f"{r['from']} {verb} the handoff"
    if r.get("task"):
        text += f"; successor task {r['task']}"
    if r.get("reason"):
        text += f": {r['reason']}"
    return text


def _render_answer(r: dict[str, Any]) -> str:
    verb = "accepted" if r["accepted"] else "rejected"
    return f"{verb} handoff offer {r['offer']}" + (
        f"; your task {r['task']}" if r.get("task") else ""
    )


class HandoffTools:
    """handoff and answer_handoff over the messaging service's offers."""

    def __init__(self, messaging: Messaging) -> None:
        self._messaging = messaging

    @tool(
        description="Hand your task to an agent; waits for its answer.",
        schema=obj_schema(
            ("to", "task"),
            to=_STR,
            task={"type": "string", "maxLength": 4096},
            current_state=_NOTE,
            in_progress=_NOTE,
            decisions=_LIST,
            next_steps=_LIST,
            reason=_NOTE,
            timeout_secs={"type": "number", "minimum": 0.1, "maximum": 3600},
            queue_unknown=unlisted({"type": "boolean"}),
            **{"from": _STR},
        ),
        render=_render_handoff,
    )
    async def handoff(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        me = acting_agent(caller, args)
        context = wire.handoff_context(
            task=args["task"],
            current_state=args.get("current_state", ""),
            in_progress=args.get("in_progress", ""),
            decisions=args.get("decisions"),
            next_steps=args.get("next_steps"),
            reason=args.get("reason", ""),
        )
        timeout, queue = float(args.get("timeout_secs", 60)), bool(args.get("queue_unknown"))
        return await self._messaging.offer_handoff(
            me, args["to"], context, timeout, queue_unknown=queue
        )

    @tool(
        description="Accept or reject offer (a handoff's correlation_id).",
        schema=obj_schema(
            ("offer", "accept"),
            offer=_STR,
            accept={"type": "boolean"},
            reason=_NOTE,
            agent=unlisted(_STR),
        ),
        render=_render_answer,
    )
    async def answer_handoff(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        me = acting_agent(caller, args)
        accept, reason = bool(args["accept"]), args.get("reason", "")
        return await self._messaging.answer_handoff(me, args["offer"], accept, reason)
