"""The real Claude Code's session is one agent under one name: the name its registry gives it
(what its own ``ListAgents`` shows) is the agent name whoami and the SessionStart hook say
(docs/claude-code.md "Names"). Offline, against the scripted model API."""

from __future__ import annotations

import json
from pathlib import Path

from tests.claude.conftest import SERVER, Claude
from tests.claude.model_api import Request, Text, ToolUse, context_texts, tool_results
from tests.conftest import Daemon

WHOAMI = f"mcp__{SERVER}__whoami"


def test_whoami_answers_the_name_claude_code_shows(daemon: Daemon, claude: Claude) -> None:
    """While ``claude -p`` runs, its registry record's ``name`` is the agent whoami answers and
    the agent the SessionStart hook told the model."""
    sessions = Path(daemon.env["CLAUDE_CONFIG_DIR"]) / "sessions"
    seen: dict[str, str] = {}

    def record_then_echo(req: Request) -> Text:
        # The session is alive here (it waits for this answer): its record is on disk.
        for path in sessions.glob("*.json"):
            body = json.loads(path.read_text())
            if body.get("pid") == proc.pid:
                seen["name"] = body["name"]
        return Text("result: " + tool_results(req)[-1]["text"])

    claude.api.script(ToolUse(WHOAMI, {}), record_then_echo)
    first = len(claude.api.requests)
    proc = claude.start("who am I?")
    run = claude.finish(proc, first)
    run.check()
    me = json.loads(tool_results(run.requests[1])[0]["text"])
    (start,) = context_texts(run.requests[0], "SessionStart")
    assert seen["name"], seen
    assert me["agent"] == seen["name"]
    assert f"you are agent `{seen['name']}`" in start
