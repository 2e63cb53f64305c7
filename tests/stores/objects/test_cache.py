"""The store's in-memory cache: objects kept as JSON, decoded copies handed out, shared labels."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcoord.stores.objects._cache import Cache
from agentcoord.stores.objects.selectors import parse_fields, parse_labels

pytestmark = pytest.mark.unit


def _obj(name: str, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if labels:
        meta["labels"] = labels
    annotation = json.dumps({"agent_id": name, "endpoint": f"http://127.0.0.1:9/{name}"})
    meta["annotations"] = {"example.com/record": annotation}
    return {"metadata": meta, "spec": {"endpoint": f"http://127.0.0.1:9/{name}"}}


def _put(cache: Cache, obj: dict[str, Any]) -> bytes:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    cache.remember("agents", obj, raw)
    return raw


def _names(cache: Cache, labels: str = "", fields: str = "") -> list[str]:
    _, objs = cache.select("agents", None, parse_labels(labels), parse_fields(fields))
    return [o["metadata"]["name"] for o in objs]


def test_handed_out_dicts_are_copies() -> None:
    """Changing a dict from ``select`` or ``Entry.obj`` leaves the cached object as it was."""
    cache = Cache()
    raw = _put(cache, _obj("a", team="x"))
    _, objs = cache.select("agents", None, parse_labels(""), parse_fields(""))
    objs[0]["spec"]["endpoint"] = "changed"
    entry = cache.get(("agents", "default", "a"))
    assert entry is not None
    entry.obj["metadata"]["labels"]["team"] = "y"
    assert entry.raw == raw
    assert entry.obj["spec"]["endpoint"] == "http://127.0.0.1:9/a"
    assert _names(cache, "team=x") == ["a"]


def test_equal_label_sets_are_shared_and_released() -> None:
    """Objects with equal labels share one label map; relabels and forgets keep selection
    right and drop label sets nobody uses."""
    cache = Cache()
    _put(cache, _obj("a", team="x"))
    _put(cache, _obj("b", team="x"))
    a, b = cache.get(("agents", "default", "a")), cache.get(("agents", "default", "b"))
    assert a is not None
    assert b is not None
    assert a.labels is b.labels
    _put(cache, _obj("a", team="z"))
    assert _names(cache, "team=x") == ["b"]
    assert _names(cache, "team=z") == ["a"]
    cache.forget(("agents", "default", "a"))
    cache.forget(("agents", "default", "b"))
    assert cache._label_sets == {}
    assert _names(cache) == []


def test_field_selectors_match_on_the_key() -> None:
    """metadata.name and metadata.namespace terms select as they would on the object."""
    cache = Cache()
    for name in ("a", "b", "c"):
        _put(cache, _obj(name))
    assert _names(cache, fields="metadata.name!=b") == ["a", "c"]
    assert _names(cache, fields="metadata.namespace=default,metadata.name=c") == ["c"]
    assert _names(cache, fields="metadata.namespace=other") == []


def test_an_object_costs_little_more_than_its_json() -> None:
    """Cached objects are not kept as dicts: memory per object stays near its JSON size."""
    cache = Cache()
    stored = 0
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(2000):
            stored += len(_put(cache, _obj(f"agent-{i}", kind="registered")))
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    overhead = (grown - stored) / 2000  # as dicts, these objects would add ~1.5 kB each
    assert overhead < 700, overhead  # names, uid, index entries: ~400 B
    assert _names(cache, "kind=registered")[:2] == ["agent-0", "agent-1"]


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "forget", "list"]), st.sampled_from("abcdef"), st.integers(0, 2)
    ),
    max_size=40,
)


@given(_OPS)
def test_lists_between_writes_show_every_write(ops: list[tuple[str, str, int]]) -> None:
    """Lists kept between writes (the sorted keys and the whole listing) are never stale: after
    any run of creates, updates, relabels and deletes, a list is exactly the objects there are,
    in name order, at their last version, and a label list exactly those labelled so."""
    cache = Cache()
    model: dict[str, bytes] = {}
    labels: dict[str, str] = {}
    for op, name, version in ops:
        if op == "put":
            obj = _obj(name, v=str(version))
            obj["spec"]["version"] = version
            model[name] = _put(cache, obj)
            labels[name] = str(version)
        elif op == "forget":
            cache.forget(("agents", "default", name))
            model.pop(name, None)
            labels.pop(name, None)
        raws, _ = cache.select("agents", None, parse_labels(""), parse_fields(""))
        assert raws == [model[n] for n in sorted(model)]
        assert _names(cache, f"v={version}") == sorted(
            n for n in labels if labels[n] == str(version)
        )
