"""Per-agent NATS users: what an agent's own NATS login can and cannot touch.

Checked with a direct nats-py connection using the agent's credentials, not through the tools.
"""

from __future__ import annotations

import asyncio
from typing import Any

import nats

from agentcoord.kernel import wire
from tests.conftest import Daemon


class Login:
    """A direct NATS connection as one agent, collecting permission errors."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.nc: Any = None

    async def connect(self, creds: dict[str, Any]) -> Login:
        async def on_error(exc: Exception) -> None:
            self.errors.append(str(exc))

        self.nc = await nats.connect(
            creds["url"],
            user=creds["user"],
            password=creds["password"],
            inbox_prefix=creds["inbox_prefix"],
            error_cb=on_error,
            allow_reconnect=False,
        )
        return self

    async def denied(self, action: Any, subject: str) -> bool:
        """True when ``action`` draws a permissions violation naming ``subject``.

        The server reports violations asynchronously, so wait (bounded) for the report.
        """
        await action()
        await self.nc.flush()
        for _ in range(200):
            if any(
                f'violation for {self._verb(action)} to "{subject.lower()}"' in e
                for e in self.errors
            ):
                return True
            await asyncio.sleep(0.01)
        return False

    @staticmethod
    def _verb(action: Any) -> str:
        return "publish" if "publish" in action.__name__ else "subscription"


def subscribe(login: Login, subject: str) -> Any:
    async def subscribe() -> None:
        await login.nc.subscribe(subject)

    return subscribe


def publish(login: Login, subject: str, data: bytes) -> Any:
    async def publish() -> None:
        await login.nc.publish(subject, data)

    return publish


async def test_agent_login_is_scoped(daemon: Daemon, agents: Any) -> None:
    """B's login reads its own inbox live, but not A's inbox, a foreign channel or JetStream."""
    a, b, c = agents("a"), agents("b"), agents("c")
    a.call("open_channel", name="secret", participants=[c.name])
    creds = await asyncio.to_thread(b.call, "nats_credentials")
    assert f"agents.{a.name}.inbox" not in creds["subscribe"]
    login = await Login().connect(creds)
    try:
        mine = await login.nc.subscribe(f"agents.{b.name}.inbox")
        await login.nc.flush()
        await asyncio.to_thread(a.call, "send", to=b.name, text="live copy")
        msg = wire.decode((await mine.next_msg(60)).data)
        assert (getattr(msg, "from"), msg.body) == (a.name, b"live copy")

        for subject in (f"agents.{a.name}.inbox", "channels.secret", "channels.>", "_INBOX.>"):
            assert await login.denied(subscribe(login, subject), subject)
        forged = wire.make_message(sender=a.name, kind=1, body=b"forged").SerializeToString()
        for subject in (f"agents.{c.name}.inbox", "channels.secret", "$JS.API.STREAM.LIST"):
            assert await login.denied(publish(login, subject, forged), subject)
    finally:
        await login.nc.close()
    assert [m["text"] for m in c.call("inbox")["messages"]] == []  # the forgery never landed


async def test_joining_a_channel_extends_the_login(daemon: Daemon, agents: Any) -> None:
    """After B is added to a channel (reloaded with SIGHUP) its login may read that channel."""
    a, b = agents("a"), agents("b")
    a.call("open_channel", name="room", participants=[a.name])
    creds = await asyncio.to_thread(b.call, "nats_credentials")
    login = await Login().connect(creds)
    try:
        assert await login.denied(subscribe(login, "channels.room"), "channels.room")
        await asyncio.to_thread(
            a.call, "open_channel", name="room", participants=[b.name], add=True
        )
        sub = await login.nc.subscribe("channels.room")
        await login.nc.flush()
        await asyncio.to_thread(a.call, "send", channel="room", text="hello room")
        msg = wire.decode((await sub.next_msg(60)).data)
        assert (msg.channel, msg.body) == ("room", b"hello room")
    finally:
        await login.nc.close()
