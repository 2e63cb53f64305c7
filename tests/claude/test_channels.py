"""The real Claude Code, started by ``agentcoord claude``, takes a message pushed over the
agent-coord channel to the model while idle, with no keystroke (docs/claude-code.md
"Channels").

Interactive, under tmux on a private socket, against the scripted model API. Channels need the
two feature flags seeded in Claude Code's config (FACTS.md "The real Claude Code, offline"),
which only tests do; the launcher's confirmation dialog is answered with Enter.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.claude.conftest import OFFLINE, Claude
from tests.claude.model_api import Request, Text
from tests.conftest import Daemon
from tests.tools.session_helpers import session_call

WAIT = 60.0
CONFIRM = "I am using this for local development"


def _seed(config_dir: Path, project: Path, version: str) -> None:
    """What an offline interactive session needs in ``.claude.json`` (FACTS.md): onboarding
    done, the project trusted, the API key approved, and the channel flags cached."""
    path = config_dir / ".claude.json"
    data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    data.update(
        hasCompletedOnboarding=True,
        lastOnboardingVersion=version,
        customApiKeyResponses={"approved": [OFFLINE["ANTHROPIC_API_KEY"]], "rejected": []},
        cachedGrowthBookFeatures={"tengu_harbor": True, "tengu_harbor_permissions": True},
    )
    data.setdefault("projects", {}).setdefault(str(project), {})["hasTrustDialogAccepted"] = True
    path.write_text(json.dumps(data))


class Tmux:
    """One tmux server on a private socket under the test's temp dir."""

    def __init__(self, sock: Path) -> None:
        self.sock = sock

    def run(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-S", str(self.sock), *args], capture_output=True, text=True, timeout=20
        )
        return out.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "s")

    def wait_screen(self, text: str) -> str:
        def shown() -> str:
            screen = self.screen()
            return screen if text in screen else ""

        return _poll(shown, f"{text!r} on the screen")


def _poll(pred: Callable[[], str], what: str) -> str:
    """Poll ``pred`` until it returns a non-empty string (bounded; the pause only paces it)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if value := pred():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _log_line(d: Daemon, text: str) -> str:
    return next((line for line in d.log().splitlines() if text in line), "")


def _channel_texts(req: Request) -> list[str]:
    out = []
    for message in req.body.get("messages", []):
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for block in blocks:
            text = block.get("text") if isinstance(block, dict) else None
            if isinstance(text, str) and "<channel" in text:
                out.append(text)
    return out


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_message_reaches_the_idle_session_with_no_keystroke(
    daemon: Daemon, claude: Claude, claude_bin: Path, tmp_path: Path
) -> None:
    """A message sent to an idle session started by `agentcoord claude` is pushed over the
    channel and Claude Code sends it to the model at once, as a <channel source="agent-coord">
    block from the sender; nobody types anything after the start-up dialog."""
    from tests.claude.conftest import VERSION

    config_dir = Path(claude.env["CLAUDE_CONFIG_DIR"])
    _seed(config_dir, claude.cwd, VERSION)
    env = dict(
        claude.env,
        AGENTCOORD_CLAUDE=str(claude.binary),
        CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF="1",
        TERM="xterm-256color",
    )
    claude.api.script(Text("Noted."), Text("Noted."), Text("Noted."))
    launch = [sys.executable, "-m", "agentcoord", "claude", "--permission-mode", "default"]
    command = "cd {} && exec env -i {} {}".format(
        shlex.quote(str(claude.cwd)),
        " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()),
        " ".join(shlex.quote(a) for a in launch),
    )
    tmux = Tmux(tmp_path / "tmux.sock")
    tmux.run("new-session", "-d", "-s", "s", "-x", "200", "-y", "50", command)
    try:
        tmux.wait_screen(CONFIRM)
        tmux.run("send-keys", "-t", "s", "Enter")
        line = _poll(lambda: _log_line(daemon, "messages over its channel"), "the push")
        agent = line.split("pushing ", 1)[1].split("'s messages", 1)[0]
        sent = session_call(
            daemon, claude_bin, [("whoami", {}), ("send", {"to": agent, "text": "ping, idle one"})]
        )
        sender = sent[0]["structuredContent"]["agent"]
        first = claude.api.wait_requests(1, timeout=WAIT)[0]
        texts = _channel_texts(first)
        assert texts, first.body.get("messages")
        assert 'source="agent-coord"' in texts[-1]
        assert f'from="{sender}"' in texts[-1]
        assert "ping, idle one" in texts[-1]
    finally:
        tmux.run("kill-server")
