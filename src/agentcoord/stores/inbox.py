"""Durable per-agent inboxes on JetStream (DESIGN.md "Planes": messages ride NATS).

One stream, ``AGENT_MESSAGES``, holds ``agents.*.inbox``, ``agents.broadcast`` and
``channels.>`` (limits retention, so channel history stays readable). Each agent has one durable
pull consumer whose filter subjects are its inbox, the broadcast subject and the channels it takes
part in; one consumer means one stream order, hence order per sender. The consumer is created
before the first message to the agent is published, starting after the stream's last sequence,
so nothing sent to an agent that is not listening is lost and nothing older is replayed.

Reads pull with our own request loop rather than nats-py's ``fetch`` so every pull request ends
(batch filled, 404 or 408) before its reply subject goes away: a lingering pull would capture
the next message and hold it until ``ack_wait``. Acks use ``AckAll`` on the last message, and a
floor per agent drops anything redelivered at or below it, so a message is returned once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from agentcoord import wire
from agentcoord.errors import InvalidArguments

__all__ = [
    "BROADCAST_SUBJECT",
    "STREAM",
    "MessageBus",
    "Published",
    "Received",
    "channel_subject",
    "check_agent_id",
    "check_channel_name",
    "consumer_name",
    "inbox_subject",
]

log = logging.getLogger(__name__)

STREAM = "AGENT_MESSAGES"
BROADCAST_SUBJECT = "agents.broadcast"
_SUBJECTS = ["agents.*.inbox", BROADCAST_SUBJECT, "channels.>"]
_MAX_AGE_S = 7 * 24 * 3600
_DUPLICATE_WINDOW_S = 600  # idempotency keys de-dupe retries within 10 minutes
_ACK_WAIT_S = 30.0
_DELIVERY_WAIT_S = 1.0  # how long send waits for a live reader to take a message
_AGENT_ID = re.compile(r"^[A-Za-z0-9_:@-][A-Za-z0-9_:@+=-]{0,127}$")
_CHANNEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")


def check_agent_id(agent: str) -> str:
    """An agent id usable as one NATS subject token (no dots, wildcards or spaces)."""
    if not _AGENT_ID.match(agent):
        raise InvalidArguments(f"{agent!r} is not a valid agent id")
    return agent


def check_channel_name(name: str) -> str:
    """A channel name: 1-63 of ``[A-Za-z0-9_-]``, starting alphanumeric."""
    if not _CHANNEL.match(name):
        raise InvalidArguments(
            f"{name!r} is not a valid channel name (1-63 letters, digits, '-', '_')"
        )
    return name


def inbox_subject(agent: str) -> str:
    return f"agents.{agent}.inbox"


def channel_subject(name: str) -> str:
    return f"channels.{name}"


def consumer_name(agent: str) -> str:
    """A durable name for ``agent``'s inbox consumer: readable, and distinct per id."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", agent)[:48]
    digest = hashlib.sha256(agent.encode()).hexdigest()[:10]
    return f"inbox_{safe}_{digest}"


@dataclass(frozen=True)
class Published:
    """Where a message landed in the stream; ``duplicate`` when its idempotency key was seen."""

    seq: int
    duplicate: bool


@dataclass(frozen=True)
class Received:
    seq: int
    subject: str
    message: Any  # wire.ChannelMessage


class MessageBus:
    """Async context manager: the stream, per-agent consumers, publishing and reading."""

    def __init__(self, nc: Any, *, replicas: int = 1, js_timeout: float = 5.0) -> None:
        self._nc = nc
        self._replicas = replicas  # issue 11: R3 on a cluster (consumers inherit it)
        self._js_timeout = js_timeout
        self._js: Any = None
        self._ready: dict[str, set[str]] = {}  # agent -> its consumer's filter subjects
        self._setup_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._read_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._acked: dict[str, int] = {}  # agent -> highest stream seq acknowledged
        self._waiting: defaultdict[str, int] = defaultdict(int)  # agent -> long polls in flight
        self._progress = asyncio.Condition()

    async def __aenter__(self) -> MessageBus:
        from nats.js.api import RetentionPolicy, StorageType, StreamConfig
        from nats.js.errors import BadRequestError

        self._js = self._nc.jetstream(timeout=self._js_timeout)
        config = StreamConfig(
            name=STREAM,
            subjects=list(_SUBJECTS),
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=_MAX_AGE_S,
            duplicate_window=_DUPLICATE_WINDOW_S,
            num_replicas=self._replicas,
        )
        from agentcoord.stores._jsretry import while_electing

        try:
            await while_electing(lambda: self._js.add_stream(config))  # issue 11: forming R3
        except BadRequestError:  # exists with another config (an older daemon): bring it up
            await self._js.update_stream(config)
        return self

    async def __aexit__(self, *exc: object) -> None:
        async with self._progress:
            self._progress.notify_all()

    # -- consumers ---------------------------------------------------------------------------

    async def ensure_inbox(self, agent: str) -> None:
        """Create ``agent``'s consumer if it does not exist yet (before anything is sent)."""
        if agent in self._ready:
            return
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
        from nats.js.errors import NotFoundError

        async with self._setup_locks[agent]:
            if agent in self._ready:
                return
            name = consumer_name(agent)
            try:
                info = await self._js.consumer_info(STREAM, name)
                subjects = set(info.config.filter_subjects or [])
                if info.config.filter_subject:
                    subjects.add(info.config.filter_subject)
                self._acked.setdefault(agent, info.ack_floor.stream_seq if info.ack_floor else 0)
            except NotFoundError:
                last = (await self._js.stream_info(STREAM)).state.last_seq
                subjects = {inbox_subject(agent), BROADCAST_SUBJECT}
                floor = await self._add_consumer_once(
                    name,
                    last,
                    ConsumerConfig(
                        durable_name=name,
                        deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                        opt_start_seq=last + 1,
                        ack_policy=AckPolicy.ALL,
                        ack_wait=_ACK_WAIT_S,
                        max_ack_pending=-1,
                        filter_subjects=sorted(subjects),
                    ),
                )
                self._acked.setdefault(agent, floor)
            self._ready[agent] = subjects

    async def _add_consumer_once(self, name: str, last: int, config: Any) -> int:
        """Create a consumer starting after ``last``; the floor of what it has handed out.

        Issue 11: the sender's and the reader's daemons (two hosts) may create an agent's inbox
        at once. If theirs won, it may start earlier than ours: take its ack floor, so nothing
        between the two starts is mistaken for a redelivery and dropped."""
        from nats.js.errors import APIError, NotFoundError

        try:
            await self._js.add_consumer(STREAM, config)
            return last
        except APIError as exc:
            try:
                info = await self._js.consumer_info(STREAM, name)
            except NotFoundError:
                raise exc from None
            return int(info.ack_floor.stream_seq) if info.ack_floor else 0

    async def subscribe_subjects(self, agent: str, subjects: list[str]) -> None:
        """Add subjects (channels) to ``agent``'s consumer; messages after now reach it."""
        await self.ensure_inbox(agent)
        async with self._setup_locks[agent]:
            current = self._ready[agent]
            wanted = current | set(subjects)
            if wanted == current:
                return
            info = await self._js.consumer_info(STREAM, consumer_name(agent))
            config = info.config
            # Issue 11: another host's daemon may have added channels since we cached; keep them.
            wanted |= set(config.filter_subjects or ())
            if config.filter_subject:
                wanted.add(config.filter_subject)
            config.filter_subject = None
            config.filter_subjects = sorted(wanted)
            await self._js.add_consumer(STREAM, config)
            self._ready[agent] = wanted

    # -- publishing --------------------------------------------------------------------------

    async def publish(self, subject: str, msg: Any, msg_id: str | None = None) -> Published:
        """Store one ChannelMessage; ``msg_id`` de-duplicates within the duplicate window."""
        from agentcoord.stores._jsretry import while_electing

        headers = {"Nats-Msg-Id": msg_id} if msg_id else None
        data = msg.SerializeToString()
        # Issue 11: "no responders" while a new stream leader is elected stored nothing.
        ack = await while_electing(lambda: self._js.publish(subject, data, headers=headers))
        return Published(seq=ack.seq, duplicate=bool(ack.duplicate))

    async def delivered(self, agent: str, seq: int) -> bool:
        """True when ``agent`` has taken ``seq``, waiting briefly if one of its reads is live."""
        if self._acked.get(agent, 0) >= seq:
            return True
        if not self._waiting.get(agent):
            return False
        try:
            async with asyncio.timeout(_DELIVERY_WAIT_S), self._progress:
                await self._progress.wait_for(lambda: self._acked.get(agent, 0) >= seq)
        except TimeoutError:
            return False
        return True

    async def taken(self, agent: str, seq: int) -> bool:
        """True when ``agent``'s consumer has acknowledged ``seq`` (asks the server)."""
        if self._acked.get(agent, 0) >= seq:
            return True
        info = await self._js.consumer_info(STREAM, consumer_name(agent))
        return bool(info.ack_floor and info.ack_floor.stream_seq >= seq)

    # -- reading -----------------------------------------------------------------------------

    async def read(self, agent: str, limit: int, wait: float = 0.0) -> list[Received]:
        """Return and acknowledge up to ``limit`` pending messages, waiting up to ``wait`` s."""
        await self.ensure_inbox(agent)
        async with self._read_locks[agent]:
            raw = await self._pull(agent, limit, None)
            if not raw and wait <= 0 and await self._pending(agent):
                # A no_wait pull can race a just-stored message under load (the consumer's
                # view lags the stream's ack); the consumer's own count is authoritative.
                raw = await self._pull(agent, limit, 1.0)
            live = not raw and wait > 0
            if live:
                # Counted until the ack lands, so a concurrent send waits for it (delivered).
                self._waiting[agent] += 1
            try:
                if live:
                    raw = await self._pull(agent, 1, wait)
                    if raw and limit > 1:
                        raw += await self._pull(agent, limit - 1, None)
                if not raw:
                    return []
                return await self._take(agent, raw)
            finally:
                if live:
                    self._waiting[agent] -= 1

    async def _pending(self, agent: str) -> int:
        """Messages the agent's consumer has not delivered yet (0 when it cannot tell)."""
        try:
            info = await self._js.consumer_info(STREAM, consumer_name(agent))
        except Exception:
            return 0
        return int(info.num_pending or 0)

    async def _take(self, agent: str, raw: list[Any]) -> list[Received]:
        """Acknowledge ``raw`` (AckAll on the last) and decode what was not returned before."""
        await raw[-1].ack_sync()
        floor = self._acked.get(agent, 0)
        out = []
        for m in raw:
            seq = m.metadata.sequence.stream
            if seq <= floor:
                continue  # a redelivery of something already returned
            floor = seq
            try:
                out.append(Received(seq, m.subject, wire.decode(m.data)))
            except ValueError:
                log.warning("dropping a malformed message on %s (seq %d)", m.subject, seq)
        async with self._progress:
            self._acked[agent] = max(floor, self._acked.get(agent, 0))
            self._progress.notify_all()
        return out

    async def _pull(self, agent: str, batch: int, wait: float | None) -> list[Any]:
        """One pull request: ``no_wait`` when ``wait`` is None, else linger up to ``wait``."""
        request: dict[str, Any] = {"batch": batch}
        if wait is None:
            request["no_wait"] = True
        else:
            request["expires"] = int(wait * 1e9)
        queue: asyncio.Queue[Any] = asyncio.Queue()
        reply = self._nc.new_inbox()

        async def on_msg(msg: Any) -> None:
            queue.put_nowait(msg)

        sub = await self._nc.subscribe(reply, cb=on_msg)
        out: list[Any] = []
        try:
            api = f"$JS.API.CONSUMER.MSG.NEXT.{STREAM}.{consumer_name(agent)}"
            await self._nc.publish(api, json.dumps(request).encode(), reply=reply)
            # The server ends every pull with the batch filled or a status (404/408/409).
            deadline = (wait or 0.0) + 5.0
            async with asyncio.timeout(deadline):
                while len(out) < batch:
                    msg = await queue.get()
                    if msg.headers and msg.headers.get("Status"):
                        break
                    out.append(msg)
        except TimeoutError:
            log.warning("pull for %s got no end-of-batch status in time", agent)
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        return out
