"""Per-agent tokens for generic MCP clients (docs/tokens.md), on the real daemon: minted by the
human through the CLI, presented as a bearer over HTTP, an agent of that name and never the
human."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.conftest import Daemon
from tests.daemon.test_http_transport import INIT, post
from tests.tools.conftest import cli


def mint(daemon: Daemon, name: str, *extra: str) -> dict[str, Any]:
    out = cli(daemon, "token", "mint", name, "--json", *extra)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def call(daemon: Daemon, token: str, tool: str, **arguments: Any) -> tuple[int, dict[str, Any]]:
    """tools/call ``tool`` over HTTP with ``token`` as the bearer: (status, the JSON body)."""
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    status, _, data = post(daemon, body, {"authorization": f"Bearer {token}"})
    return status, json.loads(data)


def result(reply: dict[str, Any]) -> dict[str, Any]:
    assert "result" in reply, reply
    return reply["result"]["structuredContent"]  # type: ignore[no-any-return]


def test_a_minted_token_makes_an_http_client_that_agent_with_its_own_inbox(
    daemon: Daemon,
) -> None:
    """A client bearing a minted token is the agent of that name: whoami says so, a message
    sent to that name reaches its inbox, and the token's digest alone is on disk (0600)."""
    row = mint(daemon, "inspector")
    status, _, data = post(daemon, INIT, {"authorization": f"Bearer {row['token']}"})
    assert status == 200, data
    status, reply = call(daemon, row["token"], "whoami")
    assert status == 200, reply
    assert result(reply)["agent"] == "inspector", reply
    other = mint(daemon, "reviewer")
    status, reply = call(daemon, other["token"], "send", to="inspector", text="look at auth.py")
    assert status == 200, reply
    _, reply = call(daemon, row["token"], "inbox")
    got = result(reply)["messages"]
    assert [(m["from"], m["text"]) for m in got] == [("reviewer", "look at auth.py")], got
    stored = daemon.state_dir / "agent-tokens.json"
    assert row["token"] not in stored.read_text()
    assert os.stat(stored).st_mode & 0o777 == 0o600


def test_a_minted_token_is_never_the_human(daemon: Daemon) -> None:
    """The human-only answer_prompt is refused to a minted token's client, and that client
    cannot mint tokens itself."""
    row = mint(daemon, "inspector")
    status, reply = call(daemon, row["token"], "answer_prompt", prompt_id="p-1", answer="yes")
    assert status == 200, reply
    assert reply["result"]["isError"] is True, reply
    assert "human" in reply["result"]["content"][0]["text"], reply
    mint_body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "agentcoord/tokens",
        "params": {"op": "mint", "agent": "sneaky"},
    }
    _, _, data = post(daemon, mint_body, {"authorization": f"Bearer {row['token']}"})
    assert b"only the human manages tokens" in data, data
    assert "sneaky" not in cli(daemon, "token", "list", "--json").stdout


def test_revoked_and_expired_tokens_are_refused_and_audited(daemon: Daemon) -> None:
    """A revoked token and an expired one are refused as unknown; mint and revoke are each an
    audit event naming the token's agent."""
    row = mint(daemon, "inspector")
    short = mint(daemon, "brief", "--for", "1ms")
    assert call(daemon, row["token"], "whoami")[0] == 200
    out = cli(daemon, "token", "revoke", row["id"])
    assert out.returncode == 0, out.stderr
    status, reply = call(daemon, row["token"], "whoami")
    assert status == 401, reply
    assert "unknown bearer token" in json.dumps(reply)
    status, reply = call(daemon, short["token"], "whoami")
    assert status == 401, reply
    listing = json.loads(cli(daemon, "token", "list", "--json").stdout)
    assert [(r["agent"], r["expires_in"]) for r in listing] == [("brief", "expired")], listing
    audit = cli(daemon, "audit", "--json")
    assert audit.returncode == 0, audit.stderr
    shown = json.loads(audit.stdout)
    events = shown if isinstance(shown, list) else shown["events"]
    seen = {(e["type"], e.get("token_agent")) for e in events}
    assert {("TOKEN_MINTED", "inspector"), ("TOKEN_REVOKED", "inspector")} <= seen, seen


def test_tokens_outlive_a_daemon_restart(daemon: Daemon) -> None:
    """A token minted before a restart still names its agent after it (the digests are kept
    in the state dir)."""
    row = mint(daemon, "inspector")
    daemon.stop()
    daemon.start()
    status, reply = call(daemon, row["token"], "whoami")
    assert status == 200, reply
    assert result(reply)["agent"] == "inspector"


def test_bad_names_and_durations_get_a_clear_error(daemon: Daemon, tmp_path: Path) -> None:
    """An invalid agent name, the human's, and a bad duration are refused, saying why."""
    for name, why in (("Bad Name", "invalid agent name"), ("human", "invalid agent name")):
        out = cli(daemon, "token", "mint", name)
        assert out.returncode != 0, name
        assert why in out.stderr, (name, out.stderr)
    out = cli(daemon, "token", "mint", "ok", "--for", "soon")
    assert out.returncode != 0
    assert "invalid duration" in out.stderr, out.stderr
