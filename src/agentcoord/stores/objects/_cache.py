"""The in-memory copy of ``objects`` that serves every read, with uid and owner indexes.

Cached dicts are never mutated (writes build new ones), so readers may share them; ``raw`` is
the stored JSON, which the HTTP API sends as is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentcoord.stores.objects.kinds import KINDS
from agentcoord.stores.objects.rules import Key
from agentcoord.stores.objects.selectors import FieldSelector, LabelSelector

__all__ = ["Cache", "Entry"]

Obj = dict[str, Any]


@dataclass(frozen=True)
class Entry:
    obj: Obj
    raw: bytes


class Cache:
    """Objects by (resource, namespace, name); owners' uids to their dependents."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[tuple[str, str], Entry]] = {p: {} for p in KINDS}
        self.by_uid: dict[str, Key] = {}
        self.dependents: dict[str, set[Key]] = {}

    def __len__(self) -> int:
        return len(self.by_uid)

    def get(self, key: Key) -> Entry | None:
        return self._entries[key[0]].get((key[1], key[2]))

    def remember(self, resource: str, obj: Obj, raw: bytes) -> Obj | None:
        """Store a new version; returns the previous one."""
        meta = obj["metadata"]
        key = (resource, meta["namespace"], meta["name"])
        prev = self.forget(key)
        self._entries[resource][(key[1], key[2])] = Entry(obj, raw)
        self.by_uid[meta["uid"]] = key
        for ref in meta.get("ownerReferences") or []:
            self.dependents.setdefault(ref["uid"], set()).add(key)
        return prev

    def forget(self, key: Key) -> Obj | None:
        """Drop an object; returns it."""
        entry = self._entries[key[0]].pop((key[1], key[2]), None)
        if entry is None:
            return None
        meta = entry.obj["metadata"]
        self.by_uid.pop(meta["uid"], None)
        for ref in meta.get("ownerReferences") or []:
            deps = self.dependents.get(ref["uid"])
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self.dependents[ref["uid"]]
        return entry.obj

    def select(
        self,
        resource: str,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
    ) -> tuple[list[bytes], list[Obj]]:
        """Matching objects in (namespace, name) order, as stored JSON and as cached dicts."""
        entries = self._entries[resource]
        name = fields.equal("metadata.name")
        ns = namespace if namespace is not None else fields.equal("metadata.namespace")
        if name is not None and ns is not None:
            found = entries.get((ns, name))
            items = [((ns, name), found)] if found else []
        else:
            items = sorted(entries.items())
        raws: list[bytes] = []
        objs: list[Obj] = []
        for (obj_ns, _), entry in items:
            if namespace is not None and obj_ns != namespace:
                continue
            if not labels.empty and not labels.matches(entry.obj["metadata"].get("labels")):
                continue
            if fields.terms and not fields.matches(entry.obj):
                continue
            raws.append(entry.raw)
            objs.append(entry.obj)
        return raws, objs
