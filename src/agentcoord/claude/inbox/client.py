"""Writing frames to a session's inbox socket: one connection per message, the lines, then a
half-close; the session writes nothing back (docs/claude-code.md "The native inbox")."""

from __future__ import annotations

import asyncio
import contextlib
import json

from agentcoord.claude.inbox.sessionfiles import Peer
from agentcoord.errors import Unavailable

__all__ = ["WRITE_TIMEOUT_S", "Unreachable", "write_frames"]

WRITE_TIMEOUT_S = 2.0  # a live session accepts within 250 ms (its own probe's bound)


class Unreachable(Unavailable):
    """The session's socket refused, vanished or stalled: nothing was handed over."""


async def write_frames(peer: Peer, lines: list[bytes], timeout: float = WRITE_TIMEOUT_S) -> None:
    """Hand ``lines`` to ``peer`` on one connection (its token first, when we read one). Done
    means every byte was written and the session closed its end: it took the connection."""
    payload = b"".join(lines)
    if peer.token:
        auth = json.dumps({"type": "auth", "token": peer.token}).encode() + b"\n"
        payload = auth + payload
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_unix_connection(peer.socket)
            writer.write(payload)
            await writer.drain()
            writer.write_eof()
            await reader.read(1)  # the session closes once it has read the frames
    except (OSError, TimeoutError) as exc:
        raise Unreachable(f"session {peer.pid}'s inbox at {peer.socket}: {exc}") from None
    finally:
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
