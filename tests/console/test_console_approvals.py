"""The console in Chromium: a session waiting on a permission dialog is at the top of "Waiting
for you" with one button that allows its call for every session; the approval is listed, the
session's next request is answered "allow", and Revoke ends it; the grant form takes a rule
for one session (docs/approvals.md, docs/activity.md)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.approvals.hooksession import ALLOW, Session
from tests.conftest import Daemon, cli_json

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)"
)


def test_the_console_grants_and_revokes_standing_approvals(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """One click on a waiting session grants its call for every session (audited as from the
    console); the form grants a rule for one session; Revoke removes an approval."""
    from playwright.sync_api import expect, sync_playwright

    session = Session(daemon, claude_bin, tmp_path / "shop")
    ask = {"tool_name": "Bash", "tool_input": {"command": "make test -j4"}}
    assert session.post("permission-request", ask) is None
    link = subprocess.run(
        [sys.executable, "-m", "agentcoord", "console"],
        env=daemon.env,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.strip()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
            )
            try:
                page = browser.new_page()
                page.goto(link)
                page.wait_for_selector(
                    "text=waiting for permission: Bash make test -j4", timeout=20_000
                )
                assert "waiting for permission" in page.inner_text("#agents")
                # Not held (no permission_hold): the grant covers the next call, and the open
                # dialog is answered in the session (docs/approvals.md).
                queue = page.inner_text("#queue")
                assert "for 1h from its next call" in queue
                assert "this dialog is answered in the session" in queue
                page.click("text=Allow Bash(make test:*) for every session (1h)")
                page.wait_for_selector("#approvals >> text=Bash(make test:*)", timeout=20_000)
                assert session.post("permission-request", ask) == ALLOW

                page.fill("#grant-rule", "Edit(docs/**)")
                page.fill("#grant-session", session.name)
                page.fill("#grant-for", "20m")
                page.click("#grant-submit")
                page.wait_for_selector("#approvals >> text=Edit(docs/**)", timeout=20_000)
                rows = cli_json(daemon, "allow", "--list")
                assert {(r["rule"], r["scope"]) for r in rows} == {
                    ("Bash(make test:*)", "all"),
                    ("Edit(docs/**)", "session"),
                }

                page.click("#approvals tr:has-text('Bash(make test:*)') button")
                expect(page.locator("#approvals")).not_to_contain_text("make test", timeout=20_000)
            finally:
                browser.close()
    finally:
        session.close()
    [left] = cli_json(daemon, "allow", "--list")
    assert left["rule"] == "Edit(docs/**)"
    granted = cli_json(daemon, "audit", "--type", "APPROVAL_GRANTED")["events"]
    assert {e["how"] for e in granted} == {"console"}
    [revoked] = cli_json(daemon, "audit", "--type", "APPROVAL_REVOKED")["events"]
    assert revoked["how"] == "console"
