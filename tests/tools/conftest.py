"""Agents as separate processes: each is a stand-in ``claude`` session talking MCP over the
daemon's unix socket, so the daemon tells them apart by process ancestry, as in production."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKES, Daemon


class ToolFailed(Exception):
    """A tool call came back with ``isError: true``."""


class AgentProc:
    """One agent: ``claude -- python mcp_proxy.py SOCKET``, driven line by line."""

    def __init__(
        self, daemon: Daemon, claude_bin: Path, cwd: Path, session_id: str | None = None
    ) -> None:
        cwd.mkdir(parents=True, exist_ok=True)
        env = dict(daemon.env)
        if session_id is not None:
            env["CLAUDE_CODE_SESSION_ID"] = session_id
        self.proc = subprocess.Popen(
            [
                str(claude_bin),
                "--",
                sys.executable,
                str(FAKES / "mcp_proxy.py"),
                str(daemon.socket),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self._ids = itertools.count(1)
        self._replies: dict[int, Any] = {}
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.name: str = self.call("whoami")["agent"]

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            reply = json.loads(line)
            with self._cond:
                self._replies[reply["id"]] = reply
                self._cond.notify_all()

    def start(self, tool: str, **arguments: Any) -> int:
        """Send a tools/call without waiting; returns its request id."""
        rid = next(self._ids)
        req = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(req).encode() + b"\n")
        self.proc.stdin.flush()
        return rid

    def result(self, rid: int, timeout: float = 90.0) -> dict[str, Any]:
        """The structured result of request ``rid``; raises ToolFailed on an error result."""
        with self._cond:
            if not self._cond.wait_for(lambda: rid in self._replies, timeout):
                raise TimeoutError(f"no reply to request {rid} in {timeout}s")
            reply = self._replies.pop(rid)
        result = reply["result"]
        if result.get("isError"):
            raise ToolFailed(result["content"][0]["text"])
        return result["structuredContent"]  # type: ignore[no-any-return]

    def call(self, tool: str, timeout: float = 90.0, **arguments: Any) -> dict[str, Any]:
        return self.result(self.start(tool, **arguments), timeout)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(5)
        if self.proc.stdout:
            self.proc.stdout.close()


@pytest.fixture
def agents(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> Iterator[Any]:
    """A factory of agent processes on the test's daemon; all closed at the end."""
    made: list[AgentProc] = []

    def make(name: str = "proj") -> AgentProc:
        agent = AgentProc(daemon, claude_bin, tmp_path / "work" / f"{name}{len(made)}")
        made.append(agent)
        return agent

    yield make
    for agent in made:
        agent.close()


def human_call(daemon: Daemon, tool: str, **arguments: Any) -> dict[str, Any]:
    """One tools/call over the unix socket from this (non-claude) process, presenting the
    human token as the CLI does: the human."""
    from tests.tools.session_helpers import unix_request

    req = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    result = unix_request(daemon, req)["result"]
    if result.get("isError"):
        raise ToolFailed(result["content"][0]["text"])
    return result["structuredContent"]  # type: ignore[no-any-return]


def nats_login(daemon: Daemon) -> tuple[str, str, str]:
    """(url, user, password) of the daemon's embedded NATS, read as its owner can."""
    from agentcoord.client.rpc import call_unix

    token = (daemon.state_dir / "human.token").read_text().strip()
    url = call_unix(daemon.socket, "agentcoord/status", {}, token=token)["nats_url"]
    conf = (daemon.state_dir / "nats" / "nats.conf").read_text()
    user = re.search(r'user: "([^"]+)"', conf)
    password = re.search(r'password: "([^"]+)"', conf)
    assert user
    assert password
    return url, user.group(1), password.group(1)


def cli(daemon: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``agentcoord ARGS`` as another process (the human at another terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "agentcoord", *args],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
