"""A daemon-run agent's answer, back to the session whose message started its turn
(docs/claude-code.md "Answers from local agents").

A Claude Code session's ``SendMessage`` to a local package agent starts a turn of that agent as
``send_message`` does, without waiting: Claude Code's ``SendMessage`` returns at once. When the
turn ends, its final answer is delivered into the sender's agentcoord inbox as a message from
the agent that ran it, so it reaches the session the way every message does (its native inbox,
its channel or its hooks), once: the bus drops a second message with the turn's id.

:class:`AnswersBack` follows such turns (each a task of its own, at most
:data:`MAX_FOLLOWED` at once); :func:`answer_text` is the pure part.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentcoord.agentops.turns import Turn
from agentcoord.kernel import wire
from agentcoord.kernel.tasks import TaskSet
from agentcoord.proto.agent.v1 import agent_pb2 as pb

if TYPE_CHECKING:
    from agentcoord.messaging import Messaging

__all__ = ["MAX_ANSWER_CHARS", "MAX_FOLLOWED", "AnswersBack", "answer_text"]

log = logging.getLogger(__name__)

MAX_FOLLOWED = 256  # turns whose answers are awaited at once; past it one is not followed
MAX_ANSWER_CHARS = 65536  # as much as `send` takes in one message


def answer_text(agent: str, result: Mapping[str, Any], limit: int = MAX_ANSWER_CHARS) -> str:
    """What the sender reads when ``agent``'s turn ended with ``result`` (the controller's
    ``turn.done`` result): its final answer, cut to ``limit`` characters; or why there is
    none."""
    if result.get("phase") != "Succeeded":
        return f"{agent}'s turn failed: {result.get('message') or 'no reason given'}"
    answer = str(result.get("answer") or "")
    if not answer.strip():
        return f"{agent}'s turn ended with no final text"
    if len(answer) > limit:
        return f"{answer[:limit]}\n(cut: {len(answer) - limit} more characters)"
    return answer


class AnswersBack:
    """Async context manager: delivers the final answer of each turn it follows to the agent
    whose message started it, as a message from the agent that ran it."""

    def __init__(self, messaging: Messaging, *, limit: int = MAX_FOLLOWED) -> None:
        self._messaging = messaging
        self._limit = limit
        self._tasks = TaskSet("answers back")

    async def __aenter__(self) -> AnswersBack:
        await self._tasks.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._tasks.__aexit__(*exc)

    def follow(self, turn: Turn, to: str) -> asyncio.Task[None] | None:
        """Deliver ``turn``'s answer to ``to`` when it ends (the task doing it); None when it
        is not followed (too many are, or the daemon is stopping)."""
        if not self._tasks.running or len(self._tasks.live()) >= self._limit:
            log.warning(
                "%s's answer to %s is not returned: %d answers are awaited",
                turn.agent,
                to,
                self._limit,
            )
            return None
        return self._tasks.spawn(self._back(turn, to), name=f"answer back {turn.id}")

    async def _back(self, turn: Turn, to: str) -> None:
        result = await asyncio.shield(turn.done)
        text = answer_text(turn.agent, result)
        msg = wire.make_message(sender=turn.agent, kind=pb.MESSAGE_TEXT, body=text.encode(), to=to)
        pub = await self._messaging.deliver(to, msg, f"answer:{turn.id}")
        if pub.duplicate:  # this turn's answer went already
            return
        self._messaging.emit(
            "ANSWER_RETURNED", turn.agent, to=to, turn=turn.id, phase=result["phase"], seq=pub.seq
        )
