"""Requests outlive their reader only while someone can still take the reply.

A client that half-closes its socket (``shutdown(SHUT_WR)``, as the stdio shim does when its
stdin ends) still reads the replies to what it sent, so EOF alone ends nothing. A client that
closes the socket, or dies, takes no reply: its requests in flight are cancelled then (an
``ask`` stops its runner), instead of running to their end for nobody. Linux reports that as
EPOLLHUP on the unix socket (``sk_shutdown == SHUTDOWN_MASK``), which epoll always reports,
even with no events asked for: the connection's own reader stays the transport's.
"""

from __future__ import annotations

import asyncio
import select
import socket
from collections.abc import Callable, Collection
from typing import Any

__all__ = ["cancel_on_hangup"]


async def cancel_on_hangup(
    sock: socket.socket, inflight: Callable[[], Collection[asyncio.Task[Any]]]
) -> None:
    """Wait until every task ``inflight()`` names has finished; if the peer hangs up first,
    cancel those still running."""
    if sock.fileno() < 0:
        # The transport already closed the socket (a reset, a write to a closed peer): the peer
        # is gone, and there is no descriptor left to watch.
        for task in inflight():
            if not task.done():
                task.cancel("the client closed the connection")
        return
    loop = asyncio.get_running_loop()
    hup: asyncio.Future[None] = loop.create_future()
    ep = select.epoll()

    def hung_up() -> None:
        if not hup.done():
            hup.set_result(None)

    try:
        ep.register(sock.fileno(), 0)  # nothing asked: only EPOLLHUP/EPOLLERR wake it
        loop.add_reader(ep.fileno(), hung_up)
        try:
            while pending := [t for t in inflight() if not t.done()]:
                if hup.done():
                    for task in pending:
                        task.cancel("the client closed the connection")
                    return
                await asyncio.wait([hup, *pending], return_when=asyncio.FIRST_COMPLETED)
        finally:
            loop.remove_reader(ep.fileno())
    finally:
        ep.close()
