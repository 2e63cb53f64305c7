"""The messaging services of one daemon: the JetStream bus, record seams and open offers.

Built in :func:`agentcoord.daemon.run._start` as an async context manager and hung on
``App.messaging``; tools reach it through :func:`require`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agentcoord.errors import ToolError
from agentcoord.stores.audit import AuditSink
from agentcoord.stores.messagebus import MessageBus
from agentcoord.stores.records import (
    ChannelRecords,
    MemoryChannelRecords,
    MemoryPromptRecords,
    MemoryTaskRecords,
    PromptRecords,
    TaskRecords,
)

if TYPE_CHECKING:
    from agentcoord.daemon.app import App
    from agentcoord.daemon.natsusers import AgentAccess

__all__ = ["Messaging", "Offer", "OfferBook", "require"]

log = logging.getLogger(__name__)

OfferState = Literal["open", "accepted", "rejected", "expired"]


@dataclass
class Offer:
    """A handoff offer waiting for its successor's answer."""

    id: str
    from_agent: str
    to_agent: str
    task: str
    context: dict[str, Any]
    deadline: float
    state: OfferState = "open"
    successor_task: str | None = None


class OfferBook:
    """Open offers by id. ``settle`` is the one atomic transition out of ``open``."""

    def __init__(self) -> None:
        self._offers: dict[str, Offer] = {}

    def add(self, offer: Offer) -> None:
        self._offers[offer.id] = offer

    def get(self, offer_id: str) -> Offer | None:
        return self._offers.get(offer_id)

    def settle(self, offer_id: str, state: OfferState) -> bool:
        """Move an open offer to ``state``; False when it was settled already."""
        offer = self._offers.get(offer_id)
        if offer is None or offer.state != "open":
            return False
        offer.state = state
        return True

    def drop(self, offer_id: str) -> None:
        self._offers.pop(offer_id, None)

    def pending(self) -> list[Offer]:
        """Offers still waiting for an answer (the console's "who waits on whom")."""
        return [o for o in self._offers.values() if o.state == "open"]


@dataclass
class Messaging:
    """Async context manager holding what the messaging tools share."""

    nc: Any
    channels: ChannelRecords = field(default_factory=MemoryChannelRecords)
    prompts: PromptRecords = field(default_factory=MemoryPromptRecords)
    tasks: TaskRecords = field(default_factory=MemoryTaskRecords)
    offers: OfferBook = field(default_factory=OfferBook)
    access: AgentAccess | None = None  # per-agent NATS users (embedded NATS only)
    audit_log: AuditSink | None = None  # the AGENT_EVENTS stream (stores/audit.py)
    nats_url: str = ""
    replicas: int = 1  # JetStream replicas of AGENT_MESSAGES (3 on a cluster)
    js_timeout: float = 5.0  # longer on a cluster (leader elections)
    # MessageBus's max_age, max_msgs, max_bytes (docs/reliability.md "State retention")
    retention: dict[str, Any] = field(default_factory=dict)
    bus: MessageBus = field(init=False)

    def __post_init__(self) -> None:
        self.bus = MessageBus(
            self.nc, replicas=self.replicas, js_timeout=self.js_timeout, **self.retention
        )

    async def __aenter__(self) -> Messaging:
        await self.bus.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.bus.__aexit__(*exc)

    def emit(self, event: str, agent: str, **data: Any) -> None:
        """Best-effort audit event into AGENT_EVENTS (seed 000 "Durable state": a failed
        append is logged by the audit log, never a tool error)."""
        if self.audit_log is not None:
            self.audit_log.emit(event, agent, **data)

    async def join(self, agent: str, subjects: list[str]) -> None:
        """Route ``subjects`` (channels) to ``agent``: its inbox, and its NATS permissions."""
        await self.bus.subscribe_subjects(agent, subjects)
        if self.access is not None:
            await self.access.allow(agent, subjects)


def require(app: App) -> Messaging:
    messaging = getattr(app, "messaging", None)
    if messaging is None:
        raise ToolError("messaging is not available (NATS is not connected)")
    return messaging  # type: ignore[no-any-return]
