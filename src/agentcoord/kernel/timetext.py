"""The one way a time is written for people: local time with its zone (docs/architecture.md
"Times and keys shown to people").

Every time the CLI, the console and the audit text show goes through :func:`human_time`, so a
claim's expiry, an event's moment and a prompt's age read alike everywhere: ``2026-12-02
14:03:07 CET``. Machine output (``--json``, ``structuredContent``) keeps its own ISO strings and
epoch numbers. Pure (docs/architecture.md "Pure rules, thin I/O").
"""

from __future__ import annotations

import datetime as dt
from typing import Any

__all__ = ["human_time"]

_FORMAT = "%Y-%m-%d %H:%M:%S"


def _moment(value: Any) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return dt.datetime.fromtimestamp(value, dt.UTC)
    if isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value)
        except ValueError:
            return None
        # The daemon writes UTC; a bare ISO time is read as UTC too.
        return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
    return None


def human_time(value: Any) -> str:
    """``value`` (epoch seconds, an ISO string or a datetime) as local time with its zone,
    ``YYYY-MM-DD HH:MM:SS ZONE`` (the zone's abbreviation, else its UTC offset); ``-`` for no
    time, and a string that is not a time as it is."""
    if value is None or value == "":
        return "-"
    moment = _moment(value)
    if moment is None:
        return value if isinstance(value, str) else "-"
    local = moment.astimezone()
    zone = local.strftime("%Z") or local.strftime("%z")
    return f"{local.strftime(_FORMAT)} {zone}"
