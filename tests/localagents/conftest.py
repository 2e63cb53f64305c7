"""Fixtures for local agents: an AgentiHub tree, the stand-in ``claude -p``, a daemon with the
feature on, and a small MCP client over the daemon's unix socket."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKES, Daemon

Call = Callable[[str, dict[str, Any]], tuple[bool, Any]]


def make_package(hub: Path, agent_id: str, manifest: str | None = None) -> Path:
    """Create ``<hub>/agents/<id>/package/CLAUDE.md`` (+ command.yml when given)."""
    pkg = hub / "agents" / agent_id / "package"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "CLAUDE.md").write_text(f"# {agent_id}\n")
    if manifest is not None:
        (pkg / "command.yml").write_text(manifest)
    return pkg


@pytest.fixture
def visible_root() -> Iterator[Path]:
    """A scratch dir outside /tmp, so the sandbox shows it read-only instead of hiding it."""
    root = Path(tempfile.mkdtemp(prefix="agentcoord-test-", dir="/var/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def runner_bin(tmp_path: Path) -> Path:
    """The stand-in ``claude -p``, installed as an executable named ``claude``."""
    path = tmp_path / "rbin" / "claude"
    path.parent.mkdir()
    path.write_text(f"#!{sys.executable}\n" + (FAKES / "claude_runner.py").read_text())
    path.chmod(0o755)
    return path


def unix_call(d: Daemon, name: str, args: dict[str, Any]) -> tuple[bool, Any]:
    """One ``tools/call`` over the unix socket: (isError, structuredContent or the text)."""
    from tests.tools.session_helpers import own_call

    result = own_call(d, name, args)
    if result["isError"]:
        return True, result["content"][0]["text"]
    return False, result["structuredContent"]


@pytest.fixture
def local_daemon(
    daemon_factory: Any, visible_root: Path, runner_bin: Path
) -> Callable[..., tuple[Daemon, Path, Call]]:
    """Start a daemon with local agents on, a hub under ``visible_root``, the stand-in runner."""

    def start(enabled: bool = True, **extra: str) -> tuple[Daemon, Path, Call]:
        hub = visible_root / "agentihub"
        (hub / "agents").mkdir(parents=True, exist_ok=True)
        home = visible_root / "home"
        home.mkdir(exist_ok=True)
        env = {
            "AGENTIBRIDGE_LOCAL_AGENTS_ENABLED": "true" if enabled else "false",
            "AGENTIHUB_DIR": str(hub),
            "AGENTCOORD_RUNNER_COMMAND": f"{runner_bin} -p --output-format json",
            "HOME": str(home),
            **extra,
        }
        d = daemon_factory(**env).start()
        return d, hub, lambda name, args: unix_call(d, name, args)

    return start


def listed(call: Call, timeout: float = 2.0) -> list[str]:
    """Ids discover_local_agents shows, waiting (up to ``timeout``) for the index to settle."""
    import time

    deadline = time.monotonic() + timeout
    ids: list[str] = []
    while True:
        err, res = call("discover_local_agents", {})
        assert not err, res
        new = [a["agent_id"] for a in res["agents"]]
        if (new == ids and new) or time.monotonic() > deadline:
            return new
        ids = new
        time.sleep(0.1)
