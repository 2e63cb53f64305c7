"""The real Claude Code binary (npm package ``@anthropic-ai/claude-code``, pinned in
``CLAUDE_CODE_VERSION``), run offline in a private home against a real daemon.

``.ci/run`` installs the pinned version under ``/opt/claude-code-<version>`` (kept between
runs); ``AGENTCOORD_TEST_CLAUDE`` may name another binary of the same version. Where neither is
there the tests skip as a missing dependency, which fails a CI run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.claude.model_api import ModelAPI, Request
from tests.conftest import Daemon

SERVER = "agent-coord"  # the MCP server name `agentcoord setup claude` registers

VERSION = (Path(__file__).parent / "CLAUDE_CODE_VERSION").read_text().strip()
INSTALL = f"npm install -g --prefix /opt/claude-code-{VERSION} @anthropic-ai/claude-code@{VERSION}"

# No telemetry, no updater, no side requests
# (docs/claude-code.md "The real Claude Code in the tests").
OFFLINE = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "ANTHROPIC_API_KEY": "sk-test-offline",
    "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",  # nothing listens: no model is asked here
}

# Claude Code's own switch for its cross-session inbox ("0": a session without one, as older
# versions and --bare run): tests of the hooks' delivery set it.
NO_NATIVE_INBOX = "CLAUDE_CODE_HARBOR_KITE"


@pytest.fixture(scope="session")
def real_claude() -> Path:
    """The pinned Claude Code binary."""
    path = Path(
        os.environ.get("AGENTCOORD_TEST_CLAUDE") or f"/opt/claude-code-{VERSION}/bin/claude"
    )
    if not os.access(path, os.X_OK):
        pytest.skip(f"Claude Code {VERSION} is not installed ({INSTALL})")
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60)
    if not out.stdout.startswith(VERSION):
        pytest.skip(f"Claude Code {VERSION} is not installed ({path} is {out.stdout.strip()!r})")
    return path


def claude_env(d: Daemon, home: Path) -> dict[str, str]:
    """The daemon's environment (its ``CLAUDE_CONFIG_DIR``, so Claude Code's config dir is
    moved out of HOME, and the daemon reads the same sessions dir) with a private HOME, a
    private scratch dir and the offline switches."""
    home.mkdir(parents=True, exist_ok=True)
    # Claude Code keeps per-project scratch dirs under /tmp/claude-<uid> unless told otherwise
    # (it wants a private 0700 dir): inside the test's own dir they go with it.
    scratch = home / "claude-tmp"
    scratch.mkdir(mode=0o700, exist_ok=True)
    return {**d.env, "HOME": str(home), "CLAUDE_CODE_TMPDIR": str(scratch), **OFFLINE}


def mcp_list_line(claude: Path, env: dict[str, str], cwd: Path) -> str:
    """``claude mcp list``'s line for agent-coord (its health check of the server)."""
    listed = subprocess.run(
        [str(claude), "mcp", "list"], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    line = [ln for ln in listed.stdout.splitlines() if ln.startswith("agent-coord:")]
    assert line, listed.stdout + listed.stderr
    return line[0]


# -- the real binary against the scripted model API (tests/claude/model_api.py) ---------------


@pytest.fixture
def model_api() -> Iterator[ModelAPI]:
    """The scripted Messages API stand-in on loopback; the test fails on any request it did
    not expect (another path, a request past the script, a non-streaming one)."""
    api = ModelAPI().start()
    try:
        yield api
    finally:
        api.stop()
    assert not api.unexpected, api.unexpected


@dataclass
class Run:
    """One finished ``claude -p``: exit code, its result JSON, stderr, and the model requests
    it made."""

    returncode: int
    result: dict[str, Any]
    stderr: str
    requests: list[Request]

    def check(self) -> None:
        """Fail unless it exited 0 with a result that is no error (API errors come back with
        exit 0 and ``is_error``)."""
        assert self.returncode == 0, (self.returncode, self.result, self.stderr)
        assert not self.result.get("is_error"), (self.result, self.stderr)


@dataclass
class Claude:
    """The real ``claude`` as a user runs it after ``agentcoord setup claude``, in a private
    HOME and config dir, against :class:`ModelAPI`. MCP tool schemas are sent directly
    (``ENABLE_TOOL_SEARCH=false``), edits are accepted and agent-coord's tools allowed, so no
    permission dialog blocks ``-p``."""

    binary: Path
    env: dict[str, str]
    cwd: Path
    api: ModelAPI

    def argv(self, prompt: str, *extra: str) -> list[str]:
        return [
            str(self.binary),
            "-p",
            prompt,
            "--output-format",
            "json",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            f"mcp__{SERVER}",
            *extra,
        ]

    def start(self, prompt: str, *extra: str) -> subprocess.Popen[str]:
        """Start ``claude -p PROMPT`` (read it with :meth:`finish`)."""
        return subprocess.Popen(
            self.argv(prompt, *extra),
            env=self.env,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def finish(self, proc: subprocess.Popen[str], first: int = 0, timeout: float = 90) -> Run:
        """Wait for ``proc``; its run, with the model requests from index ``first`` on."""
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"claude -p did not finish in {timeout}s:\n{err}") from None
        try:
            result = json.loads(out)
        except ValueError:
            raise AssertionError(f"claude -p printed no result JSON:\n{out}\n{err}") from None
        return Run(proc.returncode, result, err, self.api.requests[first:])

    def run(self, prompt: str, *extra: str, timeout: float = 90) -> Run:
        """``claude -p PROMPT`` to its end."""
        first = len(self.api.requests)
        return self.finish(self.start(prompt, *extra), first, timeout)


@pytest.fixture
def claude(daemon: Daemon, real_claude: Path, model_api: ModelAPI, tmp_path: Path) -> Claude:
    """The real binary after ``agentcoord setup claude`` (user scope, the config dir the
    daemon watches), in a fresh project dir, talking to ``model_api``."""
    env = claude_env(daemon, tmp_path / "home")
    env.update(ANTHROPIC_BASE_URL=model_api.url, ENABLE_TOOL_SEARCH="false")
    setup = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "claude"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr
    project = tmp_path / "project"
    project.mkdir()
    return Claude(real_claude, env, project, model_api)
