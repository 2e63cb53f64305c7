"""checkpoint, resume and merge through the tools of a real daemon: the WIP of a spawned
agent's git worktree comes back byte for byte in a new worktree, with its session."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.agentops.conftest import fails, make_profiles, needs_bwrap, ok, stored, wait_for

pytestmark = needs_bwrap


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(
        ["git", "-C", str(cwd), *args], env=env, capture_output=True, text=True, check=True
    ).stdout


def _snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``root`` but .git: sha256 of its bytes and its mode."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git" or path.is_dir():
            continue
        out[str(rel)] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode)
    return out


def _repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "keep.txt").write_text("unchanged\n")
    (repo / "edit.py").write_text("print('v1')\n")
    (repo / "gone.txt").write_text("to be deleted\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    return repo


def test_checkpoint_then_resume_restores_wip_byte_for_byte(
    local_daemon: Any, visible_root: Path
) -> None:
    """Edits, a deletion, an untracked binary and an executable survive checkpoint -> resume
    into a new worktree; the resumed runner continues the checkpointed session (--resume)."""
    d, _, call = local_daemon()
    make_profiles(d, "coder")
    repo = _repo(visible_root)
    ok(call, "spawn_subagent", name="dev", profile="coder", prompt="answer started", repo=str(repo))
    wait_for(
        lambda: (stored(d, "agents", "dev") or {}).get("status", {}).get("phase") == "Succeeded"
    )
    work = Path(stored(d, "agents", "dev")["spec"]["cwd"])  # type: ignore[index]
    assert work != repo
    (work / "edit.py").write_text("print('v2, not committed')\n")
    (work / "gone.txt").unlink()
    (work / "new").mkdir()
    (work / "new" / "blob.bin").write_bytes(bytes(range(256)) * 3)
    (work / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (work / "run.sh").chmod(0o755)
    before = _snapshot(work)

    assert "no recorded checkpoint" in fails(call, "resume", task="dev-task")
    cp = ok(call, "checkpoint", name="dev", summary="half way")
    assert cp["task"] == "dev-task"
    assert cp["ref"].startswith("sha256:")
    blob = d.state_dir / "checkpoints" / "sha256" / cp["ref"].removeprefix("sha256:")
    assert hashlib.sha256(blob.read_bytes()).hexdigest() == cp["ref"].removeprefix("sha256:")
    assert oct(blob.stat().st_mode & 0o777) == "0o600"
    (work / "edit.py").write_text("changed after the checkpoint\n")
    cp2 = ok(call, "checkpoint", name="dev", summary="later")
    task = stored(d, "agenttasks", "dev-task")
    assert task is not None
    assert [c["ref"] for c in task["status"]["checkpoints"]] == [cp["ref"], cp2["ref"]]
    assert [c["summary"] for c in task["status"]["checkpoints"]] == ["half way", "later"]

    (work / "edit.py").write_text("print('v2, not committed')\n")
    again = ok(call, "checkpoint", name="dev", summary="half way")
    assert again["ref"] == cp["ref"]  # content-addressed: same work, same ref
    assert again["checkpoints"] == 3  # and still appended to the history
    res = ok(call, "resume", task="dev-task", name="dev-2")
    # "latest" is the last appended entry
    assert res == {"agent": "dev-2", "resumed_from": cp["ref"], "task": "dev-task"}
    wait_for(
        lambda: (stored(d, "agents", "dev-2") or {}).get("status", {}).get("phase") == "Succeeded",
        what="resumed agent ran",
    )
    agent = stored(d, "agents", "dev-2")
    assert agent is not None
    assert agent["spec"]["resumeFrom"] == cp["ref"]
    assert agent["spec"]["profile"] == "coder"
    assert agent["spec"]["lineage"]["parent"] == "dev"
    new = Path(agent["spec"]["cwd"])
    assert new != work
    assert _snapshot(new) == before
    assert _git(new, "rev-parse", "HEAD") == _git(work, "rev-parse", "HEAD")
    assert "edit.py" in _git(new, "status", "--porcelain")
    # the resumed turn continued the original main session, transcript and all
    sessions = json.loads(agent["metadata"]["annotations"]["fastverk.savvifi.com/linked-sessions"])
    dev = stored(d, "agents", "dev")
    assert dev is not None, "the Agent dev is not in the store"
    dev_sessions = json.loads(
        dev["metadata"]["annotations"]["fastverk.savvifi.com/linked-sessions"]
    )
    assert sessions[0]["sessionId"] == dev_sessions[0]["sessionId"]
    result = stored(d, "agenttasks", "dev-task")["status"]["result"]  # type: ignore[index]
    assert json.loads(result)["flags"]["--resume"] == sessions[0]["sessionId"]


def test_merge_appends_and_never_overwrites(local_daemon: Any) -> None:
    """Two merges into one target keep both sources; repeating one adds nothing."""
    d, _, call = local_daemon()
    for name in ("main", "left", "right"):
        ok(call, "spawn_subagent", name=name)
    ok(call, "merge", target="main", source="left")
    res = ok(call, "merge", target="main", source="right")
    assert res["mergedFrom"] == ["left", "right"]
    assert ok(call, "merge", target="main", source="left")["mergedFrom"] == ["left", "right"]
    assert stored(d, "agents", "main")["spec"]["lineage"]["mergedFrom"] == ["left", "right"]  # type: ignore[index]
    assert "no agent ghost" in fails(call, "merge", target="ghost", source="left")
