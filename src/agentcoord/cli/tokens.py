"""``agentcoord token``: the human's tokens for generic MCP clients (docs/tokens.md).

``token mint NAME [--for DURATION]`` prints a new token once, ``token list`` lists them (never
the token) and ``token revoke ID`` ends one, through the daemon's ``agentcoord/tokens`` method
with the human token (the daemon decides whether this process may be the human).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from agentcoord.client.rpc import call_unix
from agentcoord.identity.humanproof import read_human_token
from agentcoord.kernel.config import Config
from agentcoord.kernel.timetext import human_time

__all__ = ["token"]

METHOD = "agentcoord/tokens"


def _call(cfg: Config, params: dict[str, Any]) -> Any:
    return call_unix(cfg.socket_path, METHOD, params, token=read_human_token(cfg.state_dir))


def _table(rows: list[dict[str, Any]]) -> str:
    from agentcoord.cli.views import format_table

    table = [
        [
            r["id"],
            r["agent"],
            human_time(r.get("created_at")),
            f"{human_time(r.get('expires_at'))} ({r.get('expires_in')})",
            r.get("by"),
        ]
        for r in rows
    ]
    return format_table(["id", "agent", "minted", "expires", "by"], table)


def token(cfg: Config, op: str, arg: str | None, duration: str | None, as_json: bool) -> int:
    """Run one ``token`` command; its output on stdout (hints on stderr)."""
    if op == "list":
        rows = _call(cfg, {"op": "list"})["tokens"]
        if as_json:
            print(json.dumps(rows, indent=2))
        elif not rows:
            print("no tokens: `agentcoord token mint NAME` mints one", file=sys.stderr)
        else:
            print(_table(rows))
        return 0
    if op == "revoke":
        row = _call(cfg, {"op": "revoke", "id": arg})["token"]
        print(json.dumps(row, indent=2) if as_json else f"revoked {row['id']} ({row['agent']})")
        return 0
    params: dict[str, Any] = {"op": "mint", "agent": arg}
    if duration is not None:
        params["duration"] = duration
    row = _call(cfg, params)["token"]
    if as_json:
        print(json.dumps(row, indent=2))
        return 0
    print(row["token"])
    print(
        f"agent {row['agent']} until {human_time(row['expires_at'])} (id {row['id']}): send it "
        "as `Authorization: Bearer <token>` to the daemon's /mcp; it is shown only now; "
        f"`agentcoord token revoke {row['id']}` ends it",
        file=sys.stderr,
    )
    return 0
