"""The write guard for the other CLIs' own edit tools: a Codex ``apply_patch`` touching a file
another agent holds a write claim on is denied naming the holder, whichever file of the patch
it is; Gemini's ``write_file`` and ``replace`` likewise, answered in Gemini's shape; a patch of
free files is allowed (docs/other-clis.md "Setup")."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcoord.codex.applypatch import patch_paths
from tests.conftest import FAKES, Daemon
from tests.tools.session_helpers import finish, read_results, spawn_session


def _standin(tmp_path: Path, name: str) -> Path:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!{sys.executable}\n" + (FAKES / "cli_standin.py").read_text())
    path.chmod(0o755)
    return path


def _hook(d: Daemon, cli: Path, payload: dict[str, Any], event: str = "pre-tool-use") -> str:
    """``agentcoord hook EVENT`` run by the CLI (its process above the hook)."""
    out = subprocess.run(
        [str(cli), "--", sys.executable, "-m", "agentcoord", "hook", event],
        env=d.env,
        cwd=d.root,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture
def holder(daemon: Daemon, claude_bin: Path) -> Iterator[tuple[str, Path]]:
    """A Claude Code session holding a write claim on src/auth.py; its name and the file."""
    target = daemon.root / "src" / "auth.py"
    proc = spawn_session(
        daemon,
        claude_bin,
        [
            ("claim", {"resource_key": f"file:{target}", "mode": "write", "ttl": "5m"}),
            ("whoami", {}),
        ],
        hold=True,
    )
    try:
        results = read_results(proc)
        assert results[0]["structuredContent"]["acquired"] is True
        yield results[1]["structuredContent"]["agent"], target
    finally:
        finish(proc)


PATCH = """*** Begin Patch
*** Update File: README.md
@@
-old
+new
*** Update File: src/auth.py
@@
-a
+b
*** End Patch
"""


def test_patch_paths_reads_every_header() -> None:
    """Add, Update (with Move to) and Delete headers each name a file, once, in order."""
    text = (
        "*** Begin Patch\n*** Add File: a.py\n+x\n*** Update File: b.py\n*** Move to: c.py\n"
        "@@\n-1\n+2\n*** Delete File: d.py\n*** Update File: a.py\n*** End Patch\n"
    )
    assert patch_paths(text) == ["a.py", "b.py", "c.py", "d.py"]
    assert patch_paths("no patch here") == []


def test_a_codex_patch_touching_a_claimed_file_is_denied(
    daemon: Daemon, tmp_path: Path, holder: tuple[str, Path]
) -> None:
    """Codex's PreToolUse on apply_patch is denied with the holder's name when the second file
    of the patch is claimed; a patch of free files only is allowed."""
    name, _ = holder
    codex = _standin(tmp_path, "codex")
    payload = {
        "hook_event_name": "PreToolUse",
        "tool_name": "apply_patch",
        "tool_input": {"command": PATCH},
        "cwd": str(daemon.root),
    }
    out = json.loads(_hook(daemon, codex, payload))["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert name in out["permissionDecisionReason"]
    free = dict(payload, tool_input={"command": PATCH.replace("src/auth.py", "src/other.py")})
    assert _hook(daemon, codex, free) == ""


def test_a_gemini_write_file_on_a_claimed_file_is_denied(
    daemon: Daemon, tmp_path: Path, holder: tuple[str, Path]
) -> None:
    """Gemini's BeforeTool hook (``hook gemini:pre-tool-use``) on write_file of the claimed
    file answers in Gemini's shape: decision deny, the reason naming the holder."""
    name, target = holder
    gemini = _standin(tmp_path, "gemini")
    payload = {
        "hook_event_name": "BeforeTool",
        "tool_name": "write_file",
        "tool_input": {"file_path": str(target), "content": "x"},
        "cwd": str(daemon.root),
    }
    out = json.loads(_hook(daemon, gemini, payload, "gemini:pre-tool-use"))
    assert out["decision"] == "deny", out
    assert name in out["reason"]
    replace = dict(payload, tool_name="replace")
    assert json.loads(_hook(daemon, gemini, replace, "gemini:pre-tool-use"))["decision"] == "deny"


def test_the_codex_hook_is_a_small_client(daemon: Daemon, tmp_path: Path) -> None:
    """The hook Codex runs on every tool call imports no daemon module and not asyncio
    (``python -X importtime`` lists every import), and still gets the daemon's answer."""
    codex = _standin(tmp_path, "codex")
    payload = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "cwd": str(daemon.root)}
    hook = [sys.executable, "-X", "importtime", "-m", "agentcoord", "hook", "post-tool-use"]
    out = subprocess.run(
        [str(codex), "--", *hook],
        env=daemon.env,
        cwd=daemon.root,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    imported = {ln.rsplit("|", 1)[-1].strip() for ln in out.stderr.splitlines() if "import" in ln}
    assert "agentcoord.claude.hookclient" in imported, out.stderr[-2000:]  # the list is real
    assert "asyncio" not in imported
    assert not [m for m in imported if m.startswith(("agentcoord.daemon", "agentcoord.leases"))]
