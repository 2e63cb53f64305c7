"""The console in Chromium: the budgets line shows each ceiling with what is used and flags
one reached (docs/budgets.md); a relayed permission prompt is allowed with the grant it offers
from the keyboard (`r`, as `agentcoord answer ID --allow-for 1h --repo`: docs/approvals.md
"From a permission prompt"); a dialog held for the human is allowed from the keyboard (`y`)
and the session's hook answers "allow" (docs/approvals.md "Answering an open dialog")."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcoord.claude.push import PERMISSION
from tests.approvals.hooksession import ALLOW, Session
from tests.approvals.test_grant_from_answer import _asking
from tests.conftest import Daemon, cli_json
from tests.tools.test_channels_push import ShimSession, _open_prompt
from tests.tools.test_channels_push import sessions as sessions  # the fixture

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)"
)
WAIT_MS = 20_000


@contextlib.contextmanager
def _page(d: Daemon) -> Iterator[Any]:
    """The console, logged in with a link from `agentcoord console`, in headless Chromium."""
    from playwright.sync_api import sync_playwright

    link = subprocess.run(
        [sys.executable, "-m", "agentcoord", "console"],
        env=d.env,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.strip()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
        )
        try:
            page = browser.new_page()
            page.goto(link)
            yield page
        finally:
            browser.close()


def test_the_budgets_line_shows_use_and_flags_a_reached_ceiling(
    daemon_factory: Any, claude_bin: Path, tmp_path: Path
) -> None:
    """With max_sessions 1 and two live sessions the line says "sessions 2/1", flagged; the
    spend ceiling shows as dollars, not flagged."""
    d = daemon_factory(AGENTCOORD_MAX_SESSIONS="1", AGENTCOORD_MAX_SPEND_USD="5").start()
    one = Session(d, claude_bin, tmp_path / "one")
    two = Session(d, claude_bin, tmp_path / "two")
    try:
        with _page(d) as page:
            page.wait_for_selector("#budgets >> text=sessions 2/1", timeout=WAIT_MS)
            flagged = page.locator("#budgets .waitstate")
            assert flagged.count() == 1
            assert flagged.inner_text() == "sessions 2/1"
            assert "spend $0.00/$5.00" in page.inner_text("#budgets")
    finally:
        two.close()
        one.close()


def test_r_on_a_relayed_permission_prompt_allows_it_and_grants_its_rule(
    daemon: Daemon, claude_bin: Path, sessions: list[ShimSession]
) -> None:
    """The prompt offers "Allow, and allow Bash(npm test:*) in its repository"; `r` grants
    that rule for the asking session's repository (audited from the console) and the dialog
    is allowed."""
    subprocess.run(["git", "init", "-q", str(daemon.root)], check=True, timeout=30)
    s, me = _asking(daemon, claude_bin, sessions, "npm test -x")
    prompt = _open_prompt(daemon, me)
    with _page(daemon) as page:
        page.wait_for_selector(
            "text=Allow, and allow Bash(npm test:*) in its repository for 1h", timeout=WAIT_MS
        )
        assert page.get_attribute("#queue .item.selected", "data-id") == f"prompt:{prompt['id']}"
        page.keyboard.press("r")
        page.wait_for_selector("#approvals >> text=Bash(npm test:*)", timeout=WAIT_MS)
    assert s.next_note(PERMISSION) == {"request_id": "abcde", "behavior": "allow"}
    [row] = cli_json(daemon, "allow", "--list")
    assert (row["rule"], row["scope"], row["label"]) == (
        "Bash(npm test:*)",
        "repository",
        daemon.root.name,
    )
    [granted] = cli_json(daemon, "audit", "--type", "APPROVAL_GRANTED")["events"]
    assert granted["how"] == "console"


def test_y_allows_a_held_dialog_once(daemon_factory: Any, claude_bin: Path, tmp_path: Path) -> None:
    """A held dialog shows "Allow once" and "Deny"; `y` answers its hook "allow", and no
    standing approval is made."""
    d = daemon_factory(AGENTCOORD_PERMISSION_HOLD="300").start()
    s = Session(d, claude_bin, tmp_path / "shop")
    try:
        s.send(
            "permission-request",
            {"tool_name": "Bash", "tool_input": {"command": "make test -j4"}},
        )
        with _page(d) as page:
            page.wait_for_selector("#queue >> text=Allow once", timeout=WAIT_MS)
            assert "Deny" in page.inner_text("#queue .item.selected")
            # Its grant buttons answer this dialog too: no "from its next call".
            assert "from its next call" not in page.inner_text("#queue")
            page.keyboard.press("y")
            assert s.reply() == ALLOW
        assert cli_json(d, "allow", "--list") == []
    finally:
        s.close()
