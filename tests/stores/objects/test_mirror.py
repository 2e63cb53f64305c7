"""The Kubernetes store's mirror: list, watch events and own writes in any order converge."""

from __future__ import annotations

from typing import Any

import pytest

from agentcoord.stores.objects._mirror import Mirror
from agentcoord.stores.objects.selectors import parse_fields, parse_labels

pytestmark = pytest.mark.unit

K = ("agents", "default", "a")


def _obj(rv: int, name: str = "a", **spec: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default", "uid": f"u-{name}", "resourceVersion": str(rv)}
    return {"metadata": meta, "spec": spec}


def _names(m: Mirror) -> list[str]:
    _, objs = m.cache.select("agents", None, parse_labels(""), parse_fields(""))
    return [o["metadata"]["name"] for o in objs]


def test_older_event_does_not_undo_own_write() -> None:
    """An event older than our write's response (still in flight) is ignored."""
    m = Mirror()
    m.wrote("agents", _obj(5, pool="new"))
    assert m.event("agents", "MODIFIED", _obj(4, pool="old")) is False
    entry = m.cache.get(K)
    assert entry is not None
    assert entry.obj["spec"] == {"pool": "new"}
    assert m.event("agents", "MODIFIED", _obj(6, pool="newer")) is True
    assert m.revision == 6


def test_pending_delete_holds_until_deleted_event() -> None:
    """After our delete, older events cannot revive the object; the DELETED event settles it,
    and a later re-creation shows again."""
    m = Mirror()
    m.event("agents", "ADDED", _obj(3))
    m.deleted(K)
    assert _names(m) == []
    assert m.event("agents", "MODIFIED", _obj(4)) is False
    assert _names(m) == []
    assert m.event("agents", "DELETED", _obj(5)) is True
    assert m.event("agents", "ADDED", _obj(9)) is True
    assert _names(m) == ["a"]


def test_delete_after_its_event_leaves_no_tombstone() -> None:
    """When the DELETED event came first, our delete does not block a later re-creation."""
    m = Mirror()
    m.event("agents", "ADDED", _obj(3))
    m.event("agents", "DELETED", _obj(4))
    m.deleted(K)
    assert m.event("agents", "ADDED", _obj(7)) is True
    assert _names(m) == ["a"]


def test_relist_replaces_but_keeps_newer_writes() -> None:
    """A re-list (after 410) drops what is gone and adds what is new, but keeps an own write
    newer than the list's resourceVersion."""
    m = Mirror()
    m.event("agents", "ADDED", _obj(2, "gone"))
    m.event("agents", "ADDED", _obj(3, "kept"))
    m.wrote("agents", _obj(12, "mine"))
    m.relist("agents", [_obj(3, "kept"), _obj(8, "new")], 10)
    assert _names(m) == ["kept", "mine", "new"]
    assert m.revision == 12


def test_release_of_last_finalizer_removes_object() -> None:
    """Our write that drops the last finalizer of a deleted object removes it from the mirror;
    the later DELETED event is a no-op and older events cannot revive it."""
    m = Mirror()
    m.event("agents", "ADDED", _obj(3))
    released = _obj(6)
    released["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    m.gone("agents", released)
    assert _names(m) == []
    assert m.event("agents", "MODIFIED", _obj(5)) is False
    m.event("agents", "DELETED", _obj(6))
    assert _names(m) == []
