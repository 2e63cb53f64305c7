"""The real Claude Code's terminal UI under tmux with ``permission_hold`` set: the dialog is
drawn while the daemon holds the PermissionRequest hook, and the console's "Allow once", a
grant from the console, or a key in the terminal each answer it, and the call runs
(docs/approvals.md "Answering an open dialog")."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import pytest

from tests.claude.conftest import Claude
from tests.claude.model_api import Text, ToolUse, tool_results
from tests.claude.test_channels import WAIT, Tmux, _poll
from tests.claude.test_session_states import _agent_in, _press_yes, _tui, _type
from tests.conftest import Daemon, cli_json
from tests.tools.session_helpers import human_token


@pytest.fixture
def daemon(daemon_factory: Any) -> Daemon:
    """A daemon that holds an unanswered dialog up to five minutes for the human."""
    return daemon_factory(AGENTCOORD_PERMISSION_HOLD="300").start()  # type: ignore[no-any-return]


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


def _held(d: Daemon, agent: str) -> dict[str, Any] | None:
    _, state = _console(d, "GET", "/console/api/state")
    found = [i for i in state["queue"] if i.get("agent") == agent and i.get("held")]
    return found[0] if found else None


def _dialog_held(daemon: Daemon, claude: Claude, tmux: Tmux) -> tuple[str, dict[str, Any]]:
    """Ask for `touch marker`; wait for the dialog on screen and held in the console's queue."""
    _type(tmux, "make the marker")
    agent = _agent_in(daemon, claude.cwd)
    tmux.wait_screen("Do you want to proceed?")
    item = _poll(lambda: _held(daemon, agent), "the dialog held in the console's queue")
    assert not (claude.cwd / "marker").exists()
    return agent, item


def _ran(claude: Claude, tmux: Tmux) -> None:
    try:
        _poll(lambda: (claude.cwd / "marker").exists(), "the command to run")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{tmux.screen()}") from None
    after = claude.api.wait_requests(2, timeout=WAIT)[1]
    assert not any(r.get("is_error") for r in tool_results(after))


def _script(claude: Claude) -> None:
    claude.api.script(
        ToolUse("Bash", {"command": "touch marker", "description": "Mark"}), Text("Done.")
    )


def test_allow_once_from_the_console_runs_the_call(
    daemon: Daemon, claude: Claude, tmp_path: Path
) -> None:
    """The dialog is on screen and held; the console's allow closes it with no key, the
    command runs, and the answer is audited as the human's from the console."""
    _script(claude)
    with _tui(claude, tmp_path) as tmux:
        agent, item = _dialog_held(daemon, claude, tmux)
        assert item["state"] == "waiting for permission: Bash touch marker"
        status, _ = _console(daemon, "POST", f"/console/api/held/{agent}", {"answer": "allow"})
        assert status == 200
        _ran(claude, tmux)
    [answered] = cli_json(daemon, "audit", "--type", "PERMISSION_ANSWERED")["events"]
    assert (answered["session"], answered["answer"], answered["how"]) == (agent, "allow", "console")


def test_a_grant_from_the_console_answers_the_open_dialog(
    daemon: Daemon, claude: Claude, tmp_path: Path
) -> None:
    """The console's "Allow Bash(touch marker:*) for every session" on the held dialog closes it:
    the command runs and the new approval counts that use."""
    _script(claude)
    with _tui(claude, tmp_path) as tmux:
        _agent, item = _dialog_held(daemon, claude, tmux)
        status, _ = _console(
            daemon, "POST", "/console/api/approvals", {"rule": item["rule"], "duration": "1h"}
        )
        assert status == 200
        _ran(claude, tmux)
    [row] = cli_json(daemon, "allow", "--list")
    assert (row["rule"], row["uses"]) == ("Bash(touch marker:*)", 1)


def test_a_key_in_the_terminal_still_answers_a_held_dialog(
    daemon: Daemon, claude: Claude, tmp_path: Path
) -> None:
    """While the daemon holds the hook, Enter on "Yes" runs the command; the dialog is then
    no longer offered to the console, and its answer from there is refused."""
    _script(claude)
    with _tui(claude, tmp_path) as tmux:
        agent, _item = _dialog_held(daemon, claude, tmux)
        _poll(lambda: _press_yes(tmux, claude.cwd / "marker"), "the command to run")
        _ran(claude, tmux)
        _poll(lambda: _held(daemon, agent) is None, "the dialog to leave the console's queue")
        status, body = _console(daemon, "POST", f"/console/api/held/{agent}", {"answer": "allow"})
        assert status == 404, body
