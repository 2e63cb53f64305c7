"""The working-tree guard in the real Codex, Gemini CLI and OpenCode (docs/claims.md "The guards
in each CLI"): each CLI, set up by ``agentcoord setup <cli>``, runs the scripted model's shell
call ``git checkout -b`` in a repository where another live session (a stand-in ``claude`` in
the same directory) works; the call is refused before it runs, the model is told why, naming
that session, and the tree stays on its branch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.claude.test_real_repo_guards import _peer
from tests.clis.model_apis import Call, Say, Scripted
from tests.clis.test_across_kinds import codex_env, finish, run_codex
from tests.clis.test_real_codex import codex_home
from tests.clis.test_real_gemini import gemini_home
from tests.clis.test_real_opencode import OFFLINE, opencode_config
from tests.conftest import Daemon
from tests.test_commitguard import git_env

CHECKOUT = "git checkout -q -b topic"
PEER_CALLS = [("annotate", {"intent": "fixing the cart"})]


def _repo(daemon: Daemon, root: Path) -> Path:
    """A repository on main with one commit; the CLI and the peer both work in it."""
    env = git_env(daemon.runtime_dir)
    root.mkdir()
    (root / "cart.py").write_text("x = 1\n")
    for args in (["init", "-q", "-b", "main"], ["add", "cart.py"], ["commit", "-qm", "cart"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, timeout=60)
    return root


def _branch(root: Path) -> str:
    out = subprocess.run(
        ["git", "branch", "--show-current"], cwd=root, capture_output=True, text=True, timeout=60
    )
    return out.stdout.strip()


def _assert_refused(output: str, peer: str, root: Path) -> None:
    assert f"{peer}: works there" in output, output
    assert "working on: fixing the cart" in output, output
    assert _branch(root) == "main"
    assert (
        "topic"
        not in subprocess.run(
            ["git", "branch", "--list"], cwd=root, capture_output=True, text=True, timeout=60
        ).stdout
    )


def test_codex_shell_checkout_under_a_live_peer_is_refused(
    daemon: Daemon, real_codex: Path, responses_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """After `agentcoord setup codex`, codex exec's shell call (the hook's ``Bash``) of
    ``git checkout -b`` in a tree a live Claude Code session works in is denied by PreToolUse:
    its output names the peer and what it works on, and the tree stays on main (the sandbox
    is off, so nothing else stopped it)."""
    root = _repo(daemon, tmp_path / "shop")
    home = codex_home(tmp_path, responses_api, server=False)
    setup = subprocess.run(
        [sys.executable, "-m", "agentcoord", "setup", "codex"],
        env={**daemon.env, "CODEX_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr
    responses_api.script(Call("exec_command", {"cmd": CHECKOUT}), Say("done"))
    with _peer(daemon, claude_bin, root, PEER_CALLS) as peer:
        env = codex_env(daemon, home)
        codex = run_codex(real_codex, env, root, "branch off", hooks=True, unsandboxed=True)
        finish(codex)
    outputs = responses_api.tool_outputs()
    assert len(outputs) == 1, (outputs, responses_api.extra)
    _assert_refused(outputs[0], peer, root)


def test_gemini_shell_checkout_under_a_live_peer_is_refused(
    daemon: Daemon, real_gemini: Path, gemini_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """After `agentcoord setup gemini`, gemini -p's run_shell_command of ``git checkout -b``
    in a tree a live Claude Code session works in is blocked by BeforeTool: the function
    response names the peer and what it works on, and the tree stays on main."""
    root = _repo(daemon, tmp_path / "shop")
    env = {
        **daemon.env,
        "HOME": str(gemini_home(tmp_path, root, daemon.env)),
        "GEMINI_API_KEY": "offline",
        "GOOGLE_GEMINI_BASE_URL": gemini_api.url,
    }
    gemini_api.script(Call("run_shell_command", {"command": CHECKOUT}), Say("done"))
    with _peer(daemon, claude_bin, root, PEER_CALLS) as peer:
        out = subprocess.run(
            [str(real_gemini), "-p", "branch off", "--output-format", "json", "--yolo"],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=180,
        )
    outputs = gemini_api.tool_outputs()
    assert len(outputs) == 1, (outputs, out.stderr[-3000:])
    _assert_refused(outputs[0], peer, root)


def test_opencode_bash_checkout_under_a_live_peer_is_refused(
    daemon: Daemon, real_opencode: Path, chat_api: Scripted, tmp_path: Path, claude_bin: Path
) -> None:
    """After `agentcoord setup opencode --project`, its plugin throws on opencode run's bash
    call of ``git checkout -b`` in a tree a live Claude Code session works in: the tool's
    output names the peer and what it works on, and the tree stays on main."""
    root = _repo(daemon, tmp_path / "shop")
    bin_dir = str(Path(sys.executable).parent)
    env = {**daemon.env, **OFFLINE, "HOME": str(tmp_path / "oc-home"), "PWD": str(root)}
    env = {k: v for k, v in env.items() if not k.startswith("XDG_") or k == "XDG_RUNTIME_DIR"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    opencode_config(root, chat_api, env)
    chat_api.script(Call("bash", {"command": CHECKOUT, "description": "branch"}), Say("ok"))
    with _peer(daemon, claude_bin, root, PEER_CALLS) as peer:
        out = subprocess.run(
            [str(real_opencode), "run", "--format", "json", "-m", "standin/m", "branch off"],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=180,
        )
    outputs = chat_api.tool_outputs()
    assert len(outputs) == 1, (outputs, out.stdout[-3000:], out.stderr[-3000:])
    _assert_refused(outputs[0], peer, root)
