"""The real Codex CLI (``codex exec``), offline against a scripted Responses API: the MCP
server it starts is ``agentcoord mcp``, which finds the user's one daemon from Codex's
stripped environment (through the per-user pointer) and is a Codex session agent
(docs/other-clis.md "Codex")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.agentops.conftest import stored
from tests.clis.model_apis import Call, Say, Scripted
from tests.conftest import Daemon


def codex_home(tmp_path: Path, api: Scripted) -> Path:
    """A CODEX_HOME whose provider is ``api`` (remote plugin features off, FACTS: they reach
    GitHub) and whose MCP server ``agent-coord`` is ``agentcoord mcp`` with no env of its own."""
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        f"""model = "stand-in"
model_provider = "stand_in"

[model_providers.stand_in]
name = "stand-in"
base_url = "{api.url}/v1"
wire_api = "responses"
env_key = "STAND_IN_KEY"

[features]
plugins = false
remote_plugin = false
apps = false

[mcp_servers.agent-coord]
command = "{sys.executable}"
args = ["-m", "agentcoord", "mcp"]
default_tools_approval_mode = "approve"
"""
    )
    return home


def test_codex_exec_calls_whoami_as_a_codex_session(
    daemon: Daemon, real_codex: Path, responses_api: Scripted, tmp_path: Path
) -> None:
    """codex exec calls whoami through agentcoord mcp and is answered as a session of kind
    codex, named after its project dir, stored by the test's daemon (not refused, not a second
    daemon)."""
    project = tmp_path / "shop"
    project.mkdir()
    responses_api.script(Call("whoami"), Say("done"))
    env = {
        "HOME": daemon.env["HOME"],
        "PATH": daemon.env["PATH"],
        "CODEX_HOME": str(codex_home(tmp_path, responses_api)),
        "STAND_IN_KEY": "sk-offline",
    }
    out = subprocess.run(
        [str(real_codex), "exec", "--json", "--skip-git-repo-check", "who am I?"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, (out.stdout, out.stderr)
    outputs = responses_api.tool_outputs()
    assert len(outputs) == 1, (outputs, out.stdout[-3000:])
    me = answer(outputs[0])
    assert (me["kind"], me["session_kind"], me["cwd"]) == ("session", "codex", str(project)), me
    assert me["agent"].startswith("shop-"), me
    # The test's daemon (found through the pointer: Codex passed no AGENTCOORD_* and no
    # XDG_RUNTIME_DIR) is the one that knows the agent.
    assert stored(daemon, "agents", me["agent"]) is not None


def answer(output: str) -> dict[str, Any]:
    """The JSON a tool answered, from Codex's function output (a header, then the text)."""
    return json.loads(output[output.index("{") :])  # type: ignore[no-any-return]
