"""NATS KV stores: claims (``agent-claims``) and agent focus (``agent-focus``)."""

from __future__ import annotations

from agentcoord.stores.kv._duration import format_duration, parse_duration
from agentcoord.stores.kv._keys import escape_key, unescape_key
from agentcoord.stores.kv._rules import ClaimPolicy, ClaimRecord, Contention, Holder, parse_mode
from agentcoord.stores.kv.claims import ClaimStore, Granted, NotHolder, StaleToken
from agentcoord.stores.kv.focus import Focus, FocusStore

__all__ = [
    "ClaimPolicy",
    "ClaimRecord",
    "ClaimStore",
    "Contention",
    "Focus",
    "FocusStore",
    "Granted",
    "Holder",
    "NotHolder",
    "StaleToken",
    "escape_key",
    "format_duration",
    "parse_duration",
    "parse_mode",
    "unescape_key",
]
