"""spawn_subagent, cancel, checkpoint, resume, merge (docs/ask-and-operator.md "The operator",
"checkpoint, resume, merge"), with no silent edges:

- re-spawning an existing name with a different profile is an error, not a silent no-op;
- cancel waits for the controller to stop the runner and reports it;
- checkpoint creates ``status.checkpoints`` when absent (append-only after that);
- merge appends to ``spec.lineage.mergedFrom`` instead of overwriting it;
- cancel is refused on what the caller did not start (docs/security.md "Who may cancel what").
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from pathlib import Path
from typing import Any

from agentcoord.agentops import checkpoints
from agentcoord.agentops.controller import FINALIZER, MANAGED_LABEL
from agentcoord.agentops.ops import AgentOps
from agentcoord.errors import InvalidArguments, NotAllowed, NotFound, StateConflict
from agentcoord.kernel import wire
from agentcoord.kernel.caller import Caller, decision_fields
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.stores.objects import GROUP_VERSION, AlreadyExists, Conflict, ObjectNotFound
from agentcoord.stores.objects.writerules import rfc3339

__all__ = ["cancel", "checkpoint", "merge", "resume", "spawn"]

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?$")
_CANCEL_WAIT_S = 5.0
_PATH_MAX = 4096  # bytes of a path, NUL included (Linux PATH_MAX, limits.h)
_LINEAGE_MAX = 64  # parents followed when deciding who started an agent (cycles end it too)


def _checked_name(name: str) -> str:
    if not _NAME.match(name):
        raise InvalidArguments(
            f"{name!r} is not a valid agent name (lowercase letters, digits and '-', <= 52)"
        )
    return name


def _ref(obj: dict[str, Any]) -> dict[str, Any]:
    kind = "AgentTask" if "objective" in (obj.get("spec") or {}) else "Agent"
    return {
        "apiVersion": GROUP_VERSION,
        "kind": kind,
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
    }


async def _get(ops: AgentOps, plural: str, name: str) -> dict[str, Any] | None:
    try:
        return await ops.store.get(plural, ops.ns, name)
    except ObjectNotFound:
        return None


def _agent_body(
    name: str, profile: str, task: dict[str, Any] | None, spec: dict[str, Any]
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "labels": {MANAGED_LABEL: "agentcoord"},
        "finalizers": [FINALIZER],
    }
    full = {"profile": profile, "agentType": "spawned", **spec}
    if task is not None:
        ref = _ref(task)
        full["ownerRef"] = ref
        meta["ownerReferences"] = [ref]
    return {"metadata": meta, "spec": full, "status": {"phase": "Pending"}}


async def spawn(
    ops: AgentOps, caller: Caller, name: str, profile: str, prompt: str, repo: str
) -> dict[str, Any]:
    """Task first (``<name>-task``), then the Agent owned by it; the controller runs it."""
    name = _checked_name(name)
    existing = await _get(ops, "agents", name)
    if existing is not None:
        old = (existing.get("spec") or {}).get("profile", "")
        if old != profile:
            raise StateConflict(
                f"agent {name} already exists with profile {old!r}; it is not re-spawned as "
                f"{profile!r} (cancel it first, or pick another name)"
            )
        return {"name": name, "profile": profile, "created": False}
    # Past a ceiling: refused, saying which (docs/budgets.md "Every start"); the slot counts
    # the start until the Agent object below does.
    slot = None if ops.budgets is None else await ops.budgets.admit(name, f"agent {name}")
    try:
        return await _spawn(ops, caller, name, profile, prompt, repo)
    finally:
        if slot is not None:
            slot.release()


async def _spawn(
    ops: AgentOps, caller: Caller, name: str, profile: str, prompt: str, repo: str
) -> dict[str, Any]:
    place = ops.place(caller, name)
    task: dict[str, Any] | None = None
    if prompt:
        body = {
            "metadata": {"name": f"{name}-task"},
            "spec": {
                "objective": prompt,
                "assignedAgentRef": {"apiVersion": GROUP_VERSION, "kind": "Agent", "name": name},
                "lineage": {"spawnedBy": caller.agent},
            },
        }
        try:
            task = await ops.store.create("agenttasks", ops.ns, body)
        except AlreadyExists:  # a retry after a half-done spawn: keep the pair coherent
            task = await ops.store.get("agenttasks", ops.ns, f"{name}-task")
            if task["spec"].get("objective") != prompt:
                raise StateConflict(
                    f"AgentTask {name}-task exists with another objective"
                ) from None
    work = ops.ctl.state_dir / "agents" / name / "work"
    source = await asyncio.to_thread(_repo_path, repo) if repo else None
    await asyncio.to_thread(checkpoints.init_workdir, work, source, name)
    spec = {"lineage": {"parent": caller.agent}, "depth": place.depth, "cwd": str(work)}
    try:
        await ops.store.create(
            "agents", ops.ns, _agent_body(name, profile, task, spec), keep_status=True
        )
    except AlreadyExists:
        raise StateConflict(f"agent {name} was created by someone else meanwhile") from None
    ops.emit("AGENT_SPAWNED", name, by=caller.agent, profile=profile, depth=place.depth)
    out: dict[str, Any] = {"name": name, "profile": profile, "created": True, "cwd": str(work)}
    if task is not None:
        out["task"] = task["metadata"]["name"]
    return out


def _repo_path(repo: str) -> Path:
    """The git repository ``repo`` names, or a one-line error naming what is wrong with it."""
    shown = repo if len(repo) <= 200 else repo[:200] + "..."
    if len(repo.encode("utf-8", "surrogatepass")) >= _PATH_MAX or "\0" in repo:
        raise InvalidArguments(
            f"`repo` is not a usable path: {len(repo)} characters (a path has fewer than "
            f"{_PATH_MAX} bytes and no NUL)"
        )
    try:
        source = Path(repo).expanduser().resolve()
        if not source.is_dir():
            raise InvalidArguments(f"`repo` {shown!r} does not exist or is not a directory")
        is_repo = (source / ".git").exists()
    except (OSError, RuntimeError) as exc:  # a component too long, a symlink loop, ...
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InvalidArguments(f"`repo` {shown!r} is not a usable path: {why}") from None
    if not is_repo:
        raise InvalidArguments(f"`repo` {shown!r} is not a git repository")
    return source


def _how(caller: Caller) -> dict[str, Any]:
    """A human's cancel is a human decision: the audit says how it came
    (docs/security.md "Every human decision is audited")."""
    return decision_fields(caller) if caller.kind == "human" else {}


async def cancel(ops: AgentOps, caller: Caller, name: str) -> dict[str, Any]:
    """Delete the Agent (else the task); wait for the controller to stop its runner. Only
    the human, or the agent that started it (directly or through agents it started), may."""
    agent = await _get(ops, "agents", name)
    if agent is None:
        task = await _get(ops, "agenttasks", name)
        if task is None:
            raise NotFound(f"no Agent or AgentTask named {name}")
        await _may_cancel(ops, caller, task, "AgentTask")
        try:
            await ops.store.delete("agenttasks", ops.ns, name)
        except ObjectNotFound:
            raise NotFound(f"no Agent or AgentTask named {name}") from None
        ops.emit("AGENT_CANCELLED", name, by=caller.agent, kind="AgentTask", **_how(caller))
        return {"cancelled": True, "name": name, "kind": "AgentTask"}
    await _may_cancel(ops, caller, agent, "Agent")
    await _may_act(ops, caller, agent)
    began = time.monotonic()
    with contextlib.suppress(ObjectNotFound):
        await ops.store.delete("agents", ops.ns, name)
    await _control(ops, caller.agent, name, "cancel")
    stopped = await ops.ctl.wait_gone(name, _CANCEL_WAIT_S)
    ops.emit("AGENT_CANCELLED", name, by=caller.agent, kind="Agent", **_how(caller))
    out: dict[str, Any] = {
        "cancelled": True,
        "name": name,
        "kind": "Agent",
        "stopped": stopped,
        "took_ms": round((time.monotonic() - began) * 1000),
    }
    task_name = ((agent.get("spec") or {}).get("ownerRef") or {}).get("name")
    task = await _get(ops, "agenttasks", task_name) if task_name else None
    if task is not None:
        out["task"] = task_name
        out["status"] = task.get("status") or {}
    return out


async def _started_by(ops: AgentOps, agent: dict[str, Any] | None, who: str) -> bool:
    """Whether ``who`` started ``agent``: its ``spec.lineage.parent``, or the parent's, ...
    (what spawn_subagent and resume record, never what the caller says)."""
    seen: set[str] = set()
    while agent is not None and len(seen) < _LINEAGE_MAX:
        parent = ((agent.get("spec") or {}).get("lineage") or {}).get("parent")
        if not isinstance(parent, str) or not parent or parent in seen:
            return False
        if parent == who:
            return True
        seen.add(parent)
        agent = await _get(ops, "agents", parent)
    return False


async def _may_cancel(ops: AgentOps, caller: Caller, target: dict[str, Any], kind: str) -> None:
    """Cancel takes an agent or a task away from whoever runs it, so only the human and
    whoever started it may (docs/security.md "Who may cancel what"); a refusal is audited."""
    if caller.kind == "human":
        return
    spec = target.get("spec") or {}
    if kind == "AgentTask":
        if (spec.get("lineage") or {}).get("spawnedBy") == caller.agent:
            return
        assignee = (spec.get("assignedAgentRef") or {}).get("name")
        assigned = await _get(ops, "agents", assignee) if isinstance(assignee, str) else None
        started = await _started_by(ops, assigned, caller.agent)
    else:
        started = await _started_by(ops, target, caller.agent)
    if started:
        return
    name = target["metadata"]["name"]
    ops.emit("CANCEL_REFUSED", name, by=caller.agent, kind=kind, callerKind=caller.kind)
    raise NotAllowed(
        f"refused to cancel {kind} {name}: you ({caller.agent}) did not start it; an agent "
        "cancels only agents and tasks it spawned (and theirs), the human cancels any"
    )


async def _may_act(ops: AgentOps, caller: Caller, target: dict[str, Any]) -> None:
    """Acting on another agent takes what messaging it takes
    (docs/ask-and-operator.md "send_message and ask")."""
    if target["metadata"]["name"] != caller.agent:
        await ops.check_rules(caller, target)


async def _control(ops: AgentOps, me: str, name: str, what: str) -> None:
    """Best effort: a CONTROL message so a live runner can drain."""
    m = ops.messaging
    if m is None:
        return
    with contextlib.suppress(Exception):
        msg = wire.make_message(sender=me, kind=pb.MESSAGE_CONTROL, body=what.encode(), to=name)
        await m.deliver(name, msg)


async def checkpoint(
    ops: AgentOps, caller: Caller, name: str, task_name: str, summary: str
) -> dict[str, Any]:
    """Bundle the agent's WIP and transcripts; append the ref to its task's checkpoints."""
    agent = await _get(ops, "agents", name)
    if agent is None:
        raise NotFound(f"no agent {name}")
    await _may_act(ops, caller, agent)
    spec = agent.get("spec") or {}
    task_name = task_name or (spec.get("ownerRef") or {}).get("name", "")
    if not task_name:
        raise InvalidArguments(f"agent {name} works for no AgentTask; pass `task`")
    if await _get(ops, "agenttasks", task_name) is None:
        raise NotFound(f"no AgentTask {task_name}")
    work = Path(spec.get("cwd") or "")
    if not spec.get("cwd") or not (work / ".git").exists():
        raise StateConflict(f"agent {name} has no git working directory to checkpoint")
    sessions = ops.ctl.session_ids(agent)
    main = ops.ctl.main_session(agent)
    repo = await asyncio.to_thread(checkpoints.repo_of, work)
    meta = {
        "agent": name,
        "task": task_name,
        "profile": spec.get("profile", ""),
        "repo": str(repo),
        "cwd": str(work),
        "mainSession": main,
        "summary": summary,
        "by": caller.agent,
    }
    data = await asyncio.to_thread(
        checkpoints.make_bundle,
        work=work,
        claude_dir=ops.ctl.claude_dir,
        session_ids=sessions,
        meta=meta,
    )
    ref = await asyncio.to_thread(checkpoints.store_blob, ops.ctl.state_dir, data)
    entry = {
        "ref": ref,
        "createdAt": rfc3339(time.time()),
        "summary": summary,
        "agent": name,
        "size": len(data),
    }
    count = await _append_checkpoint(ops, task_name, entry)
    # Retention after each new bundle (docs/reliability.md "State retention"); never raises.
    await checkpoints.prune(ops.store, ops.ns, ops.ctl.state_dir, ops.bundle_retention)
    ops.emit("CHECKPOINTED", name, task=task_name, ref=ref, size=len(data), by=caller.agent)
    return {"task": task_name, "ref": ref, "size": len(data), "checkpoints": count}


async def _append_checkpoint(ops: AgentOps, task_name: str, entry: dict[str, Any]) -> int:
    """Append under the task's resourceVersion (409 -> read again): never a lost entry."""
    while True:
        task = await ops.store.get("agenttasks", ops.ns, task_name)
        status = task.setdefault("status", {})
        status.setdefault("checkpoints", []).append(entry)
        try:
            await ops.store.update("agenttasks", ops.ns, task, subresource="status")
            return len(status["checkpoints"])
        except Conflict:
            continue


async def resume(ops: AgentOps, caller: Caller, task_name: str, name: str) -> dict[str, Any]:
    """A fresh Agent with ``spec.resumeFrom`` = the task's last-appended checkpoint."""
    task = await _get(ops, "agenttasks", task_name)
    if task is None:
        raise NotFound(f"no AgentTask {task_name}")
    cps = (task.get("status") or {}).get("checkpoints") or []
    if not cps:
        raise StateConflict(f"AgentTask {task_name} has no recorded checkpoint to resume from")
    last = cps[-1]
    ref = str(last["ref"])
    bundle = await asyncio.to_thread(checkpoints.load_bundle, ops.ctl.state_dir, ref)
    origin = str(bundle.meta.get("agent", ""))
    if not name:
        n = 1
        while await _get(ops, "agents", f"{origin}-r{n}"[:52]) is not None:
            n += 1
        name = f"{origin}-r{n}"[:52]
    name = _checked_name(name)
    place = ops.place(caller, name)
    spec = {
        "resumeFrom": ref,
        "lineage": {"parent": origin},
        "depth": place.depth,
    }
    body = _agent_body(name, str(bundle.meta.get("profile", "")), task, spec)
    try:
        await ops.store.create("agents", ops.ns, body, keep_status=True)
    except AlreadyExists:
        raise StateConflict(f"agent {name} already exists; pick another name") from None
    with contextlib.suppress(ObjectNotFound):
        await ops.store.patch(
            "agenttasks",
            ops.ns,
            task_name,
            {
                "spec": {
                    "assignedAgentRef": {"apiVersion": GROUP_VERSION, "kind": "Agent", "name": name}
                }
            },
        )
    ops.emit("RESUMED", name, task=task_name, ref=ref, by=caller.agent, origin=origin)
    return {"agent": name, "resumed_from": ref, "task": task_name}


async def merge(ops: AgentOps, caller: Caller, target: str, source: str) -> dict[str, Any]:
    """Append ``source`` to the target's ``spec.lineage.mergedFrom`` (no overwrite)."""
    if target == source:
        raise InvalidArguments("an agent cannot be merged into itself")
    while True:
        obj = await _get(ops, "agents", target)
        if obj is None:
            raise NotFound(f"no agent {target}")
        await _may_act(ops, caller, obj)
        lineage = obj.setdefault("spec", {}).setdefault("lineage", {})
        merged = lineage.setdefault("mergedFrom", [])
        added = source not in merged
        if added:
            merged.append(source)
            try:
                await ops.store.update("agents", ops.ns, obj)
            except Conflict:
                continue
        break
    if added:
        ops.emit("MERGED", target, source=source, by=caller.agent)
    return {"merged": True, "target": target, "source": source, "mergedFrom": merged}
