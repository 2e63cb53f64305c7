"""Asks that wait in interactive sessions' inboxes (seed 004 ``ask``).

An interactive session the daemon did not start cannot be prompted from outside: the text
lands in its durable inbox and ``ask`` waits, up to a timeout, for the session to answer with
the ``reply`` tool (:class:`InboxAsks`). The facade over these and the controller is
:class:`agentcoord.agentops.ops.AgentOps`.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentcoord.agentops.callrules import TurnPlace
from agentcoord.agentops.turns import ActiveTurns
from agentcoord.errors import NotAllowed, NotFound, StateConflict
from agentcoord.kernel import wire
from agentcoord.proto.agent.v1 import agent_pb2 as pb

if TYPE_CHECKING:
    from agentcoord.messaging import Messaging

__all__ = ["INBOX_NOTE", "InboxAsks"]

INBOX_NOTE = (
    "{target} is an interactive session the daemon did not start: the text went to its "
    "inbox and {how}"
)


@dataclass
class _Pending:
    target: str
    from_agent: str
    turn: str
    answer: asyncio.Future[str]


class InboxAsks:
    """Asks waiting in interactive sessions' inboxes for a ``reply``."""

    def __init__(self, active: ActiveTurns) -> None:
        self._active = active
        self._pending: dict[str, _Pending] = {}

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
