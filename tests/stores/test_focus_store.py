"""FocusStore on a real nats-server: whole-record writes and a view rebuilt on restart."""

from __future__ import annotations

from typing import Any

from agentcoord.stores.kv import FocusStore
from tests.stores.conftest import Recorder


async def test_view_survives_restart_and_writes_replace(js: Any, audit: Recorder) -> None:
    """A second store over the bucket sees earlier focus; annotate replaces, never merges."""
    async with FocusStore(js, audit) as store:
        await store.annotate("a", "fix the parser", ("src/parse.py",), ("parse",), ())
        await store.annotate("b", "docs", (), (), ("writing",))
        await store.annotate("a", "tests now", (), (), ())
    async with FocusStore(js, audit) as store:
        a = store.get("a")
        assert a is not None
        assert (a.intent, a.files, a.symbols) == ("tests now", (), ())
        assert [f.agent for f, _ in store.find("docs writing", 10)] == ["b"]
        assert store.find("parse", 10) == []
    assert [t for t, _, _ in audit.events] == ["AGENT_ANNOTATED"] * 3
