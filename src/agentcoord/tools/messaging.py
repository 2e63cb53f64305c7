"""Messaging tools: send, inbox, broadcast, open_channel, close_channel (seed 000 "Messaging").

Bytes are agent.v1 ``ChannelMessage`` protobufs on NATS; inboxes and channels are durable on
JetStream (:mod:`agentcoord.stores.messagebus`). Unlike the seed, ``send`` says honestly whether a
live reader took the message (``delivered``) or it waits in the inbox (``queued``), and an
unknown kind is an error.
"""

from __future__ import annotations

import time
from typing import Any

from agentcoord import wire
from agentcoord.daemon.messaging import Messaging, require
from agentcoord.errors import InvalidArguments, NotFound, ToolError
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.stores.messagebus import (
    BROADCAST_SUBJECT,
    channel_subject,
    check_agent_id,
    check_channel_name,
    inbox_subject,
)
from agentcoord.stores.records import ChannelRecord, effective_phase
from agentcoord.tools._base import Tool, ToolContext, obj_schema
from agentcoord.tools._caller import acting_agent

__all__ = ["TOOLS", "live_channel"]

_STR = {"type": "string"}
_TEXT = {"type": "string", "maxLength": 65536}
_AGENTS = {"type": "array", "items": _STR}


async def live_channel(m: Messaging, name: str, me: str) -> ChannelRecord:
    """The channel, if it is open and ``me`` takes part; expiry is enforced here."""
    rec = await m.channels.get(check_channel_name(name))
    if rec is None or me not in rec.participants:
        # Same text either way: a non-participant learns nothing about the channel.
        raise NotFound(f"channel {name} does not exist or you are not a participant")
    phase = effective_phase(rec, time.time())
    if phase != rec.phase:
        rec = await m.channels.set_phase(name, phase)
    if phase != "Open":
        raise ToolError(f"channel {name} is {phase.lower()}")
    return rec


async def _send(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    me = acting_agent(ctx, args)
    m = require(ctx.app)
    to, channel = args.get("to", ""), args.get("channel", "")
    if bool(to) == bool(channel):
        raise InvalidArguments("give exactly one of `to` and `channel`")
    kind = wire.parse_kind(args.get("kind") or "text")
    if kind == pb.MESSAGE_OFFER:
        raise InvalidArguments("offers are made with the handoff tool")
    if kind in (pb.MESSAGE_ACCEPT, pb.MESSAGE_REJECT):
        from agentcoord.tools.handoff import answer_offer

        if not args.get("correlation_id"):
            raise InvalidArguments("`correlation_id` (the offer id) is required to answer")
        return await answer_offer(
            ctx, m, me, args["correlation_id"], kind == pb.MESSAGE_ACCEPT, args.get("text", "")
        )
    key = args.get("idempotency_key", "")
    msg = wire.make_message(
        sender=me,
        kind=kind,
        body=args.get("text", "").encode(),
        to=to,
        channel=channel,
        correlation_id=args.get("correlation_id", ""),
        msg_id=key,
    )
    dedupe = f"{me}:{key}" if key else None
    if channel:
        await live_channel(m, channel, me)
        subject = channel_subject(channel)
        pub = await m.bus.publish(subject, msg, dedupe)
        out = {"sent": True, "channel": channel, "subject": subject, "seq": pub.seq}
        if pub.duplicate:
            out["duplicate"] = True
        return out
    check_agent_id(to)
    await m.bus.ensure_inbox(to)
    subject = inbox_subject(to)
    pub = await m.bus.publish(subject, msg, dedupe)
    if pub.duplicate:
        taken = await m.bus.taken(to, pub.seq)
    else:
        taken = await m.bus.delivered(to, pub.seq)
    out = {
        "sent": True,
        "to": to,
        "subject": subject,
        "delivery": "delivered" if taken else "queued",
        "seq": pub.seq,
    }
    if pub.duplicate:
        out["duplicate"] = True
    return out


def _render_send(r: dict[str, Any]) -> str:
    if r.get("answered"):
        return f"{'accepted' if r.get('accepted') else 'rejected'} handoff offer {r['offer']}"
    if "channel" in r:
        where, how = f"channel {r['channel']}", "posted"
    else:
        where, how = r["to"], r["delivery"]
    dup = " (duplicate of an earlier send)" if r.get("duplicate") else ""
    return f"{how}: {where}, seq {r['seq']}{dup}"


async def _inbox(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    me = acting_agent(ctx, args)
    m = require(ctx.app)
    after = args.get("after")
    got = await m.bus.read(
        me, int(args.get("limit", 100)), float(args.get("wait_secs", 0)), after=after
    )
    messages = []
    for r in got:
        if getattr(r.message, "from") == me and r.subject != inbox_subject(me):
            continue  # our own broadcast or channel post coming back
        messages.append(wire.message_view(r.message, r.seq))
    return {"agent": me, "count": len(messages), "messages": messages}


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


async def _broadcast(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    me = acting_agent(ctx, args)
    m = require(ctx.app)
    await m.bus.ensure_inbox(me)
    msg = wire.make_message(sender=me, kind=pb.MESSAGE_TEXT, body=args["text"].encode())
    pub = await m.bus.publish(BROADCAST_SUBJECT, msg)
    return {"sent": True, "subject": BROADCAST_SUBJECT, "seq": pub.seq}


async def _list_channels(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Channels you take part in (the human sees every channel)."""
    m = require(ctx.app)
    now = time.time()
    me = ctx.caller.agent
    rows = [
        c.view(now)
        for c in await m.channels.list()
        if ctx.caller.kind == "human" or me in c.participants
    ]
    return {"channels": rows}


def _render_channels(r: dict[str, Any]) -> str:
    if not r["channels"]:
        return "no channels"
    return "\n".join(
        f"{c['name']}  {c['phase']}  {', '.join(c['participants'])}" for c in r["channels"]
    )


async def _open_channel(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    me = acting_agent(ctx, args)
    m = require(ctx.app)
    name = check_channel_name(args["name"])
    wanted = [check_agent_id(a) for a in args["participants"]]
    if not wanted:
        raise InvalidArguments("`participants` needs at least one agent")
    members = list(dict.fromkeys([me, *wanted]))
    ttl = args.get("ttl_secs")
    now = time.time()
    rec = ChannelRecord(
        name=name,
        subject=channel_subject(name),
        participants=members,
        created_by=me,
        topic=args.get("topic", ""),
        ttl_secs=ttl,
        expires_at=now + ttl if ttl else None,
    )
    rec, created = await m.channels.create(rec)
    out: dict[str, Any] = {"channel": name, "subject": rec.subject, "created": created}
    if created:
        for agent in members:
            await m.join(agent, [rec.subject])
        rec = await m.channels.set_phase(name, "Open")
    else:
        if rec.phase == "Pending" and me in rec.participants:
            # A create that stopped half way (daemon restart): finish it now.
            for agent in rec.participants:
                await m.join(agent, [rec.subject])
            await m.channels.set_phase(name, "Open")
        rec = await live_channel(m, name, me)
        missing = [a for a in members if a not in rec.participants]
        if missing and args.get("add"):
            for agent in missing:
                await m.join(agent, [rec.subject])
            rec = await m.channels.add_participants(name, missing)
            out["added"] = missing
        elif missing:
            # Reopening is idempotent (seed 000); adding participants is explicit.
            out["not_added"] = missing
    view = rec.view(now)
    out.update(phase=view["phase"], participants=view["participants"])
    if rec.expires_at:
        out["expires_at"] = rec.expires_at
    return out


def _render_open(r: dict[str, Any]) -> str:
    verb = "opened" if r["created"] else "reopened"
    text = f"{verb} channel {r['channel']} ({r['phase']}): {', '.join(r['participants'])}"
    if r.get("not_added"):
        text += f"; not added (pass add=true): {', '.join(r['not_added'])}"
    return text


async def _close_channel(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    me = acting_agent(ctx, args)
    m = require(ctx.app)
    rec = await live_channel(m, args["name"], me)
    rec = await m.channels.set_phase(rec.name, "Closed")
    return {"channel": rec.name, "phase": rec.phase}


async def _nats_credentials(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    from agentcoord.daemon.natsusers import credentials_view

    me = check_agent_id(acting_agent(ctx, args))
    m = require(ctx.app)
    if m.access is None:
        raise ToolError("per-agent NATS users need the embedded NATS server")
    await m.bus.ensure_inbox(me)
    return credentials_view(await m.access.credentials(me), m.nats_url)


TOOLS = [
    Tool(
        "send",
        "Message one agent (to) or a channel you are in. Says whether a live reader took it "
        "(delivered) or it waits in the durable inbox (queued). kind: text|control, or "
        "accept|reject with correlation_id to answer a handoff offer.",
        obj_schema(
            (),
            to=_STR,
            channel=_STR,
            text=_TEXT,
            kind=_STR,
            correlation_id=_STR,
            idempotency_key={"type": "string", "maxLength": 128},
            **{"from": _STR},
        ),
        _send,
        _render_send,
    ),
    Tool(
        "inbox",
        "Read and acknowledge your pending messages (direct, broadcast, your channels), "
        "in order per sender; wait_secs long-polls when empty. Pass after=<highest seq you "
        "have> to confirm receipt instead: unconfirmed messages are shown again (exactly once "
        "across daemon restarts).",
        obj_schema(
            limit={"type": "integer", "minimum": 1, "maximum": 1000},
            after={"type": "integer", "minimum": 0},
            wait_secs={"type": "number", "minimum": 0, "maximum": 300},
            agent=_STR,
        ),
        _inbox,
        _render_inbox,
    ),
    Tool(
        "broadcast",
        "Announce text to every agent (agents.broadcast).",
        obj_schema(("text",), text=_TEXT, **{"from": _STR}),
        _broadcast,
        lambda r: f"broadcast sent, seq {r['seq']}",
    ),
    Tool(
        "open_channel",
        "Open (or reopen) a durable channel for a set of agents; you are added. "
        "add=true adds new participants to an existing channel.",
        obj_schema(
            ("name", "participants"),
            name=_STR,
            participants=_AGENTS,
            topic={"type": "string", "maxLength": 200},
            ttl_secs={"type": "integer", "minimum": 1},
            add={"type": "boolean"},
            agent=_STR,
        ),
        _open_channel,
        _render_open,
    ),
    Tool(
        "list_channels",
        "Channels you take part in, with phase and participants.",
        obj_schema(),
        _list_channels,
        _render_channels,
    ),
    Tool(
        "close_channel",
        "Close a channel you take part in.",
        obj_schema(("name",), name=_STR, agent=_STR),
        _close_channel,
        lambda r: f"channel {r['channel']} is {r['phase'].lower()}",
    ),
    Tool(
        "nats_credentials",
        "Your own NATS login for reading your inbox, broadcasts and channels live "
        "(subscribe only; send with the tools).",
        obj_schema(agent=_STR),
        _nats_credentials,
        lambda r: (
            f"nats user {r['user']} at {r['url']}; may subscribe to {', '.join(r['subscribe'])}"
        ),
    ),
]
