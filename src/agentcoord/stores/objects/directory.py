"""The agent directory backed by Agent objects (the store side of ``daemon.directory``).

First contact from a Claude session creates its Agent: name ``<dir>-<n>``, phase Running,
labels for the session id and the cwd-derived name, so ``kubectl get ag -l`` finds sessions.
A daemon restart finds the same Agent again by the session-id label, or, for a session
without an id (no ``CLAUDE_CODE_SESSION_ID``, no ``~/.claude/sessions/<pid>.json``), by the
label of its ``claude`` process (pid and start time): without it such a session came back
under a new name and lost its claims and inbox (issue 9's fault suite).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from agentcoord.daemon.ancestry import session_agent_stem
from agentcoord.daemon.directory import AgentDirectory, SessionKey, host_suffix
from agentcoord.stores.objects.backend import ObjectBackend
from agentcoord.stores.objects.errors import AlreadyExists, ObjectNotFound
from agentcoord.stores.objects.rules import rfc3339

__all__ = ["DIR_LABEL", "PROC_LABEL", "SESSION_LABEL", "StoreDirectory"]

SESSION_LABEL = "fastverk.savvifi.com/session-id"
DIR_LABEL = "fastverk.savvifi.com/dir"
PROC_LABEL = "fastverk.savvifi.com/session-proc"  # <pid>-<start time in ms> of the claude


def _proc(key: SessionKey) -> str:
    return f"{key[0]}-{round(key[1] * 1000)}"


def _label_safe(value: str) -> str:
    out = "".join(c if c.isalnum() or c in "-_." else "-" for c in value)[:63]
    return out.strip("-_.")


class StoreDirectory:
    """:class:`agentcoord.daemon.directory.AgentDirectory` on Agent objects."""

    def __init__(
        self, store: ObjectBackend, namespace: str = "default", host: str | None = None
    ) -> None:
        self._store = store
        self._ns = namespace
        # Issue 11: with a shared NATS, names are <dir>-<n>--<host> (unique across hosts).
        self._suffix = host_suffix(host)
        self._by_key: dict[SessionKey, str] = {}
        self._lock = asyncio.Lock()

    async def session_agent(self, key: SessionKey, session_id: str | None, cwd: str | None) -> str:
        async with self._lock:
            name = self._by_key.get(key)
            if name is not None and await self._exists(name):
                return name
            selectors = [f"{PROC_LABEL}={_proc(key)}"]
            if session_id:
                selectors.insert(0, f"{SESSION_LABEL}={_label_safe(session_id)}")
            for selector in selectors:
                found, _ = await self._store.list("agents", self._ns, selector)
                if found:
                    name = str(found[0]["metadata"]["name"])
                    self._by_key[key] = name
                    return name
            name = await self._create(key, session_id, cwd)
            self._by_key[key] = name
            return name

    async def _exists(self, name: str) -> bool:
        try:
            await self._store.get("agents", self._ns, name)
        except ObjectNotFound:
            return False
        return True

    def _body(
        self, name: str, key: SessionKey, session_id: str | None, cwd: str | None
    ) -> dict[str, Any]:
        stem = session_agent_stem(cwd)
        labels = {DIR_LABEL: _label_safe(stem) or "session", PROC_LABEL: _proc(key)}
        spec: dict[str, Any] = {"agentType": "session"}
        if session_id:
            labels[SESSION_LABEL] = _label_safe(session_id)
            spec["sessionId"] = session_id
        if cwd:
            spec["cwd"] = cwd
        return {
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
            "status": {"phase": "Running", "pid": key[0], "startedAt": rfc3339(time.time())},
        }

    async def _create(self, key: SessionKey, session_id: str | None, cwd: str | None) -> str:
        stem = session_agent_stem(cwd)
        taken, _ = await self._store.list("agents", self._ns)
        names = {o["metadata"]["name"] for o in taken}
        n = 1
        while True:
            while f"{stem}-{n}{self._suffix}" in names:
                n += 1
            name = f"{stem}-{n}{self._suffix}"
            try:
                await self._store.create(
                    "agents", self._ns, self._body(name, key, session_id, cwd), keep_status=True
                )
                return name
            except AlreadyExists:
                names.add(name)

    async def rename_session(self, key: SessionKey, name: str) -> None:
        """Move the session to the Agent ``name`` (created if absent); the old one goes."""
        async with self._lock:
            old_name = self._by_key.get(key)
            if old_name == name:
                return
            old: dict[str, Any] | None = None
            if old_name is not None:
                try:
                    old = await self._store.get("agents", self._ns, old_name)
                except ObjectNotFound:
                    old = None
            if not await self._exists(name):
                spec = dict(old["spec"]) if old else {"agentType": "session"}
                body: dict[str, Any] = {
                    "metadata": {"name": name, "labels": dict(old["metadata"].get("labels", {}))}
                    if old
                    else {"name": name},
                    "spec": spec,
                    "status": dict(old.get("status", {})) if old else {"phase": "Running"},
                }
                await self._store.create("agents", self._ns, body, keep_status=True)
            elif old is not None:
                labels = old["metadata"].get("labels") or {}
                await self._store.patch("agents", self._ns, name, {"metadata": {"labels": labels}})
            if old is not None:
                with contextlib.suppress(ObjectNotFound):
                    await self._store.delete("agents", self._ns, old["metadata"]["name"])
            self._by_key[key] = name


if TYPE_CHECKING:

    def _satisfies_protocol(store: ObjectBackend) -> AgentDirectory:
        return StoreDirectory(store)
