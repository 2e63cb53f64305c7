"""Durable per-agent inboxes on JetStream (docs/architecture.md "Planes": messages ride NATS).

One stream, ``AGENT_MESSAGES``, holds ``agents.*.inbox``, ``agents.broadcast`` and
``channels.>`` (limits retention, so channel history stays readable). Each agent has one durable
pull consumer whose filter subjects are its inbox, the broadcast subject and the channels it takes
part in; one consumer means one stream order, hence order per sender. The consumer is created
before the first message to the agent is published, starting after the stream's last sequence,
so nothing sent to an agent that is not listening is lost and nothing older is replayed.
Joining a channel later adds its subject to the filter; a consumer that is behind the stream
would then also deliver the channel's earlier posts, so the join records the stream's last
sequence for that subject in the consumer's metadata (it survives restarts and is shared by
every daemon on the NATS) and reads drop that subject's messages at or below it. Leaving is the
mirror image: a leave mark, above which that subject's messages are dropped; the subject stays
on the filter until the consumer is past the mark, so posts from before the leave still arrive.

Reads pull with our own request loop rather than nats-py's ``fetch`` so every pull request ends
(batch filled, 404 or 408) before its reply subject goes away: a lingering pull would capture
the next message and hold it until ``ack_wait``. Acks use ``AckAll`` on the last message, and a
floor per agent drops anything redelivered at or below it, so a message is returned once.

Acknowledging on read loses a message when the daemon dies between the ack and the reply
reaching the reader, and a nats-server killed within its consumer-state flush interval forgets
recent acks and redelivers (both seen by the fault suite: docs/reliability.md
"tests/reliability"). A reader that passes ``after`` (the highest seq it has) gets
exactly-once across those faults: messages it was given stay unacknowledged ("held") until a
later read confirms them with ``after``; held messages are given again until confirmed, and
anything at or below ``after`` is dropped, not returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import logging
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from agentcoord.errors import InvalidArguments
from agentcoord.kernel import wire
from agentcoord.stores._jspub import AckedPublisher, subscribe_inline

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
MAX_AGE = 7 * 24 * 3600  # seconds; Config.inbox_max_age
MAX_MSGS = 10_000  # per subject: one inbox, one channel, the broadcast; Config.inbox_max_msgs
MAX_BYTES = 256 << 20  # the whole stream; Config.inbox_max_bytes
_DUPLICATE_WINDOW_S = 600  # idempotency keys de-dupe retries within 10 minutes
_ACK_WAIT_S = 5.0  # an unconfirmed message is redelivered after this
_DELIVERY_WAIT_S = 1.0  # how long send waits for a live reader to take a message
# Matched whole (fullmatch): with match, "$" also matches before a final newline, and "a\n"
# would reach a subject as a line break.
_AGENT_ID = re.compile(r"[A-Za-z0-9_:@-][A-Za-z0-9_:@+=-]{0,127}")
_CHANNEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}")
_JOINED = "agentcoord.joined."  # consumer metadata key prefix: subject -> stream seq at join
_LEFT = "agentcoord.left."  # consumer metadata key prefix: subject -> stream seq at leave
_AGENT_KEY = "agentcoord.agent"  # consumer metadata: whose inbox (consumer names are lossy)
_LIST_PAGE = 256  # consumers per CONSUMER.LIST reply (nats-server's page)


def check_agent_id(agent: str) -> str:
    """An agent id usable as one NATS subject token (no dots, wildcards or spaces)."""
    if not _AGENT_ID.fullmatch(agent):
        raise InvalidArguments(f"{agent!r} is not a valid agent id")
    return agent


def check_channel_name(name: str) -> str:
    """A channel name: 1-63 of ``[A-Za-z0-9_-]``, starting alphanumeric."""
    if not _CHANNEL.fullmatch(name):
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

    def __init__(
        self,
        nc: Any,
        *,
        replicas: int = 1,
        js_timeout: float = 5.0,
        max_age: float = MAX_AGE,
        max_msgs: int = MAX_MSGS,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self._nc = nc
        # Retention (docs/reliability.md "State retention"): whichever limit is reached first
        # drops the oldest messages, read or not. The count is per subject, so one flooded
        # inbox or channel cannot push another agent's messages out; the byte cap on the whole
        # stream is the backstop that keeps the state dir bounded.
        self._limits = (float(max_age), int(max_msgs), int(max_bytes))
        self._replicas = replicas  # R3 on a cluster (consumers inherit it)
        self._js_timeout = js_timeout
        self._js: Any = None
        self._ready: dict[str, set[str]] = {}  # agent -> its consumer's filter subjects
        # agent -> subject -> the stream's last seq when the subject joined its filter
        self._joined: dict[str, dict[str, int]] = {}
        # agent -> subject -> the stream's last seq when the agent left it (channel removal)
        self._left: dict[str, dict[str, int]] = {}
        self._setup_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._read_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._acked: dict[str, int] = {}  # agent -> highest stream seq acknowledged
        self._waiting: defaultdict[str, int] = defaultdict(int)  # agent -> long polls in flight
        # agent -> seq -> (the delivery to ack, what was returned): given, not yet confirmed
        self._held: defaultdict[str, dict[int, tuple[Any, Received | None]]] = defaultdict(dict)
        self._handed: dict[str, int] = {}  # agent -> highest seq given to it (held or acked)
        self._progress = asyncio.Condition()
        # Pull replies arrive on one wildcard inbox (a SUB and an UNSUB per pull request were a
        # third of the server round trips of an inbox read). Reads of one agent are serialized
        # (_read_locks), so each consumer has at most one pull open: consumer -> (its token,
        # where its replies go).
        self._pull_prefix = ""
        self._pull_sub: Any = None
        self._pulls: dict[str, tuple[str, asyncio.Queue[Any]]] = {}
        self._pull_ids = itertools.count(1)
        self._pub: AckedPublisher | None = None  # stores messages (stores/_jspub.py)

    async def __aenter__(self) -> MessageBus:
        from nats.js.api import RetentionPolicy, StorageType, StreamConfig

        self._js = self._nc.jetstream(timeout=self._js_timeout)
        config = StreamConfig(
            name=STREAM,
            subjects=list(_SUBJECTS),
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=self._limits[0],
            max_msgs_per_subject=self._limits[1],
            max_bytes=self._limits[2],
            duplicate_window=_DUPLICATE_WINDOW_S,
            num_replicas=self._replicas,
        )
        from agentcoord.stores._jsretry import ensure_stream

        await ensure_stream(self._js, config)
        self._pull_prefix = self._nc.new_inbox()
        self._pull_sub = await subscribe_inline(self._nc, self._pull_prefix + ".>", self._on_pulled)
        self._pub = await AckedPublisher(self._nc, self._js_timeout).__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._pub is not None:
            await self._pub.__aexit__(*exc)
        if self._pull_sub is not None:
            with contextlib.suppress(Exception):
                await self._pull_sub.unsubscribe()
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
                self._joined[agent] = _marks(info.config.metadata, _JOINED)
                self._left[agent] = _marks(info.config.metadata, _LEFT)
                floor = info.ack_floor.stream_seq if info.ack_floor else 0
                if info.delivered and info.delivered.stream_seq > floor:
                    await self._restart_after(name, info.config, floor)
                self._acked.setdefault(agent, floor)
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
                        metadata={_AGENT_KEY: agent},
                    ),
                )
                self._acked.setdefault(agent, floor)
            self._ready[agent] = subjects

    async def _add_consumer_once(self, name: str, last: int, config: Any) -> int:
        """Create a consumer starting after ``last``; the floor of what it has handed out.

        With several hosts on one NATS cluster (docs/one-host-to-many.md) the sender's and the
        reader's daemons may create an agent's inbox at once. If theirs won, it may start
        earlier than ours: take its ack floor, so nothing between the two starts is mistaken
        for a redelivery and dropped."""
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

    async def _restart_after(self, name: str, config: Any, floor: int) -> None:
        """Start a consumer again right after its ack floor.

        Messages an earlier daemon gave out but never got acknowledged (it died first) would
        otherwise come back only after ``ack_wait``, behind newer ones, and a reader's ``after``
        would then hide them; restarting the consumer gives them again now, in order
        (docs/reliability.md "tests/reliability").
        """
        from nats.js.api import DeliverPolicy

        config.deliver_policy = DeliverPolicy.BY_START_SEQUENCE
        config.opt_start_seq = floor + 1
        await self._js.delete_consumer(STREAM, name)
        await self._js.add_consumer(STREAM, config)

    async def drop_inbox(self, agent: str) -> None:
        """Delete ``agent``'s consumer and the messages queued on its inbox subject (a removed
        session agent's, docs/localagents.md "Session lifetime"); a later agent of that name
        starts with an empty inbox."""
        from nats.js.errors import NotFoundError

        async with self._setup_locks[agent], self._read_locks[agent]:
            with contextlib.suppress(NotFoundError):
                await self._js.delete_consumer(STREAM, consumer_name(agent))
            await self._js.purge_stream(STREAM, subject=inbox_subject(agent))
            states = (self._ready, self._acked, self._held, self._handed, self._joined, self._left)
            for state in states:
                state.pop(agent, None)
        # The agent is gone: so are its locks (held above; no one else waits on a removed
        # agent's inbox), else every removed session would leave two behind.
        self._setup_locks.pop(agent, None)
        self._read_locks.pop(agent, None)

    async def subscribe_subjects(self, agent: str, subjects: list[str]) -> None:
        """Add subjects (channels) to ``agent``'s consumer; messages after now reach it,
        earlier ones on those subjects do not (their join mark, above)."""
        await self.ensure_inbox(agent)
        async with self._setup_locks[agent]:
            current = self._ready[agent]
            wanted = current | set(subjects)
            if wanted == current and not set(subjects) & self._left.get(agent, {}).keys():
                return
            info, had, joined, left = await self._marks(agent)
            config = info.config
            # Another host's daemon on the same NATS may have added channels since we cached;
            # keep them, and their marks. A subject it left comes back as a new join.
            new = (wanted - had) | (set(subjects) & left.keys())
            if new:
                last = (await self._js.stream_info(STREAM)).state.last_seq
                joined.update(dict.fromkeys(new, last))
                for subject in new:
                    left.pop(subject, None)
            wanted |= had
            await self._update(agent, config, wanted, joined, left)

    async def unsubscribe_subjects(self, agent: str, subjects: list[str]) -> None:
        """Stop routing subjects (channels) to ``agent``: posts from now on do not reach it;
        those before still do (the subject stays on the filter, with a leave mark, until the
        consumer is past them). Its own inbox and the broadcast subject stay."""
        from nats.js.errors import NotFoundError

        gone = set(subjects) - {inbox_subject(agent), BROADCAST_SUBJECT}
        async with self._setup_locks[agent]:
            try:
                info, had, joined, left = await self._marks(agent)
            except NotFoundError:
                return
            leaving = (had & gone) - left.keys()
            if not leaving:
                return
            last = (await self._js.stream_info(STREAM)).state.last_seq
            left.update(dict.fromkeys(leaving, last))
            await self._update(agent, info.config, had, joined, left)

    async def _marks(self, agent: str) -> tuple[Any, set[str], dict[str, int], dict[str, int]]:
        """``agent``'s consumer as the server has it: its info, filter subjects, and join and
        leave marks, without the marks the consumer's ack floor has passed."""
        info = await self._js.consumer_info(STREAM, consumer_name(agent))
        config = info.config
        had = set(config.filter_subjects or ())
        if config.filter_subject:
            had.add(config.filter_subject)
        floor = info.ack_floor.stream_seq if info.ack_floor else 0
        joined = {s: n for s, n in _marks(config.metadata, _JOINED).items() if n > floor}
        left = _marks(config.metadata, _LEFT)
        for subject in [s for s, n in left.items() if n <= floor]:
            # Everything from before the leave is consumed: the subject can go altogether.
            del left[subject]
            had.discard(subject)
            joined.pop(subject, None)
        return info, had, joined, left

    async def _update(
        self,
        agent: str,
        config: Any,
        subjects: set[str],
        joined: dict[str, int],
        left: dict[str, int],
    ) -> None:
        config.filter_subject = None
        config.filter_subjects = sorted(subjects)
        others = {
            k: v for k, v in (config.metadata or {}).items() if not k.startswith((_JOINED, _LEFT))
        }
        config.metadata = {
            **others,
            _AGENT_KEY: agent,
            **{_JOINED + s: str(n) for s, n in joined.items()},
            **{_LEFT + s: str(n) for s, n in left.items()},
        }
        await self._js.add_consumer(STREAM, config)
        self._ready[agent] = subjects
        self._joined[agent] = joined
        self._left[agent] = left

    async def subscribers(self, subject: str) -> list[str]:
        """The agents ``subject`` is routed to (one listing of the stream's consumers; a
        consumer no join has touched does not name its agent and is left out)."""
        out: list[str] = []
        offset = 0
        while True:
            page = await self._js.consumers_info(STREAM, offset=offset or None)
            for info in page:
                config = info.config
                metadata = config.metadata or {}
                agent = metadata.get(_AGENT_KEY)
                taken = set(config.filter_subjects or ()) | {config.filter_subject}
                if agent and subject in taken and _LEFT + subject not in metadata:
                    out.append(agent)
            if len(page) < _LIST_PAGE:
                return out
            offset += len(page)

    # -- publishing --------------------------------------------------------------------------

    async def publish(self, subject: str, msg: Any, msg_id: str | None = None) -> Published:
        """Store one ChannelMessage; ``msg_id`` de-duplicates within the duplicate window."""
        from agentcoord.stores._jsretry import while_electing

        data = msg.SerializeToString()
        pub = self._pub
        assert pub is not None, "MessageBus used outside its context"
        # "no responders" while a new stream leader is elected (a NATS node lost) stored
        # nothing, so the publish is sent again (and de-duplicated by its id if it was).
        seq, duplicate = await while_electing(lambda: pub.publish_once(subject, data, msg_id))
        return Published(seq=seq, duplicate=duplicate)

    def _outside(self, agent: str, msg: Any) -> bool:
        """Whether ``msg`` was posted on a subject before ``agent`` joined it or after it
        left it."""
        seq = msg.metadata.sequence.stream
        joined = self._joined.get(agent, {}).get(msg.subject)
        left = self._left.get(agent, {}).get(msg.subject)
        return (joined is not None and seq <= joined) or (left is not None and seq > left)

    def _echo(self, agent: str, rec: Received) -> bool:
        """Whether ``rec`` is ``agent``'s own broadcast or channel post coming back: never
        returned to it, so never confirmed by an ``after`` of its own; it is held with what
        the reader has not seen and confirmed with the next message it does see."""
        return getattr(rec.message, "from") == agent and rec.subject != inbox_subject(agent)

    def _given(self, agent: str) -> int:
        return max(self._acked.get(agent, 0), self._handed.get(agent, 0))

    async def delivered(self, agent: str, seq: int) -> bool:
        """True when ``agent`` has taken ``seq``, waiting briefly if one of its reads is live."""
        if self._given(agent) >= seq:
            return True
        if not self._waiting.get(agent):
            return False
        try:
            async with asyncio.timeout(_DELIVERY_WAIT_S), self._progress:
                await self._progress.wait_for(lambda: self._given(agent) >= seq)
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

    async def read(
        self, agent: str, limit: int, wait: float = 0.0, after: int | None = None
    ) -> list[Received]:
        """Up to ``limit`` pending messages, waiting up to ``wait`` s when there are none.

        Without ``after`` they are acknowledged now. With it, everything at or below ``after``
        is confirmed (acknowledged) and what is returned is held until a later read confirms it.
        """
        await self.ensure_inbox(agent)
        async with self._read_locks[agent]:
            kept: list[Received] = []
            if after is not None:
                await self._confirm(agent, after)
                held = self._held[agent]
                kept = [r for _, (_, r) in sorted(held.items()) if r is not None][:limit]
                if kept:
                    return kept
            raw = await self._pull(agent, limit, None)
            if raw and after is None and wait > 0 and all(self._outside(agent, m) for m in raw):
                await self._take(agent, raw)  # only posts from before a join: wait for news
                raw = []
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
                if after is not None:
                    return await self._hold(agent, raw, after)
                return await self._take(agent, raw)
            finally:
                if live:
                    self._waiting[agent] -= 1

    async def waiting(self, agent: str) -> int:
        """How many messages wait in ``agent``'s inbox: not delivered yet, or delivered and not
        confirmed by a later read. A count only (the server's consumer info): nothing is read
        or acknowledged; 0 when it cannot tell (no inbox yet)."""
        try:
            info = await self._js.consumer_info(STREAM, consumer_name(agent))
        except Exception:
            return 0
        return int(info.num_pending or 0) + int(info.num_ack_pending or 0)

    async def _pending(self, agent: str) -> int:
        """Messages the agent's consumer has not delivered yet (0 when it cannot tell)."""
        try:
            info = await self._js.consumer_info(STREAM, consumer_name(agent))
        except Exception:
            return 0
        return int(info.num_pending or 0)

    async def _confirm(self, agent: str, after: int) -> None:
        """Acknowledge held messages up to ``after``; raise the floor to it (within reason)."""
        held = self._held[agent]
        done = [seq for seq in held if seq <= after]
        if done:
            # AckAll up to it, not waiting for the server: a lost ack only means a redelivery,
            # which ``after`` filters out; waiting would stall reads while NATS restarts.
            await held[max(done)][0].ack()
            for seq in done:
                del held[seq]
        async with self._progress:
            # Never above what was given: a made-up ``after`` must not hide future messages.
            floor = min(after, self._given(agent))
            self._acked[agent] = max(floor, self._acked.get(agent, 0))

    async def _hold(self, agent: str, raw: list[Any], after: int) -> list[Received]:
        """Keep ``raw`` unacknowledged and return what the reader has not confirmed."""
        held = self._held[agent]
        floor = max(after, self._acked.get(agent, 0))
        stale = [m for m in raw if m.metadata.sequence.stream <= floor]
        out = []
        for m in raw:
            seq = m.metadata.sequence.stream
            if seq <= floor:
                continue  # confirmed before (a redelivery after a restart)
            if seq in held:  # redelivered after ack_wait: keep the newest delivery to ack
                held[seq] = (m, held[seq][1])
                continue
            rec: Received | None = None  # held, never returned, confirmed with the rest
            if not self._outside(agent, m):
                try:
                    rec = Received(seq, m.subject, wire.decode(m.data))
                except ValueError:
                    log.warning("dropping a malformed message on %s (seq %d)", m.subject, seq)
                if rec is not None and self._echo(agent, rec):
                    rec = None
            held[seq] = (m, rec)
            if rec is not None:
                out.append(rec)
        if stale:
            await stale[-1].ack()
        async with self._progress:
            top = max(m.metadata.sequence.stream for m in raw)
            self._handed[agent] = max(top, self._handed.get(agent, 0))
            self._progress.notify_all()
        return out

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
            if self._outside(agent, m):
                continue  # posted before the agent joined that channel
            try:
                rec = Received(seq, m.subject, wire.decode(m.data))
            except ValueError:
                log.warning("dropping a malformed message on %s (seq %d)", m.subject, seq)
                continue
            if not self._echo(agent, rec):
                out.append(rec)
        async with self._progress:
            self._acked[agent] = max(floor, self._acked.get(agent, 0))
            self._progress.notify_all()
        held = self._held[agent]
        for seq in [s for s in held if s <= floor]:
            del held[seq]  # the AckAll above covered them
        return out

    def _on_pulled(self, msg: Any) -> None:
        """Route a pull reply. A status (end of batch) comes on the pull's own reply subject
        ``<prefix>.<consumer>.<token>``, and only the pull with that token takes it; a message
        keeps its stream subject, so it goes by the consumer named in its ack subject (any
        pull of that consumer may take it: it is the consumer's next message either way)."""
        if msg.headers and msg.headers.get("Status"):
            consumer, _, token = msg.subject[len(self._pull_prefix) + 1 :].partition(".")
            entry = self._pulls.get(consumer)
            if entry is not None and entry[0] == token:
                entry[1].put_nowait(msg)
            return
        try:
            consumer = msg.metadata.consumer
        except Exception:
            log.warning("dropping a pull reply without JetStream metadata on %s", msg.subject)
            return
        entry = self._pulls.get(consumer)
        if entry is not None:  # else its pull has given up: the server redelivers after ack_wait
            entry[1].put_nowait(msg)

    async def _pull(self, agent: str, batch: int, wait: float | None) -> list[Any]:
        """One pull request: ``no_wait`` when ``wait`` is None, else linger up to ``wait``."""
        request: dict[str, Any] = {"batch": batch}
        if wait is None:
            request["no_wait"] = True
        else:
            request["expires"] = int(wait * 1e9)
        consumer, token = consumer_name(agent), str(next(self._pull_ids))
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._pulls[consumer] = (token, queue)
        out: list[Any] = []
        try:
            api = f"$JS.API.CONSUMER.MSG.NEXT.{STREAM}.{consumer}"
            reply = f"{self._pull_prefix}.{consumer}.{token}"
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
            del self._pulls[consumer]
        return out


def _marks(metadata: dict[str, str] | None, prefix: str) -> dict[str, int]:
    """The join or leave marks kept in a consumer's metadata (subject -> stream seq)."""
    marks = {}
    for key, value in (metadata or {}).items():
        if key.startswith(prefix) and value.isdigit():
            marks[key[len(prefix) :]] = int(value)
    return marks
