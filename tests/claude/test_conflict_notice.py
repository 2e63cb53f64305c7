"""The conflict watch's notice in the real Claude Code (docs/claims.md "Conflicts between
worktrees"): the binary, set up by ``agentcoord setup claude``, works in one worktree of a
repository while a stand-in session works in another; when the scripted model's Write makes
both change one file, each session is told once, before anyone commits, and the real session's
model reads its notice in its next request."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from tests.claude.conftest import Claude
from tests.claude.model_api import Text, ToolUse, tool_results
from tests.claude.test_channels import _poll
from tests.claude.test_native_inbox import WAIT, delivered, native_agent, texts_of
from tests.conftest import Daemon, cli_json
from tests.test_commitguard import git_env
from tests.tools.session_helpers import finish, read_results
from tests.tools.test_commit_guard import _hold

MARKER = "changes is also changed in"


def _git(cwd: Path, env: dict[str, str], *args: str) -> None:
    out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def _notices(d: Daemon, agent: str) -> list[dict[str, object]]:
    events = cli_json(d, "audit")["events"]
    return [e for e in events if e["type"] == "CONFLICT_NOTICE" and e.get("agent") == agent]


def test_a_real_session_and_a_peer_are_each_told_once_of_a_shared_file(
    daemon: Daemon, claude: Claude, claude_bin: Path, tmp_path: Path
) -> None:
    """The peer in worktree W2 (branch feature) has changed src/app.py; the real session in
    the main worktree writes src/app.py: the peer's inbox gets one notice naming the real
    session and the file, the real session's model gets one, in the request after its held
    turn, naming the peer, the file and that git cannot tell yet; nothing is committed."""
    env = git_env(daemon.runtime_dir)
    root = claude.cwd
    _git(root, env, "init", "-q", "-b", "main")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("v1\n")
    _git(root, env, "add", "src")
    _git(root, env, "commit", "-q", "-m", "init")
    w2 = tmp_path / "project-feature"
    _git(root, env, "worktree", "add", "-q", "-b", "feature", str(w2))
    (w2 / "src" / "app.py").write_text("the peer's change\n")
    peer_proc = _hold(daemon, claude_bin, w2, [("whoami", {}), ("inbox", {"wait_secs": WAIT})])
    try:
        hold = threading.Event()
        claude.api.script(
            ToolUse("Write", {"file_path": str(root / "src" / "app.py"), "content": "mine\n"}),
            Text("wrote it", hold=hold),
            Text("noted"),
        )
        proc = claude.start("change app.py")
        try:
            claude.api.wait_requests(2, timeout=WAIT)
            agent = native_agent(daemon)
            _poll(lambda: delivered(daemon, agent), "the notice's native delivery")
        finally:
            hold.set()
        run = claude.finish(proc)
        peer = read_results(peer_proc)
    finally:
        finish(peer_proc)
    run.check()
    (wrote,) = tool_results(run.requests[1])
    assert not wrote.get("is_error"), wrote
    peer_name = peer[0]["structuredContent"]["agent"]
    (told_peer,) = [
        m for m in peer[1]["structuredContent"]["messages"] if m["from"] == "agentcoord"
    ]
    assert MARKER in told_peer["text"]
    assert agent in told_peer["text"]
    assert "src/app.py" in told_peer["text"]
    seen = [r for r in run.requests if MARKER in texts_of(r)]
    assert seen, [texts_of(r)[-500:] for r in run.requests]
    last = texts_of(run.requests[-1])
    assert last.count(MARKER) == 1, last[-3000:]
    assert peer_name in last
    assert "src/app.py" in last
    assert "git cannot tell yet" in last
    # Not before the write that made the overlap; with the write's result or at the next
    # request, whichever the watch reached first (both are on time).
    assert MARKER not in texts_of(run.requests[0])
    assert len(_notices(daemon, agent)) == 1
    assert len(_notices(daemon, peer_name)) == 1
    status = subprocess.run(
        ["git", "log", "--oneline"], cwd=w2, env=env, capture_output=True, text=True
    )
    assert len(status.stdout.splitlines()) == 1  # nobody committed
