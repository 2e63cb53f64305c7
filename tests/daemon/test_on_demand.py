"""Daemon on demand (docs/claude-code.md "Daemon on demand"): the shim and the SessionStart hook
start the daemon when none listens, one daemon however many start at once, and a shim that
cannot reach or start one answers the MCP handshake saying why coordination is off.

No test starts a daemon itself; every daemon the shims start is stopped at the end.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from agentcoord.client.shim import STATUS_TOOL, offline_reply
from agentcoord.kernel.locate import default_state_dir
from tests.conftest import make_env

SHIM = [sys.executable, "-m", "agentcoord", "mcp"]


def daemons_on(state: Path) -> list[psutil.Process]:
    """The live ``agentcoord serve`` processes whose state dir is ``state``."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if proc.info["cmdline"][-2:] != ["agentcoord", "serve"]:
                continue
            mine = default_state_dir(proc.environ()) == state  # as the daemon finds its own
            if mine and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, TypeError):
            continue
    return found


def assert_one_daemon(state: Path) -> None:
    """Fail unless exactly one daemon serves ``state``: the lock's holder. A losing daemon may
    still be on its way to the lock when its shim has connected to the winner, so every other
    one must exit, within a bound."""
    holder = int((state / "daemon.lock").read_text())
    _, alive = psutil.wait_procs([p for p in daemons_on(state) if p.pid != holder], timeout=10)
    assert alive == [], alive
    assert [p.pid for p in daemons_on(state)] == [holder]


def stop_daemons(state: Path) -> None:
    """SIGTERM every daemon on ``state`` and wait (bounded) for it to go; SIGKILL what stays."""
    procs = daemons_on(state)
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # its own process group (start_new_session)
        except OSError:
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=10)
    for proc in alive:
        proc.kill()
    psutil.wait_procs(alive, timeout=5)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A private state and runtime dir with no daemon, starting on demand allowed (whatever the
    suite's default); any daemon started there is stopped."""
    env = make_env(tmp_path)
    env.pop("AGENTCOORD_NO_AUTOSTART", None)
    yield env
    stop_daemons(Path(env["AGENTCOORD_STATE_DIR"]))


def _requests(*messages: dict[str, Any]) -> str:
    return "".join(json.dumps(m) + "\n" for m in messages)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}},
}
HANDSHAKE = _requests(
    INITIALIZE,
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": STATUS_TOOL}},
)


def _shim(env: dict[str, str], stdin: str) -> tuple[int, list[dict[str, Any]], str]:
    out = subprocess.run(SHIM, env=env, input=stdin, capture_output=True, text=True, timeout=30)
    return out.returncode, [json.loads(ln) for ln in out.stdout.splitlines()], out.stderr


def _answered_by_daemon(reply: dict[str, Any]) -> bool:
    # Not under a `claude`, the shim's caller is neither an agent nor the human: the daemon
    # (and only the daemon) refuses it by name.
    return reply.get("id") == 1 and "neither an agent nor the human" in str(reply.get("error"))


def test_first_shim_starts_the_daemon_and_relays(env: dict[str, str]) -> None:
    """With no daemon, `agentcoord mcp` starts one (logging to <state>/daemon.log), relays to
    it, and the daemon outlives the shim."""
    state = Path(env["AGENTCOORD_STATE_DIR"])
    code, replies, err = _shim(env, _requests(INITIALIZE))
    assert code == 0, err
    assert len(replies) == 1, replies
    assert _answered_by_daemon(replies[0]), replies
    assert_one_daemon(state)
    assert "agentcoord ready" in (state / "daemon.log").read_text()
    probe = socket.socket(socket.AF_UNIX)
    probe.connect(str(Path(env["AGENTCOORD_RUNTIME_DIR"]) / "agentcoord.sock"))
    probe.close()


def test_two_shims_at_once_end_with_one_daemon(env: dict[str, str]) -> None:
    """Three shims started together with no daemon each reach a daemon, and one daemon runs
    (the others' daemons exit "already running" and their shims connect to the winner)."""
    procs = [
        subprocess.Popen(
            SHIM, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    outs = [p.communicate(_requests(INITIALIZE).encode(), timeout=30) for p in procs]
    for proc, (out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err
        assert _answered_by_daemon(json.loads(out)), (out, err)
    assert_one_daemon(Path(env["AGENTCOORD_STATE_DIR"]))


def test_a_stale_socket_file_does_not_stop_the_start(env: dict[str, str]) -> None:
    """A socket file a killed daemon left (connect refused) is no daemon: the shim starts one."""
    run = Path(env["AGENTCOORD_RUNTIME_DIR"])
    run.mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(run / "agentcoord.sock"))
    stale.close()
    code, replies, err = _shim(env, _requests(INITIALIZE))
    assert code == 0, err
    assert _answered_by_daemon(replies[0]), replies


def test_a_runtime_dir_flag_is_the_started_daemons_too(env: dict[str, str], tmp_path: Path) -> None:
    """`agentcoord mcp --runtime-dir DIR` starts a daemon that serves DIR's socket."""
    run = tmp_path / "flagged"
    env.pop("AGENTCOORD_RUNTIME_DIR")
    out = subprocess.run(
        [*SHIM, "--runtime-dir", str(run)],
        env=env,
        input=_requests(INITIALIZE),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert _answered_by_daemon(json.loads(out.stdout)), out
    assert (run / "agentcoord.sock").is_socket()


def test_no_autostart_says_so_in_the_handshake(env: dict[str, str]) -> None:
    """With AGENTCOORD_NO_AUTOSTART=1 and no daemon, no daemon is started; the shim completes
    the handshake: its instructions and its one tool say coordination is off, the switch, and
    how to start the daemon; stderr says it too; stdin's end ends it with 0."""
    env["AGENTCOORD_NO_AUTOSTART"] = "1"
    code, replies, err = _shim(env, HANDSHAKE)
    assert code == 0
    init, tools, call = replies
    told = init["result"]["instructions"]
    assert "coordination is OFF" in told
    assert "AGENTCOORD_NO_AUTOSTART=1" in told
    assert "agentcoord serve" in told
    assert "AGENTCOORD_NO_AUTOSTART=1" in err
    assert init["result"]["protocolVersion"] == "2025-06-18"
    assert [t["name"] for t in tools["result"]["tools"]] == [STATUS_TOOL]
    assert call["result"]["isError"] is True
    assert call["result"]["content"][0]["text"] == told
    assert daemons_on(Path(env["AGENTCOORD_STATE_DIR"])) == []
    assert not (Path(env["AGENTCOORD_RUNTIME_DIR"]) / "agentcoord.sock").exists()


def test_a_daemon_that_cannot_start_is_reported_in_the_handshake(
    env: dict[str, str], tmp_path: Path
) -> None:
    """With a state dir that cannot be created (below a regular file: refused for root too),
    the daemon the shim starts fails; the handshake's instructions say it could not start,
    its error line and where its log is (the runtime dir's, the state dir being unusable)."""
    (tmp_path / "a-file").write_text("")
    env["AGENTCOORD_STATE_DIR"] = str(tmp_path / "a-file" / "state")
    code, replies, err = _shim(env, HANDSHAKE)
    assert code == 0, err
    told = replies[0]["result"]["instructions"]
    log = Path(env["AGENTCOORD_RUNTIME_DIR"]) / "daemon.log"
    assert "could not start" in told, told
    assert str(log) in told, told
    assert "Not a directory" in told, told
    assert "Not a directory" in log.read_text()
    assert replies[2]["result"]["content"][0]["text"] == told


def test_session_start_hook_starts_the_daemon(env: dict[str, str], claude_bin: Path) -> None:
    """With no daemon, the SessionStart command hook starts one and tells the session which
    agent it is (not that coordination is off)."""
    out = subprocess.run(
        [str(claude_bin), "--", sys.executable, "-m", "agentcoord", "hook", "session-start"],
        env=env,
        input=json.dumps({"hook_event_name": "SessionStart", "cwd": str(claude_bin.parent)}),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    context = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "off for this session" not in context
    assert "`" in context, context  # the agent's name, quoted
    assert_one_daemon(Path(env["AGENTCOORD_STATE_DIR"]))


def test_session_start_hook_says_why_no_daemon_could_start(
    env: dict[str, str], tmp_path: Path
) -> None:
    """When the daemon it starts fails, the SessionStart hook tells the user and the model that
    coordination is off, with the daemon's own reason."""
    (tmp_path / "a-file").write_text("")
    env["AGENTCOORD_STATE_DIR"] = str(tmp_path / "a-file" / "state")
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "hook", "session-start"],
        env=env,
        input="{}",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    told = json.loads(out.stdout)["systemMessage"]
    assert "off for this session" in told
    assert "could not start" in told
    assert "Not a directory" in told


def test_other_hooks_never_start_a_daemon(env: dict[str, str]) -> None:
    """A command hook on another event (an older setup's PreToolUse) passes at once with no
    daemon and starts none."""
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "hook", "pre-tool-use"],
        env=env,
        input='{"tool_name":"Write","tool_input":{"file_path":"/x"}}',
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (out.returncode, out.stdout) == (0, "")
    assert daemons_on(Path(env["AGENTCOORD_STATE_DIR"])) == []


# -- the offline server's replies (pure) ------------------------------------------------------


def test_offline_reply_answers_requests_and_ignores_notifications() -> None:
    """Requests get a result or a JSON-RPC error with their id; notifications and replies to
    requests get nothing; an unknown protocol version is answered with the newest we speak."""
    init = offline_reply(
        {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": "x"}},
        "why",
    )
    assert init is not None
    assert init["id"] == 7
    assert init["result"]["protocolVersion"] == "2025-11-25"
    assert init["result"]["instructions"] == "why"
    assert offline_reply({"jsonrpc": "2.0", "method": "notifications/initialized"}, "w") is None
    assert offline_reply({"jsonrpc": "2.0", "id": 3, "result": {}}, "w") is None
    assert offline_reply({"jsonrpc": "2.0", "id": 4, "method": "ping"}, "w") == {
        "jsonrpc": "2.0",
        "id": 4,
        "result": {},
    }
    unknown = offline_reply({"jsonrpc": "2.0", "id": 5, "method": "resources/list"}, "w")
    assert unknown is not None
    assert unknown["error"]["code"] == -32601
    other = offline_reply(
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "claim"}}, "w"
    )
    assert other is not None
    assert other["error"]["code"] == -32602
    bad = offline_reply([1, 2], "w")
    assert bad is not None
    assert bad["error"]["code"] == -32600
    assert bad["id"] is None
