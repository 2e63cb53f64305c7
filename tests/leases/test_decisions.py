"""The leases service's pure parts: the write guard's decision, the edit-lease step and the
refusal texts, as values in and values out (docs/claims.md "The leases service")."""

from __future__ import annotations

import pytest

from agentcoord.kernel.caller import Caller
from agentcoord.kernel.timetext import human_time
from agentcoord.leases.commit import blockers
from agentcoord.leases.editleases import AUTO_LEASE_PURPOSE, EditLeases, lease_step
from agentcoord.leases.filekeys import FileKey
from agentcoord.leases.guard import Deny, Lease, decide_write, write_blocker
from agentcoord.leases.refusal import claim_text, commit_refusal, deny_text
from agentcoord.leases.sites import Site
from agentcoord.stores.kv import Holder

pytestmark = pytest.mark.unit

ON = EditLeases(True, 600.0)
FK = FileKey("file:/r/.git//src/a.py", "/r/.git", "src/a.py", "/r", "main")


def _holder(
    agent: str, mode: str = "write", purpose: str = "", token: int | None = 7, at: float = 1000.0
) -> Holder:
    return Holder(
        agent=agent,
        mode=mode,  # type: ignore[arg-type]
        ttl=300.0,
        acquired=at,
        expires=at + 300.0,
        token=token,
        purpose=purpose,
    )


def test_another_agents_write_claim_denies_the_write() -> None:
    """A write claim of someone else denies; the writer's own claim and others' read and intent
    claims do not."""
    other = _holder("a")
    assert decide_write([_holder("b"), other], "b", "session", True, ON) == Deny(other)
    mine = _holder("b", "read")
    held = [_holder("a", "read"), _holder("c", "intent"), mine]
    assert decide_write(held, "b", "session", True, ON) == Lease(mine)


def test_only_sessions_and_runners_with_a_leasable_key_take_edit_leases() -> None:
    """A free file is leased to a session or runner; a human, an over-long key or leases
    switched off leave it unleased (allowed, None)."""
    assert decide_write([], "b", "runner", True, ON) == Lease(None)
    assert decide_write([], "human:me", "human", True, ON) is None
    assert decide_write([], "b", "session", False, ON) is None
    assert decide_write([], "b", "session", True, EditLeases(False, 600.0)) is None


def test_a_writer_nobody_is_blocked_by_every_write_claim() -> None:
    """With no writer to own a claim, the first write claim blocks."""
    first = _holder("a")
    assert write_blocker([_holder("x", "read"), first, _holder("b")], None) == first
    assert write_blocker([_holder("x", "read")], None) is None


def test_the_edit_lease_step() -> None:
    """No claim: claim; an explicit claim: keep; a lease renewed a moment ago: keep; an older
    one: renew; one without a token: claim anew."""
    lease = _holder("b", purpose=AUTO_LEASE_PURPOSE, at=1000.0)  # renewed at 1000
    assert lease_step(None, 1000.0, 600.0) == "claim"
    assert lease_step(_holder("b", purpose="refactor"), 5000.0, 600.0) == "keep"
    assert lease_step(lease, 1000.5, 600.0) == "keep"
    assert lease_step(lease, 1001.0, 600.0) == "renew"
    assert lease_step(lease, 1000.25, 2.0) == "renew"  # a tenth of a short quiet period
    no_token = _holder("b", purpose=AUTO_LEASE_PURPOSE, token=None)
    assert lease_step(no_token, 2000.0, 600.0) == "claim"


def test_the_deny_text_names_holder_site_since_intent_and_how_to_ask() -> None:
    """The deny reason names the file with its repository and the holder's site, the holder,
    since when (people's time), their intent and purpose, and send_message."""
    text = deny_text(FK, _holder("a", purpose="auth rewrite"), Site("/r-fix", "fix"), "login")
    assert text == (
        "src/a.py (repo r, worktree /r-fix, branch fix) is claimed for writing by a since "
        f"{human_time(1000.0)}; they are working on: login; claim purpose: auth rewrite. Ask "
        "them with send_message to a, or wait for the claim to be released (check_claims)."
    )


def test_the_deny_text_of_an_edit_lease_says_so_and_no_purpose() -> None:
    """An automatic edit lease is named as such, and its purpose is not repeated; a purpose
    equal to the intent is said once."""
    lease = deny_text(FK, _holder("a", purpose=AUTO_LEASE_PURPOSE), None, "")
    assert f"since {human_time(1000.0)} (an automatic edit lease). Ask" in lease
    assert "claim purpose" not in lease
    same = deny_text(FK, _holder("a", purpose="login"), None, "login")
    assert same.count("login") == 1


def test_the_claim_text_says_who_holds_the_key() -> None:
    """A claim not acquired names the key, the holder, its mode and until when."""
    held = {"resource_key": "lock:db", "agent": "a", "mode": "write", "expires_at": "T"}
    assert claim_text({"acquired": False, "holder": held}) == (
        "not acquired: lock:db is held by a (write) until T"
    )


def test_the_commit_refusal_uses_peoples_times() -> None:
    """Each blocked file's line gives since and until as people's times, and how long ago."""
    found = blockers(
        [("file:/r/.git//a.py", _holder("a"))],
        {"file:/r/.git//a.py": "a.py"},
        Caller("session", "b", "unix"),
        lambda _: "",
    )
    text = commit_refusal(found, Caller("session", "b", "unix"), 1125.0)
    assert (
        f"  a.py: a, since {human_time(1000.0)} (2m5s ago), until {human_time(1300.0)}"
        in text.splitlines()
    )


def test_a_folder_or_glob_claim_of_another_denies_and_ones_own_needs_no_lease() -> None:
    """Another agent's write claim on a folder or glob over the file denies, naming that key;
    its read claim does not; the writer's own write claim on one holds the file, so no edit
    lease is taken; its own read claim on one does not."""
    folder = _holder("a")
    covering = [("file:/r/.git//src/", _holder("x", "read")), ("file:/r/.git//src/", folder)]
    assert decide_write([], "b", "session", True, ON, covering) == Deny(
        folder, "file:/r/.git//src/"
    )
    mine = [("file:/r/.git//src/**/*.py", _holder("b"))]
    assert decide_write([], "b", "session", True, ON, mine) is None
    read = [("file:/r/.git//src/**/*.py", _holder("b", "read"))]
    assert decide_write([], "b", "session", True, ON, read) == Lease(None)


def test_the_deny_text_names_the_folder_that_covers_the_file() -> None:
    """A file denied through a folder claim says which folder is claimed."""
    text = deny_text(FK, _holder("a"), None, "", "src/")
    assert text.startswith("src/a.py (repo r) is inside src/, which is claimed for writing by a")
