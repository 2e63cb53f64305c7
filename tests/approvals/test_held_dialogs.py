"""A permission dialog held for the human (``permission_hold``), against the real daemon with
a stand-in session: while held the session is waiting for permission and the console's queue
marks it held; a grant made then answers it "allow" (a use counted), the console's "Deny"
answers it "deny" (audited), and with no hold the hook answers nothing at once
(docs/approvals.md "Answering an open dialog")."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.approvals.hooksession import ALLOW, Session
from tests.conftest import Daemon, cli_json
from tests.tools.session_helpers import human_token

ASK = {"hook_event_name": "PermissionRequest", "tool_name": "Bash"}


def _console(d: Daemon, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    host, port = d.http_addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    headers = {"authorization": f"Bearer {human_token(d)}", "x-agentcoord": "1"}
    if body is not None:
        headers["content-type"] = "application/json"
    conn.request(method, path, json.dumps(body) if body is not None else None, headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, json.loads(data) if data else None


def _held_item(d: Daemon, name: str) -> dict[str, Any] | None:
    """The console queue's item for ``name`` once its dialog is held, else None."""
    _, state = _console(d, "GET", "/console/api/state")
    found = [i for i in state["queue"] if i.get("agent") == name and i.get("held")]
    return found[0] if found else None


def _wait_held(d: Daemon, name: str) -> dict[str, Any]:
    """Poll the console's state until ``name``'s dialog is held (the hook is on its way)."""
    from tests.claude.test_channels import _poll

    return _poll(lambda: _held_item(d, name), f"{name}'s held dialog")


def test_a_grant_answers_a_held_dialog_and_deny_from_the_console_refuses_one(
    daemon_factory: Any, claude_bin: Path, tmp_path: Path
) -> None:
    """Held: the queue shows the session waiting, held, with its call's rule; `agentcoord
    allow` answers the hook "allow" and counts the use; the next dialog, denied from the
    console, answers "deny" with the reason, audited as the human's answer."""
    d = daemon_factory(AGENTCOORD_PERMISSION_HOLD="300").start()
    s = Session(d, claude_bin, tmp_path / "shop")
    try:
        s.send("permission-request", {**ASK, "tool_input": {"command": "make test -j4"}})
        item = _wait_held(d, s.name)
        assert (item["type"], item["rule"]) == ("permission", "Bash(make test:*)")
        assert item["state"] == "waiting for permission: Bash make test -j4"
        granted = subprocess.run(
            [sys.executable, "-m", "agentcoord", "allow", "Bash(make test:*)"],
            env=d.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert granted.returncode == 0, granted.stderr
        assert s.reply() == ALLOW
        [row] = cli_json(d, "allow", "--list")
        assert row["uses"] == 1

        s.send("permission-request", {**ASK, "tool_input": {"command": "rm -rf build"}})
        _wait_held(d, s.name)
        status, _ = _console(d, "POST", f"/console/api/held/{s.name}", {"answer": "deny"})
        assert status == 200
        decision = (s.reply() or {})["hookSpecificOutput"]["decision"]
        assert decision["behavior"] == "deny"
        assert "denied" in decision["message"]
        [answered] = cli_json(d, "audit", "--type", "PERMISSION_ANSWERED")["events"]
        assert (answered["session"], answered["answer"], answered["input"]) == (
            s.name,
            "deny",
            "rm -rf build",
        )
        assert answered["how"] == "console"
        # Nothing is held now: a second answer is refused with the reason.
        status, body = _console(d, "POST", f"/console/api/held/{s.name}", {"answer": "allow"})
        assert status == 404
        assert "answer it in the session" in body["error"]
    finally:
        s.close()


def test_with_no_hold_the_hook_answers_nothing_at_once(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """By default nothing is held: no approval, no answer, and the queue marks it not held
    (the console then says the dialog is answered in the session)."""
    s = Session(daemon, claude_bin, tmp_path / "shop")
    try:
        assert s.asks("Bash", command="make test") is None
        _, state = _console(daemon, "GET", "/console/api/state")
        [item] = [i for i in state["queue"] if i["agent"] == s.name]
        assert item["held"] is False
    finally:
        s.close()
