"""The agent directory backed by Agent objects (the store side of ``kernel.directory``).

First contact from a session creates its Agent: named by
:func:`agentcoord.kernel.sessionnames.session_name` (Claude Code's own name for the session,
``<dir>-<2 hex>`` from its registry, when known and free; else ``<dir>-<n>``), phase
Running, labels for the session id and the readable part of the name, so ``kubectl get ag -l``
finds sessions.
A daemon restart finds the same Agent again by the session-id label, or, for a session
without an id (no ``CLAUDE_CODE_SESSION_ID``, no ``~/.claude/sessions/<pid>.json``), by the
label of its ``claude`` process (pid and start time): without it such a session came back
under a new name and lost its claims and inbox.

A session's Agent follows its ``claude`` process (docs/localagents.md "Session lifetime"): it ends
(phase ``Ended``, ``status.endedAt``, ``status.reason``) when the process exits or Claude Code
runs the SessionEnd hook, and contact from a new process of the same session id
(``claude --resume``) brings the same Agent back to Running. An Agent that never took part
(no tool call, no hook but SessionEnd: a ``claude mcp list`` health check) is
removed when its session ends instead of being kept (docs/localagents.md "Session lifetime").
:class:`agentcoord.localagents.session_end.SessionWatch` does the waiting and the retention.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from agentcoord.kernel.directory import AgentDirectory, EndOutcome, SessionKey
from agentcoord.kernel.sessionnames import session_name, session_stem
from agentcoord.stores.objects.backend import ObjectBackend
from agentcoord.stores.objects.statuserrors import (
    AlreadyExists,
    Conflict,
    ObjectNotFound,
    StoreError,
)
from agentcoord.stores.objects.writerules import rfc3339

__all__ = [
    "DIR_LABEL",
    "ENDED",
    "HOST_LABEL",
    "PROC_LABEL",
    "SESSION_LABEL",
    "USED_ANNOTATION",
    "StoreDirectory",
    "parse_proc",
]

log = logging.getLogger(__name__)

SESSION_LABEL = "fastverk.savvifi.com/session-id"
DIR_LABEL = "fastverk.savvifi.com/dir"
PROC_LABEL = "fastverk.savvifi.com/session-proc"  # <pid>-<start time in ms> of the claude
HOST_LABEL = "fastverk.savvifi.com/session-host"  # set when hosts share one store
USED_ANNOTATION = "fastverk.savvifi.com/session-used"  # "true" once the session took part
ENDED = "Ended"  # the terminal phase of a session agent


def _proc(key: SessionKey) -> str:
    return f"{key[0]}-{round(key[1] * 1000)}"


def parse_proc(label: str | None) -> SessionKey | None:
    """The ``(pid, create_time)`` a session-proc label names, or None when it is not one."""
    pid, _, ms = (label or "").partition("-")
    if not (pid.isdigit() and ms.isdigit()):
        return None
    return int(pid), int(ms) / 1000


def _label_safe(value: str) -> str:
    out = "".join(c if c.isalnum() or c in "-_." else "-" for c in value)[:63]
    return out.strip("-_.")


def _is_session(obj: dict[str, Any]) -> bool:
    return (obj.get("spec") or {}).get("agentType") == "session"


class StoreDirectory:
    """:class:`agentcoord.kernel.directory.AgentDirectory` on Agent objects."""

    def __init__(
        self, store: ObjectBackend, namespace: str = "default", host: str | None = None
    ) -> None:
        self._store = store
        self._ns = namespace
        self._host = host  # with a shared NATS, names are <dir>-<n>--<host> (unique across hosts)
        self._by_key: dict[SessionKey, str] = {}
        self._used: set[str] = set()  # names known to carry USED_ANNOTATION
        self._lock = asyncio.Lock()

    @property
    def selector(self) -> str:
        """The label selector of this daemon's session agents (its host's, on a shared store)."""
        if self._host:
            return f"{PROC_LABEL},{HOST_LABEL}={_label_safe(self._host)}"
        return PROC_LABEL

    async def session_agent(
        self,
        key: SessionKey,
        session_id: str | None,
        cwd: str | None,
        name_base: str | None,
        native: str | None = None,
    ) -> str:
        async with self._lock:
            obj: dict[str, Any] | None = None
            name = self._by_key.get(key)
            if name is not None:
                obj = await self._get(name)
            if obj is None:
                selectors = [f"{PROC_LABEL}={_proc(key)}"]
                if session_id:
                    selectors.insert(0, f"{SESSION_LABEL}={_label_safe(session_id)}")
                for selector in selectors:
                    found, _ = await self._store.list("agents", self._ns, selector)
                    if found:
                        obj = found[0]
                        break
            if obj is None:
                name = await self._create(key, session_id, cwd, name_base, native)
            else:
                name = str(obj["metadata"]["name"])
                await self._bring_back(obj, key)
            self._by_key[key] = name
            return name

    async def _get(self, name: str) -> dict[str, Any] | None:
        try:
            return await self._store.get("agents", self._ns, name)
        except ObjectNotFound:
            return None

    async def _bring_back(self, obj: dict[str, Any], key: SessionKey) -> None:
        """A live process of this session calls: its Agent is Running, on that process.

        The label moves first, so the watch never sees Running on a process that is gone.
        """
        labels = obj["metadata"].get("labels") or {}
        status = obj.get("status") or {}
        name = obj["metadata"]["name"]
        wanted = {PROC_LABEL: _proc(key)}
        if self._host:  # an Agent from before the host label: this host watches it now
            wanted[HOST_LABEL] = _label_safe(self._host)
        if any(labels.get(k) != v for k, v in wanted.items()):
            await self._store.patch("agents", self._ns, name, {"metadata": {"labels": wanted}})
        if status.get("phase") != "Running" or status.get("pid") != key[0]:
            running = {
                "phase": "Running",
                "pid": key[0],
                "startedAt": rfc3339(time.time()),
                "endedAt": None,
                "reason": None,
            }
            await self._store.patch(
                "agents", self._ns, name, {"status": running}, subresource="status"
            )

    def _body(
        self,
        name: str,
        key: SessionKey,
        session_id: str | None,
        cwd: str | None,
        name_base: str | None,
    ) -> dict[str, Any]:
        labels = {DIR_LABEL: _label_safe(session_stem(name_base)), PROC_LABEL: _proc(key)}
        if self._host:
            labels[HOST_LABEL] = _label_safe(self._host)
        spec: dict[str, Any] = {"agentType": "session"}
        if session_id:
            labels[SESSION_LABEL] = _label_safe(session_id)
            spec["sessionId"] = session_id
        if cwd:
            spec["cwd"] = cwd
        return {
            # "false" until the session takes part: only an explicit "false" is removed at its
            # end, so agents a 0.1.0 daemon made (no mark at all) are kept as Ended.
            "metadata": {"name": name, "labels": labels, "annotations": {USED_ANNOTATION: "false"}},
            "spec": spec,
            "status": {"phase": "Running", "pid": key[0], "startedAt": rfc3339(time.time())},
        }

    async def _create(
        self,
        key: SessionKey,
        session_id: str | None,
        cwd: str | None,
        name_base: str | None,
        native: str | None,
    ) -> str:
        objs, _ = await self._store.list("agents", self._ns)
        taken = {o["metadata"]["name"] for o in objs}
        while True:
            name = session_name(name_base, taken, self._host, native)
            body = self._body(name, key, session_id, cwd, name_base)
            try:
                await self._store.create("agents", self._ns, body, keep_status=True)
                return name
            except AlreadyExists:  # created since the list: the next free name
                taken.add(name)

    async def mark_used(self, name: str) -> None:
        """Record (once) that the session ``name`` took part, so its end keeps it as Ended."""
        if name in self._used:
            return
        async with self._lock:
            obj = await self._get(name)
            if obj is None or not _is_session(obj):
                return
            if (obj["metadata"].get("annotations") or {}).get(USED_ANNOTATION) != "true":
                patch = {"metadata": {"annotations": {USED_ANNOTATION: "true"}}}
                try:
                    await self._store.patch("agents", self._ns, name, patch)
                except StoreError:  # the tool call goes on; the next one records it
                    log.warning("could not mark session agent %s as used", name, exc_info=True)
                    return
            self._used.add(name)

    async def end_session(
        self, name: str, reason: str, key: SessionKey | None = None
    ) -> EndOutcome | None:
        """End the Running session agent ``name`` (only while it is on process ``key``, when
        given): Ended with ``endedAt`` and ``reason``, or removed if it never took part.
        None when there was nothing to end (already ended, resumed elsewhere, gone)."""
        async with self._lock:
            for _ in range(3):  # a concurrent writer (kubectl) only costs a re-read
                obj = await self._get(name)
                if obj is None or not _is_session(obj):
                    return None
                meta = obj["metadata"]
                if (obj.get("status") or {}).get("phase") != "Running":
                    return None
                if key is not None and (meta.get("labels") or {}).get(PROC_LABEL) != _proc(key):
                    return None  # resumed by a newer process: that one decides
                try:
                    if (meta.get("annotations") or {}).get(USED_ANNOTATION) == "false":
                        await self._store.delete("agents", self._ns, name, uid=meta["uid"])
                        self._forget(name)
                        return "removed"
                    ended = {
                        "phase": ENDED,
                        "endedAt": rfc3339(time.time()),
                        "reason": reason,
                    }
                    patch = {"metadata": {"resourceVersion": meta["resourceVersion"]}}
                    await self._store.patch(
                        "agents", self._ns, name, {**patch, "status": ended}, subresource="status"
                    )
                    return "ended"
                except Conflict:
                    continue
                except ObjectNotFound:
                    return None
            return None

    async def remove_ended(self, name: str) -> bool:
        """Delete the session agent ``name`` if it is still Ended (its retention is over)."""
        async with self._lock:
            obj = await self._get(name)
            if obj is None or not _is_session(obj):
                return False
            if (obj.get("status") or {}).get("phase") != ENDED:
                return False
            try:
                await self._store.delete("agents", self._ns, name, uid=obj["metadata"]["uid"])
            except (ObjectNotFound, Conflict):
                return False
            self._forget(name)
            return True

    def _forget(self, name: str) -> None:
        self._used.discard(name)
        for key in [k for k, n in self._by_key.items() if n == name]:
            del self._by_key[key]


if TYPE_CHECKING:

    def _satisfies_protocol(store: ObjectBackend) -> AgentDirectory:
        return StoreDirectory(store)
