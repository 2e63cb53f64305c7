"""Claude Code's http hooks against the real daemon: ``POST /hooks/<event>`` from a process under
a ``claude`` gets the same answers the command hook prints; any other caller gets an empty 200;
bad bodies get a 4xx (docs/claude-code.md "Hooks"). Also the SessionStart command hook and
doctor, when the http hooks post where the daemon does not serve."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentcoord.claude.configure import setup_claude
from tests.conftest import Daemon
from tests.tools.conftest import human_call

# Posts each (event, body) on one keep-alive connection, as Claude Code does (or on a new
# connection each, as after an idle pause); prints the answers as [[status, body], ...].
_POSTER = """
import http.client, json, sys
addr, posts, fresh = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] == "fresh"
host, port = addr.rsplit(":", 1)
conn = http.client.HTTPConnection(host, int(port), timeout=20)
out = []
for event, body in posts:
    conn.request("POST", "/hooks/" + event, json.dumps(body),
                 {"content-type": "application/json"})
    resp = conn.getresponse()
    out.append([resp.status, resp.read().decode()])
    if fresh:
        conn.close()
        conn = http.client.HTTPConnection(host, int(port), timeout=20)
print(json.dumps(out))
"""


def _session_posts(
    d: Daemon,
    claude: Path,
    posts: list[tuple[str, dict[str, Any]]],
    fresh: bool = False,
    **env: str,
) -> list[tuple[int, str]]:
    """POST ``posts`` from a process under its own stand-in ``claude`` (a session)."""
    how = "fresh" if fresh else "keep"
    out = subprocess.run(
        [str(claude), "--", sys.executable, "-c", _POSTER, d.http_addr, json.dumps(posts), how],
        env=dict(d.env, **env),
        cwd=d.root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return [(status, body) for status, body in json.loads(out.stdout)]


def _post(
    d: Daemon, path: str, body: bytes, ctype: str = "application/json", method: str = "POST"
) -> tuple[int, bytes]:
    """One request from this test process (no ``claude`` above it: no agent)."""
    host, port = d.http_addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=20)
    try:
        conn.request(method, path, body, {"content-type": ctype})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _write(d: Daemon, path: Path) -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(path), "content": "x"},
        "cwd": str(d.root),
    }


def test_pre_tool_use_over_http_denies_a_claimed_file(daemon: Daemon, claude_bin: Path) -> None:
    """A session's Write to a file another agent write-claimed is denied in Claude Code's
    PreToolUse JSON, naming the holder; a Write to an unclaimed file gets an empty 200."""
    claimed = daemon.root / "src" / "auth.py"
    human_call(daemon, "claim", resource_key=f"file:{claimed}", mode="write", ttl="5m")
    answers = _session_posts(
        daemon,
        claude_bin,
        [("pre-tool-use", _write(daemon, claimed)), ("pre-tool-use", _write(daemon, daemon.root))],
    )
    (status, body), free = answers
    assert status == 200, body
    spec = json.loads(body)["hookSpecificOutput"]
    assert spec["hookEventName"] == "PreToolUse"
    assert spec["permissionDecision"] == "deny"
    assert "human:" in spec["permissionDecisionReason"]
    assert free == (200, "")


def test_a_new_connection_of_the_same_session_is_answered_as_that_session(
    daemon: Daemon, claude_bin: Path
) -> None:
    """Posts on a new connection each (Claude Code reconnects after an idle pause) are each
    answered as the same session: denied for the claimed file, allowed for its own."""
    claimed = daemon.root / "src" / "auth.py"
    human_call(daemon, "claim", resource_key=f"file:{claimed}", mode="write", ttl="5m")
    posts = [("pre-tool-use", _write(daemon, claimed))] * 3
    posts.append(("pre-tool-use", _write(daemon, daemon.root / "mine.py")))
    answers = _session_posts(daemon, claude_bin, posts, fresh=True)
    for status, body in answers[:3]:
        assert status == 200, body
        assert json.loads(body)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert answers[3] == (200, "")


def test_a_caller_that_is_no_agent_gets_an_empty_200(daemon: Daemon) -> None:
    """The same Write to a claimed file, posted by a process with no ``claude`` above it,
    gets an empty 200: the hook passes (fail open), nothing is answered to a non-agent."""
    claimed = daemon.root / "src" / "auth.py"
    human_call(daemon, "claim", resource_key=f"file:{claimed}", mode="write", ttl="5m")
    body = json.dumps(_write(daemon, claimed)).encode()
    assert _post(daemon, "/hooks/pre-tool-use", body) == (200, b"")


def test_post_tool_use_over_http_delivers_a_queued_message_once(
    daemon: Daemon, claude_bin: Path
) -> None:
    """A message sent to a session comes back as PostToolUse additional context on its next
    tool call, and not again on the one after."""
    env = {"CLAUDE_CODE_SESSION_ID": "s-http-recipient"}
    recipient = subprocess.run(
        [str(claude_bin), "--", sys.executable, "-m", "agentcoord", "hook", "session-start"],
        env=dict(daemon.env, **env),
        cwd=daemon.root,
        input="{}",
        capture_output=True,
        text=True,
        timeout=30,
    )
    name = json.loads(recipient.stdout)["hookSpecificOutput"]["additionalContext"].split("`")[1]
    human_call(daemon, "send", to=name, text="tests are green on main")
    tool = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}
    first, second = _session_posts(
        daemon, claude_bin, [("post-tool-use", tool), ("post-tool-use", tool)], False, **env
    )
    assert first[0] == 200, first
    spec = json.loads(first[1])["hookSpecificOutput"]
    assert spec["hookEventName"] == "PostToolUse"
    assert "tests are green on main" in spec["additionalContext"]
    assert second == (200, "")


def test_bad_hook_requests_get_a_clear_4xx(daemon: Daemon) -> None:
    """A body that is not JSON or not an object is 400, another content type 415, an event
    we do not serve 404, a GET 405, a body over the daemon's limit 413, a foreign Host 403:
    each a non-2xx, which Claude Code treats as a non-blocking error."""
    status, text = _post(daemon, "/hooks/pre-tool-use", b"{not json")
    assert status == 400
    assert b"not JSON" in text
    assert _post(daemon, "/hooks/pre-tool-use", b"[1, 2]")[0] == 400
    assert _post(daemon, "/hooks/pre-tool-use", b"{}", ctype="text/plain")[0] == 415
    assert _post(daemon, "/hooks/stop", b"{}")[0] == 404
    assert _post(daemon, "/hooks/pre-tool-use", b"", method="GET")[0] == 405
    huge = json.dumps({"tool_response": "x" * (5 * 1024 * 1024)}).encode()
    assert _post(daemon, "/hooks/post-tool-use", huge)[0] == 413
    host, port = daemon.http_addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=20)
    try:
        conn.request(
            "POST",
            "/hooks/pre-tool-use",
            b"{}",
            {"content-type": "application/json", "host": "evil.example"},
        )
        assert conn.getresponse().status == 403
    finally:
        conn.close()


def _session_start(d: Daemon, claude: Path, home: Path) -> dict[str, Any]:
    out = subprocess.run(
        [str(claude), "--", sys.executable, "-m", "agentcoord", "hook", "session-start"],
        env=dict(d.env, HOME=str(home)),
        cwd=d.root,
        input=json.dumps({"hook_event_name": "SessionStart", "cwd": str(d.root)}),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_session_start_and_doctor_flag_hooks_posting_to_a_wrong_address(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """With the http hooks posting to a port the daemon does not serve, the SessionStart hook
    tells the session once (systemMessage, and the model) and doctor's hooks check fails
    naming both addresses; set up again, both are quiet."""
    home = tmp_path / "home"
    claude_dir = Path(daemon.env["CLAUDE_CONFIG_DIR"])
    wrong = "127.0.0.1:9"
    setup_claude(home, claude_dir, "agentcoord", http_addr=wrong)
    told = _session_start(daemon, claude_bin, home)
    assert wrong in told["systemMessage"]
    assert daemon.http_addr in told["systemMessage"]
    context = told["hookSpecificOutput"]["additionalContext"]
    assert "you are agent" in context
    assert told["systemMessage"] in context

    def doctor() -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, "-m", "agentcoord", "doctor", "--json"],
            env=dict(daemon.env, HOME=str(home)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        return {c["name"]: c for c in json.loads(out.stdout)}["hooks"]  # type: ignore[no-any-return]

    check = doctor()
    assert check["ok"] is False, check
    assert wrong in check["detail"]
    assert daemon.http_addr in check["detail"]
    assert check["fix"] == "agentcoord setup claude"
    setup_claude(home, claude_dir, "agentcoord", http_addr=daemon.http_addr)
    assert "systemMessage" not in _session_start(daemon, claude_bin, home)
    assert doctor()["ok"] is True
