"""One line of text for one audit event: what ``agentcoord audit``, ``agentcoord tail``, the
``audit`` tool and the console all show (docs/security.md "Every human decision is audited": an
event is rendered one way).

Times are written by :func:`agentcoord.kernel.timetext.human_time` and claim keys by
:func:`agentcoord.leases.keytext.display_key`, as everywhere else people read them
(docs/architecture.md "Times and keys shown to people").

Pure (docs/architecture.md "Pure rules, thin I/O"). It takes an event in any of the shapes it
travels in: as stored and streamed (``{"type", "agent", "ts": epoch seconds, "data": {...}}``, plus
``subject`` on the live stream) or as queried (:meth:`agentcoord.stores.audit.Event.as_dict`: ISO
``ts``, ``seq``, and the data's keys at the top level).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentcoord.kernel.timetext import human_time
from agentcoord.leases.filekeys import FILE_PREFIX
from agentcoord.leases.keytext import display_key

__all__ = ["render_event"]

_META = ("seq", "type", "agent", "ts", "subject", "data", "text")
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@+")


def _shown(value: Any) -> Any:
    """A claim key (in a value or a list of them) as people read it: ``repo:path``."""
    if isinstance(value, str) and value.startswith(FILE_PREFIX):
        return display_key(value)
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return value


def _value(value: Any) -> str:
    value = _shown(value)
    if isinstance(value, str):
        # Bare when unambiguous, JSON-quoted when it holds spaces or '=' (stays one token).
        return value if value and set(value) <= _PLAIN else json.dumps(value)
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def render_event(event: Mapping[str, Any]) -> str:
    """``<local time with zone>  <TYPE>  <agent>  key=value ...`` (details in the order they
    were given; claim keys as ``repo:path``)."""
    nested = event.get("data")
    if isinstance(nested, Mapping):
        details: Mapping[str, Any] = nested
    else:
        details = {k: v for k, v in event.items() if k not in _META}
    kind = event.get("type") or event.get("subject") or "?"
    parts = [human_time(event.get("ts")), str(kind), str(event.get("agent") or "-")]
    text = "  ".join(parts)
    pairs = " ".join(f"{k}={_value(v)}" for k, v in details.items() if v is not None)
    return f"{text}  {pairs}" if pairs else text
