"""Agent-to-agent tools (docs/ask-and-operator.md): send_message, ask, and reply (an interactive
session's answer to an ask that reached its inbox). Depth, cycles and rules are the daemon's
(:mod:`agentcoord.agentops`); the caller is whoever the transport says it is."""

from __future__ import annotations

from typing import Any

from agentcoord.agentops import AgentOps
from agentcoord.kernel.caller import Caller
from agentcoord.tools._acting import acting_agent
from agentcoord.tools._shape import for_model
from agentcoord.tools.base import obj_schema, tool, unlisted

__all__ = ["A2ATools"]

_S: dict[str, Any] = {"type": "string"}
_TEXT: dict[str, Any] = {"type": "string", "maxLength": 100_000}
_TIMEOUT: dict[str, Any] = {"type": "number", "minimum": 0.1, "maximum": 3600}
_BOOL: dict[str, Any] = {"type": "boolean"}


# The operator's own handles on a delivery: the linked session's Claude session id, the turn's
# id, the inbox sequence number, the inbox ask's id and the turn's duration. A model acts on
# the agent, the session's name and the answer.
_INTERNAL = ("session_id", "turn", "seq", "ask", "duration_ms")


def _shaped(caller: Caller, result: dict[str, Any]) -> dict[str, Any]:
    if not for_model(caller):
        return result
    return {k: v for k, v in result.items() if k not in _INTERNAL}


def _render_sent(r: dict[str, Any]) -> str:
    if r.get("via") == "inbox":
        return f"sent to {r['agent']}'s inbox. {r['note']}"
    verb = "resumed" if r.get("resumed") else "opened"
    return f"sent: {r['agent']} works on it in session {r['session']!r} ({verb})"


def _render_ask(r: dict[str, Any]) -> str:
    if not r.get("answered"):
        return f"no answer from {r['agent']}: {r.get('note', '')}"
    head = f"{r['agent']} answered"
    if r.get("via") == "inbox":
        head += f" ({r['note']})"
    else:
        head += f" (session {r['session']!r})"
    return f"{head}:\n{r['answer']}"


class A2ATools:
    """send_message, ask and reply over the daemon's agent operator."""

    def __init__(self, operator: AgentOps) -> None:
        self._operator = operator

    @tool(
        description="Prompt an agent, no wait; a sleeping one is woken.",
        schema=obj_schema(
            ("agent", "text"),
            agent=_S,
            text=_TEXT,
            queue_unknown=unlisted(_BOOL),
            **{"from": unlisted(_S)},
        ),
        render=_render_sent,
    )
    async def send_message(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        acting_agent(caller, args, "from")
        queue = bool(args.get("queue_unknown"))
        sent = await self._operator.deliver(
            caller, args["agent"], args["text"], wait=False, timeout=0, queue_unknown=queue
        )
        return _shaped(caller, sent)

    @tool(
        description="Prompt an agent, wait for its answer (sessions answer with reply).",
        schema=obj_schema(
            ("agent", "text"),
            agent=_S,
            text=_TEXT,
            timeout_secs=_TIMEOUT,
            queue_unknown=unlisted(_BOOL),
            **{"from": unlisted(_S)},
        ),
        render=_render_ask,
    )
    async def ask(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        acting_agent(caller, args, "from")
        timeout = float(args.get("timeout_secs", 600))
        queue = bool(args.get("queue_unknown"))
        answer = await self._operator.deliver(
            caller, args["agent"], args["text"], wait=True, timeout=timeout, queue_unknown=queue
        )
        return _shaped(caller, answer)

    @tool(
        description="Answer an ask in your inbox (ask: its correlation_id).",
        schema=obj_schema(("ask", "text"), ask=_S, text=_TEXT, **{"from": unlisted(_S)}),
        render=lambda r: f"replied to {r['to']}",
    )
    async def reply(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        me = acting_agent(caller, args, "from")
        return self._operator.inbox.reply(me, args["ask"], args["text"])
