"""Asks to interactive sessions the daemon did not start
(docs/ask-and-operator.md "send_message and ask").

A session with a native inbox (Claude Code's own cross-session messaging, docs/claude-code.md
"The native inbox") is prompted through it: the question starts a turn at once and ``ask``
returns that turn's final text, as it does for the agents the daemon starts (:class:`LiveAsk`,
given by the composition root). Any other session is written to its durable inbox, and ``ask``
waits, up to a timeout, for it to answer with the ``reply`` tool (:class:`InboxAsks`). The
facade over these and the controller is :class:`agentcoord.agentops.ops.AgentOps`.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentcoord.agentops.callrules import TurnPlace
from agentcoord.agentops.turns import ActiveTurns
from agentcoord.errors import NotAllowed, NotFound, StateConflict
from agentcoord.kernel import wire
from agentcoord.proto.agent.v1 import agent_pb2 as pb

if TYPE_CHECKING:
    from agentcoord.messaging import Messaging

__all__ = ["INBOX_NOTE", "LIVE_NOTE", "InboxAsks", "LiveAsk"]

INBOX_NOTE = (
    "{target} is an interactive session the daemon did not start: the text went to its "
    "inbox and {how}"
)


LIVE_NOTE = (
    "{target} is an interactive session the daemon did not start: the text went to its native "
    "inbox and {how}"
)


class LiveAsk(Protocol):
    """Prompting a live session through its own inbox (claude/inbox)."""

    async def ask(self, agent: str, asker: str, text: str, timeout: float) -> str | None:
        """The final text of the turn ``text`` starts in ``agent``; None when ``agent`` has
        no such inbox; :class:`TimeoutError` when the turn did not end within ``timeout``; a
        :class:`~agentcoord.errors.Unavailable` saying why when the session would not take it."""
        ...


@dataclass
class _Pending:
    target: str
    from_agent: str
    turn: str
    answer: asyncio.Future[str]


class InboxAsks:
    """Asks waiting in interactive sessions' inboxes for a ``reply``."""

    def __init__(self, active: ActiveTurns, live: LiveAsk | None = None) -> None:
        self._active = active
        self._pending: dict[str, _Pending] = {}
        self.live = live  # set by the composition root when native inboxes are served

    async def ask(
        self,
        m: Messaging,
        *,
        me: str,
        target: str,
        place: TurnPlace,
        body: str,
        timeout: float,
    ) -> dict[str, Any]:
        ask_id = "ask-" + secrets.token_hex(8)
        pending = _Pending(target, me, ask_id, asyncio.get_running_loop().create_future())
        self._pending[ask_id] = pending
        # While the session holds the ask it runs a turn at this depth (its own asks go deeper).
        self._active.add(target, ask_id, place)
        started = time.monotonic()
        try:
            if self.live is not None:
                live = await self._ask_live(self.live, me, target, place, body, timeout, ask_id)
                if live is not None:
                    return live
            text = f"{body}\n\n(Answer with the reply tool: reply(ask={ask_id!r}, text=...).)"
            msg = wire.make_message(
                sender=me,
                kind=pb.MESSAGE_TEXT,
                body=text.encode(),
                to=target,
                correlation_id=ask_id,
                msg_id=ask_id,
            )
            await m.deliver(target, msg, f"{me}:{ask_id}")
            try:
                answer = await asyncio.wait_for(asyncio.shield(pending.answer), timeout)
            except TimeoutError:
                how = f"no reply came within {timeout:g} s"
                return {
                    "agent": target,
                    "answered": False,
                    "answer": None,
                    "via": "inbox",
                    "ask": ask_id,
                    "depth": place.depth,
                    "note": INBOX_NOTE.format(target=target, how=how),
                }
        finally:
            self._pending.pop(ask_id, None)
            self._active.remove(target, ask_id)
        return {
            "agent": target,
            "answered": True,
            "answer": answer,
            "via": "inbox",
            "ask": ask_id,
            "depth": place.depth,
            "duration_ms": round((time.monotonic() - started) * 1000),
            "note": INBOX_NOTE.format(target=target, how="this call waited for its reply"),
        }

    async def _ask_live(
        self,
        live: LiveAsk,
        me: str,
        target: str,
        place: TurnPlace,
        body: str,
        timeout: float,
        ask_id: str,
    ) -> dict[str, Any] | None:
        """Through the session's native inbox: its turn's final text, or None (no inbox)."""
        started = time.monotonic()
        out: dict[str, Any] = {"agent": target, "via": "native", "ask": ask_id}
        out["depth"] = place.depth
        try:
            answer = await live.ask(target, me, body, timeout)
        except TimeoutError:
            how = f"its turn did not end within {timeout:g} s"
            return {
                **out,
                "answered": False,
                "answer": None,
                "note": LIVE_NOTE.format(target=target, how=how),
            }
        if answer is None:
            return None
        how = "this call waited for the turn it started to end"
        return {
            **out,
            "answered": True,
            "answer": answer,
            "duration_ms": round((time.monotonic() - started) * 1000),
            "note": LIVE_NOTE.format(target=target, how=how),
        }

    def reply(self, me: str, ask_id: str, text: str) -> dict[str, Any]:
        pending = self._pending.get(ask_id)
        if pending is None:
            raise NotFound(f"no open ask {ask_id} (answered already, or its asker gave up)")
        if pending.target != me:
            raise NotAllowed(f"ask {ask_id} is addressed to {pending.target}, not {me}")
        if pending.answer.done():
            raise StateConflict(f"ask {ask_id} was answered already")
        pending.answer.set_result(text)
        return {"replied": True, "ask": ask_id, "to": pending.from_agent}
