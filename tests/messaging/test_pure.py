"""The messaging package's pure parts: the offer book's one transition, and what an external
NATS (no per-agent users) answers."""

from __future__ import annotations

import pytest

from agentcoord.errors import Unavailable
from agentcoord.messaging import NoAgentUsers, Offer, OfferBook
from agentcoord.messaging.access import credentials_view

pytestmark = pytest.mark.unit


def test_offer_settles_once() -> None:
    """An offer leaves 'open' exactly once: a late accept after expiry is refused."""
    book = OfferBook()
    book.add(Offer("ho-1", "a", "b", "t", {}, deadline=0.0))
    assert book.settle("ho-1", "expired") is True
    assert book.settle("ho-1", "accepted") is False
    assert book.settle("missing", "accepted") is False


def test_pending_lists_only_open_offers() -> None:
    """The console's "who waits on whom" sees open offers only; a dropped one is gone."""
    book = OfferBook()
    for name in ("ho-1", "ho-2", "ho-3"):
        book.add(Offer(name, "a", "b", "t", {}, deadline=0.0))
    book.settle("ho-2", "accepted")
    book.drop("ho-3")
    assert [o.id for o in book.pending()] == ["ho-1"]
    assert book.get("ho-3") is None


async def test_no_agent_users_refuses_credentials_and_grants_nothing() -> None:
    """With an external NATS there is no login to hand out; a channel grant is a no-op."""
    access = NoAgentUsers()
    with pytest.raises(Unavailable, match="need the embedded NATS server"):
        await access.credentials("a")
    await access.allow("a", ["channels.x"])  # nothing to grant, and no error


def test_credentials_view_names_what_the_login_may_touch() -> None:
    """The nats_credentials result carries the URL, the login and its permissions."""

    class Login:
        user, password, inbox_prefix = "u", "p", "_INBOX_u"
        subscribe = ["agents.a.inbox", "_INBOX_u.>"]
        publish = ["agents.a.status"]

    view = credentials_view(Login(), "nats://127.0.0.1:4222")
    assert view == {
        "url": "nats://127.0.0.1:4222",
        "user": "u",
        "password": "p",
        "inbox_prefix": "_INBOX_u",
        "subscribe": ["agents.a.inbox", "_INBOX_u.>"],
        "publish": ["agents.a.status"],
    }
