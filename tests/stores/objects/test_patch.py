"""JSON merge patch and JSON patch follow RFC 7386 and RFC 6902; other types are 415."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcoord.stores.objects.patch import apply_patch, json_patch, merge_patch
from agentcoord.stores.objects.statuserrors import BadRequest, Invalid, UnsupportedMediaType

pytestmark = pytest.mark.unit

# RFC 7386 appendix A (a selection)
RFC7386 = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
]


@pytest.mark.parametrize(("target", "patch", "result"), RFC7386)
def test_merge_patch_rfc_examples(target: Any, patch: Any, result: Any) -> None:
    """The RFC 7386 examples give the RFC's results."""
    assert merge_patch(target, patch) == result


def test_json_patch_operations() -> None:
    """add (with '-'), remove, replace, move, copy and test work on nested documents."""
    doc = {"status": {"checkpoints": [{"ref": "a"}]}, "spec": {"x": 1}}
    out = json_patch(
        doc,
        [
            {"op": "add", "path": "/status/checkpoints/-", "value": {"ref": "b"}},
            {"op": "replace", "path": "/spec/x", "value": 2},
            {"op": "copy", "from": "/spec/x", "path": "/spec/y"},
            {"op": "move", "from": "/spec/y", "path": "/spec/z"},
            {"op": "test", "path": "/spec/z", "value": 2},
            {"op": "remove", "path": "/status/checkpoints/0"},
            {"op": "add", "path": "/spec/a~1b", "value": True},
        ],
    )
    assert out == {"status": {"checkpoints": [{"ref": "b"}]}, "spec": {"x": 2, "z": 2, "a/b": True}}
    assert doc["spec"] == {"x": 1}, "the target is not mutated"


def test_json_patch_add_to_missing_array_fails() -> None:
    """add to /status/checkpoints/- without the array is an error (JSON patch needs the parent)."""
    with pytest.raises(Invalid, match="missing path"):
        json_patch({"status": {}}, [{"op": "add", "path": "/status/checkpoints/-", "value": 1}])


def test_json_patch_failed_test_and_bad_ops() -> None:
    """A failed test op is 422; a non-list body or unknown op is 400."""
    with pytest.raises(Invalid, match="testing value"):
        json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 2}])
    with pytest.raises(BadRequest):
        json_patch({"a": 1}, {"op": "add"})
    with pytest.raises(BadRequest):
        json_patch({"a": 1}, [{"op": "frobnicate", "path": "/a"}])


def test_json_patch_test_tells_true_from_1() -> None:
    """RFC 6902 4.6: a test of true does not match 1 (nor 1 true), inside arrays too; 1 matches
    1.0 (numbers compare by value)."""
    for doc, value in (({"a": 1}, True), ({"a": True}, 1), ({"a": [0]}, [False])):
        with pytest.raises(Invalid, match="testing value /a failed"):
            json_patch(doc, [{"op": "test", "path": "/a", "value": value}])
    assert json_patch({"a": True}, [{"op": "test", "path": "/a", "value": True}]) == {"a": True}
    assert json_patch({"a": 1.0}, [{"op": "test", "path": "/a", "value": 1}]) == {"a": 1.0}


def test_json_patch_replace_at_the_root() -> None:
    """replace (and add) with the empty path "" swaps the whole document (RFC 6901 root)."""
    doc = {"spec": {"x": 1}, "status": {"phase": "Pending"}}
    new = {"spec": {"y": 2}}
    out = json_patch(doc, [{"op": "replace", "path": "", "value": new}])
    assert out == new
    assert out is not new, "the patch's value is copied, not shared with the document"
    again = json_patch(
        doc,
        [{"op": "add", "path": "", "value": new}, {"op": "test", "path": "/spec/y", "value": 2}],
    )
    assert again == new
    assert doc["spec"] == {"x": 1}, "the target is not mutated"


def test_json_patch_errors_name_the_path_not_the_document() -> None:
    """A path through a missing or scalar member is 422 naming the path, without quoting the
    document; a missing value or a path without "/" is 400."""
    doc = {"spec": {"secret": "s3cr3t", "n": 1}}
    for path in ("/spec/missing/x", "/spec/n/x"):
        with pytest.raises(Invalid, match="doc is missing path") as caught:
            json_patch(doc, [{"op": "add", "path": path, "value": 1}])
        assert "s3cr3t" not in str(caught.value)
    with pytest.raises(Invalid, match="remove operation does not apply: doc is missing path"):
        json_patch(doc, [{"op": "remove", "path": "/spec/gone"}])
    with pytest.raises(Invalid, match="doc is missing path: from '/spec/gone' to '/spec/m'"):
        json_patch(doc, [{"op": "move", "from": "/spec/gone", "path": "/spec/m"}])
    with pytest.raises(Invalid, match="can't insert outside of list"):
        json_patch({"a": []}, [{"op": "add", "path": "/a/3", "value": 1}])
    with pytest.raises(BadRequest, match=r"operation 1: .*'value'"):
        json_patch(
            doc, [{"op": "test", "path": "/spec/n", "value": 1}, {"op": "add", "path": "/a"}]
        )
    with pytest.raises(BadRequest, match="must start with"):
        json_patch(doc, [{"op": "add", "path": "spec", "value": 1}])


def test_strategic_and_apply_are_415() -> None:
    """Strategic merge and apply patches are refused with 415, as for custom resources."""
    for media in ("application/strategic-merge-patch+json", "application/apply-patch+yaml"):
        with pytest.raises(UnsupportedMediaType, match="merge-patch"):
            apply_patch(media, {}, {})


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=3), _json, max_size=4), st.text(max_size=3), _json)
def test_add_then_remove_restores(doc: dict[str, Any], key: str, value: Any) -> None:
    """For a new key, JSON patch add followed by remove gives back the original document."""
    if key in doc:
        return
    path = "/" + key.replace("~", "~0").replace("/", "~1")
    added = json_patch(doc, [{"op": "add", "path": path, "value": value}])
    assert added[key] == value
    assert json_patch(added, [{"op": "remove", "path": path}]) == doc


@given(st.dictionaries(st.text(max_size=3), _json, max_size=4))
def test_merge_patch_is_idempotent(patch: dict[str, Any]) -> None:
    """Applying the same merge patch twice equals applying it once."""
    once = merge_patch({"a": 1}, patch)
    assert merge_patch(once, patch) == once


_pointer = st.lists(st.sampled_from(["a", "b", "0", "1", "-", "~0", "~1", "01"]), max_size=3).map(
    lambda parts: "".join("/" + p for p in parts)
)
_op = st.fixed_dictionaries(
    {
        "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "frob"]),
        "path": _pointer | st.integers() | st.just("a"),
    },
    optional={"value": _json, "from": _pointer},
)


@given(
    st.dictionaries(st.sampled_from(["a", "b", "0"]), _json, max_size=3), st.lists(_op, max_size=4)
)
def test_any_patch_is_a_result_or_a_clear_error(doc: dict[str, Any], ops: list[Any]) -> None:
    """Whatever the operations, JSON patch gives a document or a 400/422, never another error,
    and never changes its target."""
    before = repr(doc)
    with contextlib.suppress(BadRequest, Invalid):
        json_patch(doc, ops)
    assert repr(doc) == before
