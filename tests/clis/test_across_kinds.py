"""A real Codex session and a real Claude Code session on one machine coordinate as agents of
one daemon (docs/other-clis.md "Across kinds"): write claims across two worktrees of one
repository, messages both ways, and ``ask`` from Codex to a live Claude Code session. Both
binaries run offline against their scripted model stand-ins."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.claude.conftest import Claude, claude, model_api, real_claude
from tests.claude.model_api import Text, ToolUse, tool_results
from tests.claude.test_channels import _poll
from tests.claude.test_native_inbox import interactive, native_agent, texts_of
from tests.clis.model_apis import Call, Patch, Say, Scripted
from tests.clis.test_real_codex import answer, codex_home
from tests.conftest import Daemon

__all__ = ["claude", "model_api", "real_claude"]  # the Claude Code fixtures, used here

WAIT = 60.0
MCP = "mcp__agent-coord__"


def repository(tmp_path: Path) -> tuple[Path, Path]:
    """A git repository ``shop`` with ``cart.py`` and a second worktree ``shop-cart`` of it."""
    repo = tmp_path / "shop"
    repo.mkdir()
    (repo / "cart.py").write_text("x = 1\n")

    def git(*args: str, cwd: Path = repo) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)

    git("init", "-q", "-b", "main")
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "cart", "--allow-empty")
    git("add", "cart.py")
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "cart.py")
    worktree = tmp_path / "shop-cart"
    git("worktree", "add", "-q", "-b", "cart", str(worktree))
    return repo, worktree


def codex_env(daemon: Daemon, home: Path) -> dict[str, str]:
    return {
        "HOME": daemon.env["HOME"],
        "PATH": daemon.env["PATH"],
        "CODEX_HOME": str(home),
        "STAND_IN_KEY": "sk-offline",
    }


def run_codex(
    real_codex: Path,
    env: dict[str, str],
    cwd: Path,
    prompt: str,
    *,
    hooks: bool = False,
    unsandboxed: bool = False,
) -> subprocess.Popen[str]:
    argv = [str(real_codex), "exec", "--json", "--skip-git-repo-check"]
    if hooks:
        # Codex skips hooks it was not told to trust; headless runs say so with this flag.
        argv.append("--dangerously-bypass-hook-trust")
    if unsandboxed:
        # Its shell commands may write the repository: only a hook stops one.
        argv += ["--sandbox", "danger-full-access"]
    return subprocess.Popen(
        [*argv, prompt],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, (out[-3000:], err[-3000:])
    return out


def hooked_codex_home(daemon: Daemon, tmp_path: Path, api: Scripted) -> Path:
    """A CODEX_HOME after `agentcoord setup codex` (MCP server and hooks), whose model is one
    Codex offers its freeform apply_patch to."""
    home = codex_home(tmp_path, api, server=False)
    config = home / "config.toml"
    config.write_text(config.read_text().replace('model = "stand-in"', 'model = "gpt-5.5"'))
    setup = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "codex"],
        env={**daemon.env, "CODEX_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr
    return home


def result_of(text: str) -> dict[str, Any]:
    return json.loads(text)  # type: ignore[no-any-return]


def test_a_claude_code_write_claim_denies_codex_apply_patch_in_another_worktree(
    daemon: Daemon,
    real_codex: Path,
    responses_api: Scripted,
    claude: Claude,
    tmp_path: Path,
) -> None:
    """A live Claude Code session in one worktree holds a write claim on cart.py; a Codex
    session in another worktree of the same repository patches its cart.py: denied by Codex's
    PreToolUse hook, naming the Claude Code session's agent, and the file is unchanged."""
    repo, worktree = repository(tmp_path)
    hold = threading.Event()
    claude.api.script(
        ToolUse(f"{MCP}whoami", {}),
        ToolUse(f"{MCP}claim", {"resource_key": "file:cart.py", "mode": "write", "ttl": "10m"}),
        Text("held", hold=hold),
    )
    holder_run = dataclasses.replace(claude, cwd=repo).start("claim cart.py")
    try:
        requests = claude.api.wait_requests(3, timeout=WAIT)
        holder = result_of(tool_results(requests[1])[-1]["text"])["agent"]
        claimed = result_of(tool_results(requests[2])[-1]["text"])
        assert claimed["acquired"] is True, claimed
        patch = "*** Begin Patch\n*** Update File: cart.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"
        responses_api.script(Patch(patch), Say("done"))
        home = hooked_codex_home(daemon, tmp_path, responses_api)
        finish(run_codex(real_codex, codex_env(daemon, home), worktree, "edit", hooks=True))
    finally:
        hold.set()
    claude.finish(holder_run).check()
    outputs = responses_api.tool_outputs()
    assert len(outputs) == 1, (outputs, responses_api.extra)
    assert holder in outputs[0], outputs
    assert (worktree / "cart.py").read_text() == "x = 1\n"


def test_a_codex_write_claim_denies_a_claude_code_write_in_another_worktree(
    daemon: Daemon,
    real_codex: Path,
    responses_api: Scripted,
    claude: Claude,
    tmp_path: Path,
) -> None:
    """A live Codex session in one worktree holds a write claim on cart.py (through its MCP
    `claim`); a Claude Code session in another worktree writes its cart.py: Claude Code's Write
    is denied naming the Codex session's agent, and the file is unchanged."""
    repo, worktree = repository(tmp_path)
    hold = threading.Event()
    responses_api.script(
        Call("claim", {"resource_key": "file:cart.py", "mode": "write", "ttl": "10m"}),
        Say("held", hold=hold),
    )
    home = codex_home(tmp_path, responses_api)
    codex = run_codex(real_codex, codex_env(daemon, home), repo, "claim cart.py")
    try:
        claimed = answer(_poll(lambda: responses_api.tool_outputs(), "Codex's claim")[0])
        assert claimed["acquired"] is True, claimed
        holder = claimed["claim"]["agent"]
        writer = dataclasses.replace(claude, cwd=worktree)
        claude.api.script(
            ToolUse("Write", {"file_path": str(worktree / "cart.py"), "content": "x = 3\n"}),
            Text("done"),
        )
        run = writer.run("write cart.py")
    finally:
        hold.set()
    finish(codex)
    run.check()
    denied = tool_results(run.requests[1])[-1]["text"]
    assert f"claimed for writing by {holder}" in denied, denied
    assert (worktree / "cart.py").read_text() == "x = 1\n"


def test_a_codex_send_reaches_a_live_interactive_claude_code_session(
    daemon: Daemon,
    real_codex: Path,
    responses_api: Scripted,
    claude: Claude,
    tmp_path: Path,
) -> None:
    """Codex's `send` (its MCP tool call) to an idle interactive Claude Code session is
    delivered through Claude Code's native inbox: the session's model gets the text once, from
    the Codex session's agent, with nobody typing."""
    claude.api.script(Text("Noted."))
    with interactive(claude, tmp_path):
        agent = native_agent(daemon)
        project = tmp_path / "shop"
        project.mkdir()
        responses_api.script(Call("send", {"to": agent, "text": "cart done 5e1d"}), Say("done"))
        home = codex_home(tmp_path, responses_api)
        finish(run_codex(real_codex, codex_env(daemon, home), project, "report"))
        sent = answer(responses_api.tool_outputs()[0])
        first = claude.api.wait_requests(1, timeout=WAIT)[0]
    seen = texts_of(first)
    assert seen.count("cart done 5e1d") == 1, seen[-2000:]
    assert sent["sent"] is True, sent
    assert 'from-name=\\"shop-' in seen, seen[-2000:]


def test_a_claude_code_send_reaches_codex_at_its_next_prompt(
    daemon: Daemon,
    real_codex: Path,
    responses_api: Scripted,
    claude: Claude,
    tmp_path: Path,
) -> None:
    """A Claude Code session's `send` (queued for the Codex session about to start in
    shop-cart/) reaches Codex's model through its UserPromptSubmit hook, from the Claude Code
    session's agent."""
    _, worktree = repository(tmp_path)
    claude.api.script(ToolUse(f"{MCP}whoami", {}), Text("ok"))
    first = claude.run("who am I?")
    first.check()
    me = result_of(tool_results(first.requests[1])[-1]["text"])["agent"]
    suffix = "".join(me.partition("--")[1:])
    codex_name = f"shop-cart-1{suffix}"
    claude.api.script(
        ToolUse(
            f"{MCP}send", {"to": codex_name, "text": "take the cart 9b2c", "queue_unknown": True}
        ),
        Text("sent"),
    )
    run = claude.run("tell codex")
    run.check()
    assert "queued" in tool_results(run.requests[1])[-1]["text"]
    responses_api.script(Say("done"))
    home = hooked_codex_home(daemon, tmp_path, responses_api)
    finish(run_codex(real_codex, codex_env(daemon, home), worktree, "what next?", hooks=True))
    sent_to_model = json.dumps([body for _, body in responses_api.requests])
    assert "take the cart 9b2c" in sent_to_model, sent_to_model[-3000:]
    assert codex_name in sent_to_model


def test_codex_asks_a_live_claude_code_session_and_gets_its_final_answer(
    daemon: Daemon,
    real_codex: Path,
    responses_api: Scripted,
    claude: Claude,
    tmp_path: Path,
) -> None:
    """Codex's `ask` of an idle interactive Claude Code session returns the final text of the
    turn the question started in that session, via its native inbox."""
    claude.api.script(Text("The answer is 42."))
    with interactive(claude, tmp_path):
        agent = native_agent(daemon)
        project = tmp_path / "shop"
        project.mkdir()
        responses_api.script(
            Call("ask", {"agent": agent, "text": "what is six times seven?"}), Say("done")
        )
        home = codex_home(tmp_path, responses_api)
        finish(run_codex(real_codex, codex_env(daemon, home), project, "ask claude"))
        outputs = responses_api.tool_outputs()
        request = claude.api.requests[0]
    assert len(outputs) == 1, outputs
    got = answer(outputs[0])
    assert got["answered"] is True, got
    assert got["answer"] == "The answer is 42.", got
    assert got["via"] == "native", got
    assert texts_of(request).count("what is six times seven?") == 1
