"""The real Claude Code, started by ``agentcoord claude``, takes a message pushed over the
agent-coord channel to the model while idle, with no keystroke (docs/claude-code.md
"Channels").

Interactive, under tmux on a private socket, against the scripted model API. Channels need the
two feature flags cached in Claude Code's config (docs/claude-code.md "Channels"), which only tests
do; the launcher's confirmation dialog is answered with Enter.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agentcoord.claude.push import PERMISSION_PREFIX
from tests.claude.conftest import OFFLINE, Claude
from tests.claude.model_api import Request, Text, ToolUse, tool_results
from tests.conftest import Daemon, cli_json
from tests.tools.session_helpers import session_call

WAIT = 60.0
T = TypeVar("T")
CONFIRM = "I am using this for local development"


def _seed(config_dir: Path, project: Path, version: str) -> None:
    """What an offline interactive session needs in ``.claude.json`` (docs/claude-code.md):
    onboarding done, the project trusted, the API key approved, and the channel flags cached."""
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


def _poll(pred: Callable[[], T | None], what: str) -> T:
    """Poll ``pred`` until it returns something truthy (bounded; the pause only paces it)."""
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


@contextlib.contextmanager
def _channel_session(daemon: Daemon, claude: Claude, tmp_path: Path) -> Iterator[Channel]:
    """`agentcoord claude --permission-mode default` under tmux, past its start-up dialog,
    once the daemon pushes to it: the screen and the session's agent."""
    from tests.claude.conftest import VERSION

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    _seed(Path(claude.env["CLAUDE_CONFIG_DIR"]), claude.cwd, VERSION)
    env = dict(
        claude.env,
        AGENTCOORD_CLAUDE=str(claude.binary),
        CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF="1",
        TERM="xterm-256color",
    )
    # A permission dialog for every tool but agent-coord's (the mode a classifier cannot
    # answer: docs/claude-code.md "Channels").
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
        yield Channel(tmux, line.split("pushing ", 1)[1].split("'s messages", 1)[0])
    finally:
        tmux.run("kill-server")


@dataclass
class Channel:
    tmux: Tmux
    agent: str


def _send(daemon: Daemon, claude_bin: Path, to: str, text: str) -> str:
    sent = session_call(daemon, claude_bin, [("whoami", {}), ("send", {"to": to, "text": text})])
    return str(sent[0]["structuredContent"]["agent"])


def test_a_message_reaches_the_idle_session_with_no_keystroke(
    daemon: Daemon, claude: Claude, claude_bin: Path, tmp_path: Path
) -> None:
    """A message sent to an idle session started by `agentcoord claude` is pushed over the
    channel and Claude Code sends it to the model at once, as a <channel source="agent-coord">
    block from the sender; nobody types anything after the start-up dialog."""
    claude.api.script(Text("Noted."), Text("Noted."), Text("Noted."))
    with _channel_session(daemon, claude, tmp_path) as ch:
        sender = _send(daemon, claude_bin, ch.agent, "ping, idle one")
        first = claude.api.wait_requests(1, timeout=WAIT)[0]
        texts = _channel_texts(first)
        assert texts, first.body.get("messages")
        assert 'source="agent-coord"' in texts[-1]
        assert f'from="{sender}"' in texts[-1]
        assert "ping, idle one" in texts[-1]


def _permission_prompt(d: Daemon, agent: str) -> dict[str, Any] | None:
    for p in cli_json(d, "prompts")["prompts"]:
        if p["agent"] == agent and p["question"].startswith(PERMISSION_PREFIX):
            return p  # type: ignore[no-any-return]
    return None


def test_a_permission_dialog_is_answered_from_agentcoord_answer(
    daemon: Daemon, claude: Claude, claude_bin: Path, tmp_path: Path
) -> None:
    """The session's Bash permission dialog becomes a prompt in `agentcoord prompts` naming the
    command; the human's `agentcoord answer ID allow` closes the dialog and the command runs
    (its output reaches the model); a second answer is refused."""
    marker = "channel-permission-ok"
    claude.api.script(
        # Not a read-only command, so the default mode asks (echo alone would just run).
        ToolUse("Bash", {"command": f"touch {marker} && echo {marker}", "description": "Mark"}),
        Text("Done."),
        Text("Done."),
    )
    with _channel_session(daemon, claude, tmp_path) as ch:
        _send(daemon, claude_bin, ch.agent, "run the marker command")
        try:
            prompt = _poll(lambda: _permission_prompt(daemon, ch.agent), "the permission prompt")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the session shows:\n{ch.tmux.screen()}") from None
        assert "Bash" in prompt["question"]
        assert marker in prompt["context"]
        answered = _answer(daemon, prompt["id"], "allow")
        assert answered.returncode == 0, answered.stderr
        after = claude.api.wait_requests(2, timeout=WAIT)[1]
        assert any(marker in r["text"] for r in tool_results(after)), tool_results(after)
        assert (claude.cwd / marker).exists()
        again = _answer(daemon, prompt["id"], "deny")
        assert again.returncode != 0
        assert "already answered" in again.stderr


def _answer(d: Daemon, prompt: str, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcoord", "answer", prompt, text],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=20,
    )


def test_a_dialog_answered_in_the_terminal_closes_its_prompt(
    daemon: Daemon, claude: Claude, claude_bin: Path, tmp_path: Path
) -> None:
    """Claude Code tells the channel nothing when its own dialog is answered: after Enter on
    "Yes" in the terminal the command runs, and its PostToolUse hook closes the prompt, so the
    human's late answer is refused."""
    marker = "terminal-permission-ok"
    claude.api.script(
        ToolUse("Bash", {"command": f"touch {marker} && echo {marker}", "description": "Mark"}),
        Text("Done."),
        Text("Done."),
    )
    with _channel_session(daemon, claude, tmp_path) as ch:
        _send(daemon, claude_bin, ch.agent, "run the marker command")
        prompt = _poll(lambda: _permission_prompt(daemon, ch.agent), "the permission prompt")
        ch.tmux.wait_screen("Do you want to proceed?")
        ch.tmux.run("send-keys", "-t", "s", "Enter")
        claude.api.wait_requests(2, timeout=WAIT)
        _poll(lambda: "closed" if _permission_prompt(daemon, ch.agent) is None else "", "close")
        late = _answer(daemon, prompt["id"], "deny")
        assert late.returncode != 0
        assert "already answered" in late.stderr
        assert (claude.cwd / marker).exists()


_PRINT_ARGV = (
    "import json, os, sys\n"
    'print(json.dumps({"argv": sys.argv[1:], "push": os.environ.get("AGENTCOORD_CHANNELS")}))\n'
)


@pytest.mark.parametrize(
    ("flags", "env", "push"),
    [
        ({"tengu_harbor": True}, {}, "1"),
        ({"tengu_harbor": False}, {}, None),
        ({"tengu_harbor": True}, {"DISABLE_TELEMETRY": "1"}, None),
        (
            {"tengu_harbor": True},
            {"DISABLE_TELEMETRY": "1", "CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF": "1"},
            "1",
        ),
    ],
)
def test_the_launcher_loads_the_channel_and_opts_in_only_when_claude_code_reads_it(
    tmp_path: Path, flags: dict[str, bool], env: dict[str, str], push: str | None
) -> None:
    """`agentcoord claude ARGS` runs claude with ARGS first and the development-channel flag
    last; it opts the session into push only when Claude Code's flag cache and environment say
    channels are on (else a pushed message would be acknowledged and never seen)."""
    fake = tmp_path / "claude"
    fake.write_text(f"#!{sys.executable}\n{_PRINT_ARGV}")
    fake.chmod(0o755)
    config = tmp_path / "config"
    config.mkdir()
    (config / ".claude.json").write_text(json.dumps({"cachedGrowthBookFeatures": flags}))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTCOORD_", "CLAUDE"))}
    for key in ("DISABLE_TELEMETRY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"):
        base.pop(key, None)
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "claude", "fix the bug", "--model", "m"],
        env={**base, **env, "AGENTCOORD_CLAUDE": str(fake), "CLAUDE_CONFIG_DIR": str(config)},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    seen = json.loads(out.stdout)
    assert seen["argv"] == [
        "fix the bug",
        "--model",
        "m",
        "--dangerously-load-development-channels",
        "server:agent-coord",
    ]
    assert seen["push"] == push
    assert ("channels are off" in out.stderr) == (push is None)
