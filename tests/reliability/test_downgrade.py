"""A downgrade never loses what the state holds (docs/reliability.md "Downgrades"): 0.1.0, which
reads each record from an annotation this format no longer writes, would list a prompt
answered since as gone; so it must refuse the dir instead of opening it."""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.tools.conftest import AgentProc, human_call

REPO = Path(__file__).resolve().parents[2]
# The last commit of 0.1.0: the one before the state dir recorded its format.
RELEASE_0_1_0 = "af4243d~1"


@pytest.fixture
def release_0_1_0(tmp_path: Path) -> Path:
    """0.1.0's ``src`` tree, from this repository's history (skipped without it)."""
    out = subprocess.run(
        ["git", "-C", str(REPO), "archive", RELEASE_0_1_0, "src"],
        capture_output=True,
        timeout=120,
    )
    if out.returncode != 0:
        pytest.skip(f"0.1.0 is not in this checkout's history: {out.stderr.decode().strip()}")
    root = tmp_path / "release-0.1.0"
    # The "data" filter (PEP 706) came with Python 3.11.4 (Debian 12 has 3.11.2); the archive
    # is this repository's own history either way.
    safe: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tar:
        tar.extractall(root, **safe)
    return root / "src"


@pytest.fixture
def asker(daemon: Daemon, claude_bin: Path, tmp_path: Path) -> Iterator[AgentProc]:
    """A session that raises prompts."""
    proc = AgentProc(daemon, claude_bin, tmp_path / "work" / "asker")
    try:
        yield proc
    finally:
        proc.close()


def _until_exit_or_ready(proc: subprocess.Popen[bytes], timeout: float = 60) -> str:
    """The output of ``proc`` until it exits or logs "agentcoord ready" (its own readiness
    line), whichever comes first within ``timeout``."""
    assert proc.stdout is not None
    out = b""
    deadline = time.monotonic() + timeout
    while b"agentcoord ready" not in out and (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([proc.stdout], [], [], left)
        chunk = os.read(proc.stdout.fileno(), 65536) if ready else b""
        if not chunk:
            break  # it exited (EOF), or the deadline passed
        out += chunk
    return out.decode(errors="replace")


def test_0_1_0_refuses_a_dir_with_answered_prompts(
    daemon: Daemon, asker: AgentProc, release_0_1_0: Path
) -> None:
    """After prompts are answered here, 0.1.0 started on the dir exits naming the schema
    instead of serving a prompt list without them."""
    asked = asker.call("request_approval", question="ship it?", timeout_secs=0)
    human_call(daemon, "answer_prompt", prompt=asked["prompt"], answer="yes")
    assert daemon.stop() == 0, daemon.log()
    env = {**daemon.env, "PYTHONPATH": str(release_0_1_0)}
    old = subprocess.Popen(
        [sys.executable, "-m", "agentcoord", "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=daemon.root,
    )
    out = ""
    try:
        out = _until_exit_or_ready(old)
        if "agentcoord ready" in out:  # it opened the dir: see what it serves
            listed = subprocess.run(
                [sys.executable, "-m", "agentcoord", "prompts", "--all", "--json"],
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
            )
            pytest.fail(f"0.1.0 opened the dir; its prompt list: {listed.stdout}{listed.stderr}")
    finally:
        if old.poll() is None:
            old.kill()
        old.wait(timeout=30)
        assert old.stdout is not None
        old.stdout.close()
    assert old.returncode not in (0, None), out
    assert "schema version 2" in out, out
    # The dir is as it was: this build still opens it and lists the answered prompt.
    daemon.start()
    prompts = human_call(daemon, "list_prompts", all=True)["prompts"]
    assert [(p["id"], p["phase"]) for p in prompts] == [(asked["prompt"], "Answered")]
    assert json.loads((daemon.state_dir / "format.json").read_text())["format"] >= 2
