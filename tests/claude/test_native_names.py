"""The real Claude Code's session is one agent under one name: the name its registry gives it
(what its own ``ListAgents`` shows) is the agent name whoami and the SessionStart hook say
(docs/claude-code.md "Names"). Offline, against the scripted model API."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path

from tests.claude.conftest import SERVER, Claude
from tests.claude.model_api import Request, Text, ToolUse, context_texts, tool_results
from tests.claude.test_channels import _poll
from tests.claude.test_native_inbox import interactive, native_agent
from tests.conftest import Daemon, cli_json

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


def _registry_name(claude: Claude) -> str:
    """The name Claude Code's registry record gives the session working in ``claude.cwd``."""
    folder = Path(claude.env["CLAUDE_CONFIG_DIR"]) / "sessions"
    for path in folder.glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_text())
            if data.get("cwd") == str(claude.cwd) and data.get("name"):
                return str(data["name"])
    return ""


def test_an_interactive_session_is_the_agent_claude_code_names(
    daemon: Daemon, claude: Claude, tmp_path: Path
) -> None:
    """A plain interactive ``claude`` (tmux) is served under the name its registry record
    shows, and ``agentcoord agents`` lists it with its live state."""
    claude.api.script(Text("Noted."))
    with interactive(claude, tmp_path):
        agent = native_agent(daemon)
        assert agent == _registry_name(claude)
        live = {"idle", "working", "waiting-input"}

        def row() -> dict[str, object] | None:
            rows = {r["name"]: r for r in cli_json(daemon, "agents")["agents"]}
            assert agent in rows, rows
            # The state follows the registry's status, read a moment after the record is
            # served (a loaded machine can list the agent before its first state).
            return rows[agent] if rows[agent].get("state") in live else None

        assert _poll(row, "the session's live state")["state"] in live


def test_a_session_whose_name_is_no_agent_id_takes_its_agents_name(
    daemon: Daemon, claude: Claude, tmp_path: Path
) -> None:
    """A session in a directory whose name makes no agent id (over 40 characters with Claude
    Code's suffix) keeps agentcoord's own name for its agent; once the daemon serves its native
    inbox it asks the session to take that name, and the registry (what its ListAgents shows)
    then says the same."""
    project = tmp_path / ("odd-dir-" + "x" * 36)
    project.mkdir()
    odd = Claude(claude.binary, claude.env, project, claude.api)
    odd.api.script(Text("Noted."))
    with interactive(odd, tmp_path):
        agent = native_agent(daemon)
        assert agent.startswith("odd-dir-"), agent
        _poll(lambda: _registry_name(odd) == agent, "the session to take its agent's name")
    renamed = [e for e in cli_json(daemon, "audit")["events"] if e["type"] == "NATIVE_RENAMED"]
    assert [e.get("agent") for e in renamed] == [agent], renamed


def _live_session_records(claude: Claude) -> set[str]:
    """The names of Claude Code's own session records in the private config dir whose process
    is alive: what each session's ListAgents lists besides agentcoord's records."""
    names = set()
    for path in (Path(claude.env["CLAUDE_CONFIG_DIR"]) / "sessions").glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_text())
            if data.get("entrypoint") == "agentcoord" or not data.get("name"):
                continue
            if Path(f"/proc/{int(data['pid'])}").exists():
                names.add(str(data["name"]))
    return names


def _listed_sessions(d: Daemon) -> set[str]:
    """The names `list_agents` gives the live Claude Code session agents (keyed by process)."""
    from agentcoord.stores.objects.agentdirectory import PROC_LABEL
    from tests.tools.conftest import human_call

    rows = human_call(d, "list_agents")["agents"]
    return {r["name"] for r in rows if PROC_LABEL in (r.get("labels") or {})}


def test_list_agents_and_the_registry_agree_on_live_sessions(
    daemon: Daemon, claude: Claude, tmp_path: Path
) -> None:
    """With two live sessions (an interactive one and a `claude -p` held mid-turn), the
    session agents `list_agents` lists are, by name, the live session records in Claude Code's
    registry (what its ListAgents lists)."""
    hold = threading.Event()
    claude.api.script(Text("first", hold=hold))
    other = tmp_path / "other"
    other.mkdir()
    printing = Claude(claude.binary, claude.env, other, claude.api)
    proc = printing.start("hello")
    try:
        claude.api.wait_requests(1, timeout=60)
        with interactive(claude, tmp_path):

            def both() -> set[str] | None:
                names = _live_session_records(claude)
                return names if len(names) == 2 else None

            registry = _poll(both, "both sessions' records")
            _poll(lambda: len(_listed_sessions(daemon)) == 2, "both session agents")
            assert _listed_sessions(daemon) == registry
            assert _live_session_records(claude) == registry
    finally:
        hold.set()
    printing.finish(proc).check()
