"""``agentcoord allow``: the human's standing approvals (docs/approvals.md).

``allow PATTERN [--repo DIR | --session NAME] [--for DURATION]`` grants, ``allow --list`` lists
and ``allow --revoke ID`` revokes, through the daemon's ``agentcoord/approvals`` method with
the human token (the daemon decides whether this process may be the human).
"""

from __future__ import annotations

import json
import os
from typing import Any

from agentcoord.client.rpc import call_unix
from agentcoord.errors import InvalidArguments
from agentcoord.identity.humanproof import read_human_token
from agentcoord.kernel.config import Config
from agentcoord.kernel.timetext import human_time

__all__ = ["allow", "approvals_table", "grant_params", "granted_line"]

METHOD = "agentcoord/approvals"


def _call(cfg: Config, params: dict[str, Any]) -> Any:
    return call_unix(cfg.socket_path, METHOD, params, token=read_human_token(cfg.state_dir))


def _scope(row: dict[str, Any]) -> str:
    scope = row.get("scope")
    if scope == "repository":
        return f"repository {row.get('label')}"
    if scope == "session":
        return f"session {row.get('label')}"
    return "all sessions"


def approvals_table(rows: list[dict[str, Any]]) -> str:
    """The approvals as the CLI shows them: id, rule, scope, expiry, uses, who granted."""
    from agentcoord.cli.views import format_table

    table = [
        [
            r["id"],
            r["rule"],
            _scope(r),
            f"{human_time(r.get('expires_at'))} (in {r.get('expires_in')})",
            r.get("uses", 0),
            human_time(r.get("last_used")) if r.get("last_used") else "-",
            r.get("granted_by"),
        ]
        for r in rows
    ]
    return format_table(["id", "rule", "scope", "expires", "uses", "last used", "by"], table)


def allow(
    cfg: Config,
    pattern: str | None,
    *,
    repo: str | None,
    session: str | None,
    duration: str | None,
    list_them: bool,
    revoke: str | None,
    as_json: bool,
) -> int:
    """Run one ``allow`` command; its output on stdout (hints on stderr)."""
    import sys

    chosen = [x for x in (pattern is not None, list_them, revoke is not None) if x]
    if len(chosen) != 1:
        raise InvalidArguments("give a PATTERN to grant, or --list, or --revoke ID (one of them)")
    if (list_them or revoke is not None) and (repo or session or duration):
        raise InvalidArguments("--repo, --session and --for go with a PATTERN to grant")
    if list_them:
        rows = _call(cfg, {"op": "list"})["approvals"]
        if as_json:
            print(json.dumps(rows, indent=2))
        elif not rows:
            print(
                "no standing approvals: `agentcoord allow 'Bash(npm test:*)' --repo .` grants one",
                file=sys.stderr,
            )
        else:
            print(approvals_table(rows))
        return 0
    if revoke is not None:
        row = _call(cfg, {"op": "revoke", "id": revoke})["approval"]
        if as_json:
            print(json.dumps(row, indent=2))
        else:
            print(f"revoked {row['id']}: {row['rule']} for {_scope(row)} (used {row['uses']}x)")
        return 0
    params: dict[str, Any] = {"op": "grant", "rule": pattern}
    if repo is not None:
        # The daemon finds the repository itself; it gets an absolute path to look in.
        params["repo"] = os.path.abspath(repo)
    if session is not None:
        params["session"] = session
    if duration is not None:
        params["duration"] = duration
    row = grant_params(cfg, params)
    print(json.dumps(row, indent=2) if as_json else granted_line(row))
    return 0


def grant_params(cfg: Config, params: dict[str, Any]) -> dict[str, Any]:
    """Grant through the daemon (``op: grant``); the approval it made."""
    row: dict[str, Any] = _call(cfg, params)["approval"]
    return row


def granted_line(row: dict[str, Any]) -> str:
    """``allowed RULE for SCOPE until TIME (id ...; how to revoke)``."""
    return (
        f"allowed {row['rule']} for {_scope(row)} until {human_time(row['expires_at'])} "
        f"(id {row['id']}; `agentcoord allow --revoke {row['id']}` ends it)"
    )
