"""A local package agent cold-started by the daemon as the real ``claude -p`` inside bubblewrap,
talking to the scripted model API (tests/claude/model_api.py): docs/localagents.md "Local
dispatch", docs/profiles.md "Backends" (the runner command is configuration)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.claude.conftest import OFFLINE, SERVER
from tests.claude.model_api import ModelAPI, Request, Text, ToolUse, context_texts, tool_results
from tests.conftest import Daemon
from tests.tools.session_helpers import holding, own_call

WHOAMI = f"mcp__{SERVER}__whoami"


@pytest.fixture
def visible_root() -> Iterator[Path]:
    """A scratch dir outside /tmp: the sandbox's private /tmp would hide the hub and home."""
    root = Path(tempfile.mkdtemp(prefix="agentcoord-test-", dir="/var/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def runner_daemon(
    daemon_factory: Any, real_claude: Path, model_api: ModelAPI, visible_root: Path
) -> tuple[Daemon, Path]:
    """A daemon with local agents on, the package agent ``alpha``, and the real binary as its
    runner command (``runner_command``), offline against ``model_api``; the daemon and package."""
    hub = visible_root / "agentihub"
    pkg = hub / "agents" / "alpha" / "package"
    pkg.mkdir(parents=True)
    (pkg / "CLAUDE.md").write_text("# alpha\n")
    home = visible_root / "home"
    home.mkdir()
    d: Daemon = daemon_factory(
        AGENTIBRIDGE_LOCAL_AGENTS_ENABLED="true",
        AGENTIHUB_DIR=str(hub),
        AGENTCOORD_RUNNER_COMMAND=f"{real_claude} -p",
        HOME=str(home),
        **{**OFFLINE, "ANTHROPIC_BASE_URL": model_api.url, "ENABLE_TOOL_SEARCH": "false"},
    ).start()
    return d, pkg


def _answer_with_identity(req: Request) -> Text:
    me = json.loads(tool_results(req)[-1]["text"])
    return Text(f"I am {me['agent']} ({me['kind']}, depth {me['depth']})")


def _system_texts(req: Request) -> list[dict[str, Any]]:
    return [
        b
        for m in req.body["messages"]
        if m["role"] == "system" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "text"
    ]


def _phase(d: Daemon, agent: str) -> str:
    res = own_call(d, "get_agent", {"agent_id": agent})
    assert not res["isError"], res
    return str(res["structuredContent"]["agent"]["phase"])


def test_run_agent_cold_starts_the_real_claude_in_bwrap(
    runner_daemon: tuple[Daemon, Path], model_api: ModelAPI
) -> None:
    """run_agent starts the real `claude -p` in bubblewrap for a package agent; its model's
    whoami call reaches the daemon through the shim as that agent (a runner, depth 1), and the
    model's answer comes back in the job's result."""
    d, pkg = runner_daemon
    model_api.script(ToolUse(WHOAMI, {}), _answer_with_identity)
    res = own_call(d, "run_agent", {"agent_id": "alpha", "task": "who are you?", "wait": True})
    assert not res["isError"], res
    job = res["structuredContent"]["job"]
    log_dir = Path(job["log_dir"])
    stderr = (log_dir / "stderr").read_text() if (log_dir / "stderr").exists() else ""
    assert job["status"] == "succeeded", (job, stderr)
    assert job["sandbox"] == "bwrap", job
    first, second = model_api.requests
    assert WHOAMI in first.tool_names, first.tool_names
    (result,) = tool_results(second)
    me = json.loads(result["text"])
    assert (me["agent"], me["kind"], me["depth"]) == ("alpha", "runner", 1), me
    # The runner works in the package (the binary's own environment section says so).
    env_text = "\n".join(t["text"] for t in _system_texts(first))
    assert f"Primary working directory: {pkg.resolve()}" in env_text, env_text[:400]
    assert job["result"]["result"] == "I am alpha (runner, depth 1)", job["result"]
    assert _phase(d, "alpha") == "Succeeded"


def test_a_message_to_a_running_agent_is_its_next_turn(
    runner_daemon: tuple[Daemon, Path], model_api: ModelAPI
) -> None:
    """A message the human sends the agent while the real runner's first turn is under way
    reaches its model as the next user turn on stream-json stdin (docs/profiles.md "Messages
    reach a running agent"), after the first turn ended, and the job records both turns."""
    d, _ = runner_daemon
    go = threading.Event()
    model_api.script(ToolUse(WHOAMI, {}, hold=go), Text("first turn done"), Text("noted"))
    ran: dict[str, Any] = {}

    def run() -> None:
        args = {"agent_id": "alpha", "task": "look around", "wait": True}
        ran["res"] = own_call(d, "run_agent", args)

    worker = threading.Thread(target=run, name="run_agent")
    worker.start()
    try:
        model_api.wait_requests(1)
        sent = own_call(d, "send", {"to": "alpha", "text": "also update the changelog"})
        assert not sent["isError"], sent
    finally:
        go.set()
    worker.join(120)
    assert not worker.is_alive(), "run_agent did not return"
    res = ran["res"]
    assert not res["isError"], res
    job = res["structuredContent"]["job"]
    assert job["status"] == "succeeded", job
    _, second, third = model_api.requests
    assert tool_results(second), "the first turn's tool call came back"
    last_user = third.body["messages"][-1]
    assert last_user["role"] == "user", last_user
    text = _text(last_user)
    assert re.search(r"\[\d+\] from human:\S+ \(text\): also update the changelog", text), text
    assert "first turn done" in json.dumps(third.body["messages"]), "turn 1 precedes it"
    assert job["result"]["turns"] == 2, job["result"]
    assert job["result"]["result"] == "noted", job["result"]
    assert len(job["result"]["delivered"]) == 1, job["result"]


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def test_ask_cold_starts_then_resumes_the_real_claude(
    runner_daemon: tuple[Daemon, Path], model_api: ModelAPI
) -> None:
    """`ask` of a sleeping package agent cold-starts the real `claude -p` in bubblewrap and
    returns its model's answer (its whoami resolved as the agent); a second ask resumes the
    same linked session (`--resume`): its model request carries the first turn's exchange
    before the new prompt (docs/ask-and-operator.md "send_message and ask")."""
    d, _ = runner_daemon
    model_api.script(ToolUse(WHOAMI, {}), _answer_with_identity, Text("second answer"))
    first = own_call(d, "ask", {"agent": "alpha", "text": "who are you?", "timeout_secs": 60})
    assert not first["isError"], first
    one = first["structuredContent"]
    assert (one["answered"], one["answer"]) == (True, "I am alpha (runner, depth 1)"), one
    assert one["resumed"] is False
    second = own_call(d, "ask", {"agent": "alpha", "text": "and now?", "timeout_secs": 60})
    assert not second["isError"], second
    two = second["structuredContent"]
    assert (two["answer"], two["resumed"]) == ("second answer", True), two
    assert two["session_id"] == one["session_id"]
    *_, resumed = model_api.requests
    history = resumed.body["messages"]
    said = [b for m in history if m["role"] == "assistant" for b in m["content"]]
    assert [b["type"] for b in said] == ["tool_use", "text"], said
    assert said[1]["text"] == "I am alpha (runner, depth 1)"
    assert history[-1]["role"] == "user"
    assert "and now?" in _text(history[-1]), history[-1]


def test_a_runner_in_bwrap_runs_the_hooks_setup_installed(
    runner_daemon: tuple[Daemon, Path], model_api: ModelAPI, claude_bin: Path
) -> None:
    """With `agentcoord setup claude` done for the daemon's Claude Code config dir, the runner
    in bubblewrap runs the hooks through the bound socket: SessionStart tells its model it is
    the package agent, and its Write to a file another session write-claimed is denied naming
    the holder; the file is unchanged."""
    d, pkg = runner_daemon
    setup = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "claude"],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr
    target = pkg / "claimed.txt"
    target.write_text("orig\n")
    claim = [("claim", {"resource_key": str(target)})]
    with holding(d, claude_bin, claim) as held:
        assert not held[0]["isError"], held
        holder = held[0]["structuredContent"]["claim"]["agent"]
        model_api.script(
            ToolUse("Read", {"file_path": str(target)}),
            ToolUse("Write", {"file_path": str(target), "content": "new\n"}),
            Text("done"),
        )
        res = own_call(d, "run_agent", {"agent_id": "alpha", "task": "rewrite", "wait": True})
    assert not res["isError"], res
    assert res["structuredContent"]["job"]["status"] == "succeeded", res
    first, *_, last = model_api.requests
    (start,) = context_texts(first, "SessionStart")
    assert "you are agent `alpha`" in start, start[:300]
    _, write = tool_results(last)
    assert write.get("is_error"), write
    assert f"is claimed for writing by {holder}" in write["text"], write
    assert target.read_text() == "orig\n"


def test_the_default_profile_allows_only_tools_the_runner_has(
    runner_daemon: tuple[Daemon, Path], model_api: ModelAPI
) -> None:
    """Every built-in tool the shipped `default` AgentProfile allows (docs/profiles.md) is one
    the real runner offers its model: a name the binary does not have would allow nothing."""
    d, _ = runner_daemon
    res = own_call(d, "list_profiles", {})
    assert not res["isError"], res
    (default,) = [p for p in res["structuredContent"]["profiles"] if p["name"] == "default"]
    allowed = default["allowedTools"]
    assert {"Read", "Edit", "Write"} <= set(allowed), allowed
    model_api.script(Text("nothing to do"))
    run = own_call(d, "run_agent", {"agent_id": "alpha", "task": "look", "wait": True})
    assert not run["isError"], run
    assert run["structuredContent"]["job"]["status"] == "succeeded", run
    (first,) = model_api.requests
    offered = first.tool_names
    assert [t for t in allowed if t not in offered] == [], offered
