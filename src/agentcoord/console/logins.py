"""Console logins: a one-time code for the link, a signed session for the cookie
(docs/security.md "Console login").

``agentcoord console`` asks the daemon (with the human token, in a header) for a code; the link
it prints carries only that code, which is good once and for a short while, so a browser's
history keeps nothing that logs in again. The code is traded for a session cookie whose value
is an expiry and an HMAC of it keyed by the human token: it survives a daemon restart (the same
token), ends at its expiry or when the token is replaced, and is not the token. Pure apart from
the clock and the random source (docs/architecture.md "Pure rules, thin I/O").
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable

__all__ = ["MAX_CODES", "SESSION_TTL", "ConsoleLogins"]

SESSION_TTL = 7 * 24 * 3600  # seconds a console session lasts: a working week and more
MAX_CODES = 64  # unused codes kept; older ones are dropped first
_PURPOSE = b"agentcoord console session v1 "


class ConsoleLogins:
    """One-time login codes (in this daemon's memory) and signed session values."""

    def __init__(
        self,
        key: str,
        code_ttl: float,
        *,
        session_ttl: float = SESSION_TTL,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key = key.encode()
        self._code_ttl = code_ttl
        self._session_ttl = session_ttl
        self._clock = clock
        self._codes: dict[str, float] = {}  # code -> when it expires (epoch seconds)

    def issue_code(self) -> tuple[str, float]:
        """A new code and when it expires (epoch seconds)."""
        now = self._clock()
        self._codes = {c: t for c, t in self._codes.items() if t > now}
        while len(self._codes) >= MAX_CODES:
            self._codes.pop(next(iter(self._codes)))
        code = secrets.token_urlsafe(24)
        expires = now + self._code_ttl
        self._codes[code] = expires
        return code, expires

    def redeem(self, code: str) -> bool:
        """Whether ``code`` is good; either way it is good no more."""
        expires = self._codes.pop(code, None)
        return expires is not None and self._clock() < expires

    def _sign(self, expires: int) -> str:
        return hmac.new(self._key, _PURPOSE + str(expires).encode(), hashlib.sha256).hexdigest()

    def new_session(self) -> tuple[str, int]:
        """A session cookie's value and its lifetime in seconds (the cookie's Max-Age)."""
        expires = int(self._clock() + self._session_ttl)
        return f"{expires}.{self._sign(expires)}", int(self._session_ttl)

    def session_ok(self, value: str) -> bool:
        """Whether ``value`` is a session this key signed that has not expired."""
        stamp, _, mac = value.partition(".")
        if not stamp.isdigit() or not mac:
            return False
        if not hmac.compare_digest(mac, self._sign(int(stamp))):
            return False
        return self._clock() < int(stamp)
