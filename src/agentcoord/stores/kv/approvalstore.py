"""Standing approvals on the NATS KV bucket ``agent-approvals`` (docs/approvals.md "Where they
are kept").

One key per approval (its id), the value the approval's JSON as the approvals service writes
it; this store neither reads nor checks the fields. A watch keeps every value in memory, so
the PermissionRequest hook decides with no round trip; the daemon's own writes are applied to
the view at once. Entries are durable (file storage) and carry no TTL: an approval outlives a
daemon restart, and its expiry is a field the service checks, so an expired one is still
listed (and removed) by the service, not silently gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from nats.js import api
from nats.js.errors import KeyWrongLastSequenceError

from agentcoord.kernel.tasks import TaskSet
from agentcoord.stores._jsretry import asking_again
from agentcoord.stores.kv import _natskv

__all__ = ["BUCKET", "ApprovalStore"]

log = logging.getLogger(__name__)

BUCKET = "agent-approvals"


class ApprovalStore:
    """Async context manager: the bucket and its watch-fed view (id -> (value, revision))."""

    def __init__(self, js: Any, *, replicas: int = 1) -> None:
        self._js = js
        self._replicas = replicas
        self._kv: Any = None
        self._watcher: Any = None
        self._view: dict[str, tuple[dict[str, Any], int]] = {}
        self._revs: dict[str, int] = {}
        self._synced = asyncio.Event()
        self._tasks = TaskSet("approvals")

    async def __aenter__(self) -> ApprovalStore:
        await _natskv.ensure_bucket(
            self._js,
            api.KeyValueConfig(
                bucket=BUCKET,
                history=1,
                replicas=self._replicas,
                storage=api.StorageType.FILE,
            ),
        )
        self._kv = await self._js.key_value(BUCKET)
        self._watcher = await asking_again(self._js, self._kv.watchall)
        await self._tasks.__aenter__()
        self._tasks.spawn(self._watch(), name="approvals-watch")
        try:
            await self._synced.wait()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._tasks.__aexit__(None, None, None)
        finally:
            if self._watcher is not None:
                with contextlib.suppress(Exception):
                    await self._watcher.stop()

    def all(self) -> list[tuple[dict[str, Any], int]]:
        """Every approval as last seen, with its revision."""
        return list(self._view.values())

    def get(self, key: str) -> tuple[dict[str, Any], int] | None:
        return self._view.get(key)

    async def create(self, key: str, value: dict[str, Any]) -> int:
        """Write a new approval (its key must be new); its revision."""
        rev = int(await self._kv.create(key, _encode(value)))
        self._apply(key, value, rev)
        return rev

    async def update(self, key: str, value: dict[str, Any], last: int) -> int | None:
        """Replace ``key`` if it is still at revision ``last``; None when it changed or went
        (a revoke between a read and this write wins)."""
        try:
            rev = int(await self._kv.update(key, _encode(value), last=last))
        except KeyWrongLastSequenceError:
            return None
        self._apply(key, value, rev)
        return rev

    async def remove(self, key: str) -> bool:
        """Remove ``key``; False when it was not there."""
        if key not in self._view:
            return False
        await self._kv.purge(key)
        self._view.pop(key, None)
        return True

    def _apply(self, key: str, value: dict[str, Any] | None, rev: int) -> None:
        if rev <= self._revs.get(key, 0):
            return
        self._revs[key] = rev
        if value is None:
            self._view.pop(key, None)
        else:
            self._view[key] = (value, rev)

    async def _watch(self) -> None:
        async for entry in self._watcher:
            if entry is None:
                self._synced.set()
                continue
            key, rev = str(entry.key), int(entry.revision)
            if entry.operation in ("DEL", "PURGE") or not entry.value:
                self._apply(key, None, rev)
                continue
            try:
                value = json.loads(entry.value)
            except ValueError:
                log.warning("approvals: undecodable entry %s", key)
                continue
            if isinstance(value, dict):
                self._apply(key, value, rev)


def _encode(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
