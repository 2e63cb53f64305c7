"""Cold-start one runner (``claude -p`` by default) for a local agent, sandboxed, and supervise it.

What to run comes from the agent's profile as a :class:`LaunchPlan`
(:mod:`agentcoord.localagents.profiles`): the command line with ``--mcp-config FILE
--strict-mcp-config`` and the profile's flags, the runner environment, the MCP config to write,
extra writable paths and whether it has network. The runner is registered as a runner of the
agent right after spawn, so its calls back through the shim resolve as that agent. Turns and
messages go through :mod:`agentcoord.localagents.conversation`; stdout is copied to the job log,
stderr goes to it directly; the last result JSON's ``is_error`` decides success, not the exit code.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcoord.identity.runners import RunnerInfo, RunnerKey, RunnerTable
from agentcoord.kernel.pidfd import wait_pid
from agentcoord.localagents.conversation import Mailbox, StatusFn, TurnsOutcome, converse
from agentcoord.localagents.proctree import stop_tree
from agentcoord.localagents.profiles import (
    AGENT_COORD,
    LaunchPlan,
    shim_server,
    strip_owned_flags,
)
from agentcoord.localagents.sandbox import Limits, Sandbox, claude_guarded, exec_prefix

__all__ = [
    "RunOutcome",
    "RunnerSpec",
    "mcp_config",
    "oneshot_plan",
    "parse_result",
    "run_local",
    "runner_argv",
    "with_session",
]

log = logging.getLogger(__name__)

_KILL_GRACE_S = 2.0
_DEFAULT_SHIM = (sys.executable, "-m", "agentcoord", "mcp")
_DROP_ENV = ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_PROJECT_DIR")


@dataclass(frozen=True)
class RunnerSpec:
    """How runners are started (from Config)."""

    command: tuple[str, ...] = ("claude", "-p")
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
    turns: int = 0
    delivered: list[int] = field(default_factory=list)  # inbox seqs handed to the runner
    control: str = ""  # "drain" | "stop" when a CONTROL message ended the run
    control_from: str = ""

    @property
    def success(self) -> bool:
        return (
            not self.timed_out
            and self.control != "stop"
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
            "turns": self.turns,
            "delivered": self.delivered,
            "control": self.control or None,
            "control_from": self.control_from or None,
        }


def mcp_config(shim: Sequence[str], runtime_dir: Path) -> dict[str, Any]:
    """The one-shot MCP config: this daemon's shim, and nothing else."""
    return {"mcpServers": {AGENT_COORD: shim_server(shim, runtime_dir)}}


def runner_argv(spec: RunnerSpec, prompt: str, config_file: Path) -> list[str]:
    """One-shot ``claude -p ... --output-format json PROMPT`` with the scoping flags of
    docs/localagents.md "Local dispatch" (the operator's per-turn runners, which continue a
    session with ``--resume``)."""
    if prompt.startswith("-"):
        prompt = " " + prompt  # never let a prompt read as a flag
    return [
        *strip_owned_flags(spec.command),
        "--output-format",
        "json",
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


def oneshot_plan(
    spec: RunnerSpec, prompt: str, job_dir: Path, runtime_dir: Path, shim: Sequence[str] | None
) -> LaunchPlan:
    """A launch plan for one prompt, answered on stdout into the job log (no stdin turns)."""
    config_file = job_dir / "mcp.json"
    return LaunchPlan(
        argv=runner_argv(spec, prompt, config_file),
        env={},
        mcp_config=mcp_config(list(shim or _DEFAULT_SHIM), runtime_dir),
        config_file=config_file,
        timeout_s=spec.timeout_s,
        turns_on_stdin=False,
    )


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
    if proc.poll() is not None:  # reaped already: its pid may name another process now
        return True
    return await wait_pid(proc.pid, timeout)


async def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop the runner with everything it started, its sandbox included: SIGTERM, then
    SIGKILL after a grace period (:func:`~agentcoord.localagents.proctree.stop_tree`)."""
    await stop_tree(proc.pid, reaped=lambda: proc.returncode is not None)


def _create_time(pid: int) -> float:
    import psutil

    return psutil.Process(pid).create_time()


def _write_private_json(path: Path, value: Any) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(value, fh)


def _must_exist(command: str, path: str | None) -> None:
    """Raise FileNotFoundError for a runner command that cannot be run, as ``Popen`` did
    when it started the command itself: behind :func:`exec_prefix` the start would succeed
    and only the exec after it fail. A relative path with a slash is left to the exec."""
    if os.sep in command and not os.path.isabs(command):
        return
    found = shutil.which(command, path=path) if os.sep not in command else command
    if found is None or not (os.path.isfile(found) and os.access(found, os.X_OK)):
        raise FileNotFoundError(2, "No such file or directory", command)


def _spawn(
    *,
    plan: LaunchPlan,
    limits: Limits,
    sandbox: Sandbox,
    package: Path,
    job_dir: Path,
    runtime_dir: Path,
    claude_dir: Path,
    base_env: Mapping[str, str],
) -> subprocess.Popen[bytes]:
    """Write the job's MCP config and start the (sandboxed) runner: stdin/stdout pipes for
    stream-json turns, else stdout straight into the job log.

    Called on the loop thread on purpose: PR_SET_PDEATHSIG follows the thread that forked.
    The death signal and the rlimits are set by :func:`~agentcoord.localagents.sandbox.exec_prefix`
    before the runner (or bwrap) starts, never between fork and exec in this threaded process.
    """
    job_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    claude_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    if plan.mcp_config is not None:
        _write_private_json(plan.config_file, plan.mcp_config)
    env = {k: v for k, v in base_env.items() if k not in _DROP_ENV}
    env.update(plan.env)
    env.update(
        AGENTCOORD_RUNTIME_DIR=str(runtime_dir),
        CLAUDE_CONFIG_DIR=str(claude_dir),
        AGENTCOORD_JOB_ID=job_dir.name,
    )
    if sandbox.bwrap:
        for path in plan.writable:
            path.mkdir(parents=True, exist_ok=True)
    # The runtime and state dirs are masked inside; the runner's shim needs only the socket,
    # and the runner its MCP config from the job dir (docs/localagents.md "The sandbox").
    _must_exist(plan.argv[0], env.get("PATH"))
    argv = exec_prefix(limits)
    argv += sandbox.argv(
        plan.argv,
        package=package,
        env=env,
        socket=runtime_dir / "agentcoord.sock",
        writable=[claude_dir, *plan.writable],
        readable=plan.readable,
        # The MCP config the daemon wrote into the job dir; a profile's own (MCP_CONFIG) is
        # among ``readable`` and stays under the masks.
        exceptions=[plan.config_file] if plan.mcp_config is not None else [],
        guarded=claude_guarded(claude_dir) if sandbox.bwrap else (),
        network=plan.network,
    )
    piped = plan.turns_on_stdin
    with (job_dir / "stderr").open("wb") as err, (job_dir / "stdout").open("wb") as out:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if piped else subprocess.DEVNULL,
            stdout=subprocess.PIPE if piped else out,
            stderr=err,
            cwd=package,
            env=env,
            start_new_session=True,
        )


async def _pipes(
    proc: subprocess.Popen[bytes],
) -> tuple[asyncio.StreamWriter, asyncio.StreamReader]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)  # one stream-json line can be large
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), proc.stdout)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, proc.stdin
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return writer, reader


async def _no_status(**_: Any) -> None:
    return None


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
    runners: RunnerTable,
    runner_info: RunnerInfo,
    plan: LaunchPlan | None = None,
    mailbox: Mailbox | None = None,
    status: StatusFn | None = None,
    shim: Sequence[str] | None = None,
) -> RunOutcome:
    """Run one agent until its work is done, it is drained or stopped, or its time is up.

    ``plan`` comes from the agent's profile (``launch.Launcher.prepare``); without one the
    runner answers one prompt from the command line (:func:`oneshot_plan`).
    """
    started = time.monotonic()
    if plan is None:
        plan = oneshot_plan(spec, prompt, job_dir, runtime_dir, shim)
    proc = _spawn(
        plan=plan,
        limits=spec.limits,
        sandbox=sandbox,
        package=package,
        job_dir=job_dir,
        runtime_dir=runtime_dir,
        claude_dir=claude_dir,
        base_env=base_env,
    )
    key: RunnerKey | None = None
    try:
        key = runners.register(proc.pid, _create_time(proc.pid), runner_info)
    except Exception:
        log.warning("runner %d exited before it could be registered", proc.pid)
    timed_out = False
    turns = TurnsOutcome()
    try:
        if not plan.turns_on_stdin:
            timed_out = await _run_oneshot(proc, plan.timeout_s, runner_info.agent)
            text = await asyncio.to_thread((job_dir / "stdout").read_text, errors="replace")
            parsed = parse_result(text)
            turns = TurnsOutcome(results=[parsed] if parsed else [], turns=1)
            return _outcome(proc, timed_out, turns, started, job_dir)
        stdin, stdout = await _pipes(proc)
        conversation = converse(
            agent=runner_info.agent,
            prompt=prompt,
            stdin=stdin,
            stdout=stdout,
            log_path=job_dir / "stdout",
            mailbox=mailbox,
            status=status or _no_status,
            kill=lambda: _kill_group(proc),
        )
        turns, timed_out = await _talk(proc, conversation, plan.timeout_s, runner_info.agent)
        if not await _wait_exit(proc, _KILL_GRACE_S):
            await _kill_group(proc)
    finally:
        if proc.poll() is None:
            await asyncio.shield(_kill_group(proc))
        if key is not None:
            runners.forget(key)
    return _outcome(proc, timed_out, turns, started, job_dir)


async def _talk(
    proc: subprocess.Popen[bytes],
    conversation: Coroutine[Any, Any, TurnsOutcome],
    timeout: float,
    agent: str,
) -> tuple[TurnsOutcome, bool]:
    """Hold the conversation with a stream-json runner until it ends or ``timeout`` passes
    (the runner's group is killed then): (its turns, whether it timed out). The conversation
    runs in this call's task group, so it never outlives the call."""
    timed_out = False
    try:
        async with asyncio.TaskGroup() as tg:
            talk = tg.create_task(conversation, name=f"runner-{proc.pid}")
            try:
                done, _ = await asyncio.wait({talk}, timeout=timeout)
                if not done:
                    timed_out = True
                    log.warning("runner %d for %s timed out; killing its group", proc.pid, agent)
                    await _kill_group(proc)
                return await talk, timed_out
            finally:
                if not talk.done():  # cancelled (daemon stopping): never leave it behind
                    await asyncio.shield(_kill_group(proc))
                    # With the runner gone its stdout ends and the conversation winds down by
                    # itself, putting undelivered messages back; cut it off only if that takes
                    # too long (the group then waits for the cancelled task).
                    try:
                        async with asyncio.timeout(_KILL_GRACE_S):
                            await asyncio.shield(talk)
                    except (TimeoutError, asyncio.CancelledError, Exception):
                        talk.cancel()
    except BaseExceptionGroup as group:
        # The conversation's own error, as the callers handle it (an OSError on its pipes).
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise


async def _run_oneshot(proc: subprocess.Popen[bytes], timeout: float, agent: str) -> bool:
    """Wait for a one-prompt runner; True when it ran out of time and was killed."""
    if await _wait_exit(proc, timeout):
        return False
    log.warning("runner %d for %s timed out; killing its group", proc.pid, agent)
    await _kill_group(proc)
    return True


def _outcome(
    proc: subprocess.Popen[bytes],
    timed_out: bool,
    turns: TurnsOutcome,
    started: float,
    job_dir: Path,
) -> RunOutcome:
    return RunOutcome(
        proc.wait(),
        timed_out,
        turns.last,
        time.monotonic() - started,
        _tail(job_dir / "stderr"),
        turns=turns.turns,
        delivered=turns.delivered,
        control=turns.control,
        control_from=turns.control_from,
    )


# -- linked sessions (docs/ask-and-operator.md "send_message and ask") ------------------------
def with_session(
    spec: RunnerSpec, *, resume: str | None = None, session_id: str | None = None
) -> RunnerSpec:
    """``spec`` whose command continues a session (``--resume ID``) or starts a named one
    (``--session-id UUID``), as a linked session or a resumed agent needs
    (docs/profiles.md "The launch API (for spawn, ask, resume)")."""
    import dataclasses

    if resume and session_id:
        raise ValueError("give resume or session_id, not both")
    extra: tuple[str, ...] = ()
    if resume:
        extra = ("--resume", resume)
    elif session_id:
        extra = ("--session-id", session_id)
    return dataclasses.replace(spec, command=(*spec.command, *extra))
