"""The pure hold of a permission dialog (agentcoord.approvals.held; docs/approvals.md
"Answering an open dialog"): the human's answer, a grant, the session's next dialog and the
time's end each end it, and nothing else does."""

from __future__ import annotations

import asyncio

import pytest

from agentcoord.approvals.held import MAX_HOLD, HeldDialogs
from agentcoord.errors import InvalidArguments, NotFound


async def _never() -> bool:
    return False


async def _held(held: HeldDialogs, agent: str) -> None:
    """Let the hold task run to its wait (it registers the dialog before its first await)."""
    await asyncio.sleep(0)
    assert held.is_held(agent)


async def test_the_humans_answer_ends_the_hold() -> None:
    """ "deny" from the human is the hold's answer; the dialog is listed until then."""
    held = HeldDialogs(60)
    task = asyncio.create_task(held.hold("app-1", "Bash", "make test", _never))
    await _held(held, "app-1")
    [row] = held.listing()
    assert (row["session"], row["tool"], row["input"]) == ("app-1", "Bash", "make test")
    assert row["until"] - row["since"] == 60
    assert held.answer("app-1", "deny")["session"] == "app-1"
    assert await task == "deny"
    assert held.listing() == []


async def test_a_grant_decides_again_and_allows() -> None:
    """After a grant the hold runs its decision again; the first that allows ends it."""
    held = HeldDialogs(60)
    asked: list[int] = []
    first = asyncio.Event()

    async def decide() -> bool:
        asked.append(1)
        first.set()
        return len(asked) == 2

    task = asyncio.create_task(held.hold("app-1", "Bash", "ls", decide))
    await _held(held, "app-1")
    held.granted()  # a grant that does not cover it
    await first.wait()
    assert not task.done()
    held.granted()
    assert await task == "allow"


async def test_the_sessions_next_dialog_ends_the_older_hold() -> None:
    """A session's new dialog means the older one was answered in the terminal: it ends with
    no answer, and only the new one is held."""
    held = HeldDialogs(60)
    older = asyncio.create_task(held.hold("app-1", "Bash", "one", _never))
    await _held(held, "app-1")
    newer = asyncio.create_task(held.hold("app-1", "Bash", "two", _never))
    assert await older is None
    await _held(held, "app-1")
    assert [r["input"] for r in held.listing()] == ["two"]
    held.answer("app-1", "allow")
    assert await newer == "allow"


async def test_the_time_running_out_ends_it_with_no_answer() -> None:
    """A hold of a moment ends with no answer; then there is nothing to answer."""
    held = HeldDialogs(0.01)
    assert await held.hold("app-1", "Bash", "ls", _never) is None
    with pytest.raises(NotFound, match="answer it in the session"):
        held.answer("app-1", "allow")


async def test_off_holds_nothing_and_bad_input_is_refused() -> None:
    """0 holds nothing; an answer other than allow or deny, or a hold past the hook's
    timeout, is refused."""
    assert await HeldDialogs(0).hold("app-1", "Bash", "ls", _never) is None
    held = HeldDialogs(60)
    task = asyncio.create_task(held.hold("app-1", "Bash", "ls", _never))
    await _held(held, "app-1")
    with pytest.raises(InvalidArguments, match="'allow' or 'deny'"):
        held.answer("app-1", "yes")
    held.answer("app-1", "allow")
    assert await task == "allow"
    with pytest.raises(InvalidArguments, match="permission_hold"):
        HeldDialogs(MAX_HOLD + 1)
