"""The console's layout in a real browser (headless Chromium via Playwright) at 800, 1400 and
1920 px: with agents, long focus lines, file claims, a waiting prompt with context, a channel
and contention on the page, no word is broken across two lines and the page does not scroll
sideways. Screenshots are kept in the test's directory (or $AGENTCOORD_TEST_SCREENSHOTS)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon, console_link
from tests.tools.conftest import AgentProc

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)"
)

WIDTHS = (800, 1400, 1920)
_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]

# Every run of letters and digits in a text node of the page (form fields aside) whose first
# and last characters sit on different lines: a word the layout broke. A break at a space,
# "/", "-", ":" or "_" is between words and allowed.
_BROKEN_WORDS = """() => {
  const broken = [];
  const walker = document.createTreeWalker(document.querySelector("main"), NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || el.closest("textarea, select, option") || !el.getClientRects().length) continue;
    for (const m of node.data.matchAll(/[\\p{L}\\p{N}]{2,}/gu)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + 1);
      const first = range.getBoundingClientRect();
      range.setStart(node, m.index + m[0].length - 1);
      range.setEnd(node, m.index + m[0].length);
      const last = range.getBoundingClientRect();
      if (last.top > first.top + first.height / 2) {
        broken.push(`${m[0]} in <${el.tagName.toLowerCase()} class="${el.className}">`);
      }
    }
  }
  return broken;
}"""

_OVERFLOW = """() => [document.documentElement.scrollWidth, window.innerWidth]"""


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


def test_no_word_breaks_at_three_widths(busy_console: Daemon, tmp_path: Path) -> None:
    """At 800, 1400 and 1920 px no word on the console spans two lines, and the page is no
    wider than the window; a screenshot of each width is saved."""
    from playwright.sync_api import sync_playwright

    shots = _shots_dir(tmp_path)
    found: dict[int, Any] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"],
        )
        try:
            context = browser.new_context(viewport={"width": WIDTHS[0], "height": 1000})
            page = context.new_page()
            page.goto(console_link(busy_console))
            page.wait_for_selector("text=before the Friday freeze", timeout=20_000)
            page.wait_for_selector("#waits td", timeout=20_000)
            page.wait_for_selector("#channels td", timeout=20_000)
            # The prompt's context is on the page with its question.
            assert "The migration took 41 minutes on staging" in page.inner_text("#prompts")
            for width in WIDTHS:
                page.set_viewport_size({"width": width, "height": 1000})
                page.evaluate("() => new Promise(requestAnimationFrame)")
                page.screenshot(path=str(shots / f"console-{width}.png"), full_page=True)
                found[width] = (page.evaluate(_BROKEN_WORDS), page.evaluate(_OVERFLOW))
        finally:
            browser.close()
    for width, (broken, (page_width, window)) in found.items():
        assert broken == [], f"{width} px: words broken across lines: {broken} ({shots})"
        assert page_width <= window, f"{width} px: the page is {page_width} px wide ({shots})"
