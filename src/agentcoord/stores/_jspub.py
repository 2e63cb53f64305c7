"""JetStream publish-and-wait-for-ack over one reply subscription, for the claim path.

nats-py's ``js.publish`` draws a random token (a ``getrandom`` call), arms an
``asyncio.wait_for`` and builds a ``PubAck`` dataclass for every write: a third of the CPU of a
KV write in the daemon, on the path of every claim and release. Here the replies come back on
one wildcard inbox subscribed once, tokens are a counter and the timeout is one timer. Each
reply is handed to its waiter as the client's reader parses it (:class:`_Inline`), not through
a subscription task: one event-loop hop less on every write.

Errors are nats-py's own, so callers handle both paths alike: ``APIError`` (with its
``err_code``) for a refused write, ``NoStreamResponseError`` when no stream listens (a leader
election), ``nats.errors.TimeoutError`` when no ack comes in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Callable
from typing import Any

import nats.errors
import nats.js.errors

__all__ = ["AckedPublisher", "subscribe_inline"]

log = logging.getLogger(__name__)

_NO_RESPONDERS = "503"


class _Inline:
    """Stands in for the reply future of a nats-py subscription, so the client's reader hands
    each message to ``deliver`` as it parses it. nats-py 2.16 (the pinned series) calls only
    ``cancelled()`` and ``set_result(msg)`` on a subscription's ``future`` (``Client.
    _process_msg``), and keeps a subscription made with one open for every message while
    ``max_msgs`` is 0; a callback subscription would queue each message for a task of its own."""

    __slots__ = ("_deliver",)

    def __init__(self, deliver: Callable[[Any], None]) -> None:
        self._deliver = deliver

    def cancelled(self) -> bool:
        return False

    def set_result(self, msg: Any) -> None:
        try:
            self._deliver(msg)
        except Exception:  # raised into the client's reader, it would end the connection
            log.exception("dropping a reply on %s", getattr(msg, "subject", "?"))


async def subscribe_inline(nc: Any, subject: str, deliver: Callable[[Any], None]) -> Any:
    """Subscribe ``deliver`` (plain, quick, never awaiting) to ``subject`` on ``nc``: it sees
    each message as the client's reader parses it. For reply inboxes, whose handlers only
    hand a message to whoever waits for it."""
    return await nc.subscribe(subject, future=_Inline(deliver))


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
        self._sub = await subscribe_inline(self._nc, self._prefix + ".*", self._on_reply)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(nats.errors.ConnectionClosedError())
        self._waiting.clear()
        if self._sub is not None:
            with contextlib.suppress(nats.errors.Error):  # the connection is already gone
                await self._sub.unsubscribe()

    def _on_reply(self, msg: Any) -> None:
        future = self._waiting.pop(msg.subject[len(self._prefix) + 1 :], None)
        if future is not None and not future.done():  # else its caller has given up
            future.set_result(msg)

    def _expire(self, token: str) -> None:
        future = self._waiting.pop(token, None)
        if future is not None and not future.done():
            future.set_exception(nats.errors.TimeoutError())

    async def publish(self, subject: str, data: bytes, headers: dict[str, str] | None) -> int:
        """Store ``data`` on ``subject`` with ``headers``; the stream sequence it got."""
        return int((await self._store(subject, data, headers))["seq"])

    async def publish_once(self, subject: str, data: bytes, msg_id: str | None) -> tuple[int, bool]:
        """Store ``data`` on ``subject``, de-duplicated by ``msg_id`` within the stream's
        duplicate window: (the sequence, whether it was a duplicate of an earlier one)."""
        headers = {"Nats-Msg-Id": msg_id} if msg_id else None
        resp = await self._store(subject, data, headers)
        return int(resp["seq"]), bool(resp.get("duplicate"))

    async def _store(
        self, subject: str, data: bytes, headers: dict[str, str] | None
    ) -> dict[str, Any]:
        """The stream's answer to one write: ``seq``, and ``duplicate`` for a repeated id."""
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
        return resp  # type: ignore[no-any-return]
