"""When a waiting session is worth a desktop notice (pure; docs/activity.md "Desktop
notices").

A notice names the session, its repository and why it waits. It is said once per wait: the
same wait (the same session, state, tool and input) is not announced again within
``repeat`` seconds, so a session that asks the same question over and over is one notice,
and a new question is a new one. Quiet hours (``notify_quiet_hours = "22:00-07:00"``, local
time; a window may cross midnight) hold every notice; nothing is queued for later, since the
console and ``agentcoord agents`` show who waits whenever one looks.
"""

from __future__ import annotations

import re
from collections.abc import Hashable

from agentcoord.errors import ConfigError

__all__ = ["NoticeGate", "in_window", "parse_quiet_hours"]

_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")
_MAX_KEYS = 4096


def parse_quiet_hours(text: str) -> tuple[int, int] | None:
    """``"HH:MM-HH:MM"`` as (start, end) minutes after midnight; ``""`` is None (never quiet);
    anything else is a :class:`ConfigError` that shows the form."""
    if not text.strip():
        return None
    found = _WINDOW.match(text)
    if found is None:
        raise ConfigError(
            f"notify_quiet_hours must be HH:MM-HH:MM (e.g. 22:00-07:00), not {text!r}"
        )
    h1, m1, h2, m2 = (int(g) for g in found.groups())
    if h1 > 23 or h2 > 23 or m1 > 59 or m2 > 59:
        raise ConfigError(f"notify_quiet_hours has a time that is not on a clock: {text!r}")
    return h1 * 60 + m1, h2 * 60 + m2


def in_window(window: tuple[int, int] | None, minute: int) -> bool:
    """Whether ``minute`` (after local midnight) falls in ``window`` (start inclusive, end
    exclusive; a window whose end is before its start crosses midnight)."""
    if window is None:
        return False
    start, end = window
    if start == end:
        return False
    if start < end:
        return start <= minute < end
    return minute >= start or minute < end


class NoticeGate:
    """Says whether a notice for ``key`` goes out now, remembering what went out."""

    def __init__(self, repeat: float = 600.0) -> None:
        self._repeat = repeat
        self._sent: dict[Hashable, float] = {}

    def admit(self, key: Hashable, now: float) -> bool:
        last = self._sent.get(key)
        if last is not None and now - last < self._repeat:
            return False
        self._sent[key] = now
        if len(self._sent) > _MAX_KEYS:
            cutoff = now - self._repeat
            self._sent = {k: t for k, t in self._sent.items() if t >= cutoff}
        return True
