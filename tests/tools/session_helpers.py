"""Helpers for claim and discovery tool tests: callers as separate processes under stand-in
``claude`` sessions."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import FAKES, Daemon

CALLS = FAKES / "mcp_calls.py"


def session_call(
    d: Daemon, claude: Path, calls: list[tuple[str, dict[str, Any]]], *, cwd: Path | None = None
) -> list[dict[str, Any]]:
    """Run ``calls`` from a fresh process under its own stand-in ``claude`` session."""
    out = subprocess.run(
        [str(claude), "--", sys.executable, str(CALLS), str(d.socket), json.dumps(calls)],
        env=d.env,
        cwd=cwd or d.root,
        capture_output=True,
        timeout=30,
        check=True,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def spawn_session(
    d: Daemon,
    claude: Path,
    calls: list[tuple[str, dict[str, Any]]],
    *,
    go: Path | None = None,
    hold: bool = False,
) -> subprocess.Popen[bytes]:
    """Start a session process making ``calls`` (after ``go`` appears; kept alive if hold)."""
    argv = [str(claude), "--", sys.executable, str(CALLS), str(d.socket)]
    if go is not None:
        argv += ["--go", str(go)]
    if hold:
        argv.append("--hold")
    return subprocess.Popen(
        [*argv, json.dumps(calls)],
        env=d.env,
        cwd=d.root,
        stdout=subprocess.PIPE,
        start_new_session=True,  # so finish() also reaps the client under the stand-in
    )


def read_results(proc: subprocess.Popen[bytes]) -> list[dict[str, Any]]:
    assert proc.stdout is not None
    return json.loads(proc.stdout.readline())  # type: ignore[no-any-return]


def human_token(d: Daemon) -> str:
    """The human token the daemon keeps in its state dir (what the CLI reads to log in)."""
    return (d.state_dir / "human.token").read_text().strip()


@contextlib.asynccontextmanager
async def human_sdk_client(d: Daemon, mode: str = "legacy") -> AsyncIterator[Client]:
    """The official MCP SDK client on the daemon's ``/mcp`` as the human: every request bears
    the human token (docs/security.md "Who a caller is"), through the httpx2 client the SDK
    takes for headers, with the SDK's own timeouts (300 s reads, for held streams)."""
    headers = {"authorization": f"Bearer {human_token(d)}"}
    timeout = httpx2.Timeout(30, read=300)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        transport = streamable_http_client(f"{d.url}/mcp", http_client=http)
        async with Client(transport, mode=mode) as client:
            yield client


def own_call(d: Daemon, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tools/call from this test process as the human (it presents the human token)."""
    req = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    req["params"] = {"name": name, "arguments": arguments}
    return unix_request(d, req)["result"]  # type: ignore[no-any-return]


def unix_request(d: Daemon, req: dict[str, Any], *, human: bool = True) -> dict[str, Any]:
    """One JSON-RPC request over the unix socket from this process; the reply. As the human
    (the default), the request follows an ``agentcoord/login`` with the human token, as the
    CLI sends it; without, this process is anonymous and refused."""
    lines = [req]
    if human:
        login = {"jsonrpc": "2.0", "id": "login", "method": "agentcoord/login"}
        lines.insert(0, {**login, "params": {"token": human_token(d)}})
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(d.socket))
        s.sendall(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        buf = b""
        while buf.count(b"\n") < len(lines):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    replies = [json.loads(line) for line in buf.splitlines() if line.strip()]
    if len(replies) < len(lines):  # the daemon closed the connection first: say why it did
        raise AssertionError(
            f"the daemon closed the connection after {len(replies)} of {len(lines)} replies "
            f"({replies}); its log ends:\n{d.log()[-4000:]}"
        )
    return replies[-1]  # type: ignore[no-any-return]


def finish(proc: subprocess.Popen[bytes]) -> None:
    """Kill a spawned session's process group, reap it and close its pipe."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    if proc.stdout is not None:
        proc.stdout.close()


@contextlib.contextmanager
def holding(
    d: Daemon, claude: Path, calls: list[tuple[str, dict[str, Any]]]
) -> Iterator[list[dict[str, Any]]]:
    """Make ``calls`` from a session that stays alive (so its claims stay) until the block ends."""
    proc = spawn_session(d, claude, calls, hold=True)
    try:
        yield read_results(proc)
    finally:
        finish(proc)
