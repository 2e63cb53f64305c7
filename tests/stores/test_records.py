"""The in-memory record seams and the offer book: the semantics the object store must keep."""

from __future__ import annotations

import pytest

from agentcoord.daemon.messaging import Offer, OfferBook
from agentcoord.stores.records import (
    AlreadyAnswered,
    ChannelRecord,
    MemoryChannelRecords,
    MemoryPromptRecords,
    MemoryTaskRecords,
    PromptRecord,
    effective_phase,
)

pytestmark = pytest.mark.unit


def test_effective_phase_applies_expiry() -> None:
    """Open and Pending channels past expires_at read Expired; Closed stays Closed."""
    rec = ChannelRecord("c", "channels.c", ["a"], "a", phase="Open", expires_at=100.0)
    assert effective_phase(rec, 99.0) == "Open"
    assert effective_phase(rec, 100.0) == "Expired"
    rec.phase = "Closed"
    assert effective_phase(rec, 200.0) == "Closed"


async def test_channel_create_is_idempotent() -> None:
    """Creating an existing channel returns it unchanged; participants are added explicitly."""
    store = MemoryChannelRecords()
    _, created = await store.create(ChannelRecord("c", "channels.c", ["a"], "a"))
    again, created_again = await store.create(ChannelRecord("c", "channels.c", ["a", "b"], "b"))
    assert (created, created_again) == (True, False)
    assert again.participants == ["a"]
    assert (await store.add_participants("c", ["b", "a"])).participants == ["a", "b"]


async def test_prompt_answered_once() -> None:
    """The first answer wins; a second raises AlreadyAnswered."""
    store = MemoryPromptRecords()
    await store.create(PromptRecord("p1", "a", "notify", "q?"))
    done = await store.answer("p1", "yes", "human:u")
    assert (done.phase, done.answer) == ("Answered", "yes")
    with pytest.raises(AlreadyAnswered):
        await store.answer("p1", "no", "human:u")
    assert await store.list() == []
    assert [p.id for p in await store.list(open_only=False)] == ["p1"]


async def test_handoff_task_idempotent_with_lineage() -> None:
    """Recording the same accepted offer twice yields one task with its lineage."""
    store = MemoryTaskRecords()
    kw = {"offer": "ho-1", "task": "t", "from_agent": "a", "to_agent": "b", "context": {}}
    one = await store.record_handoff(**kw)  # type: ignore[arg-type]
    two = await store.record_handoff(**kw)  # type: ignore[arg-type]
    assert one == two
    assert one.lineage["handedOffFrom"] == {"agent": "a", "task": "t", "offer": "ho-1"}


def test_offer_settles_once() -> None:
    """An offer leaves 'open' exactly once: a late accept after expiry is refused."""
    book = OfferBook()
    book.add(Offer("ho-1", "a", "b", "t", {}, deadline=0.0))
    assert book.settle("ho-1", "expired") is True
    assert book.settle("ho-1", "accepted") is False
    assert book.settle("missing", "accepted") is False
