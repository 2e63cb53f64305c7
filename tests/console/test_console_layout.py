"""The console's layout in a real browser (headless Chromium via Playwright) at 800, 1440 and
2560 px (docs/console.md "Layout"): with agents, long focus lines, file claims in two worktrees,
a waiting prompt with context, a channel and contention on the page, no word is broken across
two lines, nothing is wider than the window or its section, the queue is above the fold, the
key parts are in view, and the wide window is used in columns. A screenshot of each width is
saved in the test's directory (or $AGENTCOORD_TEST_SCREENSHOTS) and checked by decoding it in
the browser: the window's size, and not blank."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon, console_link
from tests.console.probes import BROKEN_WORDS, DECODE, OVERFLOW, PLACES, WIDE
from tests.tools.conftest import AgentProc

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)"
)

WIDTHS = (800, 1440, 2560)
HEIGHT = 1000
# Columns of sections each width must give (sections are at least 520 px: docs/console.md).
COLUMNS = {800: 1, 1440: 2, 2560: 4}
_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([*_GIT, *args], cwd=cwd, check=True, capture_output=True, timeout=30)


@pytest.fixture
def busy_console(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> Iterator[Daemon]:
    """A daemon with what a working day puts on the console: three sessions in two worktrees
    of one repository with focus lines and file claims, a refused claim, a channel, and a
    prompt with its context waiting for the human."""
    app = tmp_path / "billing-service"
    (app / "src").mkdir(parents=True)
    _git(app, "init", "-q", "-b", "main")
    (app / "README").write_text("x\n")
    _git(app, "add", "README")
    _git(app, "commit", "-q", "-m", "init")
    _git(app, "worktree", "add", "-q", "-b", "rename-accounts", str(tmp_path / "billing-rename"))
    made: list[AgentProc] = []
    try:
        a = AgentProc(daemon, claude_bin, app)
        b = AgentProc(daemon, claude_bin, tmp_path / "billing-rename")
        c = AgentProc(daemon, claude_bin, tmp_path / "docs-site")
        made += [a, b, c]
        a.call(
            "annotate",
            intent="Running the invoice migration against staging and writing the rollback notes",
        )
        b.call(
            "annotate",
            intent="Renaming billing_accounts to accounts across the service and its tests",
        )
        c.call("annotate", intent="Writing the release notes")
        for key in ("src/billing/migrations/0042_rename_accounts.py", "src/billing/models.py"):
            a.call("claim", resource_key=f"file:{key}", mode="write", purpose="migration")
        b.call("claim", resource_key="file:src/billing/accounts/repository.py", mode="write")
        b.call("claim", resource_key="deploy:staging", mode="read")
        # Both worktrees change the ledger: a conflict between worktrees the page shows.
        for tree in (app, tmp_path / "billing-rename"):
            (tree / "src" / "billing").mkdir(parents=True, exist_ok=True)
            (tree / "src" / "billing" / "ledger.py").write_text(f"# {tree.name}\n")
        refused = b.call("claim", resource_key="file:src/billing/models.py", mode="write")
        assert refused["acquired"] is False  # "who waits on whom" shows it
        c.call(
            "open_channel",
            name="release-1-4-coordination",
            participants=[a.name, b.name],
            topic="Release 1.4: migration order, freeze, rollback",
        )
        c.start(
            "escalate",
            question=(
                "Ship release 1.4 to production now, with the database migration that renames "
                "the billing_accounts table, before the Friday freeze begins?"
            ),
            context=(
                "The migration took 41 minutes on staging. Rollback needs the snapshot from "
                "02:00; support is on call until 18:00 and has been told."
            ),
            timeout_secs=120,
        )
        yield daemon
    finally:
        for agent in made:
            agent.close()


def _shots_dir(tmp_path: Path) -> Path:
    where = Path(os.environ.get("AGENTCOORD_TEST_SCREENSHOTS") or tmp_path / "screenshots")
    where.mkdir(parents=True, exist_ok=True)
    return where


def test_layout_at_three_widths(busy_console: Daemon, tmp_path: Path) -> None:
    """At 800, 1440 and 2560 px: no word spans two lines, nothing reaches past the window or
    scrolls its section sideways, the queue's first item is in the first screen, the key parts
    are shown, the sections make 1, 2 and 4 columns, and each saved screenshot is the window's
    size and not blank."""
    from playwright.sync_api import sync_playwright

    shots = _shots_dir(tmp_path)
    found: dict[int, Any] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"],
        )
        try:
            context = browser.new_context(viewport={"width": WIDTHS[0], "height": HEIGHT})
            page = context.new_page()
            page.goto(console_link(busy_console))
            page.wait_for_selector("text=before the Friday freeze", timeout=20_000)
            page.wait_for_selector("#waits td", timeout=20_000)
            page.wait_for_selector("#channels td", timeout=20_000)
            page.wait_for_selector("#conflicts td", timeout=30_000)
            page.wait_for_selector("#audit div", timeout=20_000)
            # The prompt's context is on the page with its question.
            assert "The migration took 41 minutes on staging" in page.inner_text("#queue")
            # Claims are grouped by repository and shown as repo:path.
            claims = page.inner_text("#claims")
            assert "billing-service:src/billing/models.py" in claims
            assert "billing-service (3)" in claims
            conflicts = page.inner_text("#conflicts")
            assert "billing-service:src/billing/ledger.py" in conflicts
            # From the daemon's conflict watch: each worktree with the session working there.
            assert "billing-rename-" in conflicts
            decoder = context.new_page()  # about:blank: decodes the screenshots
            for width in WIDTHS:
                page.set_viewport_size({"width": width, "height": HEIGHT})
                page.evaluate("() => new Promise(requestAnimationFrame)")
                shot = shots / f"console-{width}.png"
                png = page.screenshot(path=str(shot))
                page.screenshot(path=str(shots / f"console-{width}-full.png"), full_page=True)
                image = decoder.evaluate(DECODE, base64.b64encode(png).decode())
                found[width] = (
                    page.evaluate(BROKEN_WORDS),
                    page.evaluate(OVERFLOW),
                    page.evaluate(WIDE),
                    page.evaluate(PLACES),
                    image,
                    shot.stat().st_size,
                )
        finally:
            browser.close()
    for width, (broken, (page_width, window), wide, places, image, size) in found.items():
        where = f"{width} px ({shots})"
        assert broken == [], f"{where}: words broken across lines: {broken}"
        assert page_width <= window, f"{where}: the page is {page_width} px wide"
        assert wide == [], f"{where}: wider than the window or its section: {wide}"
        assert places["item"] is not None, f"{where}: the queue has no item"
        assert places["item"]["bottom"] <= HEIGHT, f"{where}: the queue is below the fold"
        assert places["queue"]["top"] < 200, f"{where}: the queue is not at the top"
        assert all(places["shown"].values()), f"{where}: not shown: {places['shown']}"
        assert places["columns"] == COLUMNS[width], f"{where}: {places['columns']} columns"
        assert (image["width"], image["height"]) == (width, HEIGHT), f"{where}: {image}"
        assert image["colours"] >= 8, f"{where}: the screenshot is nearly one colour: {image}"
        assert image["other"] >= 0.02, f"{where}: the screenshot is blank: {image}"
        assert size > 10_000, f"{where}: the screenshot is {size} bytes"


def test_search_and_filters_narrow_every_list(busy_console: Daemon) -> None:
    """The agent filter keeps that agent's row, claims and audit lines; the repository filter
    keeps that repository's claims; the event filter keeps one type; the search box (reached
    with /) narrows agents, claims and audit by text."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"],
        )
        try:
            page = browser.new_page(viewport={"width": 1440, "height": HEIGHT})
            page.goto(console_link(busy_console))
            page.wait_for_selector("#claims td", timeout=20_000)
            page.wait_for_selector("#audit >> text=CHANNEL_OPENED", timeout=20_000)
            agents = page.locator("#agents tr:has(td)")
            expect(agents).to_have_count(3)
            names = [n.strip() for n in page.locator("#agents td b").all_inner_texts()]
            renamer = next(n for n in names if n.startswith("billing-rename"))
            page.select_option("#f-agent", renamer)
            expect(agents).to_have_count(1)
            expect(page.locator("#agents")).to_contain_text("Renaming billing_accounts")
            claims = page.inner_text("#claims")
            assert "accounts/repository.py" in claims
            assert "models.py" not in claims  # another agent's claim
            lines = page.locator("#audit div").all_inner_texts()
            assert lines
            assert all(renamer in line for line in lines)

            page.select_option("#f-agent", "")
            page.select_option("#f-repo", "billing-service")
            expect(page.locator("#claims")).not_to_contain_text("deploy:staging")
            expect(page.locator("#claims")).to_contain_text("billing-service:src/billing/models.py")

            page.select_option("#f-repo", "")
            page.select_option("#f-type", "CLAIM_ACQUIRED")
            lines = page.locator("#audit div").all_inner_texts()
            assert len(lines) == 4
            assert all("CLAIM_ACQUIRED" in line for line in lines)

            page.select_option("#f-type", "")
            page.keyboard.press("/")
            page.keyboard.type("release notes")
            expect(agents).to_have_count(1)
            expect(page.locator("#agents")).to_contain_text("Writing the release notes")
            expect(page.locator("#claims")).to_contain_text("none")
            lines = page.locator("#audit div").all_inner_texts()
            assert lines
            assert all("release notes" in line for line in lines)
        finally:
            browser.close()
