"""The console's queue answered from the keyboard in Chromium (docs/console.md "Keys"): j/k
move the selection, y approves, a number picks a choice, r allows a waiting session's call for
its repository for an hour, / goes to the search; each answer reaches the asking agent as the
human's, from the console, as the daemon records it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.approvals.hooksession import ALLOW, Session
from tests.conftest import Daemon, cli_json, console_link
from tests.tools.conftest import AgentProc

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)"
)
_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run([*_GIT, *args], cwd=path, check=True, capture_output=True, timeout=30)
    return path


def test_keys_answer_the_queue(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> None:
    """y approves the selected approval, 2 picks the second choice, r grants the waiting
    call for the session's repository: the agents get the answers, audited as from the
    console, and the session's next request is allowed by the new approval."""
    from playwright.sync_api import expect, sync_playwright

    shop = _repo(tmp_path / "shop")
    asker = AgentProc(daemon, claude_bin, shop)
    chooser = AgentProc(daemon, claude_bin, tmp_path / "ops")
    session = Session(daemon, claude_bin, shop)
    try:
        approve = asker.start(
            "escalate", question="Drop the staging database?", approval=True, timeout_secs=120
        )
        ask = {"tool_name": "Bash", "tool_input": {"command": "make test -j4"}}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
            )
            try:
                page = browser.new_page(viewport={"width": 1440, "height": 1000})
                page.goto(console_link(daemon))
                # Prompts queue oldest first: the choice is asked once the approval is shown.
                page.wait_for_selector("#queue >> text=Drop the staging database?", timeout=20_000)
                choose = chooser.start(
                    "escalate",
                    question="Which region takes the canary?",
                    choices=["eu-west", "us-east", "ap-south"],
                    timeout_secs=120,
                )
                assert session.post("permission-request", ask) is None
                page.wait_for_selector("text=Which region takes the canary?", timeout=20_000)
                page.wait_for_selector(
                    "#queue >> text=waiting for permission: Bash make test -j4", timeout=20_000
                )
                page.screenshot(path=str(tmp_path / "queue-1440.png"))
                selected = page.locator("#queue .selected")
                expect(selected).to_contain_text("Drop the staging database?")
                page.keyboard.press("j")
                expect(selected).to_contain_text("Which region takes the canary?")
                page.keyboard.press("k")
                expect(selected).to_contain_text("Drop the staging database?")

                page.keyboard.press("y")
                expect(page.locator("#queue")).not_to_contain_text("Drop the staging database?")
                expect(selected).to_contain_text("Which region takes the canary?")
                page.keyboard.press("2")
                expect(page.locator("#queue")).not_to_contain_text("Which region", timeout=20_000)
                expect(selected).to_contain_text("waiting for permission")
                page.keyboard.press("r")
                page.wait_for_selector("#approvals >> text=Bash(make test:*)", timeout=20_000)

                page.keyboard.press("/")
                assert page.evaluate("() => document.activeElement.id") == "q"
            finally:
                browser.close()
        approved = asker.result(approve)
        chosen = chooser.result(choose)
        assert (approved["answered"], approved["answer"]) == (True, True)
        assert (chosen["answered"], chosen["answer"]) == (True, "us-east")
        [grant] = cli_json(daemon, "allow", "--list")
        assert (grant["rule"], grant["scope"], grant["label"]) == (
            "Bash(make test:*)",
            "repository",
            "shop",
        )
        assert session.post("permission-request", ask) == ALLOW
    finally:
        session.close()
        asker.close()
        chooser.close()
    answered = cli_json(daemon, "audit", "--type", "HUMAN_ANSWERED")["events"]
    assert sorted(e["how"] for e in answered) == ["console", "console"]
    [granted] = cli_json(daemon, "audit", "--type", "APPROVAL_GRANTED")["events"]
    assert granted["how"] == "console"
