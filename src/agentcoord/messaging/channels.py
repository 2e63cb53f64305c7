"""Channels: open, join, close, expiry, and routing that follows the participants
(seed 000 "Messaging"; docs/messaging.md "Channels").

An AgentChannel's participants are its record's (the object's ``spec.participants``, so a
``kubectl patch`` counts). Routing a channel to an agent is two grants: the channel subject on
the agent's inbox consumer (:meth:`MessageBus.subscribe_subjects`) and, with per-agent NATS
users, the subscribe permission. Every post re-grants to the participants the record names
before it publishes, so someone added outside the tools gets that post and every later one;
someone taken out gets no post from then on (:meth:`MessageBus.unsubscribe_subjects`; the
ones it was sent as a participant still reach it).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from agentcoord.errors import InvalidArguments, NotFound, StateConflict
from agentcoord.messaging.access import AgentAccess
from agentcoord.messaging.recipients import Recipients
from agentcoord.stores.messagebus import (
    MessageBus,
    channel_subject,
    check_agent_id,
    check_channel_name,
)
from agentcoord.stores.records import ChannelRecord, ChannelRecords, effective_phase

__all__ = ["Channels"]

log = logging.getLogger(__name__)


class Channels:
    """Channel records plus the routing their participants imply."""

    def __init__(
        self, records: ChannelRecords, bus: MessageBus, access: AgentAccess, recipients: Recipients
    ) -> None:
        self._records = records
        self._bus = bus
        self._access = access
        self._recipients = recipients
        # channel -> the participants this daemon last routed it to (None: not yet, so the
        # first route asks the server who takes the subject)
        self._routed: dict[str, frozenset[str]] = {}

    async def join(self, agent: str, subjects: list[str]) -> None:
        """Route ``subjects`` (channels) to ``agent``: its inbox, and its NATS permissions."""
        await self._bus.subscribe_subjects(agent, subjects)
        await self._access.allow(agent, subjects)

    async def route(self, rec: ChannelRecord) -> None:
        """Make sure every participant the record names gets the channel, and nobody else
        (cheap when nothing changed: the grants are set lookups then)."""
        current = []
        for agent in rec.participants:
            try:
                check_agent_id(agent)
            except InvalidArguments:
                # A hand-edited spec (kubectl) may name something no inbox can have: the
                # others still get the post.
                log.warning("channel %s: participant %r is not an agent id", rec.name, agent)
                continue
            current.append(agent)
            await self.join(agent, [rec.subject])
        wanted = frozenset(current)
        before = self._routed.get(rec.name)
        if before == wanted:
            return
        if before is None:
            before = frozenset(await self._bus.subscribers(rec.subject))
        for agent in sorted(before - wanted):
            await self._bus.unsubscribe_subjects(agent, [rec.subject])
        self._routed[rec.name] = wanted

    async def live(self, name: str, me: str) -> ChannelRecord:
        """The channel, if it is open and ``me`` takes part; expiry is enforced here."""
        rec = await self._records.get(check_channel_name(name))
        if rec is None or me not in rec.participants:
            # Same text either way: a non-participant learns nothing about the channel.
            raise NotFound(f"channel {name} does not exist or you are not a participant")
        phase = effective_phase(rec, time.time())
        if phase != rec.phase:
            rec = await self._records.set_phase(name, phase)
        if phase != "Open":
            raise StateConflict(f"channel {name} is {phase.lower()}")
        return rec

    async def open(
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
        """Open (or reopen) ``name`` for ``me`` and ``participants``; ``add`` adds newcomers
        to an existing channel (reopening is idempotent, seed 000). A participant no agent
        has is refused unless ``queue_unknown`` (docs/messaging.md "Recipients")."""
        name = check_channel_name(name)
        wanted = [check_agent_id(a) for a in participants]
        if not wanted:
            raise InvalidArguments("`participants` needs at least one agent")
        if not queue_unknown:
            await self._recipients.check(a for a in wanted if a != me)
        members = list(dict.fromkeys([me, *wanted]))
        now = time.time()
        rec = ChannelRecord(
            name=name,
            subject=channel_subject(name),
            participants=members,
            created_by=me,
            topic=topic,
            ttl_secs=ttl_secs,
            expires_at=now + ttl_secs if ttl_secs else None,
        )
        rec, created = await self._records.create(rec)
        out: dict[str, Any] = {"channel": name, "subject": rec.subject, "created": created}
        if created:
            await self.route(rec)
            rec = await self._records.set_phase(name, "Open")
        else:
            if rec.phase == "Pending" and me in rec.participants:
                # A create that stopped half way (daemon restart): finish it now.
                await self.route(rec)
                await self._records.set_phase(name, "Open")
            rec = await self.live(name, me)
            missing = [a for a in members if a not in rec.participants]
            if missing and add:
                for agent in missing:
                    await self.join(agent, [rec.subject])
                rec = await self._records.add_participants(name, missing)
                out["added"] = missing
            elif missing:
                out["not_added"] = missing
        view = rec.view(now)
        out.update(phase=view["phase"], participants=view["participants"])
        if rec.expires_at:
            out["expires_at"] = rec.expires_at
        return out

    async def close(self, me: str, name: str) -> dict[str, Any]:
        """Move a channel ``me`` takes part in to Closed."""
        rec = await self.live(name, me)
        rec = await self._records.set_phase(rec.name, "Closed")
        return {"channel": rec.name, "phase": rec.phase}

    async def visible(self, me: str, *, everyone: bool) -> list[dict[str, Any]]:
        """The channels ``me`` takes part in (``everyone``: all of them, for the human)."""
        now = time.time()
        return [c.view(now) for c in await self._records.list() if everyone or me in c.participants]
