"""A real browser (headless Chromium via Playwright) uses the console: it sees an agent and its
claim, answers a waiting prompt, and the escalating agent receives that answer."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Daemon
from tests.tools.session_helpers import finish, read_results, spawn_session

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)"
)


def test_browser_answers_prompt(daemon: Daemon, claude_bin: Path) -> None:
    """Console in Chromium: agent + claim visible; answering the prompt wakes the agent."""
    from playwright.sync_api import sync_playwright

    agent = spawn_session(
        daemon,
        claude_bin,
        [
            ("annotate", {"intent": "deploying the release"}),
            ("claim", {"resource_key": "deploy:prod", "mode": "write"}),
            ("escalate", {"question": "Ship release 1.4 to production?", "timeout_secs": 60}),
        ],
    )
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
                executable_path=CHROMIUM,
                args=[
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                ],
            )
            try:
                page = browser.new_page()
                page.goto(link)
                token = (daemon.state_dir / "human.token").read_text().strip()
                assert "code=" in link
                assert token not in link
                page.wait_for_selector("text=Ship release 1.4 to production?", timeout=20_000)
                assert "deploy:prod" in page.inner_text("#claims")
                assert "deploying the release" in page.inner_text("#agents")
                page.fill("#queue textarea", "yes, ship it")
                page.click("#queue button")
                page.wait_for_selector("text=nothing is waiting for you", timeout=20_000)
            finally:
                browser.close()
        results = read_results(agent)
    finally:
        finish(agent)
    answer = results[2]["structuredContent"]
    assert answer["answered"] is True
    assert answer["answer"] == "yes, ship it"
