"""Profile -> launch translation (pure), and the turn loop against the stand-in ``claude -p``
with an in-memory mailbox."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentcoord.errors import ConfigError
from agentcoord.kernel.config import load_config
from agentcoord.localagents.conversation import Incoming, converse, render_messages, user_turn
from agentcoord.localagents.profiles import (
    Profile,
    ProfileError,
    backend_argv,
    default_profile_body,
    plan_launch,
    profile_from_object,
    profile_problems,
    resolve_servers,
    runner_env,
    server_env_name,
)
from tests.conftest import FAKES

SHIM = {"type": "stdio", "command": "agentcoord", "args": ["mcp"]}


@pytest.mark.unit
def test_server_env_names_follow_the_seed() -> None:
    """Names are upcased with dashes to underscores: agent-coord reads MCP_AGENT_COORD_URL."""
    assert server_env_name("agent-coord") == "MCP_AGENT_COORD_URL"
    assert server_env_name("meridian-mcp") == "MCP_MERIDIAN_MCP_URL"
    assert server_env_name("docs") == "MCP_DOCS_URL"


@pytest.mark.unit
def test_resolution_uses_urls_then_the_shim_default() -> None:
    """Each name resolves through its URL; agent-coord falls back to the shim; order is kept."""
    env = {"MCP_B_URL": "http://127.0.0.1:1/mcp", "MCP_C_URL": "https://x/sse"}
    cfg = resolve_servers(["b", "agent-coord", "c", "b"], env, SHIM)
    assert cfg == {
        "mcpServers": {
            "b": {"type": "http", "url": "http://127.0.0.1:1/mcp"},
            "agent-coord": SHIM,
            "c": {"type": "sse", "url": "https://x/sse"},
        }
    }
    over = resolve_servers(["agent-coord"], {"MCP_AGENT_COORD_URL": "http://h/mcp"}, SHIM)
    assert over["mcpServers"]["agent-coord"] == {"type": "http", "url": "http://h/mcp"}


@pytest.mark.unit
def test_every_unresolvable_name_is_reported() -> None:
    """Names that resolve nowhere fail together, naming the variables to set."""
    with pytest.raises(ProfileError) as info:
        resolve_servers(["agent-coord", "x-y", "z"], {}, SHIM)
    text = str(info.value)
    assert "x-y, z resolve nowhere" in text
    assert "MCP_X_Y_URL, MCP_Z_URL" in text
    with pytest.raises(ProfileError, match="not an http"):
        resolve_servers(["z"], {"MCP_Z_URL": "stdio:z"}, SHIM)
    with pytest.raises(ProfileError, match="not a bare name"):
        resolve_servers(["../z"], {}, SHIM)


@pytest.mark.unit
def test_runner_env_is_the_seed_layout() -> None:
    """AGENT_ID, inbox and status subjects, MCP_SERVERS joined with spaces; spec.env merged."""
    profile = Profile("p", mcp_servers=("agent-coord", "m"), env=(("FOO", "1"),))
    assert runner_env("alpha", profile) == {
        "FOO": "1",
        "AGENT_ID": "alpha",
        "AGENT_INBOX_SUBJECT": "agents.alpha.inbox",
        "AGENT_STATUS_SUBJECT": "agents.alpha.status",
        "MCP_SERVERS": "agent-coord m",
    }
    spoof = Profile("p", env=(("AGENT_ID", "mallory"),))
    assert runner_env("alpha", spoof)["AGENT_ID"] == "alpha"  # a profile cannot rename it


@pytest.mark.unit
def test_backend_argv_owns_the_format_flags(tmp_path: Path) -> None:
    """Configured --output-format/--verbose are replaced by stream-json both ways."""
    profile = Profile("p", mcp_servers=("agent-coord",), allowed_tools=("Read",), max_turns=3)
    command = ["claude", "-p", "--output-format", "json", "--verbose", "--output-format=text"]
    argv = backend_argv(command, profile, tmp_path / "m.json")
    assert argv == [
        "claude",
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--mcp-config",
        str(tmp_path / "m.json"),
        "--strict-mcp-config",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        "Read,mcp__agent-coord",
        "--max-turns",
        "3",
    ]
    full = Profile(
        "p",
        model="m",
        disallowed_tools=("Bash", "WebFetch"),
        max_budget_usd=1.25,
        system_prompt="hi",
        writable_paths=("/a", "/b"),
    )
    argv = backend_argv(["claude", "-p"], full, tmp_path / "m.json")
    tail = argv[argv.index("--max-turns") + 2 :]
    assert tail == [
        "--disallowedTools",
        "Bash,WebFetch",
        "--model",
        "m",
        "--max-budget-usd",
        "1.25",
        "--append-system-prompt",
        "hi",
        "--add-dir",
        "/a",
        "--add-dir",
        "/b",
    ]


@pytest.mark.unit
def test_profile_fields_fall_back_to_the_daemon_defaults() -> None:
    """Unset spec fields take the runner defaults; set ones (even false/0) win."""
    defaults = Profile("default", max_turns=20, timeout_s=900.0, permission_mode="acceptEdits")
    obj = {
        "metadata": {"name": "x", "generation": 3},
        "spec": {"backend": "claude-code", "network": False, "maxBudgetUsd": 0, "env": {"A": "b"}},
    }
    p = profile_from_object(obj, defaults)
    assert (p.name, p.generation, p.network, p.max_budget_usd) == ("x", 3, False, 0.0)
    assert (p.max_turns, p.timeout_s, p.permission_mode) == (20, 900.0, "acceptEdits")
    assert p.mcp_servers == ("agent-coord",)
    assert p.env == (("A", "b"),)
    body = default_profile_body(
        permission_mode="plan", allowed_tools="Read,mcp__agent-coord", max_turns=5, timeout_s=60
    )
    assert body["spec"]["allowedTools"] == ["Read"]
    assert body["spec"]["mcpServers"] == ["agent-coord"]


@pytest.mark.unit
def test_plan_launch_mcp_config_bypass_and_errors(tmp_path: Path) -> None:
    """MCP_CONFIG (daemon env or spec.env) bypasses synthesis; bad values fail clearly."""
    custom = tmp_path / "c.json"
    custom.write_text("{}")
    backends = {"claude-code": "claude -p"}

    def plan(profile: Profile, env: dict[str, str]) -> Any:
        return plan_launch(
            profile=profile,
            agent="a",
            backends=backends,
            base_env=env,
            job_dir=tmp_path,
            default_agent_coord=SHIM,
        )

    bypass = plan(Profile("p", mcp_servers=("unknown",)), {"MCP_CONFIG": str(custom)})
    assert bypass.mcp_config is None
    assert bypass.config_file == custom
    assert bypass.readable == (custom,)
    normal = plan(Profile("p", env=(("MCP_CONFIG", ""),)), {})
    assert normal.config_file == tmp_path / "mcp.json"
    assert list(normal.mcp_config["mcpServers"]) == ["agent-coord"]
    with pytest.raises(ProfileError, match="not an absolute path to a file"):
        plan(Profile("p"), {"MCP_CONFIG": str(tmp_path / "missing.json")})
    with pytest.raises(ProfileError, match="backend 'codex' is not configured"):
        plan(Profile("p", backend="codex"), {})
    with pytest.raises(ProfileError, match="is not absolute"):
        plan(Profile("p", writable_paths=("rel",)), {})


@pytest.mark.unit
def test_profile_problems_for_doctor(tmp_path: Path) -> None:
    """doctor's view: a missing backend command and unresolvable servers are problems."""
    backends = {"claude-code": "no-such-claude-xyz -p", "py": f"{sys.executable} -x"}
    env = {"PATH": "/usr/bin:/bin"}
    assert profile_problems(Profile("p", backend="py"), backends, env) == []
    assert profile_problems(Profile("p"), backends, env) == [
        "backend 'claude-code': no-such-claude-xyz is not installed"
    ]
    (problem,) = profile_problems(Profile("p", backend="py", mcp_servers=("m",)), backends, env)
    assert "MCP_M_URL" in problem


@pytest.mark.unit
def test_backends_table_in_the_config_file(tmp_path: Path) -> None:
    """[backends] in config.toml adds runner commands; claude-code is runner_command."""
    conf = tmp_path / "c.toml"
    conf.write_text('runner_command = "claude -p"\n[backends]\ncodex = "codex exec"\n')
    cfg = load_config({}, {"HOME": "/h", "AGENTCOORD_CONFIG": str(conf)}, uid=1)
    assert cfg.backend_commands() == {"claude-code": "claude -p", "codex": "codex exec"}
    conf.write_text("backends = 3\n")
    with pytest.raises(ConfigError, match="backends"):
        load_config({}, {"HOME": "/h", "AGENTCOORD_CONFIG": str(conf)}, uid=1)


@pytest.mark.unit
def test_message_turn_rendering() -> None:
    """A delivered batch becomes one user turn, oldest first, with sender and channel."""
    text = render_messages(
        [Incoming(4, "bob", "text", "hi"), Incoming(9, "carol", "text", "yo", channel="ops")]
    )
    assert "[4] from bob (text): hi" in text
    assert "[9] from carol on #ops (text): yo" in text
    line = json.loads(user_turn(text))
    assert line == {"type": "user", "message": {"role": "user", "content": text}}


class ListMailbox:
    """An in-memory mailbox: hands out scripted batches, records what was given back."""

    def __init__(self, batches: list[list[Incoming]]) -> None:
        self.batches = batches
        self.given_back: list[Incoming] = []

    async def fetch(self, wait: float) -> list[Incoming]:
        if self.batches:
            return self.batches.pop(0)
        await asyncio.sleep(min(wait, 0.05))
        return []

    async def give_back(self, messages: Sequence[Incoming]) -> None:
        self.given_back += messages


async def _talk(
    tmp_path: Path, prompt: str, mailbox: ListMailbox
) -> tuple[Any, list[dict[str, Any]], list[str]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(FAKES / "claude_runner.py"),
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        # The stand-in writes its transcript under $CLAUDE_CONFIG_DIR/projects/<cwd>
        # (docs/localagents.md "Sessions"): both in this test's own dir.
        env={**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")},
        cwd=tmp_path,
    )
    statuses: list[dict[str, Any]] = []
    killed: list[str] = []

    async def status(**fields: Any) -> None:
        statuses.append(fields)

    async def kill() -> None:
        killed.append("kill")
        proc.kill()

    assert proc.stdin is not None
    assert proc.stdout is not None
    out = await converse(
        agent="a",
        prompt=prompt,
        stdin=proc.stdin,
        stdout=proc.stdout,
        log_path=tmp_path / "log",
        mailbox=mailbox,
        status=status,
        kill=kill,
    )
    await proc.wait()
    return out, statuses, killed


async def test_a_message_mid_turn_waits_for_the_turn_to_end(tmp_path: Path) -> None:
    """A message read during turn 1 is delivered as turn 2, not into turn 1."""
    box = ListMailbox([[Incoming(7, "bob", "text", "hello")]])
    out, statuses, killed = await _talk(tmp_path, "sleep 0.3", box)
    assert out.turns == 2
    assert out.delivered == [7]
    first, second = (json.loads(r["result"]) for r in out.results)
    assert first["prompt"] == "sleep 0.3"
    assert "[7] from bob (text): hello" in second["prompt"]
    assert [s["focus"] for s in statuses] == ["sleep 0.3", "reading 1 message(s) from bob"]
    assert not killed
    assert not box.given_back
    assert list((tmp_path / "claude" / "projects").glob("*/*.jsonl"))  # its transcript, here


async def test_stop_kills_and_drain_gives_back(tmp_path: Path) -> None:
    """control stop kills mid-turn; after a drain, unread text goes back to the mailbox."""
    stop = ListMailbox([[Incoming(1, "boss", "control", "stop")]])
    out, _, killed = await _talk(tmp_path, "sleep 30", stop)
    assert (out.control, out.control_from, killed) == ("stop", "boss", ["kill"])
    assert out.results == []
    drain = ListMailbox(
        [[Incoming(2, "boss", "control", "drain"), Incoming(3, "bob", "text", "later")]]
    )
    out, _, killed = await _talk(tmp_path, "sleep 0.3", drain)
    assert (out.control, out.turns, killed) == ("drain", 1, [])
    assert [m.seq for m in drain.given_back] == [3]


@pytest.mark.unit
def test_oneshot_argv_for_the_operators_turns(tmp_path: Path) -> None:
    """One-prompt runners get json output, the prompt (never read as a flag), the shim only."""
    from agentcoord.localagents.runner import RunnerSpec, oneshot_plan, runner_argv

    spec = RunnerSpec(command=("claude", "-p", "--output-format", "text", "--resume", "s1"))
    argv = runner_argv(spec, "--rm -rf", tmp_path / "mcp.json")
    assert argv[:7] == ["claude", "-p", "--resume", "s1", "--output-format", "json", " --rm -rf"]
    assert argv[7:10] == ["--mcp-config", str(tmp_path / "mcp.json"), "--strict-mcp-config"]
    plan = oneshot_plan(spec, "hi", tmp_path, tmp_path / "run", ["agentcoord", "mcp"])
    assert plan.turns_on_stdin is False
    assert plan.mcp_config == {
        "mcpServers": {
            "agent-coord": {
                "type": "stdio",
                "command": "agentcoord",
                "args": ["mcp"],
                "env": {"AGENTCOORD_RUNTIME_DIR": str(tmp_path / "run")},
            }
        }
    }


@pytest.mark.unit
def test_a_profile_plan_for_one_prompt_per_process(tmp_path: Path) -> None:
    """The one-prompt form keeps the profile's flags and MCP config, adds the session flags."""
    profile = Profile("p", mcp_servers=("agent-coord",), model="m")
    plan = plan_launch(
        profile=profile,
        agent="a",
        backends={"claude-code": "claude -p --output-format text"},
        base_env={},
        job_dir=tmp_path,
        default_agent_coord=SHIM,
        prompt="-x do it",
        session_args=("--resume", "s1"),
    )
    assert plan.turns_on_stdin is False
    assert plan.argv[:7] == [
        "claude",
        "-p",
        "--resume",
        "s1",
        "--output-format",
        "json",
        " -x do it",
    ]
    assert plan.argv[plan.argv.index("--model") + 1] == "m"
    assert plan.mcp_config == {"mcpServers": {"agent-coord": SHIM}}
    assert plan.env["AGENT_ID"] == "a"
