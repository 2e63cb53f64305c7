"""The frames Claude Code's sessions exchange on their inbox sockets (docs/claude-code.md
"The native inbox"): pure building and parsing, no I/O.

One connection carries newline-delimited JSON objects and is then half-closed; the receiver
writes nothing back. A message is a ``user`` frame whose content is a
``<cross-session-message>`` block naming the sender; control frames ask a session to say when
it is idle, and carry that notice and delivery receipts back to the asker's own socket.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from agentcoord.errors import InvalidArguments

__all__ = [
    "MAX_LINE",
    "FrameError",
    "Incoming",
    "notify_when_idle",
    "parse_line",
    "rename",
    "user_frame",
]

MAX_LINE = 1 << 20  # Claude Code's own bound on one line (1 MiB)
MSG_V = 1
_TAG = "cross-session-message"
_CLOSE = re.compile(rf"</\s*{_TAG}", re.IGNORECASE)


class FrameError(InvalidArguments):
    """A line that is not a frame this side understands."""


def _attr(value: str) -> str:
    """An attribute value inside double quotes: the markup characters escaped."""
    return (
        value.replace("&", "&amp;")
        .replace('"', "&quot;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\n", " ")
    )


def _body(text: str) -> str:
    """The text between the tags: a closing tag inside it is broken up, so the block the
    model reads ends where the sender's text ends."""
    return _CLOSE.sub(lambda m: "&lt;" + m.group(0)[1:], text)


def new_msg_id() -> str:
    return str(uuid.uuid4())


def user_frame(
    text: str,
    *,
    sender: str,
    sender_name: str,
    msg_id: str,
    priority: str = "next",
) -> bytes:
    """One message line: ``text`` from ``sender_name`` (an agentcoord agent), with replies
    and receipts going to ``sender`` (``uds:<socket>``). ``next``: a busy session takes it
    with its next model request, an idle one starts a turn."""
    content = (
        f'<{_TAG} from="{_attr(sender)}" from-name="{_attr(sender_name)}" '
        f'from-mode="prompting">\n{_body(text)}\n</{_TAG}>'
    )
    frame = {
        "msgV": MSG_V,
        "msg_id": msg_id,
        "type": "user",
        "priority": priority,
        "from": sender,
        "message": {"role": "user", "content": content},
    }
    return _line(frame)


def notify_when_idle(*, sender: str, msg_id: str) -> bytes:
    """Ask the session for one ``peer_idle_notice`` (with its last final text) at its next
    idle."""
    frame = {"type": "control", "action": "notify_when_idle", "from": sender, "msg_id": msg_id}
    return _line(frame)


def rename(name: str, *, sender: str, msg_id: str) -> bytes:
    """Ask the session to take the name ``name`` (Claude Code 2.1.328 renames itself on a
    peer's ``rename`` control, its record's ``nameSource`` then reading ``peer``)."""
    frame = {"type": "control", "action": "rename", "name": name, "from": sender, "msg_id": msg_id}
    return _line(frame)


def _line(frame: dict[str, Any]) -> bytes:
    line = json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    if len(line) > MAX_LINE:
        raise FrameError(f"a frame of {len(line)} bytes is over the {MAX_LINE}-byte line bound")
    return line


@dataclass(frozen=True)
class Incoming:
    """One frame a peer wrote to our socket, as far as we read it.

    ``kind``: ``message`` (a ``SendMessage``), ``idle`` (a ``peer_idle_notice``), ``status``
    (a delivery receipt), ``auth`` or ``other``. What the frame says about its sender
    (``from``, ``from-name``) is kept only as text: who sent it comes from the connection."""

    kind: str
    msg_id: str
    text: str = ""  # a message's text; an idle notice's last final text; a receipt's reason
    reply_to: str = ""  # the original msg_id a notice or receipt answers
    state: str = ""  # a receipt's status (held/refused/expired/...), a notice's state
    raw: dict[str, Any] | None = None


def _message_text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text") for b in content if isinstance(b, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


_BLOCK = re.compile(rf"<{_TAG}\b[^>]*>\n?(.*?)\n?</{_TAG}>\s*$", re.DOTALL)


def unwrap(content: str) -> str:
    """The sender's text inside a ``<cross-session-message>`` block (the whole content when
    there is none)."""
    m = _BLOCK.search(content.strip())
    return m.group(1) if m else content


def parse_line(line: bytes) -> Incoming:
    """One line from a peer; :class:`FrameError` for anything that is not a JSON object."""
    if len(line) > MAX_LINE:
        raise FrameError("line over the bound")
    try:
        frame = json.loads(line)
    except ValueError as exc:
        raise FrameError(f"not JSON: {exc}") from None
    if not isinstance(frame, dict):
        raise FrameError("not a JSON object")
    msg_id = str(frame.get("msg_id") or "")
    ftype = frame.get("type")
    if ftype == "auth":
        return Incoming("auth", msg_id, raw=frame)
    if ftype == "user":
        text = unwrap(_message_text(frame.get("message")))
        return Incoming("message", msg_id, text=text, raw=frame)
    action = str(frame.get("action") or "")
    reply_to = str(frame.get("orig_msg_id") or "")
    if action == "peer_idle_notice":
        detail = frame.get("detail")
        return Incoming(
            "idle",
            msg_id,
            text=detail if isinstance(detail, str) else "",
            reply_to=reply_to,
            state=str(frame.get("state") or ""),
            raw=frame,
        )
    if action == "peer_message_status" or ftype == "peer_message_status":
        # A refusal reads ``status: expired, status_detail: refused`` (seen with 2.1.328).
        state = frame.get("status_detail") or frame.get("status") or ""
        reason = frame.get("reason")
        return Incoming(
            "status",
            msg_id,
            text=reason if isinstance(reason, str) else "",
            reply_to=reply_to,
            state=str(state),
            raw=frame,
        )
    return Incoming("other", msg_id, raw=frame)
