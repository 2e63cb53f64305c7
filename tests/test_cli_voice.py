"""The CLI speaks with one voice: human text by default, ``--json`` with the MCP tools' field
names, one-line errors, and the exit codes README "Exit codes" documents. Each command runs as
the real ``python -m agentcoord`` against a real daemon."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon, make_env
from tests.tools.conftest import AgentProc, human_call

AGENTCOORD = [sys.executable, "-m", "agentcoord"]


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENTCOORD, *args], env=env, capture_output=True, text=True, timeout=30)


def _one_line(err: str) -> str:
    """The one line an error prints (and nothing like a traceback)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _wait_prompt(d: Daemon) -> dict[str, Any]:
    """The one open prompt, once `agentcoord prompts --json` lists it (10 s deadline)."""
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        prompts = json.loads(_cli(d.env, "prompts", "--json").stdout)["prompts"]
        if prompts:
            return prompts[0]  # type: ignore[no-any-return]
    raise AssertionError("no prompt appeared")


@pytest.mark.parametrize(
    "args", [("status",), ("agents", "--json"), ("profiles",), ("crds",), ("version",)]
)
def test_output_into_a_closed_pipe_exits_quietly(daemon: Daemon, args: tuple[str, ...]) -> None:
    """`agentcoord status | head -1` once head has gone: exit 1, nothing on stderr (no
    BrokenPipeError traceback, no "Exception ignored")."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes a byte
    try:
        out = subprocess.run(
            [*AGENTCOORD, *args],
            env=daemon.env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=30,
        )
    finally:
        os.close(write_end)
    assert out.stderr.decode() == ""
    assert out.returncode == 1


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_ends_tail_quietly_with_130(daemon: Daemon) -> None:
    """Ctrl-C on `agentcoord tail` exits 130 (as a shell reports SIGINT), with no traceback."""
    proc = subprocess.Popen(
        [*AGENTCOORD, "tail"],
        env=daemon.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As from a terminal: a suite started in the background (a CI script's `cmd &`) hands
        # its children SIGINT ignored, which Python then keeps ignoring (signal(7)).
        preexec_fn=_sigint_default,
    )
    assert proc.stderr is not None
    assert "following the audit log" in proc.stderr.readline()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err == ""


@pytest.mark.parametrize(
    ("view", "what_to_do"),
    [
        ("agents", "agentcoord setup claude"),
        ("claims", "claim tool"),
        ("prompts", "agentcoord prompts --all"),
        ("channels", "open_channel"),
        ("audit", "agentcoord tail"),
    ],
)
def test_an_empty_view_says_what_to_do(daemon: Daemon, view: str, what_to_do: str) -> None:
    """On a new daemon an empty view prints no bare header: one hint line on stderr saying
    what would fill it, stdout empty, exit 0; --json still gives the empty list."""
    out = _cli(daemon.env, view)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    hint = _one_line(out.stderr)
    assert hint.startswith("no ")
    assert what_to_do in hint
    data = json.loads(_cli(daemon.env, view, "--json").stdout)
    key = "events" if view == "audit" else view
    assert data[key] == []


def test_empty_hints_follow_the_filters() -> None:
    """A filtered empty view says to widen the filter; profiles point at docs/profiles.md."""
    from agentcoord.cli.views import empty_hint

    assert "'db:'" in empty_hint("claims", {"prefix": "db:"})
    assert "--since" in empty_hint("audit", {"type": "CLAIM_RELEASED"})
    assert "--all" not in empty_hint("agents", {"status": "all"})
    assert "docs/profiles.md" in empty_hint("profiles", {})


def test_json_has_the_mcp_tools_field_names(daemon: Daemon) -> None:
    """`--json` prints the tool's structuredContent as an MCP client gets it, field for field."""
    for view, tool in (("profiles", "list_profiles"), ("channels", "list_channels")):
        out = _cli(daemon.env, view, "--json")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == human_call(daemon, tool)
    version = json.loads(_cli(daemon.env, "version", "--json").stdout)
    from agentcoord import __version__

    assert version == {"version": __version__}
    console = json.loads(_cli(daemon.env, "console", "--json").stdout)
    assert console["url"].startswith(f"http://{daemon.http_addr}/console/login?code=")


def test_answer_says_the_answer_in_words(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> None:
    """`agentcoord answer` prints `answered ID: yes (approved)` or the JSON given, never a
    Python repr; --json is the answer_prompt result; audit shows the answer as JSON, uncut."""
    agent = AgentProc(daemon, claude_bin, tmp_path / "work")
    try:
        pending = agent.start("request_approval", question="Drop the cache?", timeout_secs=20)
        prompt = _wait_prompt(daemon)
        out = _cli(daemon.env, "answer", prompt["id"], "yes")
        assert out.returncode == 0, out.stderr
        assert out.stdout == f"answered {prompt['id']}: yes (approved)\n"
        assert agent.result(pending)["answer"] is True

        schema = {"type": "object", "properties": {"hosts": {"type": "array"}}}
        pending = agent.start("request_input", question="Hosts?", schema=schema, timeout_secs=20)
        prompt = _wait_prompt(daemon)
        # Longer than a table cell (60), within what the audit keeps of an answer (200).
        hosts = [f"build-host-{n}.internal.example" for n in range(3)]
        out = _cli(daemon.env, "answer", prompt["id"], json.dumps({"hosts": hosts}), "--json")
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout)
        assert result == {"prompt": prompt["id"], "answered": True, "answer": {"hosts": hosts}}
        assert agent.result(pending) == result  # the agent's MCP result: the same fields

        audit = _cli(daemon.env, "audit", "--type", "HUMAN_ANSWERED")
        assert audit.returncode == 0, audit.stderr
        lines = audit.stdout.splitlines()
        assert len(lines) == 2
        assert "answer=approved" in lines[0]
        assert "True" not in audit.stdout
        assert "{'" not in audit.stdout  # no Python dict repr
        # The whole value, JSON in one quoted token, not cut at a column width.
        assert "answer=" + json.dumps(json.dumps({"hosts": hosts})) in lines[1]
        assert "..." not in audit.stdout
        # The CLI line is the one rendering of the event (agentcoord.text.events).
        from agentcoord.text.events import render_event

        events = json.loads(_cli(daemon.env, "audit", "--type", "HUMAN_ANSWERED", "--json").stdout)
        assert [render_event(e) for e in events["events"]] == lines
    finally:
        agent.close()


def test_exit_codes_without_a_daemon(tmp_path: Path) -> None:
    """No daemon: every command that needs one exits 69 with one line saying how to start it."""
    env = make_env(tmp_path)
    for args in (
        ("status",),
        ("agents",),
        ("claims", "--json"),
        ("answer", "p-1", "yes"),
        ("tail",),
        ("console",),
    ):
        out = _cli(env, *args)
        assert out.returncode == 69, (args, out)
        assert out.stdout == ""
        assert "agentcoord serve" in _one_line(out.stderr), args


def test_exit_code_for_a_stale_socket(tmp_path: Path) -> None:
    """A socket file left by a daemon that died (nobody listening): 69, not a traceback."""
    env = make_env(tmp_path)
    run = Path(env["AGENTCOORD_RUNTIME_DIR"])
    run.mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(run / "agentcoord.sock"))
    stale.close()
    out = _cli(env, "status")
    assert out.returncode == 69
    assert "Connection refused" in _one_line(out.stderr)


def test_exit_codes_usage_and_failure(daemon: Daemon) -> None:
    """Bad usage exits 2 (argparse); a command the daemon refuses exits 1 with its reason."""
    assert _cli(daemon.env, "no-such-command").returncode == 2
    assert _cli(daemon.env, "answer").returncode == 2
    out = _cli(daemon.env, "answer", "prm-missing", "yes")
    assert out.returncode == 1
    assert "does not exist" in _one_line(out.stderr)
    assert _cli(daemon.env, "status").returncode == 0


def test_a_daemon_that_does_not_answer_is_exit_75(tmp_path: Path) -> None:
    """A daemon that accepts but never answers in time: DaemonTimeout, which exits 75."""
    from agentcoord.cli.main import EXIT_TEMPFAIL, exit_code
    from agentcoord.client.rpc import call_unix
    from agentcoord.errors import DaemonTimeout

    path = tmp_path / "silent.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    accepted: list[socket.socket] = []
    acceptor = threading.Thread(target=lambda: accepted.append(server.accept()[0]))
    acceptor.start()
    try:
        with pytest.raises(DaemonTimeout, match=r"did not answer within 0\.2s") as caught:
            call_unix(path, "agentcoord/status", {}, timeout=0.2)
        assert exit_code(caught.value) == EXIT_TEMPFAIL == 75
    finally:
        acceptor.join(5)
        for conn in accepted:
            conn.close()
        server.close()


def _fake_systemctl(bin_dir: Path, exit_status: int, said: str) -> Path:
    """A `systemctl` that records its arguments and exits as told (no user bus here)."""
    bin_dir.mkdir()
    calls = bin_dir / "calls"
    tool = bin_dir / "systemctl"
    tool.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\necho '{said}' >&2\nexit {exit_status}\n")
    tool.chmod(0o755)
    return calls


def test_install_user_fails_when_enabling_fails(tmp_path: Path) -> None:
    """`install --user` whose systemctl --user fails exits 1 with one line naming the failure
    and the fix; the units are still written."""
    calls = _fake_systemctl(tmp_path / "bin", 1, "Failed to connect to bus: No medium found")
    env = dict(
        os.environ,
        XDG_CONFIG_HOME=str(tmp_path / "cfg"),
        PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
    )
    out = _cli(env, "install", "--user")
    assert out.returncode == 1
    line = _one_line(out.stderr)
    assert "enabling them failed" in line
    assert "Failed to connect to bus: No medium found" in line
    assert "agentcoord serve" in line
    assert "enabled" not in out.stdout
    assert (tmp_path / "cfg" / "systemd" / "user" / "agentcoord.socket").is_file()
    assert calls.read_text().splitlines() == ["--user daemon-reload"]


def test_install_user_succeeds_when_enabling_works(tmp_path: Path) -> None:
    """With a working systemctl --user, install enables the socket and exits 0; --json says so."""
    calls = _fake_systemctl(tmp_path / "bin", 0, "")
    env = dict(
        os.environ,
        XDG_CONFIG_HOME=str(tmp_path / "cfg"),
        PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
    )
    out = _cli(env, "install", "--user", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["systemctl_ok"] is True
    assert report["error"] is None
    assert len(report["written"]) == 2
    assert calls.read_text().splitlines() == [
        "--user daemon-reload",
        "--user enable --now agentcoord.socket",
    ]


def test_tail_with_the_wrong_token_is_one_line(daemon: Daemon, tmp_path: Path) -> None:
    """`tail` presenting a token the daemon does not know: exit 1, one line saying what to do."""
    other_state = tmp_path / "other-state"
    other_state.mkdir(mode=0o700)
    (other_state / "human.token").write_text("not-the-token\n")
    out = _cli({**daemon.env, "AGENTCOORD_STATE_DIR": str(other_state)}, "tail")
    assert out.returncode == 1
    line = _one_line(out.stderr)
    assert "refused the event stream (HTTP 401)" in line
    assert "--state-dir" in line
