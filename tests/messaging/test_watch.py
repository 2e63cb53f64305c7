"""Messaging.watch: every watcher's wake-ups come from one shared set of NATS subscriptions
(docs/messaging.md "Where things live"), made for the first watcher and dropped after the last."""

from __future__ import annotations

from typing import Any

import pytest

from agentcoord.messaging import Messaging, NoAgentUsers, Recipients

pytestmark = pytest.mark.unit


class _Sub:
    def __init__(self, nc: _Nc, subject: str, cb: Any) -> None:
        self.nc, self.subject, self.cb = nc, subject, cb

    async def unsubscribe(self) -> None:
        self.nc.subs.remove(self)


class _Nc:
    """The NATS client's subscribe, recorded (a message is handed to each subscription)."""

    def __init__(self) -> None:
        self.subs: list[_Sub] = []

    async def subscribe(self, subject: str, cb: Any) -> _Sub:
        sub = _Sub(self, subject, cb)
        self.subs.append(sub)
        return sub

    async def publish_to(self, subject: str, msg: Any) -> None:
        for sub in list(self.subs):
            if sub.subject == subject:
                await sub.cb(msg)


def _messaging(nc: _Nc) -> Messaging:
    return Messaging(
        nc,
        channels=None,  # type: ignore[arg-type]  # not read by watch
        prompts=None,  # type: ignore[arg-type]
        tasks=None,  # type: ignore[arg-type]
        access=NoAgentUsers(),
        audit_log=None,  # type: ignore[arg-type]
        nats_url="nats://127.0.0.1:1",
        replicas=1,
        js_timeout=1.0,
        retention={},
        recipients=Recipients(None, "default"),
    )


async def test_watchers_share_one_subscription_set_and_a_failing_one_costs_no_other() -> None:
    """Two watchers make three subscriptions (not six); a message wakes both even when the
    first raises; the subscriptions go with the last watcher."""
    nc = _Nc()
    m = _messaging(nc)
    seen: list[str] = []

    async def broken(msg: Any) -> None:
        raise RuntimeError("a watcher's bug")

    async def second(msg: Any) -> None:
        seen.append(msg)

    first_hold = await m.watch(broken)
    second_hold = await m.watch(second)
    assert sorted(s.subject for s in nc.subs) == [
        "agents.*.inbox",
        "agents.broadcast",
        "channels.>",
    ]
    await nc.publish_to("agents.*.inbox", "m1")
    assert seen == ["m1"]
    for hold in first_hold:
        await hold.unsubscribe()
    assert len(nc.subs) == 3  # the second watcher still holds them
    await nc.publish_to("channels.>", "m2")
    assert seen == ["m1", "m2"]
    for hold in second_hold:
        await hold.unsubscribe()
    assert nc.subs == []
