"""The messaging tools through the official MCP SDK client over streamable HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.conftest import Daemon
from tests.tools.session_helpers import human_sdk_client


async def test_send_and_inbox_over_http(daemon: Daemon, agents: Any) -> None:
    """An agent's message reaches the human's inbox read with the SDK client over HTTP (bearing
    the human token, as the human must)."""
    a = agents("a")
    async with human_sdk_client(daemon) as client:
        me = (await client.call_tool("whoami", {})).structured_content
        assert me is not None
        assert me["kind"] == "human"
        await asyncio.to_thread(a.call, "send", to=me["agent"], text="over http")
        result = await client.call_tool("inbox", {"wait_secs": 5})
        assert not result.is_error
        assert result.structured_content is not None
        (msg,) = result.structured_content["messages"]
        assert (msg["from"], msg["text"]) == (a.name, "over http")
        bad = await client.call_tool("send", {"to": a.name, "text": "x", "kind": "nope"})
        assert bad.is_error
