"""A stand-in Claude Code session that posts the hooks a test gives it, one at a time, so a
test acts between two hooks of one session (docs/claude-code.md "Hooks")."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import Daemon

__all__ = ["ALLOW", "Session"]

# A process under a stand-in `claude` that posts each hook it reads on stdin (one JSON
# [event, body] per line) and prints the answer, so a test acts between two hooks of one
# session.
_POSTER = """
import http.client, json, sys
host, port = sys.argv[1].rsplit(":", 1)
for line in sys.stdin:
    event, body = json.loads(line)
    conn = http.client.HTTPConnection(host, int(port), timeout=600)
    conn.request("POST", "/hooks/" + event, json.dumps(body), {"content-type": "application/json"})
    resp = conn.getresponse()
    print(json.dumps([resp.status, resp.read().decode()]), flush=True)
    conn.close()
"""

ALLOW = {
    "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
}


class Session:
    """One stand-in Claude Code session in ``cwd``, posting hooks as it would."""

    def __init__(self, d: Daemon, claude_bin: Path, cwd: Path) -> None:
        cwd.mkdir(parents=True, exist_ok=True)
        self.cwd = cwd
        self.proc = subprocess.Popen(
            [str(claude_bin), "--", sys.executable, "-c", _POSTER, d.http_addr],
            env=d.env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started = self.post("session-start", {"hook_event_name": "SessionStart"})
        assert started is not None
        context = started["hookSpecificOutput"]["additionalContext"]
        self.start_context = str(context)  # what the session read at its start
        found = re.search(r"you are agent `([^`]+)`", context)
        assert found, context
        self.name = found.group(1)

    def post(self, event: str, body: dict[str, Any]) -> dict[str, Any] | None:
        self.send(event, body)
        return self.reply()

    def send(self, event: str, body: dict[str, Any]) -> None:
        """Post one hook and return at once (:meth:`reply` reads its answer): a held
        permission dialog answers only when the human does (docs/approvals.md)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps([event, {"cwd": str(self.cwd), **body}]) + "\n")
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any] | None:
        """The answer to the hook :meth:`send` posted (blocks until it comes)."""
        assert self.proc.stdout is not None
        status, text = json.loads(self.proc.stdout.readline())
        assert status == 200, (status, text)
        return json.loads(text) if text else None

    def asks(self, tool: str, **tool_input: Any) -> dict[str, Any] | None:
        """The daemon's answer to this session's PermissionRequest for ``tool``."""
        body = {"hook_event_name": "PermissionRequest", "tool_name": tool, "tool_input": tool_input}
        return self.post("permission-request", body)

    def close(self) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()
