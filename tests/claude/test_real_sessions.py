"""The real Claude Code in ``-p`` mode, set up by ``agentcoord setup claude``, against the real
daemon, with the scripted model API (tests/claude/model_api.py) standing in for Anthropic's: what
the binary sends the model proves what agent-coord's server and hooks gave it."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests.agentops.conftest import wait_for
from tests.claude.conftest import NO_NATIVE_INBOX, SERVER, Claude
from tests.claude.model_api import Request, Text, ToolUse, context_texts, tool_results
from tests.conftest import Daemon
from tests.tools.session_helpers import holding, own_call, session_call

WHOAMI = f"mcp__{SERVER}__whoami"


def _agents(d: Daemon) -> dict[str, dict[str, Any]]:
    """Every agent the daemon lists (ended sessions too), by name, as the human sees them."""
    res = own_call(d, "list_agents", {"status": "all"})
    assert not res["isError"], res
    return {a["name"]: a for a in res["structuredContent"]["agents"]}


def _echo_last_result(req: Request) -> Text:
    """The model answers with the last tool result it was given."""
    return Text("result: " + tool_results(req)[-1]["text"])


def _session_agent(first: Request) -> str:
    """The agent name the SessionStart hook told the model (before any tool call)."""
    (text,) = context_texts(first, "SessionStart")
    found = re.search(r"you are agent `([^`]+)`", text)
    assert found, text
    return found.group(1)


def test_whoami_answers_the_sessions_agent(daemon: Daemon, claude: Claude) -> None:
    """The model's argument-less whoami call gets back (as the tool_result the binary sends)
    the agent the daemon lists for that Claude Code session, with the session's id and cwd."""
    claude.api.script(ToolUse(WHOAMI, {}), _echo_last_result)
    run = claude.run("who am I?")
    run.check()
    first, second = run.requests
    # -p sends nothing but streaming model requests, MCP schemas in full (docs/claude-code.md).
    assert {(r.method, r.path, r.body.get("stream")) for r in run.requests} == {
        ("POST", "/v1/messages?beta=true", True)
    }
    tool = first.tool(WHOAMI)
    assert tool["input_schema"].get("properties", {}) == {}, tool
    (result,) = tool_results(second)
    assert not result.get("is_error"), result
    me = json.loads(result["text"])  # structuredContent reaches the model
    assert me["kind"] == "session"
    assert me["via"] == "unix"
    assert me["session"] == run.result["session_id"]
    assert me["cwd"] == str(claude.cwd)
    assert me["agent"] == _session_agent(first)
    listed = _agents(daemon)
    assert me["agent"] in listed, listed
    assert run.result["result"] == "result: " + result["text"]


def _offered_file_tools(req: Request) -> list[str]:
    return [t for t in ("Write", "Edit", "MultiEdit", "NotebookEdit") if t in req.tool_names]


def _claimed(daemon: Daemon, claude_bin: Path, path: Path) -> Any:
    """Hold a write claim on ``path`` from another session (a stand-in ``claude`` process)."""
    return holding(
        daemon, claude_bin, [("claim", {"resource_key": str(path), "purpose": "rewrite"})]
    )


def _assert_denied(result: dict[str, Any], holder: str) -> None:
    assert result.get("is_error"), result
    assert f"claimed for writing by {holder}" in result["text"], result
    assert "claim purpose: rewrite" in result["text"], result
    assert f"send_message to {holder}" in result["text"], result


def test_write_and_edit_of_a_file_claimed_by_another_agent_are_denied(
    daemon: Daemon, claude: Claude, claude_bin: Path
) -> None:
    """Write and Edit of a file another session holds a write claim on (in a git repository:
    the claim by absolute path, the write by the session's own path) are denied by the
    PreToolUse hook, naming the holder, in the tool_result the model gets; the file is
    unchanged, and a Write to an unclaimed file in the same turn goes through."""
    subprocess.run(["git", "init", "-q", str(claude.cwd)], check=True, timeout=30)
    notes = claude.cwd / "notes.txt"
    notes.write_text("original\n")
    free = claude.cwd / "free.txt"
    with _claimed(daemon, claude_bin, notes) as held:
        assert not held[0]["isError"], held
        holder = held[0]["structuredContent"]["claim"]["agent"]
        claude.api.script(
            ToolUse("Read", {"file_path": str(notes)}),
            ToolUse("Write", {"file_path": str(notes), "content": "overwritten\n"}),
            ToolUse(
                "Edit",
                {"file_path": str(notes), "old_string": "original", "new_string": "edited"},
            ),
            ToolUse("Write", {"file_path": str(free), "content": "mine\n"}),
            Text("done"),
        )
        run = claude.run("rewrite the notes")
    run.check()
    # MultiEdit is gone from 2.1.328; NotebookEdit is the other file tool it offers.
    assert _offered_file_tools(run.requests[0]) == ["Write", "Edit", "NotebookEdit"]
    read, write, edit, write_free = tool_results(run.requests[-1])
    assert not read.get("is_error"), read
    _assert_denied(write, holder)
    _assert_denied(edit, holder)
    assert notes.read_text() == "original\n"
    assert not write_free.get("is_error"), write_free
    assert free.read_text() == "mine\n"


def test_notebook_edit_of_a_notebook_claimed_by_another_agent_is_denied(
    daemon: Daemon, claude: Claude, claude_bin: Path
) -> None:
    """NotebookEdit of a notebook another session holds a write claim on is denied by the
    PreToolUse hook, naming the holder (docs/claims.md: the write guard covers NotebookEdit),
    and the notebook is unchanged."""
    book = claude.cwd / "book.ipynb"
    book.write_text(json.dumps(_notebook()))
    before = book.read_bytes()
    with _claimed(daemon, claude_bin, book) as held:
        assert not held[0]["isError"], held
        holder = held[0]["structuredContent"]["claim"]["agent"]
        claude.api.script(
            ToolUse("Read", {"file_path": str(book)}),
            ToolUse(
                "NotebookEdit",
                {
                    "notebook_path": str(book),
                    "new_source": "print('edited')",
                    "cell_type": "code",
                    "edit_mode": "insert",
                },
            ),
            Text("done"),
        )
        run = claude.run("add a cell to the notebook")
    run.check()
    read, notebook_edit = tool_results(run.requests[-1])
    assert not read.get("is_error"), read
    _assert_denied(notebook_edit, holder)
    assert book.read_bytes() == before


def _notebook() -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": "code", "id": "c1", "metadata": {}}
    cell.update(source=["print('hi')"], execution_count=None, outputs=[])
    return {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_a_message_arrives_with_the_next_prompt(
    daemon: Daemon, claude: Claude, claude_bin: Path
) -> None:
    """A message another agent sends the session between two prompts reaches the model in the
    next prompt's first request (`--resume`, the same Agent), as UserPromptSubmit hook
    additional context naming the sender; the first prompt's requests had no such context."""
    # The hooks' path: a session without a native inbox (docs/claude-code.md "The native inbox").
    claude.env[NO_NATIVE_INBOX] = "0"
    claude.api.script(Text("hello"))
    first = claude.run("hello")
    first.check()
    me = _session_agent(first.requests[0])
    assert not context_texts(first.requests[0], "UserPromptSubmit")
    calls = [("whoami", {}), ("send", {"to": me, "text": "rebase on main"})]
    who, sent = session_call(daemon, claude_bin, calls)
    assert not sent["isError"], sent
    sender = who["structuredContent"]["agent"]
    assert sender != me
    claude.api.script(Text("ok"))
    second = claude.run("next", "--resume", first.result["session_id"])
    second.check()
    (context,) = context_texts(second.requests[0], "UserPromptSubmit")
    assert f"- from {sender}: rebase on main" in context, context
    assert second.result["session_id"] == first.result["session_id"]
    # --resume is a new process of the same session: the same Agent (docs/localagents.md).
    assert _session_agent(second.requests[0]) == me


def test_a_message_sent_mid_turn_arrives_after_the_next_tool_call(
    daemon: Daemon, claude: Claude
) -> None:
    """A message the human sends while the model is deciding its first tool call reaches the
    model in the request after that tool call, as PostToolUse hook additional context."""
    # The hooks' path: a session without a native inbox (docs/claude-code.md "The native inbox").
    claude.env[NO_NATIVE_INBOX] = "0"
    go = threading.Event()
    claude.api.script(ToolUse(WHOAMI, {}, hold=go), Text("read it"))
    proc = claude.start("check in")
    try:
        (first,) = claude.api.wait_requests(1)
        me = _session_agent(first)
        res = own_call(daemon, "send", {"to": me, "text": "stop touching the schema"})
        assert not res["isError"], res
    finally:
        go.set()
    run = claude.finish(proc)
    run.check()
    first, second = run.requests
    assert not context_texts(first, "PostToolUse")
    (context,) = context_texts(second, "PostToolUse")
    assert context.startswith(f"PostToolUse:{WHOAMI} hook additional context:"), context
    assert re.search(r"- from human:\S*: stop touching the schema", context), context
    assert json.loads(tool_results(second)[-1]["text"])["agent"] == me


def test_the_sessions_agent_ends_when_claude_exits(daemon: Daemon, claude: Claude) -> None:
    """When the `claude -p` process exits, the Agent of its session goes to phase Ended (and
    stays listed with `status: all`, with when and why)."""
    claude.api.script(ToolUse(WHOAMI, {}), _echo_last_result)
    run = claude.run("who am I?")
    me = json.loads(tool_results(run.requests[-1])[-1]["text"])["agent"]
    wait_for(lambda: _agents(daemon)[me].get("phase") == "Ended", what="Ended")
    row = _agents(daemon)[me]
    assert row.get("ended_at"), row
    # -p runs the SessionEnd hook (reason "other") before it exits: the hook ended it.
    assert row.get("reason") == "SessionEnd hook (other)", row
    live = own_call(daemon, "list_agents", {})["structuredContent"]["agents"]
    assert me not in [a["name"] for a in live]


def test_a_write_takes_an_edit_lease_that_ends_with_the_session(
    daemon: Daemon, claude: Claude
) -> None:
    """A Write by the session takes an automatic edit lease on the file, held by the
    session's agent while the turn goes on (docs/claims.md "Claiming files"), and released
    when the session ends."""
    done = threading.Event()
    target = claude.cwd / "a.txt"
    claude.api.script(
        ToolUse("Write", {"file_path": str(target), "content": "x\n"}),
        Text("done", hold=done),
    )
    proc = claude.start("write a.txt")
    try:
        first, _ = claude.api.wait_requests(2)
        rows = own_call(daemon, "check_claims", {})["structuredContent"]["claims"]
    finally:
        done.set()
    run = claude.finish(proc)
    run.check()
    assert target.read_text() == "x\n"
    (lease,) = rows
    assert lease["agent"] == _session_agent(first), lease
    assert lease["path"] == str(target), lease
    assert (lease["mode"], lease["purpose"]) == ("write", "automatic edit lease"), lease
    wait_for(
        lambda: not own_call(daemon, "check_claims", {})["structuredContent"]["claims"],
        what="the lease released",
    )


def test_a_tool_call_in_another_agents_name_is_refused_to_the_model(
    daemon: Daemon, claude: Claude
) -> None:
    """A claim the model makes with `agent` naming someone else comes back to it as an error
    tool_result, `identity mismatch: you are <session agent>, not <name>` (docs/profiles.md
    "Identity"), and no claim is taken."""
    key = str(claude.cwd / "x.py")
    claude.api.script(
        ToolUse(f"mcp__{SERVER}__claim", {"resource_key": key, "agent": "someone-else"}),
        _echo_last_result,
    )
    run = claude.run("claim x.py as someone else")
    run.check()
    me = _session_agent(run.requests[0])
    (result,) = tool_results(run.requests[-1])
    assert result.get("is_error"), result
    assert f"identity mismatch: you are {me}, not someone-else" in result["text"], result
    assert own_call(daemon, "check_claims", {})["structuredContent"]["claims"] == []


def _references(result: dict[str, Any]) -> list[str]:
    """The tools a ToolSearch result loaded (its ``tool_reference`` blocks), best first."""
    content = result.get("content")
    blocks = content if isinstance(content, list) else []
    return [b["tool_name"] for b in blocks if b.get("type") == "tool_reference"]


def test_with_tool_search_the_model_finds_and_loads_the_tools(
    daemon: Daemon, claude: Claude
) -> None:
    """With Claude Code's default tool search (MCP tools deferred), the model sees agent-coord's
    tools by name only; a keyword search for claiming a file finds `claim` first (its description is
    what matches), and whoami loaded by name works."""
    del claude.env["ENABLE_TOOL_SEARCH"]
    claude.api.script(
        ToolUse("ToolSearch", {"query": "claim a file before editing", "max_results": 5}),
        ToolUse("ToolSearch", {"query": f"select:{WHOAMI}", "max_results": 5}),
        ToolUse(WHOAMI, {}),
        _echo_last_result,
    )
    run = claude.run("who am I, and how do I claim a file?")
    run.check()
    first = run.requests[0]
    assert WHOAMI not in first.tool_names
    assert WHOAMI in json.dumps(first.body["messages"])  # listed by name for ToolSearch
    found, selected, whoami = tool_results(run.requests[-1])
    assert _references(found)[0] == f"mcp__{SERVER}__claim", found
    assert _references(selected) == [WHOAMI], selected
    assert not whoami.get("is_error"), whoami
    assert json.loads(whoami["text"])["agent"] == _session_agent(first)
