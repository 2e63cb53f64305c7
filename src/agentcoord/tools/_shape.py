"""Results shaped for the model (docs/claude-code.md "Results for the model").

Claude Code hands a successful result to the model as its ``structuredContent`` JSON, never
the text rendering (docs/claude-code.md "Results for the model"), so every field an agent gets costs
context. An agent's result keeps every field docs/tools.md names and what it needs to act on; the
human's (the CLI's tables and ``--json``, the console) keeps everything: the tools shape by the
caller's kind, so the CLI passes nothing extra. Pure functions over values.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Any

from agentcoord.kernel.caller import Caller

__all__ = ["compact", "for_model", "short_time"]


def for_model(caller: Caller) -> bool:
    """Whether ``caller``'s results are read by a model: every caller but the human."""
    return caller.kind != "human"


def _empty(value: Any) -> bool:
    if value is None or value is False:
        return True
    return isinstance(value, str | list | tuple | dict) and not value


def compact(row: dict[str, Any], keep: Iterable[str] = ()) -> dict[str, Any]:
    """``row`` without its empty fields (None, False, "", [], {}; a 0 stays), except those in
    ``keep`` (the documented fields stay even when empty: they are the contract)."""
    kept = set(keep)
    return {k: v for k, v in row.items() if k in kept or not _empty(v)}


def short_time(value: float | str | None) -> str | None:
    """An ISO 8601 UTC time to the second (``2026-12-01T12:05:44Z``) from epoch seconds or a
    longer ISO string; None stays None."""
    if value is None:
        return None
    if isinstance(value, str):  # YYYY-MM-DDTHH:MM:SS[.fff](Z|+00:00); anything else as it is
        utc = value.endswith(("Z", "+00:00"))
        base = value.removesuffix("Z").removesuffix("+00:00").partition(".")[0]
        return base + "Z" if utc and len(base) == 19 else value
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(math.floor(value)))
