"""DNS-rebinding protection: which ``Host`` and ``Origin`` values a loopback server accepts.

MCP streamable HTTP (2025-11-25) says servers MUST validate Origin and answer 403; the
conformance suite also sends a foreign ``Host``. Pure functions, unit-tested.
"""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["host_allowed", "origin_allowed"]

_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def _hostname(authority: str) -> str | None:
    try:
        parts = urlsplit(f"//{authority}")
        _ = parts.port  # raises ValueError on a malformed port
    except ValueError:
        return None
    return parts.hostname


def host_allowed(host: str | None) -> bool:
    """True for a missing Host (HTTP/1.0) or a loopback name with any port."""
    if host is None:
        return True
    name = _hostname(host.strip())
    return name is not None and name.lower() in _LOOPBACK_NAMES


def origin_allowed(origin: str | None) -> bool:
    """True for no Origin (non-browser clients) or an http(s) origin on loopback."""
    if origin is None:
        return True
    try:
        parts = urlsplit(origin.strip())
        _ = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    return parts.hostname.lower() in _LOOPBACK_NAMES
