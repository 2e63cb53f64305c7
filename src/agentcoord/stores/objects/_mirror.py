"""A local mirror of objects held by an API server: what an informer keeps (pure, no I/O).

Three sources feed it, in any interleaving: a full list at some resourceVersion, the watch
stream after it, and the responses to our own writes (so a caller reads its own write at
once, before the watch brings it). The rule that makes the order irrelevant: per object, the
highest resourceVersion wins. A delete we issued is a *pending* tombstone until the watch
shows the DELETED event (or a later list no longer holds the object): its resourceVersion is
unknown, so anything older that is still in flight must not bring the object back.

resourceVersions are compared as integers: true for etcd3-backed servers (and kine, and our
own store), although Kubernetes calls them opaque.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from agentcoord.stores.objects._cache import Cache
from agentcoord.stores.objects.writerules import Key

__all__ = ["Mirror", "dumps", "rv_of"]

Obj = dict[str, Any]
_PENDING = sys.maxsize  # a delete we issued whose DELETED event has not arrived yet


def dumps(obj: Obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def rv_of(obj: Obj) -> int:
    """The integer resourceVersion of an object (0 when absent)."""
    try:
        return int(obj.get("metadata", {}).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


class Mirror:
    """The cache plus the newest resourceVersion seen per object; see the module docstring."""

    def __init__(self) -> None:
        self.cache = Cache()
        self._seen: dict[Key, int] = {}
        self.revision = 0

    def _bump(self, rv: int) -> None:
        if rv > self.revision:
            self.revision = rv

    @staticmethod
    def key(plural: str, obj: Obj) -> Key:
        meta = obj["metadata"]
        return (plural, meta["namespace"], meta["name"])

    def event(self, plural: str, etype: str, obj: Obj) -> bool:
        """Apply one watch event; False when it was older than what we hold."""
        rv = rv_of(obj)
        self._bump(rv)
        if etype == "BOOKMARK":
            return False
        key = self.key(plural, obj)
        seen = self._seen.get(key, 0)
        if seen == _PENDING:
            if etype != "DELETED":
                return False  # an older version still in flight ahead of our delete
        elif rv <= seen:
            return False
        self._seen[key] = rv
        if etype == "DELETED":
            self.cache.forget(key)
        else:
            self.cache.remember(plural, obj, dumps(obj))
        return True

    def wrote(self, plural: str, obj: Obj) -> None:
        """Our own write's response: newer than anything in flight for that object."""
        rv = rv_of(obj)
        self._bump(rv)
        key = self.key(plural, obj)
        seen = self._seen.get(key, 0)
        if seen != _PENDING and rv <= seen:
            return
        self._seen[key] = rv
        self.cache.remember(plural, obj, dumps(obj))

    def gone(self, plural: str, obj: Obj) -> None:
        """Our write removed the last finalizer of a deleted object: the server dropped it."""
        rv = rv_of(obj)
        self._bump(rv)
        key = self.key(plural, obj)
        seen = self._seen.get(key, 0)
        if seen != _PENDING and rv <= seen:
            return
        self._seen[key] = rv
        self.cache.forget(key)

    def deleted(self, key: Key) -> None:
        """We deleted ``key`` and the server no longer has it."""
        if self.cache.get(key) is not None:
            # Its DELETED event is still to come; until then nothing older may bring it back.
            self._seen[key] = _PENDING
            self.cache.forget(key)

    def relist(self, plural: str, items: list[Obj], rv: int) -> None:
        """Replace one kind with a list taken at ``rv``, keeping anything newer we hold."""
        self._bump(rv)
        listed = {self.key(plural, o): o for o in items}
        for key, seen in list(self._seen.items()):
            if key[0] != plural:
                continue
            if seen == _PENDING:
                if key not in listed:
                    del self._seen[key]  # the deletion is in the list already
                continue
            if seen > rv:
                continue  # our write (or an event) newer than the list: keep it
            del self._seen[key]
            if key not in listed:
                self.cache.forget(key)
        for key, obj in listed.items():
            if key in self._seen:
                continue
            self._seen[key] = rv_of(obj)
            self.cache.remember(plural, obj, dumps(obj))
