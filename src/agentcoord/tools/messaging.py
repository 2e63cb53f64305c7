"""Messaging tools: send, inbox, broadcast, open_channel, list_channels, close_channel,
nats_credentials (docs/messaging.md "Tools"): arguments in, results rendered, the work in
:mod:`agentcoord.messaging`.

``send`` says honestly whether a live reader took the message (``delivered``) or it waits in the
inbox (``queued``), and an unknown kind is an error.
"""

from __future__ import annotations

from typing import Any

from agentcoord.errors import InvalidArguments
from agentcoord.kernel import wire
from agentcoord.kernel.caller import Caller
from agentcoord.messaging import Messaging
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.tools._acting import acting_agent
from agentcoord.tools._shape import compact, for_model, short_time
from agentcoord.tools.base import obj_schema, tool, unlisted

__all__ = ["MessagingTools"]

_STR = {"type": "string"}
_TEXT = {"type": "string", "maxLength": 65536}
_AGENTS = {"type": "array", "items": _STR}
_BOOL = {"type": "boolean"}


def _model_message(msg: dict[str, Any], me: str) -> dict[str, Any]:
    """An inbox message as a model reads it: no ``to`` when it is the reader, no sender's
    idempotency key (``id``), the time to the second; ``seq`` stays (``after`` takes it)."""
    out = {k: v for k, v in msg.items() if k != "id" and not (k == "to" and v == me)}
    if "ts" in out:
        out["ts"] = short_time(out["ts"])
    return out


def _model_channel(row: dict[str, Any]) -> dict[str, Any]:
    """A channel row as a model reads it: name, participants, phase, who opened it, and the
    topic and expiry when set; not the subject (``channels.<name>``) or the creation time."""
    out = compact(row, keep=("name", "participants", "phase"))
    out.pop("subject", None)
    out.pop("created_at", None)
    if out.get("expires_at") is not None:
        out["expires_at"] = short_time(out["expires_at"])
    return out


def _render_send(r: dict[str, Any]) -> str:
    if r.get("answered"):
        return f"{'accepted' if r.get('accepted') else 'rejected'} handoff offer {r['offer']}"
    if "channel" in r:
        where, how = f"channel {r['channel']}", "posted"
    else:
        where, how = r["to"], r["delivery"]
    dup = " (duplicate of an earlier send)" if r.get("duplicate") else ""
    note = f"; {r['note']}" if r.get("note") else ""
    return f"{how}: {where}, seq {r['seq']}{dup}{note}"


def _render_inbox(r: dict[str, Any]) -> str:
    if not r["messages"]:
        return "inbox empty"
    lines = []
    for msg in r["messages"]:
        where = f"#{msg['channel']} " if msg.get("channel") else ""
        head = f"[{msg['seq']}] {where}{msg['from']} ({msg['kind']}"
        head += f", re {msg['correlation_id']})" if msg.get("correlation_id") else ")"
        if "handoff" in msg:
            h = msg["handoff"]
            body = f"handoff offer for task {h['task']!r}; answer with answer_handoff"
        else:
            body = msg.get("text", "")
        lines.append(f"{head}: {body}")
    return "\n".join(lines)


def _render_channels(r: dict[str, Any]) -> str:
    if not r["channels"]:
        return "no channels"
    return "\n".join(
        f"{c['name']}  {c['phase']}  {', '.join(c['participants'])}" for c in r["channels"]
    )


def _render_open(r: dict[str, Any]) -> str:
    verb = "opened" if r["created"] else "reopened"
    text = f"{verb} channel {r['channel']} ({r['phase']}): {', '.join(r['participants'])}"
    if r.get("not_added"):
        text += f"; not added (pass add=true): {', '.join(r['not_added'])}"
    return text


class MessagingTools:
    """The messaging tools over the one messaging service."""

    def __init__(self, messaging: Messaging) -> None:
        self._messaging = messaging

    @tool(
        description="Message an agent (to) or a channel.",
        schema=obj_schema(
            (),
            to=_STR,
            channel=_STR,
            text=_TEXT,
            kind=_STR,
            # For programs: answer_handoff is a model's way to answer an offer, and a
            # model does not retry with keys (docs/messaging.md "Tools").
            correlation_id=unlisted(_STR),
            idempotency_key=unlisted({"type": "string", "maxLength": 128}),
            queue_unknown=unlisted(_BOOL),
            **{"from": _STR},
        ),
        render=_render_send,
    )
    async def send(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        m = self._messaging
        me = acting_agent(caller, args)
        to, channel = args.get("to", ""), args.get("channel", "")
        if bool(to) == bool(channel):
            raise InvalidArguments("give exactly one of `to` and `channel`")
        kind = wire.parse_kind(args.get("kind") or "text")
        if kind == pb.MESSAGE_OFFER:
            raise InvalidArguments("offers are made with the handoff tool")
        text, correlation = args.get("text", ""), args.get("correlation_id", "")
        if kind in (pb.MESSAGE_ACCEPT, pb.MESSAGE_REJECT):
            if not correlation:
                raise InvalidArguments("`correlation_id` (the offer id) is required to answer")
            return await m.answer_handoff(me, correlation, kind == pb.MESSAGE_ACCEPT, text)
        key = args.get("idempotency_key", "")
        if channel:
            return await m.post(me, channel, kind, text, correlation, key)
        queue = bool(args.get("queue_unknown"))
        return await m.send(me, to, kind, text, correlation, key, queue_unknown=queue)

    @tool(
        description="Read and ack your messages; wait_secs long-polls.",
        schema=obj_schema(
            limit={"type": "integer", "minimum": 1, "maximum": 1000},
            # Exactly-once reading for programs (docs/messaging.md "Tools").
            after=unlisted({"type": "integer", "minimum": 0}),
            wait_secs={"type": "number", "minimum": 0, "maximum": 300},
            agent=unlisted(_STR),
        ),
        render=_render_inbox,
    )
    async def inbox(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        me = acting_agent(caller, args)
        limit, wait = int(args.get("limit", 100)), float(args.get("wait_secs", 0))
        got = await self._messaging.inbox(me, limit, wait, after=args.get("after"))
        if for_model(caller):  # the reader knows who it is: no `agent`
            return {
                "count": got["count"],
                "messages": [_model_message(msg, me) for msg in got["messages"]],
            }
        return got

    @tool(
        description="Announce text to every agent.",
        schema=obj_schema(("text",), text=_TEXT, **{"from": _STR}),
        render=lambda r: f"broadcast sent, seq {r['seq']}",
    )
    async def broadcast(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await self._messaging.broadcast(acting_agent(caller, args), args["text"])

    @tool(
        description="Open a channel you are in; add=true adds participants.",
        schema=obj_schema(
            ("name", "participants"),
            name=_STR,
            participants=_AGENTS,
            topic={"type": "string", "maxLength": 200},
            ttl_secs=unlisted({"type": "integer", "minimum": 1}),
            add=_BOOL,
            queue_unknown=unlisted(_BOOL),
            agent=unlisted(_STR),
        ),
        render=_render_open,
    )
    async def open_channel(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        me = acting_agent(caller, args)
        return await self._messaging.open_channel(
            me,
            args["name"],
            args["participants"],
            topic=args.get("topic", ""),
            ttl_secs=args.get("ttl_secs"),
            add=bool(args.get("add")),
            queue_unknown=bool(args.get("queue_unknown")),
        )

    @tool(
        description="Your channels, with phase and participants.",
        schema=obj_schema(),
        render=_render_channels,
        listed=False,  # an invitation names the channel; the human's view lists them all
        read_only=True,
    )
    async def list_channels(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        """Channels you take part in (the human sees every channel)."""
        rows = await self._messaging.visible_channels(caller.agent, everyone=caller.kind == "human")
        if for_model(caller):
            return {"channels": [_model_channel(r) for r in rows]}
        return {"channels": rows}

    @tool(
        description="Close a channel you are in.",
        schema=obj_schema(("name",), name=_STR, agent=unlisted(_STR)),
        render=lambda r: f"channel {r['channel']} is {r['phase'].lower()}",
    )
    async def close_channel(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await self._messaging.close_channel(acting_agent(caller, args), args["name"])

    @tool(
        description="Your subscribe-only NATS login, to read your inbox and channels live.",
        schema=obj_schema(agent=unlisted(_STR)),
        render=lambda r: (
            f"nats user {r['user']} at {r['url']}; may subscribe to {', '.join(r['subscribe'])}"
        ),
        # For a program that subscribes itself; a model cannot hold a NATS connection.
        listed=False,
    )
    async def nats_credentials(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await self._messaging.credentials(acting_agent(caller, args))
