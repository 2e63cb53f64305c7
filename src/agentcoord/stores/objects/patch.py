"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902), pure; other patch types are 415.

Custom resources have no strategic-merge metadata, so the apiserver answers 415 to
``strategic-merge-patch+json`` and (without server-side apply) ``apply-patch+yaml``; so do we.
"""

from __future__ import annotations

import copy
from typing import Any

from agentcoord.stores.objects.errors import BadRequest, Invalid, UnsupportedMediaType

__all__ = ["JSON_PATCH", "MERGE_PATCH", "apply_patch", "json_patch", "merge_patch"]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
_STRATEGIC = "application/strategic-merge-patch+json"
_APPLY = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _split(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise BadRequest(f'invalid JSON pointer "{path}": must start with "/"')
    return [_unescape(t) for t in path[1:].split("/")]


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    cur = doc
    for tok in tokens[:-1]:
        cur = _child(cur, tok, path)
    return cur


def _child(cur: Any, tok: str, path: str) -> Any:
    if isinstance(cur, dict):
        if tok not in cur:
            raise _bad(f"doc is missing path: {path!r}")
        return cur[tok]
    if isinstance(cur, list):
        idx = _index(cur, tok, path, allow_end=False)
        return cur[idx]
    raise _bad(f"doc is missing path: {path!r}")


def _index(seq: list[Any], tok: str, path: str, *, allow_end: bool) -> int:
    if tok == "-" and allow_end:
        return len(seq)
    if not tok.isdigit() or (len(tok) > 1 and tok.startswith("0")):
        raise _bad(f"invalid array index {tok!r} in {path!r}")
    idx = int(tok)
    if idx > len(seq) or (idx == len(seq) and not allow_end):
        raise _bad(f"array index {idx} out of bounds in {path!r}")
    return idx


def _bad(message: str) -> Invalid:
    return Invalid(
        f"the server rejected our request due to an error in our request: {message}",
        [("", message)],
    )


def _get(doc: Any, path: str) -> Any:
    cur = doc
    for tok in _split(path):
        cur = _child(cur, tok, path)
    return cur


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _split(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, path, allow_end=True), value)
    else:
        raise _bad(f"doc is missing path: {path!r}")
    return doc


def _remove(doc: Any, path: str) -> Any:
    tokens = _split(path)
    if not tokens:
        raise _bad("cannot remove the whole document")
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _bad(f"unable to remove nonexistent key: {last}: missing value")
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(parent, last, path, allow_end=False)]
    else:
        raise _bad(f"doc is missing path: {path!r}")
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902 on a deep copy of ``target``; a failed ``test`` or bad path is 422."""
    if not isinstance(ops, list):
        raise BadRequest("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict) or not isinstance(op.get("path"), str):
            raise BadRequest(f"invalid JSON patch operation: {op!r}")
        kind, path = op.get("op"), op["path"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise BadRequest(f"JSON patch {kind} operation has no value")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "remove":
            doc = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)  # must exist
            doc = _add(_remove(doc, path), path, copy.deepcopy(op["value"]))
        elif kind in ("move", "copy"):
            src = op.get("from")
            if not isinstance(src, str):
                raise BadRequest(f"JSON patch {kind} operation has no from")
            value = copy.deepcopy(_get(doc, src))
            if kind == "move":
                doc = _remove(doc, src)
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise _bad(f"testing value {path} failed")
        else:
            raise BadRequest(f"unknown JSON patch operation {kind!r}")
    return doc


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> Any:
    """Apply a patch of the given media type to ``target``."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == MERGE_PATCH:
        return merge_patch(target, patch)
    if media == JSON_PATCH:
        return json_patch(target, patch)
    if media in (_STRATEGIC, _APPLY):
        raise UnsupportedMediaType(
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{JSON_PATCH}, {MERGE_PATCH} (strategic merge and apply patches are not "
            f"supported for custom resources)"
        )
    raise UnsupportedMediaType(f"unsupported patch type {media!r}")
