"""The daemon's front door for a human: its bare address in Chromium says what it is and how to
open the console (never the token), and ``agentcoord console --open`` with no browser says so."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Daemon

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _no_browser_env(daemon: Daemon, tmp_path: Path) -> dict[str, str]:
    """The daemon's env with no browser to find: PATH without one, no BROWSER, no display."""
    bare = tmp_path / "bin-without-browsers"
    bare.mkdir()
    env = {k: v for k, v in daemon.env.items() if k not in ("BROWSER", "DISPLAY")}
    env.pop("WAYLAND_DISPLAY", None)
    env["PATH"] = str(bare)
    return env


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_root_page_in_chromium_points_to_the_console(daemon: Daemon) -> None:
    """Chromium at http://ADDR/ gets a page naming agentcoord, ``agentcoord console`` and a
    working link to /console/ (its login page), and the page holds no token."""
    from playwright.sync_api import sync_playwright

    token = (daemon.state_dir / "human.token").read_text().strip()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"],
        )
        try:
            page = browser.new_page()
            response = page.goto(f"{daemon.url}/")
            assert response is not None
            assert response.status == 200
            text = page.inner_text("body")
            assert "agentcoord daemon" in text
            assert "agentcoord console" in text
            assert "login link" in text
            assert token not in page.content()
            page.click("a[href='/console/']")
            page.wait_for_url(f"{daemon.url}/console/")
            # Not logged in: the console's own page says how to log in.
            assert "agentcoord console" in page.inner_text("body")
        finally:
            browser.close()


def test_console_open_without_a_browser_says_so(daemon: Daemon, tmp_path: Path) -> None:
    """``console --open`` where no browser exists prints the link and says on stderr that no
    browser was found, exit 0 (the link is the way in)."""
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "console", "--open"],
        env=_no_browser_env(daemon, tmp_path),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"{daemon.url}/console/login?code=")
    assert "no browser found" in out.stderr
    assert "open the link above" in out.stderr


def test_console_open_with_a_browser_opens_the_link(daemon: Daemon, tmp_path: Path) -> None:
    """With BROWSER naming a program, ``console --open`` runs it on the login link and prints no
    no-browser line."""
    got = tmp_path / "opened"
    browser = tmp_path / "fake-browser"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {got}\n')
    browser.chmod(0o755)
    env = _no_browser_env(daemon, tmp_path)
    env["PATH"] = os.pathsep.join([env["PATH"], "/usr/bin", "/bin"])
    env["BROWSER"] = str(browser)
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "console", "--open"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert "no browser found" not in out.stderr
    assert got.read_text() == out.stdout.strip()
