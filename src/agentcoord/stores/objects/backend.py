"""The seam the daemon reads and writes objects through (docs/architecture.md "Seams").

Two implementations: :class:`~agentcoord.stores.objects.store.ObjectStore` (SQLite in the
daemon, the default) and :class:`~agentcoord.stores.objects.kube.KubeObjectStore` (a real
Kubernetes API server through a kubeconfig: docs/store.md
"Backed by a real Kubernetes API server"). Consumers (records, the directory, the agent
source) are typed against :class:`ObjectBackend` and never learn which one they have.

The contract: reads are served from memory (``get_raw``/``list_raw`` are synchronous and see
the caller's own acknowledged writes); writes are decided by the store (409 on a stale
resourceVersion, never a silent overwrite); errors are the :mod:`errors` tree; watches yield
:class:`~agentcoord.stores.objects.watch.WatchEvent` and end with :class:`Expired` when the
client must list again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from agentcoord.stores.objects.patch import MERGE_PATCH
from agentcoord.stores.objects.selectors import FieldSelector, LabelSelector
from agentcoord.stores.objects.watch import Watcher

__all__ = ["ObjectBackend"]

Obj = dict[str, Any]
_Warnings = list[str]  # out-parameter: warnings for the client (fieldValidation=Warn)


class ObjectBackend(Protocol):
    """What the daemon needs from an object store; see the module docstring."""

    @property
    def revision(self) -> int:
        """The newest resourceVersion this store has seen (its own writes included)."""
        ...

    async def get(self, plural: str, namespace: str, name: str) -> Obj:
        """A copy of one object, or :class:`ObjectNotFound`."""
        ...

    def get_raw(self, plural: str, namespace: str, name: str) -> bytes:
        """The JSON of one object, from memory."""
        ...

    def list_raw(
        self,
        plural: str,
        namespace: str | None = None,
        labels: LabelSelector | str | None = None,
        fields: FieldSelector | str | None = None,
    ) -> tuple[list[bytes], Sequence[Obj], int]:
        """Matching objects as (JSON, dicts decoded from it on access) and the list's rv."""
        ...

    async def list(
        self,
        plural: str,
        namespace: str | None = None,
        labels: LabelSelector | str | None = None,
        fields: FieldSelector | str | None = None,
    ) -> tuple[list[Obj], int]:
        """Copies of the matching objects and the resourceVersion of the list."""
        ...

    async def create(
        self,
        plural: str,
        namespace: str,
        obj: Obj,
        *,
        field_validation: str = "Strict",
        keep_status: bool = False,
        warnings: _Warnings | None = None,
    ) -> Obj:
        """Create; :class:`AlreadyExists` if the name is taken."""
        ...

    async def update(
        self,
        plural: str,
        namespace: str,
        obj: Obj,
        *,
        subresource: str | None = None,
        field_validation: str = "Strict",
        keep_status: bool = False,
        warnings: _Warnings | None = None,
    ) -> Obj:
        """Replace; :class:`Conflict` if ``metadata.resourceVersion`` is not the current one.
        ``keep_status`` (the daemon's writes): the body's status is written too."""
        ...

    async def patch(
        self,
        plural: str,
        namespace: str,
        name: str,
        patch: Any,
        *,
        content_type: str = MERGE_PATCH,
        subresource: str | None = None,
        field_validation: str = "Strict",
        warnings: _Warnings | None = None,
    ) -> Obj:
        """Merge or JSON patch of the newest version; strategic and apply are 415."""
        ...

    async def delete(
        self,
        plural: str,
        namespace: str,
        name: str,
        *,
        rv: int | None = None,
        uid: str | None = None,
        propagation: str = "Background",
    ) -> Obj:
        """Delete (or mark with ``deletionTimestamp`` while finalizers remain)."""
        ...

    async def watch(
        self,
        plural: str,
        *,
        namespace: str | None = None,
        labels: LabelSelector | str | None = None,
        fields: FieldSelector | str | None = None,
        since: int | None = None,
    ) -> Watcher:
        """Events after ``since``, or ADDED for the current objects first when it is None/0.

        A ``since`` below the compacted point is :class:`Expired`: raised here by the SQLite
        store, from the watcher's first ``next()`` by the Kubernetes one (the server says so).
        """
        ...
