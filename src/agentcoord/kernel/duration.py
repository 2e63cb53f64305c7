"""Go-style durations (``90s``, ``5m``, ``1h30m``, ``1.5h``, ``250ms``) as a pure function.

Every Go ``time.ParseDuration`` form parses and anything else is an error, never a silent "no
expiry" (docs/claims.md "Rules", docs/tools.md "Conventions").
"""

from __future__ import annotations

import re

from agentcoord.errors import InvalidArguments

__all__ = ["format_duration", "parse_duration"]

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # U+00B5 micro sign, as Go accepts
    "μs": 1e-6,  # U+03BC greek mu, as Go accepts
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string; raises :class:`InvalidArguments` on anything else.

    As in Go: an optional sign, then one or more ``<number><unit>`` parts; ``"0"`` alone is
    zero; a bare number without a unit is an error.
    """
    raw = text
    text = text.strip()
    sign = 1.0
    if text[:1] in ("+", "-"):
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:]
    if text == "0":
        return 0.0
    if not text:
        raise InvalidArguments(f"invalid duration {raw!r} (use e.g. 90s, 5m, 1h30m)")
    total = 0.0
    pos = 0
    while pos < len(text):
        match = _PART.match(text, pos)
        if match is None:
            raise InvalidArguments(f"invalid duration {raw!r} (use e.g. 90s, 5m, 1h30m)")
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    return sign * total


def format_duration(seconds: float) -> str:
    """A compact Go-style rendering (``1h30m``, ``90s`` reads as ``1m30s``, ``0.5s``)."""
    if seconds <= 0:
        return "0s"
    whole = int(seconds)
    frac = seconds - whole
    if frac > 1e-9 and whole < 60:
        return f"{seconds:g}s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    out = ""
    if hours:
        out += f"{hours}h"
    if minutes:
        out += f"{minutes}m"
    if secs or not out:
        out += f"{secs}s"
    return out
