"""The live package index (real watchfiles) and the session probe (real processes, real files)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agentcoord.localagents import PackageIndex
from agentcoord.localagents.sessions import PsutilSessionProbe, package_status, project_dir_name
from tests.localagents.conftest import make_package


async def _until(index: PackageIndex, pred: object, timeout: float = 60.0) -> None:
    """Wait until ``pred()`` holds, on the index's change events (the index has no periodic
    rescan: only the watcher can bring a change); generous, for a busy machine."""
    async with asyncio.timeout(timeout):
        while not pred():  # type: ignore[operator]
            await index.wait_generation(index.generation)


async def test_new_claude_md_is_indexed_live(tmp_path: Path) -> None:
    """A package that gains CLAUDE.md after start is indexed by the watcher; removal too."""
    hub = tmp_path / "hub"
    make_package(hub, "first")
    async with PackageIndex(hub) as index:
        assert [p.agent_id for p in index.packages()] == ["first"]
        pkg = hub / "agents" / "late" / "package"
        pkg.mkdir(parents=True)
        (pkg / "CLAUDE.md").write_text("# late\n")
        await _until(index, lambda: index.get("late") is not None)
        (pkg / "CLAUDE.md").unlink()
        await _until(index, lambda: index.get("late") is None)


async def test_manifest_edits_update_tags_and_bad_ones_degrade(tmp_path: Path) -> None:
    """Editing command.yml updates tags live; a malformed one falls back to base tags."""
    hub = tmp_path / "hub"
    pkg = make_package(hub, "v", "capabilities: [video-editing]\n")
    async with PackageIndex(hub) as index:
        assert index.get("v").manifest.capabilities == ("video-editing",)  # type: ignore[union-attr]
        (pkg / "command.yml").write_text("capabilities: [\n")
        await _until(index, lambda: index.get("v").manifest.capabilities == ())  # type: ignore[union-attr]
        (pkg / "command.yml").write_text("name: v\ncapabilities: [cost-analysis]\n")
        await _until(
            index,
            lambda: index.get("v").manifest.capabilities == ("cost-analysis",),  # type: ignore[union-attr]
        )


async def test_hub_without_agents_dir_picks_it_up(tmp_path: Path) -> None:
    """The agents/ directory created after start is watched too."""
    hub = tmp_path / "hub"
    hub.mkdir()
    async with PackageIndex(hub) as index:
        assert len(index) == 0
        make_package(hub, "a")
        await _until(index, lambda: index.get("a") is not None)


def test_probe_sees_a_live_claude_in_the_package(tmp_path: Path, claude_bin: Path) -> None:
    """A running claude whose cwd is in the package makes it online; with TTL 0 it is idle."""
    pkg = make_package(tmp_path / "hub", "a")
    claude_dir = tmp_path / "claude-home"
    (claude_dir / "projects" / project_dir_name(str(pkg.resolve()))).mkdir(parents=True)
    env = {"CLAUDE_CONFIG_DIR": str(claude_dir), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        [
            str(claude_bin),
            "--session-file",
            "sid-1",
            "--",
            sys.executable,
            "-c",
            "import time; time.sleep(30)",
        ],
        cwd=pkg,
        env=env,
        start_new_session=True,
    )
    try:
        sessions_dir = claude_dir / "sessions"
        deadline = time.monotonic() + 60
        while not (sessions_dir / f"{proc.pid}.json").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        record = json.loads((sessions_dir / f"{proc.pid}.json").read_text())
        assert record["sessionId"] == "sid-1"
        live = PsutilSessionProbe(claude_dir, cache_s=0).sessions()
        mine = [s for s in live if s.pid == proc.pid]
        assert mine
        assert mine[0].cwd == str(pkg.resolve())
        assert mine[0].session_id == "sid-1"
        status, session = package_status(pkg.resolve(), live, 3600, time.time())
        assert status == "online"
        assert session is not None
        assert session.pid == proc.pid
        assert package_status(pkg.resolve(), live, -1, time.time())[0] == "idle"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    live = PsutilSessionProbe(claude_dir, cache_s=0).sessions()
    assert all(s.pid != proc.pid for s in live)


def test_the_daemons_own_peer_records_are_not_sessions(tmp_path: Path) -> None:
    """A registry record agentcoord wrote for one of its mailboxes (entrypoint ``agentcoord``,
    a live pid) is not counted as a live Claude Code session; a Claude record is."""
    sessions_dir = tmp_path / "claude" / "sessions"
    sessions_dir.mkdir(parents=True)
    me = os.getpid()
    record = {"pid": me, "sessionId": "s", "cwd": str(tmp_path), "startedAt": 1}
    (sessions_dir / f"{me}.json").write_text(json.dumps({**record, "entrypoint": "agentcoord"}))
    probe = PsutilSessionProbe(tmp_path / "claude", cache_s=0)
    assert [s for s in probe.sessions() if s.pid == me] == []
    (sessions_dir / f"{me}.json").write_text(json.dumps({**record, "entrypoint": "cli"}))
    assert [s.pid for s in probe.sessions() if s.pid == me] == [me]
