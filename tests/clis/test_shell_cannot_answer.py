"""The human proof against each real CLI (docs/security.md "Who a caller is"): a model that asks
Codex's, Gemini CLI's or OpenCode's own shell tool to run ``agentcoord answer <id> yes`` for a
pending prompt is refused as not the human, and the prompt stays open. The command is told
where the daemon and the human token are (``--state-dir``, ``--runtime-dir``), so nothing but
the human proof stops it: the command's ancestry reaches the CLI's session (and it carries the
markers each CLI sets for its commands)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.clis.model_apis import Call, Say, Scripted
from tests.clis.test_real_codex import codex_home
from tests.clis.test_real_gemini import gemini_home
from tests.clis.test_real_opencode import OFFLINE, opencode_config
from tests.conftest import Daemon
from tests.security.test_human_proof import _refusals, _still_open
from tests.tools.conftest import AgentProc, human_call

REFUSED = "refused to act as the human"


def _pending(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> str:
    """A prompt a Claude Code session raised and nobody answered yet."""
    asker = AgentProc(daemon, claude_bin, tmp_path / "work" / "asker")
    try:
        out = asker.call("request_approval", question="rm -rf prod?", timeout_secs=0)
    finally:
        asker.close()
    assert out["answered"] is False, out
    return str(out["prompt"])


def _answer_command(daemon: Daemon, prompt: str) -> str:
    return (
        f"{sys.executable} -m agentcoord answer --state-dir {daemon.state_dir} "
        f"--runtime-dir {daemon.runtime_dir} {prompt} yes"
    )


def _refused(daemon: Daemon, prompt: str, output: str, project: Path) -> None:
    """The shell command's output says it was refused; the prompt is open and unanswered; the
    audit has the refused login and answer, both by the CLI session's agent (named after its
    project): its ancestry gave it away."""
    assert REFUSED in output, output
    assert _still_open(daemon, prompt)
    events = _refusals(daemon, want=2)
    tried = [(e["what"], e["reason"], e["kind"], e.get("prompt")) for e in events]
    assert tried == [
        ("agentcoord/login", "agent-process", "session", None),
        ("answer_prompt", "human-only", "session", prompt),
    ], events
    assert all(e["agent"].startswith(f"{project.name}-") for e in events), events
    answered = human_call(daemon, "audit", type="HUMAN_ANSWERED")["events"]
    assert answered == [], answered


def test_codex_shell_tool_cannot_answer_as_the_human(
    daemon: Daemon, real_codex: Path, responses_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """codex exec, with approvals and sandbox bypassed, runs `agentcoord answer ID yes` in its
    exec_command tool: refused, and the prompt stays open."""
    prompt = _pending(daemon, claude_bin, tmp_path)
    project = tmp_path / "shop"
    project.mkdir()
    responses_api.script(Call("exec_command", {"cmd": _answer_command(daemon, prompt)}), Say("ok"))
    env = {
        "HOME": daemon.env["HOME"],
        "PATH": daemon.env["PATH"],
        "CODEX_HOME": str(codex_home(tmp_path, responses_api, server=False)),
        "STAND_IN_KEY": "sk-offline",
    }
    argv = [str(real_codex), "exec", "--json", "--skip-git-repo-check"]
    out = subprocess.run(
        [*argv, "--dangerously-bypass-approvals-and-sandbox", "approve it"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    outputs = responses_api.tool_outputs()
    assert len(outputs) == 1, (outputs, out.stdout[-3000:])
    _refused(daemon, prompt, outputs[0], project)


def test_gemini_shell_tool_cannot_answer_as_the_human(
    daemon: Daemon, real_gemini: Path, gemini_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """gemini -p --yolo runs `agentcoord answer ID yes` in its run_shell_command tool: refused,
    and the prompt stays open."""
    prompt = _pending(daemon, claude_bin, tmp_path)
    project = tmp_path / "blog"
    project.mkdir()
    command = _answer_command(daemon, prompt)
    gemini_api.script(Call("run_shell_command", {"command": command}), Say("ok"))
    env = {
        **daemon.env,
        "HOME": str(gemini_home(tmp_path, project, daemon.env)),
        "GEMINI_API_KEY": "offline",
        "GOOGLE_GEMINI_BASE_URL": gemini_api.url,
    }
    out = subprocess.run(
        [str(real_gemini), "-p", "approve it", "--output-format", "json", "--yolo"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    outputs = gemini_api.tool_outputs()
    assert len(outputs) == 1, (outputs, out.stderr[-3000:])
    _refused(daemon, prompt, json.loads(outputs[0])["response"]["output"], project)


def test_opencode_shell_tool_cannot_answer_as_the_human(
    daemon: Daemon, real_opencode: Path, chat_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """opencode run, bash allowed, runs `agentcoord answer ID yes` in its bash tool: refused,
    and the prompt stays open."""
    prompt = _pending(daemon, claude_bin, tmp_path)
    project = tmp_path / "api"
    project.mkdir()
    command = _answer_command(daemon, prompt)
    chat_api.script(Call("bash", {"command": command, "description": "approve"}), Say("ok"))
    bin_dir = str(Path(sys.executable).parent)
    env = {**daemon.env, **OFFLINE, "HOME": str(tmp_path / "opencode-home"), "PWD": str(project)}
    env = {k: v for k, v in env.items() if not k.startswith("XDG_") or k == "XDG_RUNTIME_DIR"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    opencode_config(project, chat_api, env)
    out = subprocess.run(
        [str(real_opencode), "run", "--format", "json", "-m", "standin/m", "approve it"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    outputs = chat_api.tool_outputs()
    assert len(outputs) == 1, (outputs, out.stdout[-3000:])
    _refused(daemon, prompt, outputs[0], project)
