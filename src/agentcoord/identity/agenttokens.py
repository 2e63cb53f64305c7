"""Per-agent tokens for generic MCP clients (docs/tokens.md).

The human mints a token for a name (``agentcoord token mint NAME [--for DURATION]``); an HTTP
MCP client that presents it as its bearer is the agent of that name, with its own inbox and
claims, and never the human. Only each token's sha256 digest is kept, in a 0600 file of the
state dir that survives restarts; minting and revoking are audited (``TOKEN_MINTED``,
``TOKEN_REVOKED``), and an expired token is refused as an unknown one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcoord.errors import InvalidArguments, NotFound
from agentcoord.kernel.duration import format_duration, parse_duration
from agentcoord.kernel.files import write_private

if TYPE_CHECKING:
    from agentcoord.stores.audit import AuditSink

__all__ = ["AGENT_TOKENS_FILE", "AgentTokens", "check_token_name"]

log = logging.getLogger(__name__)

AGENT_TOKENS_FILE = "agent-tokens.json"
DEFAULT_SECONDS = 30 * 86400.0  # a token the human forgot about ends by itself
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9._]{0,61}[a-z0-9])?$")
_RESERVED = {"anonymous", "human"}


def check_token_name(name: object) -> str:
    """``name`` when it may be a token's agent: lowercase letters, digits, ``-``, ``.`` and
    ``_``, at most 63, never the human's or ``anonymous``."""
    if not isinstance(name, str) or not _NAME.match(name) or name in _RESERVED:
        raise InvalidArguments(
            f"invalid agent name {name!r}: 1-63 lowercase letters, digits, '-', '.' or '_', "
            "starting and ending with a letter or digit (not 'human' or 'anonymous')"
        )
    return name


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class AgentTokens:
    """The minted tokens, by id: ``{id: {agent, digest, created, expires, by}}``."""

    def __init__(self, path: Path, audit: AuditSink | None = None) -> None:
        self._path = path
        self._audit = audit
        self._rows: dict[str, dict[str, Any]] = {}
        if path.exists():
            try:
                loaded = json.loads(path.read_text())
                self._rows = {k: v for k, v in loaded.items() if isinstance(v, dict)}
            except (OSError, ValueError, AttributeError):
                log.warning("agent token file %s is unreadable; starting with none", path)

    def lookup(self, token: str, now: float | None = None) -> str | None:
        """The agent ``token`` was minted for, None when unknown or expired."""
        digest = _digest(token)
        now = time.time() if now is None else now
        for row in self._rows.values():
            if secrets.compare_digest(row.get("digest", ""), digest):
                return str(row["agent"]) if row.get("expires", 0) > now else None
        return None

    def names(self, now: float | None = None) -> set[str]:
        """The agents a live token names: messages may be addressed to them."""
        now = time.time() if now is None else now
        return {str(r["agent"]) for r in self._rows.values() if r.get("expires", 0) > now}

    def mint(self, agent: object, duration: str | None, by: str) -> dict[str, Any]:
        """A new token for ``agent`` lasting ``duration`` (30 days when None): its row, with
        the token itself, which is shown this once and never stored."""
        name = check_token_name(agent)
        seconds = DEFAULT_SECONDS if duration is None else parse_duration(duration)
        if seconds <= 0:
            raise InvalidArguments(f"--for must be more than 0, not {duration!r}")
        token = "act_" + secrets.token_urlsafe(32)
        ident = "tok-" + secrets.token_hex(4)
        now = time.time()
        row = {"agent": name, "digest": _digest(token), "created": now, "expires": now + seconds}
        self._rows[ident] = {**row, "by": by}
        self._save()
        self._emit("TOKEN_MINTED", by, ident, name, now + seconds)
        return {**self._shown(ident, self._rows[ident], now), "token": token}

    def listing(self, now: float | None = None) -> list[dict[str, Any]]:
        """Every token's row (never the token), oldest first; expired ones say so."""
        now = time.time() if now is None else now
        rows = sorted(self._rows.items(), key=lambda kv: kv[1].get("created", 0))
        return [self._shown(ident, row, now) for ident, row in rows]

    def revoke(self, ident: object, by: str) -> dict[str, Any]:
        """End token ``ident`` at once; its row as it was."""
        if not isinstance(ident, str) or ident not in self._rows:
            raise NotFound(f"no token {ident!r} (`agentcoord token list` shows them)")
        row = self._rows.pop(ident)
        self._save()
        self._emit("TOKEN_REVOKED", by, ident, str(row["agent"]), float(row["expires"]))
        return self._shown(ident, row, time.time())

    @staticmethod
    def _shown(ident: str, row: dict[str, Any], now: float) -> dict[str, Any]:
        left = float(row.get("expires", 0)) - now
        return {
            "id": ident,
            "agent": row.get("agent"),
            "created_at": row.get("created"),
            "expires_at": row.get("expires"),
            "expires_in": format_duration(left) if left > 0 else "expired",
            "by": row.get("by"),
        }

    def _emit(self, event: str, by: str, ident: str, agent: str, expires: float) -> None:
        if self._audit is not None:
            self._audit.emit(event, by, token_id=ident, token_agent=agent, expires=expires)

    def _save(self) -> None:
        write_private(self._path, json.dumps(self._rows))
