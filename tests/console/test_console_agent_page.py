"""An agent's page in the console, /console/agents/<name>, in Chromium (docs/console.md "An
agent's page"): its focus and state, its claims as repo:path, the messages to and from it and
the audit lines naming it, and the last text turns of the transcript the daemon finds for its
session (the tool calls and results in it left out), whole at 800 px; an unknown name is a
404."""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentcoord.localagents.sessions import project_dir_name
from tests.conftest import Daemon, console_link
from tests.console.probes import BROKEN_WORDS, WIDE
from tests.tools.conftest import AgentProc

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)"
)
_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
SESSION = "5f0c2a1e-7b8d-4c3e-9a6f-0d1e2f3a4b5c"


def _transcript(daemon: Daemon, cwd: Path) -> None:
    """What Claude Code writes for the session: text turns, a tool call and its result, and a
    meta line."""
    project = Path(daemon.env["CLAUDE_CONFIG_DIR"]) / "projects" / project_dir_name(str(cwd))
    project.mkdir(parents=True)
    entries: list[dict[str, Any]] = [
        {"type": "user", "message": {"role": "user", "content": "Add the ledger table, please"}},
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "I will add the ledger table and its migration."},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "TOOLOUT"}],
            },
        },
        {"type": "user", "isMeta": True, "message": {"role": "user", "content": "META-LINE"}},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        },
    ]
    body = "".join(json.dumps({**e, "timestamp": "2026-01-01T00:00:00Z"}) + "\n" for e in entries)
    (project / f"{SESSION}.jsonl").write_text(body)


def test_agent_page(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> None:
    """The page of a session shows its focus, its claim, its messages both ways, audit lines
    naming it, and its transcript's last text turns; /console/api/agents/<unknown> is 404."""
    from playwright.sync_api import sync_playwright

    app = (tmp_path / "ledger-app").resolve()
    app.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run([*_GIT, *args], cwd=app, check=True, capture_output=True, timeout=30)
    _transcript(daemon, app)
    worker = AgentProc(daemon, claude_bin, app, session_id=SESSION)
    peer = AgentProc(daemon, claude_bin, tmp_path / "reviewer")
    try:
        worker.call("annotate", intent="Adding the ledger table")
        worker.call("claim", resource_key="file:src/ledger.py", mode="write")
        worker.call("send", to=peer.name, text="the ledger schema is ready")
        peer.call("send", to=worker.name, text="looks good")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
            )
            try:
                page = browser.new_page(viewport={"width": 1440, "height": 1000})
                page.goto(console_link(daemon))
                page.click(f"#agents a[href='/console/agents/{worker.name}']")
                page.wait_for_url(f"**/console/agents/{worker.name}")
                page.wait_for_selector("#agent-turns .turn", timeout=20_000)
                state = page.inner_text("#agent-state")
                turns = page.inner_text("#agent-turns")
                claims = page.inner_text("#agent-claims")
                messages = page.inner_text("#agent-messages")
                audit = page.inner_text("#agent-audit")
                # At the narrowest width the page is still read whole (docs/console.md "Layout").
                page.set_viewport_size({"width": 800, "height": 1000})
                page.evaluate("() => new Promise(requestAnimationFrame)")
                page.screenshot(path=str(tmp_path / "agent-800.png"), full_page=True)
                narrow = (page.evaluate(BROKEN_WORDS), page.evaluate(WIDE))
            finally:
                browser.close()
    finally:
        worker.close()
        peer.close()
    assert narrow == ([], []), f"at 800 px: {narrow}"
    assert "Adding the ledger table" in state
    assert str(app) in state
    assert SESSION in state
    assert "ledger-app:src/ledger.py" in claims
    assert f"MESSAGE_SENT  {worker.name}  to={peer.name}" in messages
    assert f"MESSAGE_SENT  {peer.name}  to={worker.name}" in messages
    assert "the ledger schema is ready" not in messages  # the audit holds no message text
    assert "CLAIM_ACQUIRED" in audit
    assert "AGENT_ANNOTATED" in audit
    for said in ("Add the ledger table, please", "I will add the ledger table", "Done."):
        assert said in turns
    assert "TOOLOUT" not in turns
    assert "META-LINE" not in turns
    host, port = daemon.http_addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    token = (daemon.state_dir / "human.token").read_text().strip()
    conn.request(
        "GET", "/console/api/agents/nobody-here", headers={"authorization": f"Bearer {token}"}
    )
    resp = conn.getresponse()
    assert resp.status == 404
    assert b"no agent named" in resp.read()
    conn.close()
