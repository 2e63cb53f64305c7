"""Claim tools through MCP on a real daemon, each caller its own process and session."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

from tests.conftest import Daemon
from tests.tools.session_helpers import (
    finish,
    holding,
    own_call,
    read_results,
    session_call,
    spawn_session,
    unix_request,
)


def _sc(result: dict[str, Any]) -> dict[str, Any]:
    assert not result["isError"], result["content"][0]["text"]
    return result["structuredContent"]  # type: ignore[no-any-return]


def _text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def _wait_for(pred: Any, timeout: float = 60.0) -> None:
    """Wait until ``pred()`` holds; the deadline is generous (a busy machine is slow), so only
    a condition that never comes fails."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in {timeout}s")
        time.sleep(0.05)


def test_tools_listed_with_descriptions(daemon: Daemon) -> None:
    """tools/list carries every claim and discovery tool, each with a short description."""
    reply = unix_request(daemon, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    tools = {t["name"]: t for t in reply["result"]["tools"]}
    ours = [
        "claim", "release", "renew", "heartbeat", "check_claims", "audit",
        "annotate", "find_agents", "list_agents", "get_agent",
    ]  # fmt: skip
    for name in ours:
        assert 0 < len(tools[name]["description"]) <= 200
    assert len(json.dumps([tools[n] for n in ours])) < 4000  # the listing stays cheap
    assert _sc(own_call(daemon, "check_claims", {})) == {"claims": [], "total": 0}


def test_two_sessions_race_one_write_key(daemon: Daemon, claude_bin: Path) -> None:
    """Two session processes racing for one write key: exactly one wins, the other sees it."""
    go = daemon.root / "go"
    call = [("claim", {"resource_key": "file:src/app.py", "ttl": "1m"})]
    procs = [spawn_session(daemon, claude_bin, call, go=go) for _ in range(2)]
    time.sleep(0.5)  # both connected and identified
    go.touch()
    results = [_sc(read_results(p)[0]) for p in procs]
    for p in procs:
        finish(p)
    winners = [r for r in results if r["acquired"]]
    losers = [r for r in results if not r["acquired"]]
    assert len(winners) == 1
    assert len(losers) == 1
    assert losers[0]["holder"]["agent"] == winners[0]["claim"]["agent"]
    assert losers[0]["holder"]["token"] == winners[0]["token"]


def test_read_claims_share_write_waits(daemon: Daemon, claude_bin: Path) -> None:
    """Two readers share a key; a writer then gets contention naming a reader."""
    read = [("claim", {"resource_key": "k", "mode": "read"})]
    with holding(daemon, claude_bin, read) as o1, holding(daemon, claude_bin, read) as o2:
        r1, r2 = _sc(o1[0]), _sc(o2[0])
        assert r1["acquired"]
        assert r2["acquired"]
        assert r1["claim"]["agent"] != r2["claim"]["agent"]
        w = _sc(session_call(daemon, claude_bin, [("claim", {"resource_key": "k"})])[0])
        assert not w["acquired"]
        assert w["holder"]["agent"] in {r1["claim"]["agent"], r2["claim"]["agent"]}
        rows = _sc(own_call(daemon, "check_claims", {"prefix": "k"}))["claims"]
        assert sorted(r["mode"] for r in rows) == ["read", "read"]


def test_bad_mode_and_ttl_are_errors(daemon: Daemon, claude_bin: Path) -> None:
    """A typo'd mode or a malformed ttl is an isError result, not a silent default."""
    bad_mode, bad_ttl, good = session_call(
        daemon,
        claude_bin,
        [
            ("claim", {"resource_key": "k", "mode": "wrte"}),
            ("claim", {"resource_key": "k", "ttl": "5 minutes"}),
            ("claim", {"resource_key": "k", "ttl": "1h30m"}),
        ],
    )
    assert bad_mode["isError"]
    assert "mode" in _text(bad_mode)
    assert bad_ttl["isError"]
    assert "invalid duration" in _text(bad_ttl)
    assert _sc(good)["claim"]["ttl"] == "1h30m"


def test_release_by_non_holder_fails_with_seed_text(daemon: Daemon, claude_bin: Path) -> None:
    """Releasing another agent's claim fails with "claim on <key> is held by <other>, not <me>"."""
    with holding(daemon, claude_bin, [("claim", {"resource_key": "db"})]) as held:
        holder, token = _sc(held[0])["claim"]["agent"], _sc(held[0])["token"]
        out = session_call(
            daemon,
            claude_bin,
            [("whoami", {}), ("release", {"resource_key": "db", "token": token})],
        )
        me = _sc(out[0])["agent"]
        assert out[1]["isError"]
        assert _text(out[1]) == f"claim on db is held by {holder}, not {me}"


def test_agent_argument_cannot_impersonate(daemon: Daemon, claude_bin: Path) -> None:
    """claim, release, renew, heartbeat and annotate with another agent's id all fail."""
    with holding(daemon, claude_bin, [("claim", {"resource_key": "x"})]) as held:
        victim, token = _sc(held[0])["claim"]["agent"], _sc(held[0])["token"]
        out = session_call(
            daemon,
            claude_bin,
            [
                ("claim", {"resource_key": "y", "agent": victim}),
                ("release", {"resource_key": "x", "token": token, "agent": victim}),
                ("renew", {"resource_key": "x", "token": token, "agent": victim}),
                ("heartbeat", {"agent": victim}),
                ("annotate", {"intent": "spoof", "agent": victim}),
            ],
        )
        for result in out:
            assert result["isError"]
            assert "identity mismatch" in _text(result)
        rows = _sc(own_call(daemon, "check_claims", {}))["claims"]
        assert [(r["resource_key"], r["agent"]) for r in rows] == [("x", victim)]


def test_holder_and_token_release_renew(daemon: Daemon, claude_bin: Path) -> None:
    """The holder renews and releases with its token; a wrong token is refused."""
    out = session_call(
        daemon,
        claude_bin,
        [
            ("claim", {"resource_key": "r", "ttl": "10s"}),
            ("renew", {"resource_key": "r", "token": 999999, "ttl": "1m"}),
            ("heartbeat", {}),
        ],
    )
    token = _sc(out[0])["token"]
    assert out[1]["isError"]
    assert _sc(out[2])["renewed"] == ["r"]
    # A later process of a different session is another agent: it cannot renew.
    other = session_call(daemon, claude_bin, [("renew", {"resource_key": "r", "token": token})])
    assert other[0]["isError"]


def test_expiry_releases_with_reason(daemon: Daemon, claude_bin: Path) -> None:
    """A 1s claim goes once its deadline passes and is audited as expired."""
    with holding(daemon, claude_bin, [("claim", {"resource_key": "t", "ttl": "1s"})]) as out:
        assert _sc(out[0])["acquired"]
        _wait_for(lambda: _sc(own_call(daemon, "check_claims", {}))["claims"] == [])

        def reasons() -> list[tuple[str, str]]:
            events = _sc(own_call(daemon, "audit", {"type": "CLAIM_RELEASED"}))["events"]
            return [(e["resource_key"], e["reason"]) for e in events]

        _wait_for(lambda: reasons() != [])  # audit appends are asynchronous
        assert reasons() == [("t", "expired")]


def test_holder_exit_releases_its_claims(daemon: Daemon, claude_bin: Path) -> None:
    """Killing the holder's session process releases its claims, 10 minutes before they would
    expire (audited as holder-exited)."""
    proc = spawn_session(
        daemon,
        claude_bin,
        [("claim", {"resource_key": "a", "ttl": "10m"}), ("claim", {"resource_key": "b"})],
        hold=True,
    )
    try:
        results = read_results(proc)
        assert all(_sc(r)["acquired"] for r in results)
        proc.send_signal(signal.SIGKILL)  # the stand-in claude: the session dies
        proc.wait(5)
        _wait_for(lambda: _sc(own_call(daemon, "check_claims", {}))["claims"] == [])

        def reasons() -> list[tuple[str, str]]:
            events = _sc(own_call(daemon, "audit", {"type": "CLAIM_RELEASED"}))["events"]
            return sorted((e["resource_key"], e["reason"]) for e in events)

        _wait_for(lambda: len(reasons()) == 2)  # audit appends are asynchronous
        assert reasons() == [("a", "holder-exited"), ("b", "holder-exited")]
    finally:
        finish(proc)


def test_daemon_kill_restart_keeps_live_claims(daemon: Daemon, claude_bin: Path) -> None:
    """After kill -9 and restart, a live claim is intact, an expired one is gone, and the
    holder's process is watched again (its exit still releases the claim)."""
    calls = [
        ("claim", {"resource_key": "live", "ttl": "10m"}),
        ("claim", {"resource_key": "short", "ttl": "1s"}),
    ]
    proc = spawn_session(daemon, claude_bin, calls, hold=True)
    try:
        read_results(proc)
        daemon.stop(signal.SIGKILL)
        time.sleep(1.2)
        daemon.start()

        def keys() -> list[str]:
            return [r["resource_key"] for r in _sc(own_call(daemon, "check_claims", {}))["claims"]]

        _wait_for(lambda: keys() == ["live"])
        proc.send_signal(signal.SIGKILL)  # the stand-in claude: the session dies
        proc.wait(5)
        _wait_for(lambda: keys() == [])
    finally:
        finish(proc)


def test_clean_shutdown_keeps_queued_audit_events(daemon: Daemon, claude_bin: Path) -> None:
    """Events emitted right before SIGTERM are in the stream after a restart."""
    with holding(daemon, claude_bin, [("claim", {"resource_key": "a"})]):
        assert daemon.stop() == 0
    daemon.start()
    events = _sc(own_call(daemon, "audit", {"type": "CLAIM_ACQUIRED"}))["events"]
    assert [e["resource_key"] for e in events] == ["a"]


# -- "release {resource_key}": the caller's own claim, a token only fences it ----------------


def test_release_and_renew_take_no_token_in_their_schemas(daemon: Daemon) -> None:
    """tools/list: release and renew require only resource_key; token is optional."""
    reply = unix_request(daemon, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    tools = {t["name"]: t for t in reply["result"]["tools"]}
    for name in ("release", "renew"):
        schema = tools[name]["inputSchema"]
        assert schema["required"] == ["resource_key"]
        assert "token" in schema["properties"]


def test_release_without_token_drops_own_claim(daemon: Daemon, claude_bin: Path) -> None:
    """`release {resource_key}` releases the caller's claim; a second one answers false."""
    out = session_call(
        daemon,
        claude_bin,
        [
            ("claim", {"resource_key": "own", "ttl": "5m"}),
            ("release", {"resource_key": "own"}),
            ("release", {"resource_key": "own"}),
            ("release", {"resource_key": "never-claimed"}),
        ],
    )
    assert _sc(out[0])["acquired"]
    assert _sc(out[1]) == {"released": True}
    assert _sc(out[2]) == {"released": False}
    assert _sc(out[3]) == {"released": False}
    assert _sc(own_call(daemon, "check_claims", {}))["claims"] == []

    def released() -> list[tuple[str, str, int]]:
        events = _sc(own_call(daemon, "audit", {"type": "CLAIM_RELEASED"}))["events"]
        return [(e["resource_key"], e["reason"], e["token"]) for e in events]

    _wait_for(lambda: released() != [])  # audit appends are asynchronous
    assert released() == [("own", "released", _sc(out[0])["token"])]


def test_release_without_token_of_anothers_claim_fails_with_seed_text(
    daemon: Daemon, claude_bin: Path
) -> None:
    """Without a token, releasing another agent's claim fails with the documented text."""
    with holding(daemon, claude_bin, [("claim", {"resource_key": "shared.db"})]) as held:
        holder = _sc(held[0])["claim"]["agent"]
        out = session_call(
            daemon, claude_bin, [("whoami", {}), ("release", {"resource_key": "shared.db"})]
        )
        me = _sc(out[0])["agent"]
        assert out[1]["isError"]
        assert _text(out[1]) == f"claim on shared.db is held by {holder}, not {me}"
        rows = _sc(own_call(daemon, "check_claims", {}))["claims"]
        assert [(r["resource_key"], r["agent"]) for r in rows] == [("shared.db", holder)]


def test_stale_token_is_refused_after_the_lease_was_lost_and_retaken(daemon: Daemon) -> None:
    """A holder whose lease expired and who took it again is not released or renewed by its
    old token; the error names the current grant; the current token still releases it."""
    first = _sc(own_call(daemon, "claim", {"resource_key": "lease", "ttl": "1s"}))
    _wait_for(lambda: _sc(own_call(daemon, "check_claims", {"prefix": "lease"}))["total"] == 0)
    again = _sc(own_call(daemon, "claim", {"resource_key": "lease", "ttl": "5m"}))
    old, new, me = first["token"], again["token"], again["claim"]["agent"]
    assert new > old
    for tool, extra in (("release", {}), ("renew", {"ttl": "10m"})):
        refused = own_call(daemon, tool, {"resource_key": "lease", "token": old, **extra})
        assert refused["isError"]
        assert (
            _text(refused)
            == f"token {old} is stale on lease: {me}'s current grant there is token {new}"
        )
    rows = _sc(own_call(daemon, "check_claims", {"prefix": "lease"}))["claims"]
    assert [(r["agent"], r["token"], r["ttl"]) for r in rows] == [(me, new, "5m")]
    done = own_call(daemon, "release", {"resource_key": "lease", "token": new})
    assert _sc(done) == {"released": True}


def test_renew_without_token_extends_own_claim(daemon: Daemon, claude_bin: Path) -> None:
    """`renew {resource_key}` extends the caller's own grant (same token); renewing nothing
    held, or another's claim, is refused."""
    with holding(daemon, claude_bin, [("claim", {"resource_key": "theirs"})]) as held:
        holder = _sc(held[0])["claim"]["agent"]
        out = session_call(
            daemon,
            claude_bin,
            [
                ("claim", {"resource_key": "mine", "ttl": "1m"}),
                ("renew", {"resource_key": "mine", "ttl": "10m"}),
                ("renew", {"resource_key": "mine"}),
                ("renew", {"resource_key": "nothing"}),
                ("renew", {"resource_key": "theirs"}),
                ("whoami", {}),
            ],
        )
    granted, renewed, again = _sc(out[0]), _sc(out[1]), _sc(out[2])
    me = _sc(out[5])["agent"]
    assert renewed["renewed"] is True
    assert (renewed["claim"]["token"], renewed["claim"]["ttl"]) == (granted["token"], "10m")
    assert renewed["claim"]["expires_at"] > granted["claim"]["expires_at"]
    assert (again["claim"]["token"], again["claim"]["ttl"]) == (granted["token"], "10m")
    assert out[3]["isError"]
    assert _text(out[3]) == "you hold no claim on nothing"
    assert out[4]["isError"]
    assert _text(out[4]) == f"claim on theirs is held by {holder}, not {me}"
