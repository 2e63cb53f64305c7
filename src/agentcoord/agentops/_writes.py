"""The controller's writes to Agent objects: status, and the annotations that carry its
runners (for adoption after a restart) and linked sessions (for ``--resume``)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable
from typing import Any

from agentcoord.agentops.callrules import LinkedSession
from agentcoord.agentops.turns import Turn
from agentcoord.stores.objects import ObjectBackend, ObjectNotFound
from agentcoord.stores.objects.writerules import rfc3339

__all__ = [
    "FINALIZER",
    "MANAGED_LABEL",
    "RUNNERS_ANNOTATION",
    "SESSIONS_ANNOTATION",
    "AgentWrites",
    "runner_records",
]

MANAGED_LABEL = "fastverk.savvifi.com/managed-by"
FINALIZER = "fastverk.savvifi.com/runner"
RUNNERS_ANNOTATION = "fastverk.savvifi.com/runners"
SESSIONS_ANNOTATION = "fastverk.savvifi.com/linked-sessions"


class AgentWrites:
    """Patches of one namespace's Agents; an Agent that is gone is not an error here."""

    def __init__(self, store: ObjectBackend, namespace: str) -> None:
        self._store = store
        self._ns = namespace

    async def get(self, name: str) -> dict[str, Any] | None:
        try:
            return await self._store.get("agents", self._ns, name)
        except ObjectNotFound:
            return None

    async def _annotate(self, name: str, key: str, value: Any) -> None:
        with contextlib.suppress(ObjectNotFound):
            await self._store.patch(
                "agents", self._ns, name, {"metadata": {"annotations": {key: json.dumps(value)}}}
            )

    async def sync_runners(self, name: str, turns: Iterable[Turn]) -> None:
        """Record the agent's live runners on it, so a restarted daemon can find them."""
        recs = [
            {
                "turn": t.id,
                "pid": t.key[0],
                "createTime": t.key[1],
                "jobDir": str(t.job_dir),
                "depth": t.place.depth,
                "chain": list(t.place.chain),
                "sessionId": t.session.session_id,
            }
            for t in turns
            if t.agent == name and t.key is not None
        ]
        await self._annotate(name, RUNNERS_ANNOTATION, recs)

    async def save_sessions(self, name: str, sessions: Iterable[LinkedSession]) -> None:
        """Keep the linked sessions (name, id, who opened it, turns) on the Agent."""
        await self._annotate(name, SESSIONS_ANNOTATION, [s.record() for s in sessions])

    async def set_status(
        self,
        name: str,
        phase: str,
        message: str,
        *,
        pid: int | None = None,
        started: bool = False,
        focus: str | None = None,
    ) -> None:
        status: dict[str, Any] = {"phase": phase, "message": message}
        if focus is not None:
            status["focus"] = focus
        if pid is not None:
            status["pid"] = pid
        if started:
            status["startedAt"] = rfc3339(time.time())
        with contextlib.suppress(ObjectNotFound):
            await self._store.patch(
                "agents", self._ns, name, {"status": status}, subresource="status"
            )


def runner_records(obj: dict[str, Any]) -> list[dict[str, Any]]:
    raw = (obj["metadata"].get("annotations") or {}).get(RUNNERS_ANNOTATION)
    if not raw:
        return []
    try:
        recs = json.loads(raw)
    except ValueError:
        return []
    return [r for r in recs if isinstance(r, dict) and "pid" in r and "jobDir" in r]
