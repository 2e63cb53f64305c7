"""JetStream publish-and-wait-for-ack over one reply subscription, for the claim path.

nats-py's ``js.publish`` draws a random token (a ``getrandom`` call), arms an
``asyncio.wait_for`` and builds a ``PubAck`` dataclass for every write: a third of the CPU of a
KV write in the daemon, on the path of every claim and release. Here the replies
come back on one wildcard inbox subscribed once, tokens are a counter and the timeout is one
timer. Errors are nats-py's own, so callers handle both paths alike: ``APIError`` (with its
``err_code``) for a refused write, ``NoStreamResponseError`` when no stream listens (a leader
election), ``nats.errors.TimeoutError`` when no ack comes in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from typing import Any

import nats.errors
import nats.js.errors

__all__ = ["AckedPublisher"]

_NO_RESPONDERS = "503"


class AckedPublisher:
    """Async context manager owning the reply subscription of one NATS connection."""

    def __init__(self, nc: Any, timeout: float = 5.0) -> None:
        self._nc = nc
        self._timeout = timeout
        self._prefix = ""
        self._sub: Any = None
        self._waiting: dict[str, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)

    async def __aenter__(self) -> AckedPublisher:
        self._prefix = self._nc.new_inbox()
        self._sub = await self._nc.subscribe(self._prefix + ".*", cb=self._on_reply)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(nats.errors.ConnectionClosedError())
        self._waiting.clear()
        if self._sub is not None:
            with contextlib.suppress(nats.errors.Error):  # the connection is already gone
                await self._sub.unsubscribe()

    async def _on_reply(self, msg: Any) -> None:
        future = self._waiting.pop(msg.subject[len(self._prefix) + 1 :], None)
        if future is not None and not future.done():  # else its caller has given up
            future.set_result(msg)

    def _expire(self, token: str) -> None:
        future = self._waiting.pop(token, None)
        if future is not None and not future.done():
            future.set_exception(nats.errors.TimeoutError())

    async def publish(self, subject: str, data: bytes, headers: dict[str, str]) -> int:
        """Store ``data`` on ``subject`` with ``headers``; the stream sequence it got."""
        token = str(next(self._ids))
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._waiting[token] = future
        timer = loop.call_later(self._timeout, self._expire, token)
        try:
            await self._nc.publish(subject, data, reply=f"{self._prefix}.{token}", headers=headers)
            msg = await future
        finally:
            timer.cancel()
            self._waiting.pop(token, None)
        if not msg.data and msg.headers and msg.headers.get("Status") == _NO_RESPONDERS:
            raise nats.js.errors.NoStreamResponseError
        resp = json.loads(msg.data)
        if "error" in resp:
            raise nats.js.errors.APIError.from_error(resp["error"])
        return int(resp["seq"])
