"""Ride out a JetStream leader election, so the daemon survives a NATS node loss
(docs/one-host-to-many.md "What holds, and what does not").

When the node leading a stream dies, the stream has no leader for a few seconds: a publish
gets "no responders" and API requests get 503; a cluster still forming cannot place a new R3
stream ("no suitable peers"). Nothing was stored in any of these cases, so the same request
is safe to send again; :func:`while_electing` does, with a growing pause, for up to
``_RETRY_FOR_S``. Timeouts are not retried here: they are ambiguous, and the callers that can
retry them safely (compare-and-set writes) decide that themselves.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import nats.errors
import nats.js.errors

__all__ = [
    "UNAVAILABLE",
    "asking_again",
    "connection_of",
    "create_asking_again",
    "while_electing",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

UNAVAILABLE = (
    nats.js.errors.NoStreamResponseError,
    nats.errors.NoRespondersError,
    nats.js.errors.ServiceUnavailableError,
)
# "no suitable peers for placement": a cluster still forming (or a peer just lost) cannot
# place a new R3 stream yet; creation is retried like an election.
_NO_PEERS = 10005
_RETRY_FOR_S = 10.0
_FIRST_PAUSE_S = 0.05
_MAX_PAUSE_S = 1.0
_CREATE_TRY_S = 2.0  # one try of an idempotent creation (create_asking_again)


async def while_electing(call: Callable[[], Awaitable[T]]) -> T:
    """``await call()``, sent again while JetStream has no leader to answer it."""
    try:  # the common case, without the retry loop's bookkeeping
        return await call()
    except nats.errors.Error as exc:
        if not _transient(exc):
            raise
        first = exc
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _RETRY_FOR_S
    pause = _FIRST_PAUSE_S
    failure: nats.errors.Error = first
    while True:
        if loop.time() + pause > deadline:
            raise failure
        log.debug("jetstream unavailable (%s); retrying in %.2fs", type(failure).__name__, pause)
        await asyncio.sleep(pause)  # a backoff while a leader is elected, not a poll
        pause = min(pause * 2, _MAX_PAUSE_S)
        try:
            return await call()
        except nats.errors.Error as exc:
            if not _transient(exc):
                raise
            failure = exc


def _transient(exc: Exception) -> bool:
    if isinstance(exc, UNAVAILABLE):
        return True
    return isinstance(exc, nats.js.errors.APIError) and exc.err_code == _NO_PEERS


def connection_of(js: Any) -> tuple[Any, float]:
    """The NATS connection and request timeout of nats-py's JetStream context ``js``: the
    only place that knows where nats-py keeps them (plain publishes and replies use the
    connection; the claim path's publisher and creations use the timeout)."""
    return js._nc, float(js._timeout)


async def create_asking_again(js: Any, create: Callable[[Any], Awaitable[T]]) -> T:
    """``await create(ctx)`` for an idempotent creation (a stream or KV bucket with the same
    config), with short waits, asked again while it goes unanswered, within ``js``'s timeout.

    On a cluster that has just formed, a creation's answer sometimes never came although the
    stream was made: the start sat out the whole 15 s request timeout, or failed. Creating
    with the same config again is a success, so a lost answer costs one short wait.
    ``ctx`` is a JetStream context with the short timeout: use it for the creation only.
    """
    nc, timeout = connection_of(js)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    quick = nc.jetstream(timeout=_CREATE_TRY_S)
    while True:
        try:
            return await while_electing(lambda: create(quick))
        except nats.errors.TimeoutError:
            if loop.time() + _CREATE_TRY_S > deadline:
                raise
            log.info("jetstream: a creation went unanswered; asking again")


async def asking_again(js: Any, call: Callable[[], Awaitable[T]]) -> T:
    """``await call()`` for a request that is safe to send again (a KV watch: an ordered
    consumer), each try given a short wait, asked again while it goes unanswered, within
    ``js``'s timeout. A consumer's creation on a cluster just formed went unanswered like a
    stream's (:func:`create_asking_again`); one made whose answer was lost is ephemeral and
    goes away by itself."""
    _, timeout = connection_of(js)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            async with asyncio.timeout(_CREATE_TRY_S):
                return await while_electing(call)
        except TimeoutError:  # nats-py's timeout is one too
            if loop.time() + _CREATE_TRY_S > deadline:
                raise
            log.info("jetstream: a request went unanswered; asking again")


_NO_STORAGE = 10047  # JetStream: insufficient storage resources for the stream's max_bytes
_SMALLEST_FIT = 1 << 20


async def ensure_stream(js: Any, config: Any) -> Any:
    """Create the stream ``config`` names, or bring an existing one (an older daemon's, other
    limits) to ``config``; returns the config applied.

    JetStream reserves each stream's ``max_bytes`` against the disk it found at start (75 %
    of the free space). On a small or nearly full disk the configured bound cannot be
    reserved and the stream would not exist at all, so the bound is halved until it fits
    (down to 1 MiB) and the smaller bound is logged: the daemon starts, bounded tighter.
    """
    import dataclasses

    while True:
        try:
            await _create_or_update(js, config)
            return config
        except nats.js.errors.APIError as exc:
            wanted = config.max_bytes or -1
            if exc.err_code != _NO_STORAGE or not 0 < wanted // 2 >= _SMALLEST_FIT:
                raise
            config = dataclasses.replace(config, max_bytes=wanted // 2)
            log.warning(
                "jetstream: no room to reserve %d bytes for stream %s on this disk; "
                "bounding it to %d bytes instead",
                wanted,
                config.name,
                config.max_bytes,
            )


async def _create_or_update(js: Any, config: Any) -> None:
    try:
        await create_asking_again(js, lambda ctx: ctx.add_stream(config))
    except nats.js.errors.BadRequestError:  # exists with another config
        # Raising the replica count places new peers: on a busy cluster that can be refused
        # for a moment ("no suitable peers"), like a creation, so it is asked again likewise.
        await while_electing(lambda: js.update_stream(config))
