"""resourceVersion conflicts, generation, the status subresource and deletion marks."""

from __future__ import annotations

import pytest

from agentcoord.stores.objects.kinds import KINDS
from agentcoord.stores.objects.statuserrors import BadRequest, Conflict, Invalid
from agentcoord.stores.objects.writerules import (
    parse_rv,
    prepare_create,
    prepare_delete,
    prepare_update,
    rfc3339,
)

pytestmark = pytest.mark.unit

AGENT = KINDS["agents"]
NOW = 1_800_000_000.0


def _stored(**spec: object) -> dict:
    obj = prepare_create(AGENT, {"metadata": {"name": "a"}, "spec": dict(spec)}, "default", NOW)
    obj["metadata"]["resourceVersion"] = "5"
    return obj


def test_create_fills_metadata_and_drops_status() -> None:
    """Create sets uid, creationTimestamp, generation 1 and namespace; status is dropped."""
    obj = prepare_create(
        AGENT, {"metadata": {"name": "a"}, "spec": {}, "status": {"phase": "X"}}, "ns", NOW
    )
    meta = obj["metadata"]
    assert meta["namespace"] == "ns"
    assert meta["generation"] == 1
    assert len(meta["uid"]) == 36
    assert meta["creationTimestamp"] == rfc3339(NOW)
    assert "status" not in obj
    assert obj["kind"] == "Agent"


def test_create_rejects_rv_and_namespace_mismatch() -> None:
    """A resourceVersion on create and a body namespace unlike the URL's are 400."""
    with pytest.raises(BadRequest, match="resourceVersion"):
        prepare_create(AGENT, {"metadata": {"name": "a", "resourceVersion": "3"}}, "d", NOW)
    with pytest.raises(BadRequest, match="namespace"):
        prepare_create(AGENT, {"metadata": {"name": "a", "namespace": "x"}}, "d", NOW)


def test_generate_name() -> None:
    """generateName gets a random five-character suffix."""
    obj = prepare_create(AGENT, {"metadata": {"generateName": "w-"}}, "d", NOW)
    assert obj["metadata"]["name"].startswith("w-")
    assert len(obj["metadata"]["name"]) == 7


def test_stale_update_conflicts() -> None:
    """An update naming an old resourceVersion is 409 with kubectl's standard text."""
    old = _stored(profile="p")
    new = {**old, "metadata": {**old["metadata"], "resourceVersion": "4"}}
    with pytest.raises(Conflict, match="the object has been modified"):
        prepare_update(AGENT, old, new)


def test_update_without_rv_is_invalid() -> None:
    """PUT needs a resourceVersion, as for custom resources."""
    old = _stored()
    with pytest.raises(Invalid, match="must be specified for an update"):
        prepare_update(AGENT, old, {"metadata": {"name": "a"}, "spec": {}})


def test_generation_moves_on_spec_only() -> None:
    """Label changes keep generation; spec changes bump it; status via main resource is ignored."""
    old = _stored(profile="p")
    labels = {**old, "metadata": {**old["metadata"], "labels": {"a": "b"}}}
    assert prepare_update(AGENT, old, labels)["metadata"]["generation"] == 1
    spec = {**old, "spec": {"profile": "q"}}
    assert prepare_update(AGENT, old, spec)["metadata"]["generation"] == 2
    status = {**old, "status": {"phase": "Running"}}
    assert "status" not in prepare_update(AGENT, old, status)


def test_status_subresource_changes_status_only() -> None:
    """The /status subresource writes status and ignores spec and metadata changes."""
    old = _stored(profile="p")
    new = {
        **old,
        "spec": {"profile": "z"},
        "metadata": {**old["metadata"], "labels": {"x": "y"}},
        "status": {"phase": "Running"},
    }
    out = prepare_update(AGENT, old, new, subresource="status")
    assert out["status"] == {"phase": "Running"}
    assert out["spec"] == {"profile": "p"}
    assert "labels" not in out["metadata"]
    assert out["metadata"]["generation"] == 1


def test_immutable_metadata_is_kept() -> None:
    """uid and creationTimestamp cannot be changed by an update."""
    old = _stored()
    new = {**old, "metadata": {**old["metadata"], "creationTimestamp": "2000-01-01T00:00:00Z"}}
    assert prepare_update(AGENT, old, new)["metadata"]["creationTimestamp"] == rfc3339(NOW)


def test_delete_with_finalizers_marks() -> None:
    """Finalizers turn delete into a deletionTimestamp mark (once); without them it removes."""
    old = _stored()
    assert prepare_delete(AGENT, old, NOW).remove
    old["metadata"]["finalizers"] = ["x/y"]
    marked = prepare_delete(AGENT, old, NOW + 5)
    assert not marked.remove
    assert marked.obj["metadata"]["deletionTimestamp"] == rfc3339(NOW + 5)
    again = prepare_delete(AGENT, marked.obj, NOW + 9)
    assert again.obj is marked.obj


def test_no_new_finalizers_while_deleting() -> None:
    """A terminating object cannot gain finalizers."""
    old = _stored()
    old["metadata"]["finalizers"] = ["a/b"]
    marked = prepare_delete(AGENT, old, NOW).obj
    new = {**marked, "metadata": {**marked["metadata"], "finalizers": ["a/b", "c/d"]}}
    with pytest.raises(Invalid, match="no new finalizers"):
        prepare_update(AGENT, marked, new)


def test_delete_preconditions() -> None:
    """Delete preconditions on uid and resourceVersion are checked (409)."""
    old = _stored()
    with pytest.raises(Conflict, match="UID in precondition"):
        prepare_delete(AGENT, old, NOW, uid="nope")
    with pytest.raises(Conflict):
        prepare_delete(AGENT, old, NOW, rv=1)


def test_parse_rv() -> None:
    """resourceVersion strings parse to the counter; garbage is 400."""
    assert parse_rv("") is None
    assert parse_rv("17") == 17
    with pytest.raises(BadRequest):
        parse_rv("abc")


def test_keep_status_writes_spec_and_status_in_one_version() -> None:
    """The daemon's update with keep_status takes the body's status with its spec."""
    old = _stored(profile="p")
    new = {**old, "spec": {"profile": "q"}, "status": {"phase": "Running"}}
    out = prepare_update(AGENT, old, new, keep_status=True)
    assert (out["spec"], out["status"]) == ({"profile": "q"}, {"phase": "Running"})
    assert out["metadata"]["generation"] == 2
