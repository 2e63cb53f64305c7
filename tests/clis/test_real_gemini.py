"""The real Gemini CLI (``gemini -p``), offline against a scripted Gemini API: the MCP server
that `agentcoord setup gemini` registered in its settings.json is ``agentcoord mcp``, and
whoami answers a Gemini session agent of the user's one daemon (docs/gemini.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.agentops.conftest import stored
from tests.clis.model_apis import Call, Say, Scripted
from tests.conftest import Daemon
from tests.tools.conftest import AgentProc


def gemini_home(tmp_path: Path, project: Path, env: dict[str, str]) -> Path:
    """A HOME whose ~/.gemini/settings.json chooses API-key auth, which trusts ``project``
    (headless runs refuse an untrusted folder), and where `agentcoord setup gemini` then
    registered agent-coord."""
    home = tmp_path / "gemini-home"
    (home / ".gemini").mkdir(parents=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    trusted = {str(project): "TRUST_FOLDER"}
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
    setup = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "gemini"],
        env={**env, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr
    return home


def test_gemini_p_calls_whoami_as_a_gemini_session(
    daemon: Daemon, real_gemini: Path, gemini_api: Scripted, tmp_path: Path
) -> None:
    """gemini -p calls whoami through agentcoord mcp and is answered as a session of kind
    gemini, named after its project dir, by the test's daemon."""
    project = tmp_path / "blog"
    project.mkdir()
    gemini_api.script(Call("whoami"), Say("done"))
    env = {
        **daemon.env,
        "HOME": str(gemini_home(tmp_path, project, daemon.env)),
        "GEMINI_API_KEY": "offline",
        "GOOGLE_GEMINI_BASE_URL": gemini_api.url,
    }
    out = subprocess.run(
        [str(real_gemini), "-p", "who am I?", "--output-format", "json", "--yolo"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    outputs = gemini_api.tool_outputs()
    assert len(outputs) == 1, (outputs, out.stderr[-3000:])
    text = json.loads(outputs[0])["response"]["output"]  # Gemini shows the model the text
    assert f"(gemini session, via unix); cwd {project}" in text, text
    agent = text.split("you are ", 1)[1].split(" ", 1)[0]
    assert agent.startswith("blog-"), text
    assert stored(daemon, "agents", agent) is not None


def test_gemini_hooks_from_setup_guard_a_claimed_file_and_deliver_the_inbox(
    daemon: Daemon, real_gemini: Path, gemini_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """After `agentcoord setup gemini`, a write_file to a file a Claude Code session holds a
    write claim on is blocked naming the holder (the file is not written), and the message that
    session queued reaches the model through the BeforeAgent hook."""
    project = tmp_path / "blog"
    project.mkdir()
    target = project / "post.md"
    holder = AgentProc(daemon, claude_bin, tmp_path / "work" / "editor")
    try:
        claimed = holder.call("claim", resource_key=f"file:{target}", mode="write", ttl="5m")
        assert claimed["acquired"] is True
        suffix = holder.name.removeprefix("editor-1")
        sent = holder.call("send", to=f"blog-1{suffix}", text="post.md is mine", queue_unknown=True)
        assert sent["delivery"] == "queued", sent
        gemini_api.script(
            Call("write_file", {"file_path": str(target), "content": "draft"}), Say("done")
        )
        env = {
            **daemon.env,
            "HOME": str(gemini_home(tmp_path, project, daemon.env)),
            "GEMINI_API_KEY": "offline",
            "GOOGLE_GEMINI_BASE_URL": gemini_api.url,
        }
        out = subprocess.run(
            [str(real_gemini), "-p", "write the post", "--output-format", "json", "--yolo"],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=180,
        )
        outputs = gemini_api.tool_outputs()
        assert len(outputs) == 1, (outputs, out.stderr[-3000:])
        assert "blocked" in outputs[0], outputs
        assert holder.name in outputs[0], outputs
        assert not target.exists()
        assert "post.md is mine" in json.dumps([body for _, body in gemini_api.requests])
    finally:
        holder.close()
