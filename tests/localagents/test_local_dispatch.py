"""Local dispatch end to end: a real daemon cold-starts the stand-in ``claude -p`` in real
bubblewrap; it calls back through the shim and the daemon knows it as the dispatched agent."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import stored_records
from tests.localagents.conftest import make_package

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def _inner(result: dict[str, Any]) -> dict[str, Any]:
    """The stand-in's own report, carried in the result JSON's ``result`` string."""
    return json.loads(result["job"]["result"]["result"])  # type: ignore[no-any-return]


def test_runner_calls_back_and_is_the_dispatched_agent(local_daemon: Any) -> None:
    """whoami from inside the sandbox resolves as the agent run_agent dispatched (a runner)."""
    d, hub, call = local_daemon()
    pkg = make_package(hub, "alpha")
    err, res = call("run_agent", {"agent_id": "alpha", "task": "whoami", "wait": True})
    assert not err, res
    assert res["success"] is True
    assert res["transport"] == "local"
    job = res["job"]
    assert job["status"] == "succeeded"
    assert job["sandbox"] == "bwrap"
    inner = _inner(res)
    assert inner["whoami"]["agent"] == "alpha"
    assert inner["whoami"]["kind"] == "runner"
    assert inner["whoami"]["depth"] == 1
    assert inner["cwd"] == str(pkg.resolve())
    flags = inner["flags"]
    assert flags["--strict-mcp-config"] is True
    assert flags["--permission-mode"] == "acceptEdits"
    assert "mcp__agent-coord" in flags["--allowedTools"]
    assert flags["--max-turns"] == "20"
    log_dir = Path(job["log_dir"])
    lines = [json.loads(line) for line in (log_dir / "stdout").read_text().splitlines()]
    assert [line["type"] for line in lines] == ["system", "result"]  # stream-json, one turn
    tasks = stored_records(d, "agenttasks", "job", "job_id")
    assert tasks[job["job_id"]]["status"] == "succeeded"
    assert os.stat(d.state_dir / "objects.db").st_mode & 0o777 == 0o600


def test_sandbox_confines_writes_and_hides_processes(local_daemon: Any, visible_root: Path) -> None:
    """Writes land only in the package (not a sibling, $HOME or /etc); no daemon pids visible."""
    d, hub, call = local_daemon()
    pkg = make_package(hub, "alpha")
    sibling = make_package(hub, "beta")
    home = visible_root / "home"
    targets = [pkg / "out.txt", sibling / "pwned.txt", home / "pwned.txt", Path("/etc/pwned")]
    script = "\n".join([*(f"write {t}" for t in targets), "ps"])
    err, res = call("run_agent", {"agent_id": "alpha", "task": script, "wait": True})
    assert not err, res
    writes = _inner(res)["write"]
    assert writes[str(pkg / "out.txt")] == "ok"
    assert (pkg / "out.txt").exists()
    for bad in targets[1:]:
        assert writes[str(bad)] == "Read-only file system", bad
        assert not bad.exists()
    seen = _inner(res)["ps"]
    assert d.proc is not None
    assert str(d.proc.pid) not in seen or "agentcoord" not in seen[str(d.proc.pid)]
    assert not any("agentcoord serve" in cmd or "nats-server" in cmd for cmd in seen.values())
    assert len(seen) < 10  # its own pid namespace: bwrap's init, the runner, a few children


def _stored_agent(d: Any, name: str) -> dict[str, Any]:
    """An Agent object as the daemon's SQLite file holds it (also after the daemon stopped)."""
    db = sqlite3.connect(f"file:{d.state_dir / 'objects.db'}?mode=ro", uri=True)
    try:
        row = db.execute(
            "SELECT object FROM objects WHERE resource = 'agents' AND name = ?", (name,)
        ).fetchone()
    finally:
        db.close()
    return json.loads(row[0])  # type: ignore[no-any-return]


def _marked(runtime_dir: Path) -> list[psutil.Process]:
    """Runner processes of the daemon with this runtime dir (the task is on stdin, not argv)."""
    found = []
    for proc in psutil.process_iter():
        try:
            env = proc.environ()
        except psutil.Error:
            continue
        if "AGENTCOORD_JOB_ID" in env and env.get("AGENTCOORD_RUNTIME_DIR") == str(runtime_dir):
            found.append(proc)
    return found


def _wait_for(pred: Any, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return bool(pred())


def _limits(pid: int) -> dict[str, str]:
    """Soft and hard limit per row of ``/proc/<pid>/limits`` we set, as "soft/hard"."""
    rows = {"Max cpu time": "cpu", "Max file size": "fsize", "Max open files": "nofile"}
    rows["Max core file size"] = "core"
    out = {}
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        for label, name in rows.items():
            if line.startswith(label):
                soft, hard = line[len(label) :].split()[:2]
                out[name] = f"{soft}/{hard}"
    return out


def _configured(timeout_s: int) -> dict[str, str]:
    """The runner's rlimits for ``runner_timeout``: CPU twice the timeout (at least 60 s),
    1 GiB files, 4096 files open, no core; each at most the hard limit the daemon inherits."""
    import resource

    wanted = {
        "cpu": (resource.RLIMIT_CPU, max(60, 2 * timeout_s)),
        "fsize": (resource.RLIMIT_FSIZE, 1 << 30),
        "nofile": (resource.RLIMIT_NOFILE, 4096),
        "core": (resource.RLIMIT_CORE, 0),
    }
    out = {}
    for name, (which, value) in wanted.items():
        hard = resource.getrlimit(which)[1]
        cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
        out[name] = f"{cap}/{cap}"
    return out


def _gone(pid: int, timeout: float) -> bool:
    """Wait on a pidfd for ``pid`` to exit (a zombie whose parent is gone counts)."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_runner_has_its_rlimits_and_dies_with_the_daemon(local_daemon: Any, sandbox: str) -> None:
    """A started runner has the configured rlimits (/proc/<pid>/limits); SIGKILL of the daemon
    takes it and nats-server along, in bwrap and without it (only our death signal)."""
    d, hub, call = local_daemon(AGENTCOORD_RUNNER_TIMEOUT="100", AGENTCOORD_RUNNER_SANDBOX=sandbox)
    make_package(hub, "alpha")
    marker = "sleep 31.4159"
    err, res = call("run_agent", {"agent_id": "alpha", "task": marker})
    assert not err, res
    assert res["job"]["status"] == "running", res
    assert res["job"]["sandbox"].startswith(sandbox), res["job"]["sandbox"]

    def runner() -> list[psutil.Process]:  # the stand-in itself, past every exec before it
        return [p for p in _marked(d.runtime_dir) if p.name() == "claude"]

    assert _wait_for(lambda: runner()), "runner never started"
    assert d.proc is not None
    marked = _marked(d.runtime_dir)
    for proc in marked:  # bwrap (both of it) and the runner: limits from the first instruction
        assert _limits(proc.pid) == _configured(100), (proc.pid, proc.cmdline())
    (nats,) = [p for p in psutil.Process(d.proc.pid).children() if p.name() == "nats-server"]
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait(5)
    for proc in [*marked, nats]:
        assert _gone(proc.pid, 60), f"{proc.pid} outlived the daemon: {proc.cmdline()}"
    assert not _marked(d.runtime_dir)


def test_timeout_kills_the_process_group(local_daemon: Any) -> None:
    """A runner past its timeout is killed with its group and the job says timed_out."""
    d, hub, call = local_daemon(AGENTCOORD_RUNNER_TIMEOUT="1")
    make_package(hub, "alpha")
    marker = "sleep 27.1828"
    err, res = call("run_agent", {"agent_id": "alpha", "task": marker, "wait": True})
    assert not err
    assert res["success"] is False
    assert res["job"]["status"] == "timed_out", res
    # the sandbox's inner processes die with bwrap (die-with-parent), a moment later
    assert _wait_for(lambda: not _marked(d.runtime_dir))


def test_is_error_with_exit_zero_is_a_failure(local_daemon: Any) -> None:
    """is_error true in the result JSON fails the job although the runner exited 0."""
    _, hub, call = local_daemon()
    make_package(hub, "alpha")
    err, res = call("run_agent", {"agent_id": "alpha", "task": "is_error", "wait": True})
    assert not err
    assert res["success"] is False
    assert res["job"]["exit_code"] == 0
    assert res["job"]["result"]["is_error"] is True
    assert "reported an error" in res["job"]["error"]


def test_crash_without_result_json_keeps_stderr_in_the_log(local_daemon: Any) -> None:
    """A runner that dies without result JSON fails; its stderr is kept in the job log."""
    _, hub, call = local_daemon()
    make_package(hub, "alpha")
    err, res = call("run_agent", {"agent_id": "alpha", "task": "crash", "wait": True})
    assert not err
    assert res["success"] is False
    assert res["job"]["exit_code"] == 3
    assert "crashed on purpose" in res["job"]["error"]
    assert "crashed on purpose" in (Path(res["job"]["log_dir"]) / "stderr").read_text()


def test_weaker_mode_without_bwrap_is_reported(local_daemon: Any) -> None:
    """With the sandbox off the job still runs and calls back, and says it was not sandboxed."""
    d, hub, call = local_daemon(AGENTCOORD_RUNNER_SANDBOX="none")
    make_package(hub, "alpha")
    err, res = call("run_agent", {"agent_id": "alpha", "task": "whoami", "wait": True})
    assert not err, res
    assert res["job"]["sandbox"].startswith("none: bubblewrap not found")
    assert _inner(res)["whoami"]["agent"] == "alpha"
    err, found = call("discover_local_agents", {})
    assert found["sandbox"].startswith("none")
    from agentcoord.client.rpc import call_unix

    token = (d.state_dir / "human.token").read_text().strip()  # the human asks
    status = call_unix(d.socket, "agentcoord/status", {}, token=token)
    assert status["local_agents"]["sandbox"] == "none"
    assert status["local_agents"]["enabled"] is True


def test_daemon_stop_cancels_running_jobs(local_daemon: Any) -> None:
    """SIGTERM on the daemon kills a running runner and records the job as cancelled."""
    d, hub, call = local_daemon()
    make_package(hub, "alpha")
    marker = "sleep 16.1803"
    err, res = call("run_agent", {"agent_id": "alpha", "task": marker})
    assert not err, res
    assert _wait_for(lambda: len(_marked(d.runtime_dir)) >= 2), "runner never started"
    assert d.stop() == 0
    assert _wait_for(lambda: not _marked(d.runtime_dir))
    tasks = stored_records(d, "agenttasks", "job", "job_id")
    assert tasks[res["job"]["job_id"]]["status"] == "cancelled"
    status = _stored_agent(d, "alpha")["status"]  # its Agent says so too (docs/profiles.md)
    assert (status["phase"], status["message"]) == ("Failed", "the daemon stopped")
