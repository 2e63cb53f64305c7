"""The messaging service of one daemon: the JetStream bus, the records it writes, open offers,
and the parts that use them (docs/messaging.md "Where things live").

Built once by the composition root with everything it uses, entered as an async context
manager (it opens the ``AGENT_MESSAGES`` stream), and handed to the messaging, handoff and
humans tools, the hooks, the console and agentops.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentcoord.messaging.access import AgentAccess, credentials_view
from agentcoord.messaging.channels import Channels
from agentcoord.messaging.offers import Handoffs, OfferBook
from agentcoord.messaging.prompts import HumanPrompts
from agentcoord.messaging.recipients import Recipients
from agentcoord.messaging.sending import Sending
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.stores.audit import AuditSink
from agentcoord.stores.messagebus import MessageBus, check_agent_id
from agentcoord.stores.records import ChannelRecords, PromptRecord, PromptRecords, TaskRecords

__all__ = ["Messaging"]


class Messaging:
    """Async context manager: inboxes, channels, handoff offers and human prompts.

    ``channels``, ``prompts`` and ``tasks`` are the records (what the console lists);
    ``rooms``, ``humans``, ``handoffs`` and ``mail`` are the logic over them.
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
        self.nc = nc
        self.channels = channels
        self.prompts = prompts
        self.tasks = tasks
        self.access = access
        self.audit_log = audit_log
        self.nats_url = nats_url
        self.recipients = recipients
        self.offers = OfferBook()
        self.bus = MessageBus(nc, replicas=replicas, js_timeout=js_timeout, **retention)
        self.rooms = Channels(channels, self.bus, access, recipients)
        self.mail = Sending(self.bus, self.rooms, recipients)
        self.handoffs = Handoffs(nc, self.bus, self.offers, tasks, audit_log, recipients)
        self.humans = HumanPrompts(nc, prompts, audit_log, late=self._late_answer)

    async def _late_answer(self, rec: PromptRecord, text: str, by: str) -> None:
        """Into the asker's inbox: the answer to a prompt its ask stopped waiting for."""
        question = rec.question if len(rec.question) <= 80 else rec.question[:77] + "..."
        body = f"the human answered your prompt {rec.id} ({question}): {text}"
        # queue_unknown: an asker that ended since still has its inbox.
        await self.mail.to_agent(
            by, rec.agent, pb.MESSAGE_TEXT, body, correlation_id=rec.id, queue_unknown=True
        )

    async def __aenter__(self) -> Messaging:
        await self.bus.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.bus.__aexit__(*exc)

    def emit(self, event: str, agent: str, **data: Any) -> None:
        """Best-effort audit event into AGENT_EVENTS (docs/claims.md "How it works": a failed append
        is logged by the audit log, never a tool error)."""
        self.audit_log.emit(event, agent, **data)

    async def credentials(self, agent: str) -> dict[str, Any]:
        """``agent``'s own NATS login (its inbox consumer exists before it subscribes)."""
        login = await self.access.credentials(check_agent_id(agent))
        await self.bus.ensure_inbox(agent)
        return credentials_view(login, self.nats_url)
