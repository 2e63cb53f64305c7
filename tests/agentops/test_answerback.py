"""A daemon-run agent's answer back to a sender that did not wait (docs/claude-code.md "Answers
from local agents"): the text the sender reads, and the follower's bound and de-duplication,
against a recording stand-in for the messaging service."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest

from agentcoord.agentops.answerback import AnswersBack, answer_text
from agentcoord.agentops.callrules import LinkedSession, TurnPlace
from agentcoord.agentops.turns import Turn
from agentcoord.kernel import wire
from agentcoord.stores.messagebus import Published

pytestmark = pytest.mark.unit


def test_a_succeeded_turn_sends_its_final_text() -> None:
    """The answer of a turn that succeeded is sent as it is."""
    assert answer_text("alpha", {"phase": "Succeeded", "answer": "42"}) == "42"


def test_a_failed_or_empty_turn_says_so() -> None:
    """A failed turn says why; one with no final text says that, naming the agent."""
    failed = answer_text("alpha", {"phase": "Failed", "message": "exit 3", "answer": "x"})
    assert failed == "alpha's turn failed: exit 3"
    empty = answer_text("alpha", {"phase": "Succeeded", "answer": "  \n"})
    assert empty == "alpha's turn ended with no final text"


def test_a_long_answer_is_cut_saying_how_much() -> None:
    """An answer over the limit keeps its first ``limit`` characters and counts the rest."""
    text = answer_text("alpha", {"phase": "Succeeded", "answer": "a" * 12}, limit=5)
    assert text == "aaaaa\n(cut: 7 more characters)"


class _Recorder:
    """The two calls AnswersBack makes of the messaging service, recorded; a repeat of a
    message id is dropped as the bus drops it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str, str]] = []  # (to, from, text, msg_id)
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    async def deliver(self, to: str, msg: Any, msg_id: str | None = None) -> Published:
        view = wire.message_view(msg, 0)
        if any(s[3] == msg_id for s in self.sent):
            return Published(seq=0, duplicate=True)
        self.sent.append((to, str(view["from"]), str(view["text"]), msg_id or ""))
        return Published(seq=len(self.sent), duplicate=False)

    def emit(self, event: str, agent: str, **data: Any) -> None:
        self.events.append((event, agent, data))


def _turn(turn_id: str, agent: str = "alpha") -> Turn:
    loop = asyncio.get_running_loop()
    return Turn(
        id=turn_id,
        agent=agent,
        place=TurnPlace(1, ("s-1", agent)),
        session=LinkedSession("From s-1", "sid", "s-1"),
        resume=False,
        prompt="hi",
        job_dir=Path("/nonexistent"),
        done=loop.create_future(),
    )


async def test_the_answer_goes_to_the_sender_from_the_agent_once() -> None:
    """When the followed turn ends, its answer is delivered to the sender from the agent under
    the turn's id (followed twice, it is still one message) and audited."""
    rec = _Recorder()
    async with AnswersBack(cast(Any, rec)) as answers:
        turn = _turn("t-1")
        followers = [answers.follow(turn, "s-1"), answers.follow(turn, "s-1")]
        turn.done.set_result({"phase": "Succeeded", "answer": "done 5e"})
        await asyncio.gather(*[f for f in followers if f is not None])
        assert None not in followers
    assert rec.sent == [("s-1", "alpha", "done 5e", "answer:t-1")]
    returned = [(a, d["to"], d["turn"]) for e, a, d in rec.events if e == "ANSWER_RETURNED"]
    assert returned == [("alpha", "s-1", "t-1")], returned


async def test_past_the_bound_a_turn_is_not_followed() -> None:
    """With ``limit`` turns awaited, the next is not followed (False); once one ends, a new
    one is."""
    rec = _Recorder()
    async with AnswersBack(cast(Any, rec), limit=1) as answers:
        first, second = _turn("t-1"), _turn("t-2")
        following = answers.follow(first, "s-1")
        assert following is not None
        assert answers.follow(second, "s-1") is None
        first.done.set_result({"phase": "Succeeded", "answer": "one"})
        await following
        following = answers.follow(second, "s-1")
        assert following is not None
        second.done.set_result({"phase": "Succeeded", "answer": "two"})
        await following
    assert [s[2] for s in rec.sent] == ["one", "two"]
