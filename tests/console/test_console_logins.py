"""Console login codes and sessions, pure (docs/security.md "Console login"): a code is good
once and until it expires; a session is good until its expiry and only under its key."""

from __future__ import annotations

import pytest

from agentcoord.console.logins import MAX_CODES, ConsoleLogins

pytestmark = pytest.mark.unit


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_code_is_good_once_and_until_it_expires() -> None:
    """redeem() is True once per code, False after its TTL, False for an unknown code."""
    clock = Clock()
    logins = ConsoleLogins("token", 120, clock=clock)
    code, expires = logins.issue_code()
    assert expires == clock.now + 120
    assert logins.redeem(code) is True
    assert logins.redeem(code) is False
    late, _ = logins.issue_code()
    clock.now += 120
    assert logins.redeem(late) is False
    assert logins.redeem("guess") is False


def test_unused_codes_are_bounded() -> None:
    """Past MAX_CODES unused codes, the oldest is dropped first."""
    logins = ConsoleLogins("token", 120, clock=Clock())
    codes = [logins.issue_code()[0] for _ in range(MAX_CODES + 1)]
    assert logins.redeem(codes[0]) is False
    assert logins.redeem(codes[-1]) is True


def test_a_session_is_signed_by_its_key_and_expires() -> None:
    """A session value is good under its key until its expiry; another key or a changed
    expiry is refused, and the value holds no part of the key."""
    clock = Clock()
    logins = ConsoleLogins("the-human-token", 120, session_ttl=3600, clock=clock)
    value, max_age = logins.new_session()
    assert max_age == 3600
    assert "the-human-token" not in value
    assert logins.session_ok(value) is True
    assert ConsoleLogins("another-token", 120, clock=clock).session_ok(value) is False
    stamp, mac = value.split(".")
    assert logins.session_ok(f"{int(stamp) + 3600}.{mac}") is False
    assert logins.session_ok("garbage") is False
    clock.now += 3600
    assert logins.session_ok(value) is False
