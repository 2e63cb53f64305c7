"""The messaging service of one daemon: the JetStream bus, the records it writes, open offers,
and the parts that use them (docs/messaging.md "Where things live").

Built once by the composition root with everything it uses, entered as an async context
manager (it opens the ``AGENT_MESSAGES`` stream), and handed to the messaging, handoff and
humans tools, the hooks, the console and agentops.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentcoord.kernel import wire
from agentcoord.messaging.access import AgentAccess, credentials_view
from agentcoord.messaging.channels import Channels
from agentcoord.messaging.offers import Handoffs, OfferBook
from agentcoord.messaging.prompts import HumanPrompts
from agentcoord.messaging.recipients import Recipients
from agentcoord.messaging.sending import Sending
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.stores.audit import AuditSink
from agentcoord.stores.messagebus import (
    BROADCAST_SUBJECT,
    MessageBus,
    Published,
    Received,
    check_agent_id,
    inbox_subject,
)
from agentcoord.stores.records import (
    ChannelRecord,
    ChannelRecords,
    PromptRecord,
    PromptRecords,
    TaskRecords,
)

if TYPE_CHECKING:
    from agentcoord.kernel.caller import Caller
    from agentcoord.messaging.offers import Offer

__all__ = ["Messaging", "Watch"]

log = logging.getLogger(__name__)


class Watch:
    """One watcher's hold on :meth:`Messaging.watch`'s wake-ups, until it unsubscribes."""

    def __init__(self, messaging: Messaging, cb: Callable[[Any], Awaitable[None]]) -> None:
        self._messaging = messaging
        self._cb = cb

    async def unsubscribe(self) -> None:
        await self._messaging._unwatch(self._cb)


class Messaging:
    """Async context manager: inboxes, channels, handoff offers and human prompts.

    Everything outside the package uses its verbs (docs/messaging.md "Where things live"): the
    bus, the records and the parts over them are its own.
    """

    def __init__(
        self,
        nc: Any,
        *,
        channels: ChannelRecords,
        prompts: PromptRecords,
        tasks: TaskRecords,
        access: AgentAccess,
        audit_log: AuditSink,
        nats_url: str,
        replicas: int,
        js_timeout: float,
        retention: Mapping[str, Any],
        recipients: Recipients,
    ) -> None:
        """``access``: per-agent NATS users (embedded NATS), else
        :class:`~agentcoord.messaging.access.NoAgentUsers`; ``replicas`` and ``js_timeout``
        for ``AGENT_MESSAGES`` (3 and longer on a cluster); ``retention``: the bus's
        ``max_age``/``max_msgs``/``max_bytes`` (docs/reliability.md "State retention");
        ``recipients``: who a message may be addressed to (docs/messaging.md "Recipients")."""
        self._nc = nc
        self._channels = channels
        self._prompts = prompts
        self._audit = audit_log
        self._access = access
        self._nats_url = nats_url
        self._offers = OfferBook()
        self._bus = MessageBus(nc, replicas=replicas, js_timeout=js_timeout, **retention)
        self._rooms = Channels(channels, self._bus, access, recipients)
        self._mail = Sending(self._bus, self._rooms, recipients)
        self._handoffs = Handoffs(nc, self._bus, self._offers, tasks, audit_log, recipients)
        self._humans = HumanPrompts(nc, prompts, audit_log, late=self._late_answer)
        self._watchers: list[Callable[[Any], Awaitable[None]]] = []  # see watch()
        self._watch_subs: list[Any] = []

    async def _late_answer(self, rec: PromptRecord, text: str, by: str) -> None:
        """Into the asker's inbox: the answer to a prompt its ask stopped waiting for."""
        question = rec.question if len(rec.question) <= 80 else rec.question[:77] + "..."
        body = f"the human answered your prompt {rec.id} ({question}): {text}"
        # queue_unknown: an asker that ended since still has its inbox.
        await self._mail.to_agent(
            by, rec.agent, pb.MESSAGE_TEXT, body, correlation_id=rec.id, queue_unknown=True
        )

    async def __aenter__(self) -> Messaging:
        await self._bus.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._bus.__aexit__(*exc)

    def emit(self, event: str, agent: str, **data: Any) -> None:
        """Best-effort audit event into AGENT_EVENTS (docs/claims.md "How it works": a failed append
        is logged by the audit log, never a tool error)."""
        self._audit.emit(event, agent, **data)

    async def credentials(self, agent: str) -> dict[str, Any]:
        """``agent``'s own NATS login (its inbox consumer exists before it subscribes)."""
        login = await self._access.credentials(check_agent_id(agent))
        await self._bus.ensure_inbox(agent)
        return credentials_view(login, self._nats_url)

    # Inboxes: one durable consumer per agent on AGENT_MESSAGES (docs/messaging.md).

    async def deliver(self, to: str, msg: Any, msg_id: str | None = None) -> Published:
        """Publish a built message into ``to``'s inbox (made first if it is new); ``msg_id``
        de-duplicates a retry."""
        await self._bus.ensure_inbox(to)
        return await self._bus.publish(inbox_subject(to), msg, msg_id)

    async def ensure_inbox(self, agent: str) -> None:
        """Make ``agent``'s inbox, so nothing sent before it first reads is lost."""
        await self._bus.ensure_inbox(agent)

    async def drop_inbox(self, agent: str) -> None:
        """Delete ``agent``'s inbox (an agent that is gone for good)."""
        await self._bus.drop_inbox(agent)

    async def read_inbox(
        self, agent: str, limit: int, wait: float = 0.0, after: int | None = None
    ) -> list[Received]:
        """Up to ``limit`` of ``agent``'s pending messages, waiting up to ``wait`` s for one;
        ``after`` confirms what was taken up to that sequence."""
        return await self._bus.read(agent, limit, wait, after=after)

    async def waiting(self, agent: str) -> int:
        """How many messages wait in ``agent``'s inbox."""
        return await self._bus.waiting(agent)

    async def watch(self, cb: Callable[[Any], Awaitable[None]]) -> list[Watch]:
        """Call ``cb`` with every message published to an inbox, a broadcast or a channel, as
        it is published (a wake-up, not a delivery); the caller unsubscribes what it gets.
        Every watcher shares one set of NATS subscriptions, made for the first: each message
        is delivered into this process once, however many parts wait for wake-ups."""
        self._watchers.append(cb)
        if not self._watch_subs:
            subjects = ("agents.*.inbox", BROADCAST_SUBJECT, "channels.>")
            self._watch_subs = [
                await self._nc.subscribe(subject, cb=self._fan_out) for subject in subjects
            ]
        return [Watch(self, cb)]

    async def _fan_out(self, msg: Any) -> None:
        for cb in tuple(self._watchers):
            try:
                await cb(msg)
            except Exception:  # one watcher's failure must not cost the others their wake-up
                log.exception("a messaging watcher failed")

    async def _unwatch(self, cb: Callable[[Any], Awaitable[None]]) -> None:
        if cb in self._watchers:
            self._watchers.remove(cb)
        if not self._watchers:
            subs, self._watch_subs = self._watch_subs, []
            for sub in subs:
                await sub.unsubscribe()

    # Sending: what the messaging tools do (docs/messaging.md "Tools"). Each send, post and
    # broadcast is one audit event naming who, to whom, the kind and the length, never the
    # text: agents read the audit too (docs/messaging.md "Audit").

    async def send(
        self,
        me: str,
        to: str,
        kind: int,
        text: str,
        correlation_id: str = "",
        key: str = "",
        *,
        queue_unknown: bool = False,
    ) -> dict[str, Any]:
        """A direct message from ``me`` into ``to``'s inbox."""
        out = await self._mail.to_agent(
            me, to, kind, text, correlation_id, key, queue_unknown=queue_unknown
        )
        if not out.get("duplicate"):  # a retry of a send already audited
            self.emit(
                "MESSAGE_SENT",
                me,
                to=to,
                kind=wire.kind_name(kind),
                delivery=out["delivery"],
                chars=len(text),
            )
        return out

    async def post(
        self, me: str, channel: str, kind: int, text: str, correlation_id: str = "", key: str = ""
    ) -> dict[str, Any]:
        """A post on a channel ``me`` takes part in."""
        out = await self._mail.to_channel(me, channel, kind, text, correlation_id, key)
        if not out.get("duplicate"):
            self.emit(
                "CHANNEL_POSTED", me, channel=channel, kind=wire.kind_name(kind), chars=len(text)
            )
        return out

    async def broadcast(self, me: str, text: str) -> dict[str, Any]:
        """A message to every agent."""
        out = await self._mail.broadcast(me, text)
        self.emit("BROADCAST_SENT", me, chars=len(text))
        return out

    async def inbox(
        self, me: str, limit: int = 100, wait: float = 0.0, after: int | None = None
    ) -> dict[str, Any]:
        """``me``'s pending messages as the ``inbox`` tool returns them."""
        return await self._mail.inbox(me, limit, wait, after=after)

    # Channels.

    async def open_channel(
        self,
        me: str,
        name: str,
        participants: list[str],
        *,
        topic: str = "",
        ttl_secs: int | None = None,
        add: bool = False,
        queue_unknown: bool = False,
    ) -> dict[str, Any]:
        """Open (or reopen, or with ``add`` widen) the channel ``name``."""
        out = await self._rooms.open(
            me,
            name,
            participants,
            topic=topic,
            ttl_secs=ttl_secs,
            add=add,
            queue_unknown=queue_unknown,
        )
        # Who takes part, not the topic: the audit holds no free text (docs/messaging.md
        # "Audit").
        self.emit(
            "CHANNEL_WIDENED" if add else "CHANNEL_OPENED",
            me,
            channel=name,
            participants=sorted(set(participants)),
        )
        return out

    async def close_channel(self, me: str, name: str) -> dict[str, Any]:
        """Close a channel ``me`` opened."""
        out = await self._rooms.close(me, name)
        self.emit("CHANNEL_CLOSED", me, channel=name)
        return out

    async def visible_channels(self, me: str, *, everyone: bool) -> list[dict[str, Any]]:
        """The channels ``me`` takes part in (``everyone``: all of them, for the human)."""
        return await self._rooms.visible(me, everyone=everyone)

    async def channel(self, name: str) -> ChannelRecord | None:
        """The channel's record, or None."""
        return await self._channels.get(name)

    async def all_channels(self) -> list[ChannelRecord]:
        """Every channel's record (the console's list)."""
        return await self._channels.list()

    # Handoffs: the offer -> accept/reject handshake (docs/messaging.md "Tools").

    async def offer_handoff(
        self, me: str, to: str, context: Any, timeout: float, *, queue_unknown: bool = False
    ) -> dict[str, Any]:
        """Offer ``context`` (a HandoffContext) to ``to`` and wait for the answer."""
        return await self._handoffs.offer(me, to, context, timeout, queue_unknown=queue_unknown)

    async def answer_handoff(
        self, me: str, offer_id: str, accept: bool, reason: str
    ) -> dict[str, Any]:
        """Accept or reject an offer made to ``me``."""
        return await self._handoffs.answer(me, offer_id, accept, reason)

    def pending_handoffs(self) -> list[Offer]:
        """Offers not answered yet."""
        return self._offers.pending()

    # Human prompts (docs/messaging.md "Human prompts").

    async def ask_human(
        self,
        me: str,
        kind: str,
        question: str,
        *,
        context: str = "",
        schema: dict[str, Any] | None = None,
        choices: list[str] | None = None,
        timeout: float = 60.0,
        prompt_id: str | None = None,
    ) -> dict[str, Any]:
        """Put a question to the human and wait up to ``timeout`` s for the answer."""
        return await self._humans.ask(
            me,
            kind,
            question,
            context=context,
            schema=schema,
            choices=choices,
            timeout=timeout,
            prompt_id=prompt_id,
        )

    async def list_prompts(self, *, everything: bool = False) -> list[dict[str, Any]]:
        """Prompts as the ``list_prompts`` tool shows them."""
        return await self._humans.list(everything=everything)

    async def answer_prompt(self, prompt_id: str, text: str, human: Caller) -> dict[str, Any]:
        """The human's answer (only the human may give it)."""
        return await self._humans.answer(prompt_id, text, human)

    async def open_prompts(self) -> list[PromptRecord]:
        """Prompts that wait for the human."""
        return await self._prompts.list(open_only=True)

    async def settle_prompt(self, prompt_id: str, value: str, by: str) -> None:
        """Record a prompt as answered elsewhere (a dialog closed in its session)."""
        await self._prompts.answer(prompt_id, value, by)
