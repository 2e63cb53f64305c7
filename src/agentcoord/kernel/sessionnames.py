"""How a session agent is named: one pure rule for every directory (a session's name is
readable, ``<dir>-<n>``: docs/security.md "By transport").

A session's kind says what its name reads as (Claude Code: the basename of its cwd,
:mod:`agentcoord.identity.kinds`); this module makes that a name no other Agent has: lower-case
and DNS-label safe (an object name and a NATS subject token at once), numbered from 1, and
host-qualified when daemons on several hosts share one NATS (docs/one-host-to-many.md "What
runs where"). The in-memory directory (:mod:`.directory`) and the Agent-object directory
(``stores/objects/agentdirectory.py``) both name sessions with :func:`session_name`.

A CLI that names its sessions itself (Claude Code's registry: ``<dir>-<2 hex>``) gives that name
as ``native``: the agent takes it as it is, so the CLI's own list of sessions and agentcoord's
agree (docs/claude-code.md "Names"), unless it is not a valid name or another Agent has it.
"""

from __future__ import annotations

import re
from collections.abc import Container

__all__ = ["host_suffix", "native_ok", "session_name", "session_stem"]

_STEM_BAD = re.compile(r"[^a-z0-9-]+")
_STEM_MAX = 40  # leaves room for "-<n>--<host>" within a 63-character DNS label
_FALLBACK = "session"
_NATIVE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?")  # a stem-sized DNS label


def session_stem(base: str | None) -> str:
    """The readable part of a session agent's name from ``base`` (what its kind says the
    session reads as): lower-case, runs of anything but ``a-z0-9-`` as one ``-``, at most 40
    characters, ``session`` when nothing is left."""
    stem = _STEM_BAD.sub("-", (base or "").lower()).strip("-")[:_STEM_MAX].strip("-")
    return stem or _FALLBACK


def host_suffix(host: str | None) -> str:
    """What a session agent's name ends with when several hosts share one NATS: ``--<host>``,
    valid in an object name and a NATS subject token (no dots, no ``@``); docs/one-host-to-many.md
    "What runs where"."""
    return f"--{host}" if host else ""


def native_ok(native: str | None) -> bool:
    """Whether the CLI's own name for a session can be an agent's name as it is: lower-case
    ``a-z0-9-``, no ``--`` (kept for the host suffix), at most 40 characters, starting and ending
    with a letter or digit."""
    return bool(native and _NATIVE.fullmatch(native) and "--" not in native)


def session_name(
    base: str | None, taken: Container[str], host: str | None = None, native: str | None = None
) -> str:
    """The name of a new session agent: ``native`` (``<native>--<host>`` with a host) when the
    CLI named the session, the name is valid (:func:`native_ok`) and not in ``taken``; else
    ``<stem>-<n>`` (``<stem>-<n>--<host>``), ``n`` the smallest from 1 that makes a name not in
    ``taken``."""
    stem, suffix = session_stem(base), host_suffix(host)
    if native_ok(native) and f"{native}{suffix}" not in taken:
        return f"{native}{suffix}"
    n = 1
    while f"{stem}-{n}{suffix}" in taken:
        n += 1
    return f"{stem}-{n}{suffix}"
