"""The Agent controller: the daemon as operator (docs/ask-and-operator.md "The operator").

Managed Agent objects (label ``fastverk.savvifi.com/managed-by=agentcoord``) are reconciled
into sandboxed runner processes: a new Agent with an objective (its owner AgentTask) or a
checkpoint to resume gets a main turn; every message to it runs as a turn in a linked session
("From A", reused while idle). ``status.phase`` follows the turns: Pending, Running, then
Succeeded or Failed from the last turn's result JSON (Idle when it never had work).

The controller works as a Kubernetes controller does (client-go's workqueue): a watch event
only queues the Agent's name (:mod:`.workqueue`, deduplicated); a fixed number of workers take
names, read the Agent as stored now and act on :func:`.callrules.reconcile_action`. A name is never
reconciled by two workers at once, and a reconcile that fails (the store busy, a start that
raised) is logged and queued again after an exponential back-off, so no change is lost.

Deleting the Agent is the stop signal: a finalizer holds the object until the controller has
stopped the runners' process groups and written the outcome. Each live runner is recorded on
the Agent (annotation ``fastverk.savvifi.com/runners``: pid, start time, job dir), so after a
daemon restart the controller adopts a runner that still runs and reaps one that does not:
no orphans, and statuses that say what happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
import uuid
from collections import defaultdict
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from agentcoord.agentops import checkpoints
from agentcoord.agentops._procs import (
    create_time_of,
    descendants,
    kill_pgroup,
    read_text,
    wait_gone,
    wait_pid,
)
from agentcoord.agentops._writes import (
    FINALIZER,
    MANAGED_LABEL,
    RUNNERS_ANNOTATION,
    SESSIONS_ANNOTATION,
    AgentWrites,
    runner_records,
)
from agentcoord.agentops.callrules import (
    LinkedSession,
    TurnPlace,
    fate_of_runner,
    new_session_name,
    phase_after,
    pick_session,
    project_dir_name,
    reconcile_action,
)
from agentcoord.agentops.turns import ActiveTurns, RegisteringRunners, Turn, focus_of
from agentcoord.agentops.workqueue import WorkQueue
from agentcoord.errors import DomainError, StateConflict, Unavailable
from agentcoord.identity.runners import RunnerInfo, RunnerTable
from agentcoord.kernel.tasks import TaskSet
from agentcoord.localagents.launch import Launcher
from agentcoord.localagents.profiles import (
    DEFAULT_PROFILE,
    LaunchPlan,
    ProfileError,
    plan_launch,
    shim_server,
)
from agentcoord.localagents.runner import RunnerSpec, parse_result, run_local, with_session
from agentcoord.localagents.sandbox import Sandbox
from agentcoord.stores.audit import AuditSink
from agentcoord.stores.objects import Expired, ObjectBackend, ObjectNotFound, StoreError

__all__ = [
    "FINALIZER",
    "MANAGED_LABEL",
    "RUNNERS_ANNOTATION",
    "SESSIONS_ANNOTATION",
    "AgentController",
]

log = logging.getLogger(__name__)

WORKERS = 4  # Agents reconciled at once; one Agent is only ever reconciled by one of them
RETRY_BASE_S = 0.1  # the first retry of a failed reconcile; doubling up to RETRY_MAX_S
RETRY_MAX_S = 30.0


class AgentController:
    """Async context manager: adopt or reap on entry, then reconcile until exit."""

    def __init__(
        self,
        *,
        store: ObjectBackend,
        runners: RunnerTable,
        spec: RunnerSpec,
        sandbox: Sandbox,
        state_dir: Path,
        runtime_dir: Path,
        claude_dir: Path,
        base_env: dict[str, str],
        launcher: Launcher,
        audit: AuditSink | None = None,
        user: str = "user",
        namespace: str = "default",
    ) -> None:
        self.store = store
        # The agent's AgentProfile (read at each start) shapes the launch (docs/profiles.md).
        self.launcher = launcher
        self._runners = runners
        self.spec = spec
        self.sandbox = sandbox
        self.state_dir = state_dir
        self._runtime_dir = runtime_dir
        self.claude_dir = claude_dir
        self._base_env = base_env
        self._audit = audit
        self.user = user
        self.ns = namespace
        self.active = ActiveTurns()
        self._w = AgentWrites(store, namespace)
        self.turns: dict[str, Turn] = {}
        self._sessions: dict[str, list[LinkedSession]] = {}
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._handled: set[str] = set()  # uids of Agents whose first reconcile is done
        self._uids: dict[str, str] = {}  # name -> uid of the Agent last reconciled
        self._stopped: set[str] = set()  # uids whose runners the delete has stopped
        self._gone: dict[str, asyncio.Event] = {}
        self._starting: dict[str, asyncio.Future[None]] = {}  # turn id -> its runner started
        self._queue: WorkQueue[str] = WorkQueue(base_delay=RETRY_BASE_S, max_delay=RETRY_MAX_S)
        # The watch, the workers, the turns and their bookkeeping (docs/architecture.md "Tasks").
        self._tasks = TaskSet("agent controller")
        self._closing = False

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> AgentController:
        await self._tasks.__aenter__()
        try:
            await self._adopt_or_reap()
        except BaseException:
            await self._tasks.__aexit__(None, None, None)
            raise
        self._tasks.spawn(self._watch(), name="agent-controller-watch")
        for n in range(WORKERS):
            self._tasks.spawn(self._work(), name=f"agent-controller-worker-{n}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closing = True
        self._queue.shut_down()
        # Cancels the watch, the workers and every turn (each stops its runner), and waits.
        await self._tasks.__aexit__(None, None, None)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None] | None:
        """A task of the controller; None once it is closing (the coroutine is not run)."""
        if not self._tasks.running:
            coro.close()
            return None
        return self._tasks.spawn(coro, name=name)

    def emit(self, event: str, agent: str, **data: Any) -> None:
        if self._audit is not None:
            self._audit.emit(event, agent, **data)

    # -- restart: adopt or reap --------------------------------------------------------------

    async def _adopt_or_reap(self) -> None:
        """Runners recorded on Agents: the same live process is adopted, anything else reaped."""
        agents, _ = await self.store.list("agents", self.ns, f"{MANAGED_LABEL}=agentcoord")
        for obj in agents:
            records = runner_records(obj)
            name = obj["metadata"]["name"]
            if not records:
                if (obj.get("status") or {}).get("phase") == "Running":
                    await self._w.set_status(name, "Failed", "no runner after a daemon restart")
                    self._handled.add(obj["metadata"]["uid"])
                continue
            self._handled.add(obj["metadata"]["uid"])
            for rec in records:
                alive = create_time_of(int(rec["pid"]))
                if fate_of_runner(rec, alive) == "adopt":
                    self._adopt(obj, rec)
                else:
                    await self._reap(name, rec)
            await self._w.sync_runners(name, self.turns.values())

    def _adopt(self, obj: dict[str, Any], rec: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        sessions = self._sessions_of(obj)
        session = next(
            (s for s in sessions if s.session_id == rec.get("sessionId")),
            LinkedSession("main", str(rec.get("sessionId", "")), ""),
        )
        session.busy = True
        place = TurnPlace(int(rec.get("depth", 1)), tuple(rec.get("chain", [name])))
        turn = Turn(
            id=str(rec["turn"]),
            agent=name,
            place=place,
            session=session,
            resume=True,
            prompt="",
            job_dir=Path(rec["jobDir"]),
            done=asyncio.get_running_loop().create_future(),
            key=(int(rec["pid"]), float(rec["createTime"])),
        )
        self.turns[turn.id] = turn
        self.active.add(name, turn.id, place)
        assert turn.key is not None
        self._runners.register(*turn.key, RunnerInfo(name, place.depth, place.chain))
        log.info("adopted runner %d of %s after a restart", turn.key[0], name)
        self.emit("RUNNER_ADOPTED", name, pid=turn.key[0], turn=turn.id)
        turn.task = self._spawn(self._watch_adopted(turn), f"adopted-{turn.id}")

    async def _watch_adopted(self, turn: Turn) -> None:
        """An adopted runner is not our child: wait on its pidfd, then read its output."""
        assert turn.key is not None
        pid = turn.key[0]
        try:
            await wait_pid(pid, None)
        except asyncio.CancelledError:
            await asyncio.shield(kill_pgroup(pid))
            self._turn_finished(turn, None, None, cancelled=True)
            raise
        parsed = parse_result(read_text(turn.job_dir / "stdout"))
        error = "" if parsed else "the adopted runner ended without a result"
        await self._after_turn(turn, self._turn_finished(turn, parsed, None, error=error))

    async def _reap(self, name: str, rec: dict[str, Any]) -> None:
        """A recorded runner that is gone (or is another process now): its output decides."""
        pid = int(rec["pid"])
        parsed = parse_result(read_text(Path(rec["jobDir"]) / "stdout"))
        if parsed is None:
            phase, message = "Failed", "runner lost: the daemon stopped while it ran"
        else:
            phase, message = phase_after(parsed, 0)
        await self._w.set_status(name, phase, message, pid=0)
        self.emit("RUNNER_REAPED", name, pid=pid, turn=rec.get("turn"), phase=phase)
        log.info("reaped runner %d of %s: %s", pid, name, message)

    # -- the reconcile loop: watch -> work queue -> workers --------------------------------

    async def _watch(self) -> None:
        """Queue the name of every Agent that changes; the workers do the rest."""
        while not self._closing:
            try:
                watcher = await self.store.watch(
                    "agents", namespace=self.ns, labels=f"{MANAGED_LABEL}=agentcoord"
                )
                async with watcher:
                    async for event in watcher:
                        if event.type != "BOOKMARK":
                            self._queue.add(str(event.object["metadata"]["name"]))
            except Expired:
                continue  # cut off: list again (ADDED events for what exists)
            except StoreError:
                if self._closing:
                    return
                log.warning("agent watch ended; watching again", exc_info=True)
                await asyncio.sleep(0.1)
            else:
                return

    async def _work(self) -> None:
        """One worker: reconcile the names the queue hands out, one at a time."""
        while (name := await self._queue.get()) is not None:
            try:
                await self._reconcile(name)
            except Exception as exc:
                retry = self._queue.failures(name) + 1
                delay = self._queue.add_rate_limited(name)
                log.warning(
                    "reconciling agent %s failed (retry %d in %.1f s): %s",
                    name,
                    retry,
                    delay,
                    exc,
                    exc_info=not isinstance(exc, StoreError),
                    extra={"agent": name, "retry": retry},
                )
            else:
                self._queue.forget(name)
            finally:
                self._queue.done(name)

    async def _reconcile(self, name: str) -> None:
        """Bring the Agent ``name`` as stored now to what it asks for; raise to be retried."""
        try:
            obj = await self.store.get("agents", self.ns, name)
        except ObjectNotFound:
            self._forget_agent(name)
            return
        meta = obj["metadata"]
        if (meta.get("labels") or {}).get(MANAGED_LABEL) != "agentcoord":
            return  # no longer managed: not ours to run
        uid = str(meta["uid"])
        if self._uids.get(name, uid) != uid:
            self._forget_agent(name)  # deleted and made again under the same name
        self._uids[name] = uid
        finalizers = meta.get("finalizers") or []
        if FINALIZER not in finalizers and not meta.get("deletionTimestamp"):
            # Created by hand (kubectl): hold it until its runners are stopped, too.
            with contextlib.suppress(ObjectNotFound):
                await self.store.patch(
                    "agents", self.ns, name, {"metadata": {"finalizers": [*finalizers, FINALIZER]}}
                )
        live = sum(1 for t in self.turns.values() if t.agent == name)
        action = reconcile_action(obj, live_turns=live, handled=uid in self._handled)
        if action == "finalize":
            await self._finalize(obj)
        elif action == "start":
            await self._start_main(obj)
            self._handled.add(uid)
        elif action == "idle":
            await self._w.set_status(name, "Idle", "no objective; waiting for messages")
            self._handled.add(uid)

    def _forget_agent(self, name: str) -> None:
        """The Agent left the store: stop what may still run for it and say it is gone."""
        self._stop_agent_turns(name)
        uid = self._uids.pop(name, None)
        if uid is not None:
            self._handled.discard(uid)
            self._stopped.discard(uid)
        self._mark_gone(name)

    def _mark_gone(self, name: str) -> None:
        ev = self._gone.pop(name, None)
        if ev is not None:
            ev.set()

    async def wait_gone(self, name: str, timeout: float) -> bool:
        """Wait until the Agent ``name`` has left the store (after a delete)."""
        ev = self._gone.setdefault(name, asyncio.Event())
        try:
            self.store.get_raw("agents", self.ns, name)
        except ObjectNotFound:
            return True
        try:
            async with asyncio.timeout(timeout):
                await ev.wait()
        except TimeoutError:
            return False
        return True

    def _stop_agent_turns(self, name: str) -> list[asyncio.Task[None]]:
        tasks = [t.task for t in self.turns.values() if t.agent == name and t.task is not None]
        for task in tasks:
            task.cancel("agent deleted")
        return tasks

    async def _finalize(self, obj: dict[str, Any]) -> None:
        """Deleting: stop every runner of the agent and say so (once), then release the
        finalizer (retried until it is released)."""
        name, uid = obj["metadata"]["name"], obj["metadata"]["uid"]
        if uid not in self._stopped:
            await self._stop_runners(obj)
            self._stopped.add(uid)
        try:
            await self._w.sync_runners(name, self.turns.values())
            current = await self.store.get("agents", self.ns, name)
            rest = [f for f in current["metadata"].get("finalizers") or [] if f != FINALIZER]
            await self.store.patch(
                "agents", self.ns, name, {"metadata": {"finalizers": rest or None}}
            )
        except ObjectNotFound:
            pass  # gone already: the next reconcile forgets it
        self._sessions.pop(name, None)

    async def _stop_runners(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        began = time.monotonic()
        pids = [t.key[0] for t in self.turns.values() if t.agent == name and t.key]
        # The sandboxed command runs in its own session inside bwrap: killing the runner's
        # group ends it through die-with-parent, asynchronously. Wait for those too, so
        # "stopped" means every process of the runner is gone.
        inside = await asyncio.to_thread(descendants, pids)
        tasks = self._stop_agent_turns(name)
        if tasks:
            await asyncio.wait(tasks)
        await asyncio.to_thread(wait_gone, inside, 1.0)
        took = round((time.monotonic() - began) * 1000)
        message = (
            f"cancelled: runner stopped in {took} ms (pid {', '.join(map(str, pids))})"
            if pids
            else "cancelled: no runner was running"
        )
        await self._w.set_status(name, "Failed", message, pid=0)
        task_name = ((obj.get("spec") or {}).get("ownerRef") or {}).get("name")
        if task_name:
            with contextlib.suppress(StoreError):
                await self.store.patch(
                    "agenttasks",
                    self.ns,
                    task_name,
                    {"status": {"phase": "Failed", "message": f"agent {name} {message}"}},
                    subresource="status",
                )
        self.emit("AGENT_STOPPED", name, pids=pids, stopped_ms=took)

    # -- turns -------------------------------------------------------------------------------

    def _sessions_of(self, obj: dict[str, Any]) -> list[LinkedSession]:
        name = obj["metadata"]["name"]
        if name not in self._sessions:
            raw = (obj["metadata"].get("annotations") or {}).get(SESSIONS_ANNOTATION, "[]")
            try:
                recs = json.loads(raw)
            except ValueError:
                recs = []
            self._sessions[name] = [LinkedSession.from_record(r) for r in recs]
        return self._sessions[name]

    def session_ids(self, obj: dict[str, Any]) -> list[str]:
        """Every session the agent has run (main and linked), for checkpoints."""
        return [s.session_id for s in self._sessions_of(obj)]

    def main_session(self, obj: dict[str, Any]) -> str:
        """The session of the agent's own work (its objective), or ''."""
        return next((s.session_id for s in self._sessions_of(obj) if s.name == "main"), "")

    async def _start_main(self, obj: dict[str, Any]) -> None:
        """The agent's first turn: its task's objective, or the resumed checkpoint's.

        Returns once the runner has started (or its turn has ended, with a status that says
        how); raises what kept it from starting otherwise, the turn undone, so the worker
        starts it again after a back-off."""
        name = obj["metadata"]["name"]
        spec = obj.get("spec") or {}
        try:
            cwd, session, resume, prompt = await self._prepare_main(obj)
        except (DomainError, StoreError, OSError) as exc:
            await self._w.set_status(name, "Failed", f"cannot start: {exc}")
            return
        place = TurnPlace(int(spec.get("depth") or 1), (name,))
        turn = self._new_turn(name, place, session, resume, prompt)
        turn.focus = focus_of(prompt)
        started = self._starting[turn.id] = asyncio.get_running_loop().create_future()
        try:
            task_name = (spec.get("ownerRef") or {}).get("name")
            if task_name:
                with contextlib.suppress(StoreError):
                    await self.store.patch(
                        "agenttasks",
                        self.ns,
                        task_name,
                        {"status": {"phase": "Running"}},
                        subresource="status",
                    )
            await self._launch(turn, cwd)
        except BaseException:
            self._undo_start(turn)
            raise
        try:
            await started
        except asyncio.CancelledError:
            raise  # the controller is closing: the turn's task is cancelled with it
        except Exception:
            self._undo_start(turn)
            raise
        # Written once the runner runs: a start that failed leaves the Agent as it was, so
        # no write of ours queues it again before its back-off is over.
        await self._w.save_sessions(name, self._sessions.get(name, []))

    def _undo_start(self, turn: Turn) -> None:
        """A main turn whose runner never started: forget it and its session, as if the start
        had not been tried (the Agent stays Pending for the retry)."""
        self._starting.pop(turn.id, None)
        self.turns.pop(turn.id, None)
        self.active.remove(turn.agent, turn.id)
        sessions = self._sessions.get(turn.agent, [])
        if turn.session in sessions:
            sessions.remove(turn.session)

    def _runner_started(self, turn: Turn) -> None:
        """The start of ``turn`` is over (its runner runs, or the turn ended)."""
        fut = self._starting.pop(turn.id, None)
        if fut is not None and not fut.done():
            fut.set_result(None)

    async def _prepare_main(self, obj: dict[str, Any]) -> tuple[Path, LinkedSession, bool, str]:
        name = obj["metadata"]["name"]
        spec = obj.get("spec") or {}
        sessions = self._sessions_of(obj)
        objective = ""
        task_name = (spec.get("ownerRef") or {}).get("name")
        if task_name:
            with contextlib.suppress(ObjectNotFound):
                task = await self.store.get("agenttasks", self.ns, task_name)
                objective = str((task.get("spec") or {}).get("objective", ""))
        ref = spec.get("resumeFrom")
        if not ref:
            cwd = Path(spec.get("cwd") or self.state_dir / "agents" / name / "work")
            session = LinkedSession("main", str(uuid.uuid4()), "")
            sessions.append(session)
            return cwd, session, False, objective or "start"
        bundle = await asyncio.to_thread(checkpoints.load_bundle, self.state_dir, ref)
        cwd = Path(spec.get("cwd") or self.state_dir / "worktrees" / name)
        await asyncio.to_thread(checkpoints.new_worktree, cwd, bundle.meta)
        await asyncio.to_thread(
            checkpoints.restore_bundle, bundle, work=cwd, claude_dir=self.claude_dir
        )
        if not spec.get("cwd"):
            await self.store.patch("agents", self.ns, name, {"spec": {"cwd": str(cwd)}})
        main = str(bundle.meta.get("mainSession") or "")
        resume = main in bundle.transcripts
        session = LinkedSession("main", main if resume else str(uuid.uuid4()), "", turns=1)
        sessions.append(session)
        prompt = f"Resumed from checkpoint {ref}. Carry on with: {objective or 'your task'}"
        self.emit("REHYDRATED", name, ref=ref, cwd=str(cwd), session=session.session_id)
        return cwd, session, resume, prompt

    def _new_turn(
        self, agent: str, place: TurnPlace, session: LinkedSession, resume: bool, prompt: str
    ) -> Turn:
        turn_id = f"{int(time.time())}-{secrets.token_hex(4)}"
        session.busy = True
        session.turns += 1
        turn = Turn(
            id=turn_id,
            agent=agent,
            place=place,
            session=session,
            resume=resume,
            prompt=prompt,
            job_dir=self.state_dir / "agents" / agent / "turns" / turn_id,
            done=asyncio.get_running_loop().create_future(),
        )
        self.turns[turn_id] = turn
        self.active.add(agent, turn_id, place)
        return turn

    async def message(
        self,
        obj: dict[str, Any],
        *,
        from_agent: str,
        from_session: str,
        place: TurnPlace,
        prompt: str,
        focus: str = "",
    ) -> Turn:
        """Run ``prompt`` on the agent in the session linked to ``from_agent``: an idle one is
        resumed (``--resume``), else a new one is opened (cold start, ``--session-id``)."""
        name = obj["metadata"]["name"]
        if obj["metadata"].get("deletionTimestamp"):
            raise StateConflict(f"agent {name} is being cancelled")
        cwd = Path((obj.get("spec") or {}).get("cwd") or self.state_dir / "agents" / name / "work")
        async with self._locks[name]:
            sessions = self._sessions_of(obj)
            session = pick_session(sessions, from_agent)
            if session is None:
                session = LinkedSession(
                    new_session_name(sessions, from_agent),
                    str(uuid.uuid4()),
                    from_agent,
                    from_session,
                )
                sessions.append(session)
            # A first turn stopped before the runner wrote its transcript (the asker went
            # away, the daemon was killed) left nothing to resume: start the session afresh.
            resume = session.turns > 0 and self._transcript(cwd, session.session_id).exists()
            turn = self._new_turn(name, place, session, resume, prompt)
            turn.focus = focus_of(focus or prompt)
            await self._w.save_sessions(name, self._sessions.get(name, []))
        await self._launch(turn, cwd)
        return turn

    def _transcript(self, cwd: Path, session_id: str) -> Path:
        """Where ``claude`` keeps the transcript of a session run in ``cwd``."""
        return self.claude_dir / "projects" / project_dir_name(str(cwd)) / f"{session_id}.jsonl"

    def abandon(self, turn: Turn, why: str) -> None:
        """Stop ``turn``'s runner because nobody waits for its answer any more (its asker
        cancelled the ask or went away), then say so on the Agent (in a task of the
        controller: the asker's own call is being cancelled)."""
        task = turn.task
        if self._closing or task is None or task.done():
            return
        task.cancel(why)
        self._spawn(self._after_abandon(turn, task, why), f"abandon-{turn.id}")

    async def _after_abandon(self, turn: Turn, task: asyncio.Task[None], why: str) -> None:
        await asyncio.wait([task])
        if not turn.done.done():  # cancelled before its runner started
            self._turn_finished(turn, None, None, cancelled=True)
        result = turn.done.result()
        if result["message"] == "cancelled":  # not a turn that ended just before the cancel
            log.info("stopped turn %s of %s: %s", turn.id, turn.agent, why)
            await self._after_turn(turn, {**result, "message": f"cancelled: {why}"})

    async def _launch(self, turn: Turn, cwd: Path) -> None:
        own = self.state_dir / "agents" / turn.agent / "work"
        if cwd == own and not (cwd / ".git").exists():  # never git-init a package dir
            await asyncio.to_thread(checkpoints.init_workdir, cwd, None, turn.agent)
        turn.task = self._spawn(self._run_turn(turn, cwd), f"turn-{turn.id}")
        if turn.task is None:
            self._turn_finished(turn, None, None, cancelled=True)
            raise Unavailable("the daemon is stopping")

    def _on_runner_start(self, turn: Turn) -> None:
        self._runner_started(turn)
        self._spawn(self._record_start(turn), f"record-{turn.id}")

    async def _record_start(self, turn: Turn) -> None:
        assert turn.key is not None
        async with self._locks[f"status:{turn.agent}"]:
            await self._w.sync_runners(turn.agent, self.turns.values())
            if turn.id in self.turns:
                await self._w.set_status(
                    turn.agent,
                    "Running",
                    f"turn {turn.id} in session {turn.session.name}",
                    pid=turn.key[0],
                    started=True,
                    focus=turn.focus,
                )

    async def _plan(self, turn: Turn) -> LaunchPlan:
        """The launch from the agent's AgentProfile as stored now (a one-prompt launch that
        continues its linked session). Raises ProfileError."""
        obj = await self._w.get(turn.agent)
        name = ((obj or {}).get("spec") or {}).get("profile") or DEFAULT_PROFILE
        profile = await self.launcher.profiles.get(name)
        sid = turn.session.session_id
        turn.job_dir.mkdir(parents=True, exist_ok=True)
        return plan_launch(
            profile=profile,
            agent=turn.agent,
            backends=self.launcher.backends,
            base_env=self._base_env,
            job_dir=turn.job_dir,
            default_agent_coord=shim_server(self.launcher.shim, self._runtime_dir),
            prompt=turn.prompt,
            session_args=("--resume", sid) if turn.resume else ("--session-id", sid),
        )

    async def _run_turn(self, turn: Turn, cwd: Path) -> None:
        spec = (
            with_session(self.spec, resume=turn.session.session_id)
            if turn.resume
            else with_session(self.spec, session_id=turn.session.session_id)
        )
        try:
            result = await self._run_runner(turn, cwd, spec)
        except asyncio.CancelledError:
            self._turn_finished(turn, None, None, cancelled=True)
            raise
        except Exception as exc:
            starting = self._starting.pop(turn.id, None)
            if starting is not None and not starting.done() and turn.key is None:
                # A main turn whose runner never started, for a reason nobody foresaw: the
                # start raises it in its worker, which logs it and starts again later.
                starting.set_exception(exc)
                return
            log.exception("turn %s of %s failed", turn.id, turn.agent)
            result = self._turn_finished(turn, None, None, error=f"the runner failed: {exc}")
        finally:
            self._runner_started(turn)
        await self._after_turn(turn, result)

    async def _run_runner(self, turn: Turn, cwd: Path, spec: RunnerSpec) -> dict[str, Any]:
        """Run the turn's runner to its end; how it ended (see :meth:`_turn_finished`)."""
        try:
            plan = await self._plan(turn)
        except ProfileError as exc:  # a start that cannot happen fails with the reason
            return self._turn_finished(turn, None, None, error=str(exc))
        try:
            outcome = await run_local(
                spec=spec,
                sandbox=self.sandbox,
                prompt=turn.prompt,
                package=cwd,
                job_dir=turn.job_dir,
                runtime_dir=self._runtime_dir,
                claude_dir=self.claude_dir,
                base_env=self._base_env,
                runners=RegisteringRunners(self._runners, turn, self._on_runner_start),
                runner_info=RunnerInfo(turn.agent, turn.place.depth, turn.place.chain),
                plan=plan,
            )
        except OSError as exc:
            return self._turn_finished(turn, None, None, error=f"cannot start the runner: {exc}")
        error = "the runner timed out and was killed" if outcome.timed_out else ""
        return self._turn_finished(turn, outcome.parsed, outcome.exit_code, error=error)

    def _turn_finished(
        self,
        turn: Turn,
        parsed: dict[str, Any] | None,
        exit_code: int | None,
        *,
        cancelled: bool = False,
        error: str = "",
    ) -> dict[str, Any]:
        """Forget the turn and say how it ended; a cancelled turn's waiters learn it now."""
        self.turns.pop(turn.id, None)
        self.active.remove(turn.agent, turn.id)
        turn.session.busy = False
        if turn.key is not None:
            self._runners.forget(turn.key)
        phase, message = phase_after(parsed, exit_code)
        if cancelled:
            phase, message = "Failed", "cancelled"
        elif error:
            phase, message = "Failed", error
        result = {
            "phase": phase,
            "message": message,
            "answer": (parsed or {}).get("result"),
            "is_error": (parsed or {}).get("is_error", True),
            "session_id": (parsed or {}).get("session_id") or turn.session.session_id,
            "duration_ms": round((time.monotonic() - turn.started) * 1000),
            "exit_code": exit_code,
            # What the turn cost, where Claude Code says (docs/budgets.md "Spend").
            "cost_usd": (parsed or {}).get("total_cost_usd"),
        }
        if cancelled and not turn.done.done():
            turn.done.set_result(result)
        return result

    async def _after_turn(self, turn: Turn, result: dict[str, Any]) -> None:
        """Write what the finished turn means for the Agent (and its task, for a main turn),
        then hand the result to whoever waits on it, so they read a settled status."""
        phase, message = result["phase"], result["message"]
        try:
            async with self._locks[f"status:{turn.agent}"]:
                with contextlib.suppress(StoreError):
                    await self._w.sync_runners(turn.agent, self.turns.values())
                    await self._w.save_sessions(turn.agent, self._sessions.get(turn.agent, []))
                    if not any(t.agent == turn.agent for t in self.turns.values()):
                        await self._w.set_status(turn.agent, phase, message, pid=0)
            if turn.session.name == "main":
                obj = await self._w.get(turn.agent)
                task_name = ((obj or {}).get("spec", {}).get("ownerRef") or {}).get("name")
                if task_name:
                    status = {"phase": phase, "message": message}
                    if isinstance(result.get("answer"), str):
                        status["result"] = result["answer"][:4000]
                    with contextlib.suppress(StoreError):
                        await self.store.patch(
                            "agenttasks",
                            self.ns,
                            task_name,
                            {"status": status},
                            subresource="status",
                        )
            self.emit(
                "TURN_ENDED",
                turn.agent,
                turn=turn.id,
                session=turn.session.name,
                phase=phase,
                cost_usd=result.get("cost_usd"),
            )
        finally:
            if not turn.done.done():
                turn.done.set_result(result)
