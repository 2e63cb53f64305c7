"""NATS KV stores: claims (``agent-claims``) and agent focus (``agent-focus``)."""

from __future__ import annotations

from agentcoord.kernel.duration import format_duration, parse_duration
from agentcoord.stores.kv._claimrules import (
    ClaimPolicy,
    ClaimRecord,
    Contention,
    Holder,
    Mode,
    compatible,
    parse_mode,
)
from agentcoord.stores.kv._procwatch import ProcKey, proc_key
from agentcoord.stores.kv.claimstore import ClaimStore, Granted, KeyIndex, NotHolder, StaleToken
from agentcoord.stores.kv.focus import Focus, FocusStore
from agentcoord.stores.kv.keys import escape_key, unescape_key

__all__ = [
    "ClaimPolicy",
    "ClaimRecord",
    "ClaimStore",
    "Contention",
    "Focus",
    "FocusStore",
    "Granted",
    "Holder",
    "KeyIndex",
    "Mode",
    "NotHolder",
    "ProcKey",
    "StaleToken",
    "compatible",
    "escape_key",
    "format_duration",
    "parse_duration",
    "parse_mode",
    "proc_key",
    "unescape_key",
]
