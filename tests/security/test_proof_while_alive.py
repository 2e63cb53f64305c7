"""The human's proof is taken from the live caller (docs/security.md "When the proof is taken"):
an agent's process that sends ``answer_prompt`` with the human token and lets go of its
connection at once (closes it, or exits) is refused, nothing is answered, and the audit
records the refusal, over HTTP and on the unix socket."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.security.conftest import Tally
from tests.security.test_human_proof import SESSION_ENV, _raise_prompt, _still_open
from tests.tools.conftest import AgentProc, human_call

# Sends one request and lets go of the connection before any answer can come.
_HTTP_HIT_AND_RUN = """
import socket, sys
host, port, token, body = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].encode()
s = socket.create_connection((host, port))
head = (
    f"POST /mcp HTTP/1.1\\r\\nhost: {host}:{port}\\r\\ncontent-type: application/json\\r\\n"
    f"authorization: Bearer {token}\\r\\ncontent-length: {len(body)}\\r\\n\\r\\n"
)
s.sendall(head.encode() + body)
s.close()
"""

_UNIX_HIT_AND_RUN = """
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode())
os._exit(0)
"""


@pytest.fixture
def agent(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> Iterator[AgentProc]:
    """An agent session (under a stand-in ``claude``) that raises the prompt."""
    proc = AgentProc(daemon, claude_bin, tmp_path / "work" / "hostile")
    try:
        yield proc
    finally:
        proc.close()


def _answer(prompt: str, msg_id: int = 1) -> dict[str, Any]:
    args = {"prompt": prompt, "answer": "yes"}
    params = {"name": "answer_prompt", "arguments": args}
    return {"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": params}


def _refusal(daemon: Daemon, prompt: str) -> dict[str, Any] | None:
    """The HUMAN_REFUSED event for ``prompt``, waited for (the audit append is batched)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        for event in human_call(daemon, "audit", type="HUMAN_REFUSED")["events"]:
            if event.get("prompt") == prompt:
                return event  # type: ignore[no-any-return]
        if not _still_open(daemon, prompt):
            return None  # answered: no refusal is coming
    return None


def _answered(daemon: Daemon, prompt: str) -> list[dict[str, Any]]:
    events = human_call(daemon, "audit", type="HUMAN_ANSWERED")["events"]
    return [e for e in events if e.get("prompt") == prompt]


def test_an_agent_that_sends_the_token_over_http_and_hangs_up_is_refused(
    daemon: Daemon, agent: AgentProc, claude_bin: Path, tally: Tally
) -> None:
    """A CLAUDECODE process under claude POSTs answer_prompt with the human token and closes
    its socket at once: refused (peer-gone), the prompt stays open, nothing answered."""
    prompt = _raise_prompt(agent)
    token = (daemon.state_dir / "human.token").read_text().strip()
    host, port = daemon.http_addr.rsplit(":", 1)
    body = json.dumps(_answer(prompt))
    argv = [str(claude_bin), "--", sys.executable, "-c", _HTTP_HIT_AND_RUN, host, port, token, body]
    done = subprocess.run(argv, env={**daemon.env, **SESSION_ENV}, timeout=30, check=False)
    assert done.returncode == 0
    event = _refusal(daemon, prompt)
    refused = event is not None and _still_open(daemon, prompt)
    assert tally("self-approval: HTTP with the token, then hang up", refused), daemon.log()
    assert event is not None
    assert (event["what"], event["how"], event["token"]) == ("answer_prompt", "http", "human")
    assert event["reason"] in ("peer-gone", "agent-markers"), event
    assert _answered(daemon, prompt) == []


def test_an_agent_that_logs_in_on_the_socket_and_exits_is_refused(
    daemon: Daemon, agent: AgentProc, claude_bin: Path, tally: Tally
) -> None:
    """A CLAUDECODE process under claude sends login + answer_prompt on the unix socket and
    exits at once: refused, the prompt stays open, and the refusal is audited."""
    prompt = _raise_prompt(agent)
    token = (daemon.state_dir / "human.token").read_text().strip()
    login = {"jsonrpc": "2.0", "id": 0, "method": "agentcoord/login", "params": {"token": token}}
    frames = json.dumps(login) + "\n" + json.dumps(_answer(prompt)) + "\n"
    argv = [str(claude_bin), "--", sys.executable, "-c", _UNIX_HIT_AND_RUN]
    argv += [str(daemon.socket), frames]
    done = subprocess.run(argv, env={**daemon.env, **SESSION_ENV}, timeout=30, check=False)
    assert done.returncode == 0
    event = _refusal(daemon, prompt)
    refused = event is not None and _still_open(daemon, prompt)
    assert tally("self-approval: socket login, then exit", refused), daemon.log()
    assert event is not None
    assert (event["what"], event["how"], event["token"]) == ("answer_prompt", "unix", "human")
    assert event["login"] is True, event
    assert event["reason"] in ("peer-gone", "agent-markers"), event
    assert _answered(daemon, prompt) == []
