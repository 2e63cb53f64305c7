"""The agent.v1 wire format as values: build, encode and decode ``ChannelMessage`` (pure).

Every byte on an agentcoord subject is an ``agent.v1`` protobuf (docs/messaging.md "Wire format");
tools see plain dicts, rendered by :func:`message_view`.
"""

from __future__ import annotations

import datetime as _dt
import functools
from typing import Any

from agentcoord.errors import InvalidArguments
from agentcoord.proto.agent.v1 import agent_pb2 as pb

__all__ = [
    "decode",
    "handoff_context",
    "handoff_view",
    "kind_name",
    "make_message",
    "message_view",
    "now_rfc3339",
    "parse_kind",
]

# pb loads on first use (agentcoord/proto/agent/v1/__init__.py): nothing here touches it at
# import time, so importing the tools does not load protobuf.


@functools.cache
def _kind_names() -> dict[str, int]:
    """Tool-facing names of the MessageKind values (lowercase, without the MESSAGE_ prefix)."""
    return {
        "text": pb.MESSAGE_TEXT,
        "offer": pb.MESSAGE_OFFER,
        "accept": pb.MESSAGE_ACCEPT,
        "reject": pb.MESSAGE_REJECT,
        "control": pb.MESSAGE_CONTROL,
    }


@functools.cache
def _names_by_value() -> dict[int, str]:
    return {v: k for k, v in _kind_names().items()}


def parse_kind(value: str) -> int:
    """``text``/``MESSAGE_TEXT``/``TEXT`` -> the enum value; anything else is an error.

    An unknown kind is an error, never a silent fallback to text (docs/messaging.md "Tools": unknown
    kinds are errors).
    """
    key = value.strip().lower().removeprefix("message_")
    names = _kind_names()
    if key not in names:
        raise InvalidArguments(f"unknown kind {value!r} (one of: {', '.join(names)})")
    return names[key]


def kind_name(kind: int) -> str:
    return _names_by_value().get(kind, f"unknown({kind})")


def now_rfc3339() -> str:
    now = _dt.datetime.now(_dt.UTC)
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def make_message(
    *,
    sender: str,
    kind: int,
    body: bytes = b"",
    to: str = "",
    channel: str = "",
    correlation_id: str = "",
    msg_id: str = "",
) -> Any:
    """A ``ChannelMessage`` stamped now."""
    return pb.ChannelMessage(
        to=to,
        channel=channel,
        kind=kind,  # type: ignore[arg-type]
        body=body,
        ts=now_rfc3339(),
        correlation_id=correlation_id,
        id=msg_id,
        **{"from": sender},
    )


def decode(data: bytes) -> Any:
    """Parse a ``ChannelMessage``; raises ``ValueError`` on bytes that are not one."""
    msg = pb.ChannelMessage()
    try:
        msg.ParseFromString(data)
    except Exception as exc:  # protobuf's DecodeError; translated at this boundary
        raise ValueError(f"not an agent.v1.ChannelMessage: {exc}") from None
    return msg


def handoff_context(
    *,
    task: str,
    current_state: str = "",
    in_progress: str = "",
    decisions: list[str] | None = None,
    next_steps: list[str] | None = None,
    reason: str = "",
) -> Any:
    return pb.HandoffContext(
        task=task,
        current_state=current_state,
        in_progress=in_progress,
        decisions=list(decisions or []),
        next_steps=list(next_steps or []),
        reason=reason,
    )


def handoff_view(ctx: Any) -> dict[str, Any]:
    return {
        "task": ctx.task,
        "current_state": ctx.current_state,
        "in_progress": ctx.in_progress,
        "decisions": list(ctx.decisions),
        "next_steps": list(ctx.next_steps),
        "reason": ctx.reason,
    }


def message_view(msg: Any, seq: int | None = None) -> dict[str, Any]:
    """A ChannelMessage as the JSON an agent reads; an OFFER's body is decoded for it."""
    view: dict[str, Any] = {"from": getattr(msg, "from"), "kind": kind_name(msg.kind)}
    if seq is not None:
        view["seq"] = seq
    for key in ("to", "channel", "correlation_id", "id", "ts"):
        value = getattr(msg, key)
        if value:
            view[key] = value
    if msg.kind == pb.MESSAGE_OFFER:
        ctx = pb.HandoffContext()
        try:
            ctx.ParseFromString(msg.body)
            view["handoff"] = handoff_view(ctx)
        except Exception:
            view["text"] = msg.body.decode("utf-8", "replace")
    else:
        view["text"] = msg.body.decode("utf-8", "replace")
    return view
