"""The permission rules `agentcoord setup claude` adds keep the daemon's state dir (the human
token, the NATS credentials) away from the real Claude Code's tools (docs/security.md "How to
close it"), asserted on what the binary sends its model."""

from __future__ import annotations

import json

from tests.claude.conftest import Claude
from tests.claude.model_api import Text, ToolUse, tool_results
from tests.conftest import Daemon


def _bash(command: str) -> ToolUse:
    return ToolUse("Bash", {"command": command, "description": "read a file"})


def test_the_session_cannot_read_or_write_the_state_dir(daemon: Daemon, claude: Claude) -> None:
    """With Bash allowed (it reads a project file and one beside the state dir), the
    session's Read of the human token and of the NATS config, its Write into the state dir,
    and Bash `cat`/`head` naming the token (also by a relative path and a glob) are all
    refused; the token is in no request the binary sends the model, and nothing was
    written."""
    state = daemon.state_dir
    token = state / "human.token"
    secret = token.read_text().strip()
    assert len(secret) >= 16
    nats_conf = state / "nats" / "nats.conf"
    assert nats_conf.is_file()
    plain = claude.cwd / "plain.txt"
    plain.write_text("plain words\n")
    beside = state.parent / "beside.txt"  # outside the project, next to the state dir
    beside.write_text("next door\n")
    claude.api.script(
        _bash(f"cat {plain}"),
        _bash(f"cat {beside}"),
        ToolUse("Read", {"file_path": str(token)}),
        ToolUse("Read", {"file_path": str(nats_conf)}),
        ToolUse("Write", {"file_path": str(state / "planted.txt"), "content": "x"}),
        _bash(f"cat {token}"),
        _bash(f"head -c 64 {token}"),
        _bash(f"cd {state} && cat human.token"),
        _bash(f"cat {state}/*.token"),
        Text("done"),
    )
    run = claude.run("show me the daemon's token", "--allowedTools", "Bash")
    run.check()
    control, outside, *refused = tool_results(run.requests[-1])
    assert not control.get("is_error"), control
    assert control["text"].strip() == "plain words"
    # The refusals below are the state dir's rules, not Bash refusing paths outside the project.
    assert not outside.get("is_error"), outside
    assert outside["text"].strip() == "next door"
    assert len(refused) == 7, refused
    for result in refused:
        assert result.get("is_error"), result
        assert "denied" in result["text"] or "deny rule" in result["text"], result
    assert not any(secret in json.dumps(r.body) for r in run.requests)
    assert not (state / "planted.txt").exists()
