"""One write as a function of the state it is decided against (run by the store's writer).

Each ``*_op`` returns a function of a :class:`View` (the cache plus the earlier writes of the
same batch) that yields the changes to commit, or the unchanged object for a no-op, or raises
a :class:`StoreError` that fails that write alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentcoord.stores.objects._cache import Cache
from agentcoord.stores.objects.kinds import GROUP, Kind
from agentcoord.stores.objects.schema import check_object
from agentcoord.stores.objects.statuserrors import AlreadyExists, ObjectNotFound
from agentcoord.stores.objects.writerules import (
    Key,
    prepare_create,
    prepare_delete,
    prepare_update,
    same_but_rv,
)

__all__ = ["Change", "OpFn", "View", "create_op", "delete_op", "not_found", "update_op"]

Obj = dict[str, Any]


@dataclass
class Change:
    """ADDED, MODIFIED or DELETED ``obj`` at ``key``; the writer fills in resourceVersion."""

    type: str
    key: Key
    obj: Obj


class View:
    """The state one write is decided against: cache plus the batch's earlier writes."""

    def __init__(self, cache: Cache, now: float) -> None:
        self.cache = cache
        self.overlay: dict[Key, Obj | None] = {}
        self.now = now

    def get(self, key: Key) -> Obj | None:
        if key in self.overlay:
            return self.overlay[key]
        entry = self.cache.get(key)
        return entry.obj if entry else None


Changes = list[Change]
OpFn = Callable[[View], "Changes | Obj"]


def not_found(kind: Kind, name: str) -> ObjectNotFound:
    return ObjectNotFound(
        f'{kind.plural}.{GROUP} "{name}" not found',
        details={"name": name, "group": GROUP, "kind": kind.plural},
    )


def create_op(kind: Kind, namespace: str, body: Obj, *, keep_status: bool) -> OpFn:
    def op(view: View) -> Changes | Obj:
        new = prepare_create(kind, body, namespace, view.now, keep_status=keep_status)
        check_object(kind, new)
        key = (kind.plural, namespace, new["metadata"]["name"])
        if view.get(key) is not None:
            raise AlreadyExists(
                f'{kind.plural}.{GROUP} "{key[2]}" already exists',
                details={"name": key[2], "group": GROUP, "kind": kind.plural},
            )
        return [Change("ADDED", key, new)]

    return op


def update_op(
    kind: Kind,
    namespace: str,
    name: str,
    make: Callable[[Obj], Obj],
    subresource: str | None,
    *,
    keep_status: bool = False,
) -> OpFn:
    """``make`` turns the current version into the client's new one (a PUT body, a patch)."""

    def op(view: View) -> Changes | Obj:
        key = (kind.plural, namespace, name)
        old = view.get(key)
        if old is None:
            raise not_found(kind, name)
        new = prepare_update(kind, old, make(old), subresource=subresource, keep_status=keep_status)
        if same_but_rv(new, old):
            return old
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            return [Change("DELETED", key, new)]  # the last finalizer went
        return [Change("MODIFIED", key, new)]

    return op


def delete_op(
    kind: Kind, namespace: str, name: str, *, rv: int | None, uid: str | None, propagation: str
) -> OpFn:
    def op(view: View) -> Changes | Obj:
        key = (kind.plural, namespace, name)
        old = view.get(key)
        if old is None:
            raise not_found(kind, name)
        outcome = prepare_delete(kind, old, view.now, rv=rv, uid=uid)
        if not outcome.remove:
            return old if outcome.obj is old else [Change("MODIFIED", key, outcome.obj)]
        gone = dict(old)
        gone["metadata"] = dict(old["metadata"])
        changes = [Change("DELETED", key, gone)]
        if propagation == "Orphan":
            # In the same transaction, so the collector never sees them owner-less.
            changes.extend(_orphans(view, old["metadata"]["uid"]))
        return changes

    return op


def _orphans(view: View, owner_uid: str) -> Changes:
    changes = []
    for key in sorted(view.cache.dependents.get(owner_uid, set())):
        dep = view.get(key)
        if dep is None:
            continue
        refs = [r for r in dep["metadata"].get("ownerReferences") or [] if r["uid"] != owner_uid]
        new = dict(dep)
        new["metadata"] = {k: v for k, v in dep["metadata"].items() if k != "ownerReferences"}
        if refs:
            new["metadata"]["ownerReferences"] = refs
        changes.append(Change("MODIFIED", key, new))
    return changes
