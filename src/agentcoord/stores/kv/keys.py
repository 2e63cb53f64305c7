"""Reversible escaping of resource keys into the NATS KV key charset.

Mapping everything outside ``[-/_=.a-zA-Z0-9]`` to ``_`` would let ``file:a/b`` and ``file_a/b``
share one lease (docs/claims.md "Rules"). Here ``[A-Za-z0-9_/-]`` pass through and every other byte
of the UTF-8 encoding (``=`` and ``.`` included) becomes ``=XX`` (upper-case hex). The mapping is
injective, so two different keys never share a lease, and :func:`unescape_key` inverts it. Escaping
``.`` also means no empty subject tokens, so every non-empty key is a valid KV key.
"""

from __future__ import annotations

import re

from agentcoord.errors import InvalidArguments

__all__ = ["MAX_KEY_BYTES", "MAX_KEY_CHARS", "escape_key", "unescape_key"]

MAX_KEY_CHARS = 512
# Each byte escapes to at most three characters: 3 KiB of subject leaves room in nats-server's
# 4 KiB control line (docs/security.md "Input at the boundary").
MAX_KEY_BYTES = 1024
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_/-")
_ESCAPE = re.compile(r"=([0-9A-F]{2})")
_ALL_SAFE = re.compile(r"[A-Za-z0-9_/-]+")


def escape_key(key: str) -> str:
    """The KV key for resource ``key``; empty or over-long keys are an error."""
    if not key:
        raise InvalidArguments("`resource_key` is required")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidArguments(f"`resource_key` is longer than {MAX_KEY_CHARS} characters")
    if _ALL_SAFE.fullmatch(key):
        return key  # the common case: nothing to escape
    raw = key.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_KEY_BYTES:
        raise InvalidArguments(f"`resource_key` is longer than {MAX_KEY_BYTES} bytes in UTF-8")
    return "".join(chr(b) if b in _SAFE else f"={b:02X}" for b in raw)


def unescape_key(escaped: str) -> str:
    """The resource key an :func:`escape_key` result came from."""
    if "=" not in escaped:
        return escaped  # nothing was escaped (the common case)
    out = bytearray()
    pos = 0
    for match in _ESCAPE.finditer(escaped):
        out += escaped[pos : match.start()].encode("ascii")
        out.append(int(match.group(1), 16))
        pos = match.end()
    out += escaped[pos:].encode("ascii")
    return out.decode("utf-8", "surrogatepass")
