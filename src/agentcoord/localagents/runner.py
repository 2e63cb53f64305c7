"""Cold-start one runner (``claude -p`` by default) for a local agent, sandboxed, and supervise it.

The runner gets a scoped ``--mcp-config`` whose only server is this daemon's shim, with
``--strict-mcp-config``, an explicit ``--permission-mode``, ``--allowedTools`` and
``--max-turns``. It is registered as a runner of the agent right after spawn, so its calls back
through the shim resolve as that agent. Output goes straight to the job log (stdout, stderr);
the result JSON is parsed and ``is_error`` decides success, not the exit code (FACTS.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcoord.daemon.directory import RunnerInfo
from agentcoord.localagents.sandbox import Limits, Sandbox, bwrap_argv, child_setup

__all__ = [
    "RunOutcome",
    "RunnerSpec",
    "mcp_config",
    "parse_result",
    "run_local",
    "runner_argv",
    "with_session",
]

log = logging.getLogger(__name__)

_KILL_GRACE_S = 2.0
_DROP_ENV = ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_PROJECT_DIR")


@dataclass(frozen=True)
class RunnerSpec:
    """How runners are started (from Config)."""

    command: tuple[str, ...] = ("claude", "-p", "--output-format", "json")
    permission_mode: str = "acceptEdits"
    allowed_tools: str = "Read,Edit,Write,Glob,Grep,mcp__agent-coord"
    max_turns: int = 20
    timeout_s: float = 900.0
    limits: Limits = field(default_factory=Limits)

    @classmethod
    def from_command(cls, command: str, **kw: Any) -> RunnerSpec:
        return cls(command=tuple(shlex.split(command)), **kw)


@dataclass
class RunOutcome:
    """How one run ended."""

    exit_code: int | None
    timed_out: bool
    parsed: dict[str, Any] | None
    duration_s: float
    stderr_tail: str = ""

    @property
    def success(self) -> bool:
        return (
            not self.timed_out
            and self.exit_code == 0
            and self.parsed is not None
            and self.parsed.get("is_error") is False
        )

    def as_dict(self) -> dict[str, Any]:
        p = self.parsed or {}
        return {
            "success": self.success,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "is_error": p.get("is_error"),
            "subtype": p.get("subtype"),
            "result": p.get("result"),
            "session_id": p.get("session_id"),
            "num_turns": p.get("num_turns"),
            "total_cost_usd": p.get("total_cost_usd"),
            "duration_ms": round(self.duration_s * 1000),
        }


def mcp_config(shim: Sequence[str], runtime_dir: Path) -> dict[str, Any]:
    """The scoped MCP config: this daemon's shim, and nothing else."""
    return {
        "mcpServers": {
            "agent-coord": {
                "type": "stdio",
                "command": shim[0],
                "args": list(shim[1:]),
                "env": {"AGENTCOORD_RUNTIME_DIR": str(runtime_dir)},
            }
        }
    }


def runner_argv(spec: RunnerSpec, prompt: str, config_file: Path) -> list[str]:
    """``claude -p PROMPT --output-format json ...`` with the scoping flags of issue 6."""
    if prompt.startswith("-"):
        prompt = " " + prompt  # never let a prompt read as a flag
    return [
        *spec.command,
        prompt,
        "--mcp-config",
        str(config_file),
        "--strict-mcp-config",
        "--permission-mode",
        spec.permission_mode,
        "--allowedTools",
        spec.allowed_tools,
        "--max-turns",
        str(spec.max_turns),
    ]


def parse_result(stdout: str) -> dict[str, Any] | None:
    """The ``{"type": "result", ...}`` object from ``--output-format json`` output, if any."""
    candidates = [stdout.strip(), *reversed(stdout.strip().splitlines())]
    for text in candidates:
        if not text.startswith("{"):
            continue
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") == "result":
            return value
    return None


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - limit))
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


async def _wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for the child's exit on its pidfd (an event, not a poll); False on timeout."""
    loop = asyncio.get_running_loop()
    exited = asyncio.Event()
    pidfd = os.pidfd_open(proc.pid)
    loop.add_reader(pidfd, exited.set)
    try:
        async with asyncio.timeout(timeout):
            await exited.wait()
        return True
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


async def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the runner's process group, then SIGKILL it after a grace period."""
    for sig, grace in ((signal.SIGTERM, _KILL_GRACE_S), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        if proc.poll() is not None or await _wait_exit(proc, grace):
            break


def _create_time(pid: int) -> float:
    import psutil

    return psutil.Process(pid).create_time()


def _spawn(
    *,
    spec: RunnerSpec,
    sandbox: Sandbox,
    prompt: str,
    package: Path,
    job_dir: Path,
    runtime_dir: Path,
    claude_dir: Path,
    base_env: Mapping[str, str],
    shim: Sequence[str] | None,
) -> subprocess.Popen[bytes]:
    """Write the job's MCP config and start the (sandboxed) runner; output to the job log.

    Called on the loop thread on purpose: PR_SET_PDEATHSIG follows the thread that forked.
    """
    job_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    claude_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    config_file = job_dir / "mcp.json"
    shim = list(shim or (sys.executable, "-m", "agentcoord", "mcp"))
    fd = os.open(config_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(mcp_config(shim, runtime_dir), fh)
    command = runner_argv(spec, prompt, config_file)
    if sandbox.bwrap:
        readable = [runtime_dir, config_file]
        exe = Path(command[0])
        if exe.is_absolute():
            readable.append(exe)  # a runner installed under /tmp stays reachable
        argv = bwrap_argv(
            sandbox.bwrap, command, package=package, writable=[claude_dir], readable=readable
        )
    else:
        argv = command
    env = {k: v for k, v in base_env.items() if k not in _DROP_ENV}
    env.update(
        AGENTCOORD_RUNTIME_DIR=str(runtime_dir),
        CLAUDE_CONFIG_DIR=str(claude_dir),
        AGENTCOORD_JOB_ID=job_dir.name,
    )
    with (job_dir / "stdout").open("wb") as out, (job_dir / "stderr").open("wb") as err:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=package,
            env=env,
            start_new_session=True,
            preexec_fn=child_setup(spec.limits),
        )


async def run_local(
    *,
    spec: RunnerSpec,
    sandbox: Sandbox,
    prompt: str,
    package: Path,
    job_dir: Path,
    runtime_dir: Path,
    claude_dir: Path,
    base_env: Mapping[str, str],
    runners: MutableMapping[tuple[int, float], RunnerInfo],
    runner_info: RunnerInfo,
    shim: Sequence[str] | None = None,
) -> RunOutcome:
    """Run one job to completion (or timeout) and return how it went."""
    started = time.monotonic()
    proc = _spawn(
        spec=spec,
        sandbox=sandbox,
        prompt=prompt,
        package=package,
        job_dir=job_dir,
        runtime_dir=runtime_dir,
        claude_dir=claude_dir,
        base_env=base_env,
        shim=shim,
    )
    key: tuple[int, float] | None = None
    try:
        key = (proc.pid, _create_time(proc.pid))
        runners[key] = runner_info
    except Exception:
        log.warning("runner %d exited before it could be registered", proc.pid)
    timed_out = False
    try:
        if not await _wait_exit(proc, spec.timeout_s):
            timed_out = True
            log.warning(
                "runner %d for %s timed out; killing its group", proc.pid, runner_info.agent
            )
            await _kill_group(proc)
    finally:
        if proc.poll() is None:  # cancelled (daemon stopping): never leave it behind
            await asyncio.shield(_kill_group(proc))
        if key is not None:
            runners.pop(key, None)
    code = proc.wait()
    stdout = await asyncio.to_thread((job_dir / "stdout").read_text, errors="replace")
    parsed = parse_result(stdout)
    tail = await asyncio.to_thread(_tail, job_dir / "stderr")
    return RunOutcome(code, timed_out, parsed, time.monotonic() - started, tail)


# -- issue 7: linked sessions ----------------------------------------------------------------
def with_session(
    spec: RunnerSpec, *, resume: str | None = None, session_id: str | None = None
) -> RunnerSpec:
    """``spec`` whose command continues a session (``--resume ID``) or starts a named one
    (``--session-id UUID``), as a linked session or a resumed agent needs (FACTS.md)."""
    import dataclasses

    if resume and session_id:
        raise ValueError("give resume or session_id, not both")
    extra: tuple[str, ...] = ()
    if resume:
        extra = ("--resume", resume)
    elif session_id:
        extra = ("--session-id", session_id)
    return dataclasses.replace(spec, command=(*spec.command, *extra))
