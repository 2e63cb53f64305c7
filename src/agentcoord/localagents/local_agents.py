"""The local-agents service: registry, live index, session probe and dispatch, in one place.

An async context manager entered on the daemon's exit stack. It owns the package watcher and
the background tasks of ``wait=false`` local jobs (cancelled, and their runners killed, on exit).
Routing follows docs/localagents.md "Routing"; both checks of local dispatch are enforced in
:meth:`LocalAgents._local_package`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from agentcoord.errors import IdentityMismatch, InvalidArguments, NotFound, StateConflict
from agentcoord.identity.runners import RunnerInfo, Runners
from agentcoord.kernel.caller import Caller
from agentcoord.kernel.tasks import TaskSet
from agentcoord.localagents import httpjobs
from agentcoord.localagents._failures import DispatchFailed
from agentcoord.localagents.conversation import Inboxes
from agentcoord.localagents.index import PackageIndex
from agentcoord.localagents.launch import Launcher
from agentcoord.localagents.merge import (
    effective_status,
    find_by_capability,
    iso,
    local_records,
    merged_records,
    pick_for_capability,
    registered_view,
)
from agentcoord.localagents.paths import is_safe_agent_id, package_dir, resolve_agentihub_dir
from agentcoord.localagents.profiles import DEFAULT_PROFILE, ProfileError
from agentcoord.localagents.runner import RunnerSpec, run_local
from agentcoord.localagents.sandbox import Limits, Sandbox, daemon_secrets, detect_sandbox
from agentcoord.localagents.sessions import PsutilSessionProbe, SessionProbe
from agentcoord.stores.agentrecords import (
    AgentRecord,
    AgentRecords,
    AgentTaskRecord,
    TaskRecords,
)
from agentcoord.stores.messagebus import check_agent_id
from agentcoord.stores.objects.statuserrors import AlreadyExists

if TYPE_CHECKING:
    from agentcoord.budgets import Budgets
    from agentcoord.kernel.config import Config
    from agentcoord.stores.objects.backend import ObjectBackend

__all__ = ["MAX_DEPTH", "LocalAgents"]

log = logging.getLogger(__name__)

MAX_DEPTH = 4  # more agents in a row than this is refused (docs/ask-and-operator.md)
DISABLED = "local agents are disabled (set AGENTIBRIDGE_LOCAL_AGENTS_ENABLED=true)"


class LocalAgents:
    """Registered HTTP agents + computed local agents, and dispatch to either."""

    def __init__(
        self,
        *,
        enabled: bool,
        hub: Path | None,
        session_ttl: float,
        state_dir: Path,
        runtime_dir: Path,
        claude_dir: Path,
        spec: RunnerSpec,
        sandbox: Sandbox,
        base_env: Mapping[str, str],
        records: AgentRecords,
        tasks: TaskRecords,
        runners: Runners | None = None,
        probe: SessionProbe | None = None,
        wait_deadline_s: float = 600.0,
        clock: Callable[[], float] = time.time,
        launcher: Launcher,
        index: PackageIndex | None = None,
    ) -> None:
        self.enabled = enabled
        self.hub = hub
        self.session_ttl = session_ttl
        self._state_dir = state_dir
        self._runtime_dir = runtime_dir
        self._claude_dir = claude_dir
        self.spec = spec
        self.sandbox = sandbox
        self._base_env = dict(base_env)
        # The processes this service and the operator start for agents: the identity
        # resolver reads them (who a caller is), the starters register and forget them.
        self.runners = runners if runners is not None else Runners()
        self.probe = probe or PsutilSessionProbe(claude_dir)
        self.records = records  # registered agents: Agent objects (docs/store.md)
        self.tasks = tasks  # dispatch jobs: AgentTask objects
        self.index = index if index is not None else PackageIndex(hub if enabled else None)
        self._wait_deadline_s = wait_deadline_s
        self._clock = clock
        self._jobs = TaskSet("local agents")  # the wait=false local jobs
        # one pooled HTTP client for every registered agent's job endpoint, closed on exit
        self.http = httpjobs.JobClient()
        self.launcher = launcher  # profiles drive every start (docs/profiles.md)
        # The ceilings every local job is admitted under (docs/budgets.md), set by the daemon.
        self.budgets: Budgets | None = None

    @classmethod
    def from_config(
        cls,
        cfg: Config,
        *,
        base_env: Mapping[str, str],
        records: AgentRecords,
        tasks: TaskRecords,
        store: ObjectBackend,
        nc: Any,
        inboxes: Inboxes,
        index: PackageIndex,
    ) -> LocalAgents:
        """Build from the daemon's Config (the one place config becomes this service):
        started agents take their profiles from ``store``, their messages from ``inboxes``
        and report on ``nc``; ``index`` is the package index the recipients check too."""
        spec = RunnerSpec.from_command(
            cfg.runner_command,
            permission_mode=cfg.runner_permission_mode,
            allowed_tools=cfg.runner_allowed_tools,
            max_turns=cfg.runner_max_turns,
            timeout_s=float(cfg.runner_timeout),
            limits=Limits(cpu_s=max(60, 2 * cfg.runner_timeout)),
        )
        return cls(
            enabled=cfg.local_agents_enabled,
            hub=resolve_agentihub_dir(cfg.agentihub_dir),
            session_ttl=float(cfg.local_session_ttl),
            state_dir=cfg.state_dir,
            runtime_dir=cfg.runtime_dir,
            claude_dir=cfg.claude_dir,
            spec=spec,
            sandbox=detect_sandbox(cfg.runner_sandbox, daemon_secrets(cfg)),
            base_env=base_env,
            records=records,
            tasks=tasks,
            launcher=Launcher.for_spec(
                spec,
                store,
                base_env=base_env,
                runtime_dir=cfg.runtime_dir,
                backends=cfg.backend_commands(),
                nc=nc,
                inboxes=inboxes,
                namespace=cfg.kube_namespace,
            ),
            index=index,
        )

    # -- lifecycle ---------------------------------------------------------------------------
    async def __aenter__(self) -> LocalAgents:
        await self.launcher.ensure_default_profile()  # created on first start
        await self.http.__aenter__()
        await self.index.__aenter__()
        await self._jobs.__aenter__()
        if self.enabled and self.sandbox.bwrap is None:
            log.warning("local agents: %s", self.sandbox.mode)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self._jobs.__aexit__(None, None, None)  # cancels the jobs, waits for them
        finally:
            try:
                await self.index.__aexit__(exc_type, exc, tb)
            finally:
                await self.http.__aexit__(exc_type, exc, tb)  # after the jobs that used it

    def describe(self) -> dict[str, Any]:
        """Status for ``agentcoord status`` (and doctor): flag, hub, packages, sandbox."""
        return {
            "enabled": self.enabled,
            "agentihub_dir": str(self.hub) if self.hub else None,
            "packages": len(self.index),
            "watching": self.index.watching,
            "running_jobs": len(self._jobs.live()),
            **self.sandbox.describe(),
        }

    # -- registered agents -------------------------------------------------------------------
    async def register(self, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """``register_agent``: upsert, keeping ``registered_at`` of an existing record."""
        agent_id = _checked_id(args["agent_id"])
        transport = args.get("transport", "http")
        endpoint = str(args.get("endpoint", ""))
        if transport == "http" and not endpoint.startswith(("http://", "https://")):
            raise InvalidArguments("`endpoint` must be an http(s) URL for transport=http")
        now = iso(self._clock())
        old = self._owned(agent_id, caller)
        if old is None:
            self._no_look_alike(agent_id)
        record = AgentRecord(
            agent_id=agent_id,
            agent_name=str(args.get("agent_name") or agent_id),
            agent_type=str(args.get("agent_type", "")),
            capabilities=list(dict.fromkeys(args.get("capabilities", []))),
            endpoint=endpoint,
            transport=transport,
            status="online",
            metadata=dict(args.get("metadata", {})),
            registered_at=old.registered_at if old else now,
            last_heartbeat=now,
            heartbeat_ttl=int(args.get("heartbeat_ttl", 300)),
            registered_by=caller.agent,
        )
        try:
            await self.records.upsert(record)
        except AlreadyExists:
            # The name is an Agent that is no registration: a session, a spawned or a package
            # agent (docs/localagents.md "Registered agents").
            raise StateConflict(
                f"`agent_id` {agent_id!r} is taken: an agent of that name already exists and is "
                "not a registered agent (a Claude Code session, a spawned or a package agent); "
                "register under another agent_id"
            ) from None
        return registered_view(record, self._clock())

    def _no_look_alike(self, agent_id: str) -> None:
        """A new id that differs from a registered one only by case reads as that agent to a
        person (docs/localagents.md "Registered agents"): refused, naming the other."""
        folded = agent_id.casefold()
        for rec in self.records.list():
            if rec.agent_id != agent_id and rec.agent_id.casefold() == folded:
                raise InvalidArguments(
                    f"`agent_id` {agent_id!r} differs from the registered agent "
                    f"{rec.agent_id!r} only by case; use that id, or one that does not look alike"
                )

    def _owned(self, agent_id: str, caller: Caller) -> AgentRecord | None:
        """The record of ``agent_id`` if ``caller`` may change it: whoever registered it, or
        the human. Anyone else re-pointing its endpoint would receive its dispatches
        (docs/reliability.md "tests/security")."""
        record = self.records.get(_checked_id(agent_id))
        owner = record.registered_by if record else ""
        if owner and caller.agent != owner and caller.kind != "human":
            raise IdentityMismatch(
                caller.agent,
                owner,
                f"identity mismatch: {agent_id} was registered by {owner}, not {caller.agent}",
            )
        return record

    async def deregister(self, agent_id: str, caller: Caller) -> bool:
        self._owned(agent_id, caller)
        return await self.records.delete(_checked_id(agent_id))

    async def heartbeat(
        self, agent_id: str, status: str, metadata: dict[str, Any], caller: Caller
    ) -> dict[str, Any]:
        record = self._owned(agent_id, caller)
        if record is None:
            raise NotFound(f"no registered agent {agent_id!r}; call register_agent first")
        record.status = status
        record.metadata = {**record.metadata, **metadata}
        record.last_heartbeat = iso(self._clock())
        await self.records.upsert(record)
        return registered_view(record, self._clock())

    # -- views (the discovery tools call these) ----------------------------------------------
    async def refresh_sessions(self) -> None:
        """Walk the process table off the event loop; the views then read the probe's cache."""
        if self.enabled:
            await asyncio.to_thread(self.probe.sessions)

    def find(self, capability: str, limit: int = 50) -> list[dict[str, Any]]:
        """``find_agents(capability=...)`` rows: registered + local, ranked for routing."""
        rows = self.merged(capability=capability, limit=10_000)
        return find_by_capability(rows, capability)[: max(0, limit)]

    def local_rows(self) -> list[dict[str, Any]]:
        """Computed local agents; empty while the feature flag is off."""
        if not self.enabled:
            return []
        return local_records(
            self.index.packages(), self.probe.sessions(), self.session_ttl, self._clock()
        )

    def merged(
        self,
        *,
        agent_type: str | None = None,
        capability: str | None = None,
        status: str | None = None,
        limit: int = 50,
    ) -> list[dict[str, Any]]:
        """``list_agents`` rows: registered + local, filtered."""
        return merged_records(
            self.records.list(),
            self.local_rows(),
            now=self._clock(),
            agent_type=agent_type,
            capability=capability,
            status=status,
            limit=limit,
        )

    def get(self, agent_id: str) -> dict[str, Any] | None:
        """``get_agent``: registered first, computed local agent as fallback."""
        if not is_safe_agent_id(agent_id):
            return None
        record = self.records.get(agent_id)
        if record is not None:
            return registered_view(record, self._clock())
        if not self.enabled or self.index.get(agent_id) is None:
            return None
        pkg = self.index.get(agent_id)
        assert pkg is not None
        rows = local_records([pkg], self.probe.sessions(), self.session_ttl, self._clock())
        return rows[0]

    def discover(self, status: str | None = None) -> dict[str, Any]:
        """``discover_local_agents``: local agents only, with ``shadowed_by_registered``."""
        if not self.enabled:
            raise InvalidArguments(DISABLED)
        registered = {r.agent_id for r in self.records.list()}
        agents = []
        for row in self.local_rows():
            if status and row["effective_status"] != status:
                continue
            row["shadowed_by_registered"] = row["agent_id"] in registered
            agents.append(row)
        return {
            "enabled": True,
            "agentihub_dir": str(self.hub) if self.hub else None,
            "sandbox": self.sandbox.mode,
            "count": len(agents),
            "agents": agents,
        }

    # -- dispatch ----------------------------------------------------------------------------
    async def run_agent(self, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """``run_agent``: route by id (docs/localagents.md "Routing")."""
        agent_id = args["agent_id"]
        if not is_safe_agent_id(agent_id):
            raise InvalidArguments(f"`agent_id` {agent_id!r} is not a single safe path component")
        return await self._route(agent_id, args, caller, routed_by="agent_id")

    async def dispatch(self, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """``dispatch_to_agent``: the best agent for a capability, then route by id."""
        capability = args["capability"]
        await self.refresh_sessions()
        rows = self.merged(capability=capability, limit=10_000)
        best = pick_for_capability(rows, capability)
        if best is None:
            known = len(rows)
            why = (
                f"no online agent with capacity advertises {capability!r}"
                if known
                else f"no agent advertises {capability!r}"
            )
            raise DispatchFailed(why, retry=bool(known), capability=capability)
        result = await self._route(str(best["agent_id"]), args, caller, routed_by="capability")
        result["capability"] = capability
        return result

    async def _route(
        self, agent_id: str, args: dict[str, Any], caller: Caller, *, routed_by: str
    ) -> dict[str, Any]:
        if caller.depth >= MAX_DEPTH:
            raise DispatchFailed("too many agents in a row", retry=False, agent_id=agent_id)
        record = self.records.get(agent_id)
        if record is None or record.transport == "local":
            # Local branch first: liveness never gates a cold start (docs/localagents.md "Routing").
            if record is None and not self.enabled:
                raise NotFound(f"no agent {agent_id!r} ({DISABLED})")
            package = self._local_package(agent_id)
            job = await self._run_local(agent_id, package, args, caller)
        else:
            job = await self._run_http(record, args, caller)
        return {
            "success": job.get("status") not in ("failed", "timed_out", "cancelled"),
            "agent_id": agent_id,
            "routed_by": routed_by,
            "transport": "local" if record is None else record.transport,
            "job": job,
        }

    def _local_package(self, agent_id: str) -> Path:
        """Both checks of local dispatch; the path never comes from a record."""
        if not self.enabled:
            raise DispatchFailed(DISABLED, retry=False, agent_id=agent_id)
        if self.hub is None:
            raise DispatchFailed("no AgentiHub directory (AGENTIHUB_DIR)", retry=False)
        live = self.index.get(agent_id)
        path = package_dir(self.hub, agent_id)  # re-checked on disk now, not trusted from cache
        if path is None or (live is not None and live.path != path):
            raise NotFound(f"no local package {agent_id!r} under {self.hub}")
        return path

    async def _new_task(
        self, agent_id: str, transport: str, args: dict[str, Any], caller: Caller
    ) -> AgentTaskRecord:
        job_id = f"{int(self._clock())}-{secrets.token_hex(4)}"
        task = AgentTaskRecord(
            job_id=job_id,
            agent_id=agent_id,
            transport=transport,
            task=str(args["task"]),
            requested_by=caller.agent,
            status="pending",
            created_at=iso(self._clock()),
        )
        await self.tasks.upsert(task)
        return task

    async def _finish(self, task: AgentTaskRecord, status: str, **changes: Any) -> dict[str, Any]:
        task.status = status
        task.finished_at = iso(self._clock())
        for key, value in changes.items():
            setattr(task, key, value)
        await self.tasks.upsert(task)
        return task.as_dict()

    async def _run_local(
        self, agent_id: str, package: Path, args: dict[str, Any], caller: Caller
    ) -> dict[str, Any]:
        """Admit the job under the ceilings (queued when the caller waits, else refused: docs/
        budgets.md "Every start"), then run it; the slot is held until the runner ends."""
        if self.budgets is None:
            return await self._start_local(agent_id, package, args, caller, lambda: None)
        slot = await self.budgets.admit(
            agent_id,
            f"a job of local agent {agent_id}",
            wait=bool(args.get("wait")),
            timeout=self._wait_deadline_s,
        )
        try:
            job = await self._start_local(agent_id, package, args, caller, slot.release)
        except BaseException:
            slot.release()
            raise
        return {**job, **slot.report()}

    async def _start_local(
        self,
        agent_id: str,
        package: Path,
        args: dict[str, Any],
        caller: Caller,
        release: Callable[[], None],
    ) -> dict[str, Any]:
        """The job itself; ``release`` gives its slot back when its runner ends (or it cannot
        start)."""
        task = await self._new_task(agent_id, "local", args, caller)
        job_dir = self._state_dir / "jobs" / task.job_id
        task.log_dir = str(job_dir)
        task.sandbox = self.sandbox.mode
        task.status = "running"
        await self.tasks.upsert(task)
        prompt = _prompt(args)
        launcher = self.launcher
        task.profile = str(args.get("profile") or DEFAULT_PROFILE)
        try:
            plan = await launcher.prepare(
                agent_id,
                str(args.get("profile") or ""),
                job_dir,
                depth=caller.depth + 1,
                cwd=str(package),
            )
        except ProfileError as exc:
            release()
            return await self._finish(task, "failed", error=str(exc))
        task.profile = plan.profile.name
        await self.tasks.upsert(task)

        async def job() -> dict[str, Any]:
            try:
                outcome = await run_local(
                    spec=self.spec,
                    sandbox=self.sandbox,
                    prompt=prompt,
                    package=package,
                    job_dir=job_dir,
                    runtime_dir=self._runtime_dir,
                    claude_dir=self._claude_dir,
                    base_env=self._base_env,
                    runners=self.runners,
                    runner_info=RunnerInfo(agent_id, caller.depth + 1),
                    plan=plan,
                    mailbox=launcher.mailbox(agent_id),
                    status=launcher.status_fn(agent_id, task.job_id),
                )
            except asyncio.CancelledError:
                await self._finish(task, "cancelled", error="the daemon stopped")
                await launcher.agents.status(agent_id, phase="Failed", message="the daemon stopped")
                raise
            except OSError as exc:
                error = f"cannot start the runner: {exc}"
                await launcher.agents.status(agent_id, phase="Failed", message=error)
                return await self._finish(task, "failed", error=error)
            out = outcome.as_dict()
            status = (
                "succeeded" if outcome.success else "timed_out" if outcome.timed_out else "failed"
            )
            error = "" if outcome.success else _why(outcome.as_dict(), outcome.stderr_tail)
            await launcher.finished(agent_id, outcome, error)
            done = await self._finish(
                task, status, exit_code=outcome.exit_code, result=out, error=error
            )
            return done

        async def held() -> dict[str, Any]:
            try:
                return await job()
            finally:
                release()

        if args.get("wait"):
            return await held()
        self._jobs.spawn(held(), name=f"local-job-{task.job_id}")
        return task.as_dict()

    async def _run_http(
        self, record: AgentRecord, args: dict[str, Any], caller: Caller
    ) -> dict[str, Any]:
        now = self._clock()
        status = effective_status(record, now)
        view = registered_view(record, now)
        if status != "online":
            raise DispatchFailed(
                f"agent {record.agent_id!r} is {status}", retry=True, agent_id=record.agent_id
            )
        if view["available_capacity"] <= 0:
            raise DispatchFailed(
                f"agent {record.agent_id!r} has no free capacity",
                retry=True,
                agent_id=record.agent_id,
            )
        task = await self._new_task(record.agent_id, "http", args, caller)
        body = {
            "task": args["task"],
            "profile": args.get("profile", ""),
            "repo_url": args.get("repo_url", ""),
            "file_path": args.get("file_path", ""),
            "requested_by": caller.agent,
            "request_id": task.job_id,
        }
        try:
            reply = await self.http.post_job(record.endpoint, body)
            task.remote_job_id = reply["job_id"]
            task.status = "running"
            await self.tasks.upsert(task)
            if not args.get("wait"):
                task.result = reply
                await self.tasks.upsert(task)
                return task.as_dict()
            final = await self.http.wait_job(
                record.endpoint, reply["job_id"], deadline_s=self._wait_deadline_s
            )
        except DispatchFailed as exc:
            await self._finish(task, "failed", error=str(exc.data.get("error")))
            exc.data.setdefault("agent_id", record.agent_id)
            exc.data["job_id"] = task.job_id
            raise
        ok = str(final.get("status", "")).lower() in ("done", "succeeded", "completed")
        return await self._finish(task, "succeeded" if ok else "failed", result=final)


def _checked_id(agent_id: str) -> str:
    """The one agent id rule (the one ``send`` applies, :func:`check_agent_id`: ASCII letters,
    digits and ``_:@-+=``, so no look-alike Unicode and no dots), which also makes it a
    single safe path component."""
    try:
        check_agent_id(agent_id)
        valid = is_safe_agent_id(agent_id)
    except InvalidArguments:
        valid = False
    if not valid:
        raise InvalidArguments(
            f"`agent_id` {agent_id!r} is not a valid agent id: 1-128 ASCII letters, digits and "
            "_ : @ - + =, no dots or spaces (it is a message address and a single safe path "
            "component)"
        )
    return agent_id


def _prompt(args: dict[str, Any]) -> str:
    parts = [str(args["task"])]
    for key in ("repo_url", "file_path"):  # not profile: it names the AgentProfile
        if args.get(key):
            parts.append(f"{key}: {args[key]}")
    return "\n\n".join(parts)


def _why(result: dict[str, Any], stderr_tail: str) -> str:
    if result.get("timed_out"):
        return "the runner timed out and was killed"
    if result.get("control") == "stop":
        return f"stopped by a control message from {result.get('control_from')}"
    if result.get("is_error"):
        return f"the runner reported an error ({result.get('subtype')}): {result.get('result')}"
    if result.get("subtype") is None:
        tail = stderr_tail.strip().splitlines()[-3:]
        return f"the runner exited {result.get('exit_code')} without a result JSON: " + " | ".join(
            tail
        )
    return f"the runner exited {result.get('exit_code')}"
