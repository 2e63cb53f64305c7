"""The in-memory copy of ``objects`` that serves every read, with uid and owner indexes.

Each object is kept once, as its stored JSON (``raw``, what the HTTP API sends as is), next to
the few fields the indexes and selectors need (uid, labels, owners' uids). A dict is decoded
from ``raw`` only when a reader asks for one: decoded objects cost about three times their JSON
(10k Agent objects: ~35 MB as dicts plus JSON, ~13 MB as JSON), and most reads want the bytes
or a private copy anyway. Label sets are shared between objects that carry the same labels.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, overload

from agentcoord.stores.objects.kinds import KINDS
from agentcoord.stores.objects.selectors import FieldSelector, LabelSelector
from agentcoord.stores.objects.writerules import Key

__all__ = ["Cache", "Decoded", "Entry"]

Obj = dict[str, Any]
_Labels = dict[str, str]
_NO_LABELS: _Labels = {}  # shared; never mutated


class Entry:
    """One cached object: its JSON and what the indexes need; ``obj`` decodes a copy."""

    __slots__ = ("labels", "owners", "raw", "uid")

    def __init__(self, raw: bytes, uid: str, labels: _Labels, owners: tuple[str, ...]) -> None:
        self.raw = raw
        self.uid = uid
        self.labels = labels  # shared with other entries: do not mutate
        self.owners = owners

    @property
    def obj(self) -> Obj:
        """A fresh dict decoded from ``raw`` (the caller owns it)."""
        obj: Obj = json.loads(self.raw)
        return obj


class Decoded(Sequence[Obj]):
    """Stored JSON documents seen as dicts, each decoded when it is read (a fresh copy)."""

    __slots__ = ("_raws",)

    def __init__(self, raws: list[bytes]) -> None:
        self._raws = raws

    def __len__(self) -> int:
        return len(self._raws)

    @overload
    def __getitem__(self, i: int) -> Obj: ...
    @overload
    def __getitem__(self, i: slice) -> list[Obj]: ...
    def __getitem__(self, i: int | slice) -> Obj | list[Obj]:
        if isinstance(i, slice):
            return [json.loads(r) for r in self._raws[i]]
        obj: Obj = json.loads(self._raws[i])
        return obj

    def __iter__(self) -> Iterator[Obj]:
        return map(json.loads, self._raws)


class Cache:
    """Objects by (resource, namespace, name); owners' uids to their dependents."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[tuple[str, str], Entry]] = {p: {} for p in KINDS}
        self.by_uid: dict[str, Key] = {}
        self.dependents: dict[str, set[Key]] = {}
        # Label sets in use, with how many entries share each (dropped at zero).
        self._label_sets: dict[tuple[tuple[str, str], ...], tuple[_Labels, int]] = {}
        # Each resource's (namespace, name) keys in list order, sorted on the first list after
        # a key came or went: a new version of an object keeps its place, so a list between
        # writes to existing objects (status updates) sorts nothing.
        self._order: dict[str, list[tuple[str, str]] | None] = dict.fromkeys(KINDS)
        # Each resource's stored JSON in list order, made by the first unfiltered list after
        # any write to it: listing again (kubectl get, the console's refresh) copies one list
        # instead of visiting 10,000 entries scattered over the heap (docs/store.md).
        self._listing: dict[str, list[bytes] | None] = dict.fromkeys(KINDS)

    def __len__(self) -> int:
        return len(self.by_uid)

    def get(self, key: Key) -> Entry | None:
        return self._entries[key[0]].get((key[1], key[2]))

    def remember(self, resource: str, obj: Obj, raw: bytes) -> Entry | None:
        """Store a new version (``raw`` is ``obj`` as JSON); returns the previous entry."""
        meta = obj["metadata"]
        key = (resource, meta["namespace"], meta["name"])
        prev = self._drop(key)
        if prev is None:
            self._order[resource] = None
        self._listing[resource] = None
        owners = tuple(ref["uid"] for ref in meta.get("ownerReferences") or ())
        entry = Entry(raw, meta["uid"], self._share(meta.get("labels")), owners)
        self._entries[resource][(key[1], key[2])] = entry
        self.by_uid[entry.uid] = key
        for uid in owners:
            self.dependents.setdefault(uid, set()).add(key)
        return prev

    def forget(self, key: Key) -> Entry | None:
        """Drop an object; returns its entry."""
        entry = self._drop(key)
        if entry is not None:
            self._order[key[0]] = None
            self._listing[key[0]] = None
        return entry

    def _drop(self, key: Key) -> Entry | None:
        entry = self._entries[key[0]].pop((key[1], key[2]), None)
        if entry is None:
            return None
        self.by_uid.pop(entry.uid, None)
        self._unshare(entry.labels)
        for uid in entry.owners:
            deps = self.dependents.get(uid)
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self.dependents[uid]
        return entry

    def _share(self, labels: _Labels | None) -> _Labels:
        if not labels:
            return _NO_LABELS
        items = tuple(sorted(labels.items()))
        held = self._label_sets.get(items)
        shared = held[0] if held else dict(items)
        self._label_sets[items] = (shared, (held[1] if held else 0) + 1)
        return shared

    def _unshare(self, labels: _Labels) -> None:
        if not labels:
            return
        items = tuple(sorted(labels.items()))
        held = self._label_sets.get(items)
        if held is None:
            return
        if held[1] <= 1:
            del self._label_sets[items]
        else:
            self._label_sets[items] = (held[0], held[1] - 1)

    def select(
        self,
        resource: str,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
    ) -> tuple[list[bytes], Decoded]:
        """Matching objects in (namespace, name) order, as stored JSON and as dicts decoded
        on access."""
        entries = self._entries[resource]
        name = fields.equal("metadata.name")
        ns = namespace if namespace is not None else fields.equal("metadata.namespace")
        if name is not None and ns is not None:
            found = entries.get((ns, name))
            items = [((ns, name), found)] if found else []
        else:
            order = self._order[resource]
            if order is None:
                order = self._order[resource] = sorted(entries)
            if namespace is None and labels.empty and not fields.terms:
                listing = self._listing[resource]
                if listing is None:
                    listing = self._listing[resource] = [entries[k].raw for k in order]
                return list(listing), Decoded(listing)
            items = [(k, entries[k]) for k in order]
        raws: list[bytes] = []
        for (obj_ns, obj_name), entry in items:
            if namespace is not None and obj_ns != namespace:
                continue
            if not labels.empty and not labels.matches(entry.labels):
                continue
            if fields.terms and not fields.matches(
                {"metadata": {"name": obj_name, "namespace": obj_ns}}
                if fields.on_identity
                else entry.obj
            ):
                continue
            raws.append(entry.raw)
        return raws, Decoded(raws)
