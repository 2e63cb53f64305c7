"""``inbox`` with ``after`` (docs/messaging.md "Tools"): an agent that posts on a channel it
is in and reads with its cursor gets every message others sent, exactly once, however its own
posts (which it never reads back) fall between them."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.conftest import Daemon
from tests.tools.conftest import agents  # noqa: F401  (the fixture)


def test_after_moves_past_own_channel_posts(daemon: Daemon, agents: Any) -> None:  # noqa: F811
    """Own channel posts interleaved with others' channel posts and direct sends, read with
    ``after``: every acknowledged message from the others is read once, none of one's own."""
    a, b = agents("a"), agents("b")
    a.call("open_channel", name="room", participants=[b.name])
    cursor = 0
    sent: list[str] = []
    got: Counter[str] = Counter()

    def read() -> int:
        nonlocal cursor
        messages = a.call("inbox", after=cursor)["messages"]
        for m in messages:
            got[m["text"]] += 1
            cursor = max(cursor, m["seq"])
        return len(messages)

    for i in range(12):
        a.call("send", channel="room", text=f"a{i}")  # a's own post: never read back
        if i % 3 != 2:
            b.call("send", channel="room", text=f"b{i}")
            sent.append(f"b{i}")
        if i % 2:
            b.call("send", to=a.name, text=f"d{i}")
            sent.append(f"d{i}")
        if i % 4 == 3:
            a.call("send", channel="room", text=f"a{i}-again")  # two own posts in a row
        read()
    while read():  # what is left, until a read finds nothing
        pass
    twice = {text: n for text, n in got.items() if n > 1}
    own = [text for text in got if text.startswith("a")]
    missing = [text for text in sent if text not in got]
    assert not missing, f"withheld: {missing} (cursor {cursor})\n{a.call('inbox', after=cursor)}"
    assert not twice, twice
    assert not own, own
