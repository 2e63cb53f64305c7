"""Messaging: inboxes, channels, handoff offers and human prompts, over NATS and the object
store (docs/messaging.md "Where things live").

:mod:`.service` (:class:`Messaging`, the one service), :mod:`.sending` (direct messages,
channel posts, broadcasts, inbox reads), :mod:`.channels` (open, close, expiry, routing to the
participants), :mod:`.offers` (the handoff offer protocol), :mod:`.prompts` (questions for the
human and their answers), :mod:`.access` (what messaging needs from per-agent NATS users),
:mod:`.recipients` (who a message may be addressed to).
"""

from __future__ import annotations

from agentcoord.messaging.access import AgentAccess, AgentLogin, NoAgentUsers
from agentcoord.messaging.offers import Offer, OfferBook
from agentcoord.messaging.prompts import answer_prompt
from agentcoord.messaging.recipients import Recipients
from agentcoord.messaging.service import Messaging

__all__ = [
    "AgentAccess",
    "AgentLogin",
    "Messaging",
    "NoAgentUsers",
    "Offer",
    "OfferBook",
    "Recipients",
    "answer_prompt",
]
