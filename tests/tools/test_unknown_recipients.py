"""A recipient no agent has is refused with the closest names, unless the caller asks to queue
for it (docs/messaging.md "Recipients")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcoord.errors import NotFound
from agentcoord.messaging.recipients import QUEUE_HINT, Recipients, unknown_text
from agentcoord.stores.objects.statuserrors import ObjectNotFound
from tests.agentops.conftest import stored, wait_for
from tests.conftest import Daemon
from tests.tools.conftest import ToolFailed


def _typo(name: str) -> str:
    """``name`` with one letter changed: close enough for a suggestion, no agent's name."""
    return name[:-1] + ("x" if name[-1] != "x" else "y")


@pytest.mark.unit
def test_suggestion_text_names_up_to_three_closest() -> None:
    """The error names up to three close names, best first, or says none is close."""
    known = ["nobody-9", "bob-99", "alice", "nobody-98", "nobody-97", "human:me"]
    text = unknown_text("nobody-99", known)
    assert text.startswith("no agent named nobody-99; did you mean: ")
    close = text.removeprefix("no agent named nobody-99; did you mean: ").rstrip("?").split(", ")
    assert len(close) == 3
    assert "alice" not in close
    assert unknown_text("zzz", known) == "no agent named zzz (no agent has a similar name)"


class _Store:
    def __init__(self, names: list[str]) -> None:
        self.objs = [{"metadata": {"name": n}, "status": {"phase": "Ended"}} for n in names]

    def list_raw(self, plural: str, namespace: str | None = None) -> tuple[Any, Any, Any]:
        assert (plural, namespace) == ("agents", "default")
        return [], self.objs, 1

    def get_raw(self, plural: str, namespace: str, name: str) -> bytes:
        assert (plural, namespace) == ("agents", "default")
        for o in self.objs:
            if o["metadata"]["name"] == name:
                return json.dumps(o).encode()
        raise ObjectNotFound(f"agents {name} not found")


class _Pkg:
    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id


class _Index:
    def packages(self) -> list[_Pkg]:
        return [_Pkg("reviewer")]

    def get(self, agent_id: str) -> _Pkg | None:
        return next((p for p in self.packages() if p.agent_id == agent_id), None)


@pytest.mark.unit
async def test_known_names_are_store_agents_packages_and_the_human() -> None:
    """Agent objects in any phase, local packages and the human are known; others are not."""
    r = Recipients(_Store(["old-1"]), "default", packages=_Index(), human="human:me")
    assert r.known() == {"old-1", "reviewer", "human:me"}
    await r.check(["old-1", "reviewer", "human:me"])
    with pytest.raises(NotFound, match=r"no agent named old-2; did you mean: old-1\? ") as err:
        await r.check(["reviewer", "old-2"])
    assert str(err.value).endswith(QUEUE_HINT)  # the unlisted option, taught by its error


def test_each_tool_refuses_an_unknown_name_with_the_closest(agents: Any) -> None:
    """send, send_message, ask, handoff and channel invitations refuse a misspelt name,
    suggesting the agent meant, and deliver nothing."""
    a, b = agents("a"), agents("b")
    typo = _typo(b.name)
    meant = rf"no agent named {typo}; did you mean: .*{b.name}"
    with pytest.raises(ToolFailed, match=meant):
        a.call("send", to=typo, text="x")
    with pytest.raises(ToolFailed, match=meant):
        a.call("send_message", agent=typo, text="x")
    with pytest.raises(ToolFailed, match=meant):
        a.call("ask", agent=typo, text="x", timeout_secs=5)
    with pytest.raises(ToolFailed, match=meant):
        a.call("handoff", to=typo, task="t", timeout_secs=5)
    with pytest.raises(ToolFailed, match=meant):
        a.call("open_channel", name="typo-room", participants=[b.name, typo])
    a.call("open_channel", name="room", participants=[b.name])
    with pytest.raises(ToolFailed, match=meant):
        a.call("open_channel", name="room", participants=[typo], add=True)
    with pytest.raises(ToolFailed, match=r"no agent named qqqq-zzzz \(no agent has a similar"):
        a.call("send", to="qqqq-zzzz", text="x")
    assert [c["name"] for c in a.call("list_channels")["channels"]] == ["room"]
    assert b.call("inbox")["messages"] == []


def test_an_ended_session_agent_is_still_a_recipient(daemon: Daemon, agents: Any) -> None:
    """A session agent whose process ended (it may be resumed) still takes send and
    send_message into its inbox."""
    a, b = agents("a"), agents("b")
    name = b.name
    b.close()
    wait_for(
        lambda: (stored(daemon, "agents", name) or {}).get("status", {}).get("phase") == "Ended",
        what=f"{name} to end",
    )
    assert a.call("send", to=name, text="for later")["delivery"] == "queued"
    assert a.call("send_message", agent=name, text="also later")["sent"] is True


def test_queue_unknown_queues_for_an_agent_that_comes_later(agents: Any) -> None:
    """With queue_unknown, send, send_message, a channel invitation and a handoff offer wait
    for a name no agent has yet, say so, and the agent that later takes the name reads them."""
    a = agents("proj")
    suffix = a.name.removeprefix("proj0-1")
    future = f"later1-1{suffix}"  # the name the next agent, in work/later1, is given
    sent = a.call("send", to=future, text="welcome", queue_unknown=True)
    assert sent["delivery"] == "queued"
    assert "no agent named" in sent["note"]
    assert "exists yet" in sent["note"]
    prompted = a.call("send_message", agent=future, text="start here", queue_unknown=True)
    assert prompted["delivery"] == "queued"
    assert "exists yet" in prompted["note"]
    a.call("open_channel", name="lobby", participants=[future], queue_unknown=True)
    a.call("send", channel="lobby", text="lobby news")
    with pytest.raises(ToolFailed, match=rf"timed out; no agent named {future} exists yet"):
        a.call("handoff", to=future, task="t", timeout_secs=0.5, queue_unknown=True)
    later = agents("later")
    assert later.name == future
    got = later.call("inbox")["messages"]
    assert [m["kind"] for m in got] == ["text", "text", "text", "offer"]
    assert got[0]["text"] == "welcome"
    assert got[1]["text"].endswith("start here")
    assert (got[2].get("channel"), got[2]["text"]) == ("lobby", "lobby news")
