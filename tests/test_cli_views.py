"""The human CLI views against a real daemon: readable tables, --json, and a live tail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import Daemon
from tests.tools.session_helpers import finish, read_results, spawn_session


def _cli(d: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcoord", *args],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_claims_agents_channels_audit_views(daemon: Daemon, claude_bin: Path) -> None:
    """A session's claim, focus and channel show in `claims`, `agents`, `channels`, `audit`."""
    holder = spawn_session(
        daemon,
        claude_bin,
        [
            ("annotate", {"intent": "migrating the billing schema"}),
            ("claim", {"resource_key": "db:billing", "mode": "write", "purpose": "migration"}),
            # ops-1 joins later: queue_unknown (docs/messaging.md "Recipients")
            ("open_channel", {"name": "billing", "participants": ["ops-1"], "queue_unknown": True}),
            ("whoami", {}),
        ],
        hold=True,
    )
    try:
        results = read_results(holder)
        assert all(not r["isError"] for r in results), results
        me = results[3]["structuredContent"]["agent"]
        claims = _cli(daemon, "claims")
        assert claims.returncode == 0, claims.stderr
        header, row = claims.stdout.splitlines()[:2]
        assert header.split() == ["KEY", "HOLDER", "MODE", "EXPIRES", "PURPOSE"]
        assert row.split()[:3] == ["db:billing", me, "write"]
        data = json.loads(_cli(daemon, "claims", "db:", "--json").stdout)
        assert [c["resource_key"] for c in data["claims"]] == ["db:billing"]
        agents = _cli(daemon, "agents")
        assert me in agents.stdout
        assert "migrating the billing schema" in agents.stdout
        channels = json.loads(_cli(daemon, "channels", "--json").stdout)["channels"]
        assert channels[0]["name"] == "billing"
        assert set(channels[0]["participants"]) == {me, "ops-1"}
        audit = json.loads(_cli(daemon, "audit", "--type", "CLAIM_ACQUIRED", "--json").stdout)
        assert any(e["agent"] == me for e in audit["events"])
    finally:
        finish(holder)


def test_tail_follows_new_events(daemon: Daemon, claude_bin: Path) -> None:
    """`agentcoord tail --json` prints an event that happens after it started."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentcoord", "tail", "--json"],
        env=daemon.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        assert "following the audit log" in proc.stderr.readline()  # subscribed before acting
        holder = spawn_session(
            daemon, claude_bin, [("claim", {"resource_key": "tail:key", "ttl": "1m"})], hold=True
        )
        try:
            assert proc.stdout is not None
            for _ in range(20):
                event = json.loads(proc.stdout.readline())
                if event.get("type") == "CLAIM_ACQUIRED":
                    break
            assert event["type"] == "CLAIM_ACQUIRED"
            assert "tail:key" in json.dumps(event)
        finally:
            finish(holder)
    finally:
        proc.kill()
        proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def test_view_without_daemon_is_a_clear_error(tmp_path: Path) -> None:
    """With no daemon, a view fails with a one-line message saying how to start one, exit 69
    (EX_UNAVAILABLE, README "Exit codes")."""
    from tests.conftest import make_env

    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "claims"],
        env=make_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 69
    (line,) = out.stderr.splitlines()
    assert "no daemon is listening" in line
    assert "agentcoord serve" in line
