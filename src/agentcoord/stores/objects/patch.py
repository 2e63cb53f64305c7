"""JSON merge patch (RFC 7386, ours) and JSON patch (RFC 6902, the ``jsonpatch`` library);
other patch types are 415.

Custom resources have no strategic-merge metadata, so the apiserver answers 415 to
``strategic-merge-patch+json`` and (without server-side apply) ``apply-patch+yaml``; so do we.

Errors follow the apiserver's JSON patch handler: a patch that cannot be read as operations is
400 ``BadRequest``; a well-formed patch that does not apply to the object (a failed ``test``,
a missing path) is 422 with the "the server rejected our request..." message kubectl prints.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from agentcoord.stores.objects.statuserrors import BadRequest, Invalid, UnsupportedMediaType

if TYPE_CHECKING:
    import jsonpatch

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


def _bad(message: str) -> Invalid:
    return Invalid(
        f"the server rejected our request due to an error in our request: {message}",
        [("", message)],
    )


def _read(ops: Any) -> list[jsonpatch.JsonPatch]:
    """Each operation as its own one-step patch, so a failure can name the step; 400 when the
    body is not a list of well-formed operations."""
    import jsonpatch  # here: only JSON patches need it (~5 ms of daemon start-up otherwise)
    from jsonpointer import JsonPointerException

    if not isinstance(ops, list):
        raise BadRequest("a JSON patch must be a list of operations")
    steps = []
    for index, op in enumerate(ops):
        try:
            steps.append(jsonpatch.JsonPatch([op]))
        except (jsonpatch.InvalidJsonPatch, JsonPointerException) as exc:
            raise BadRequest(f"invalid JSON patch operation {index}: {exc}") from None
    return steps


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902 on a deep copy of ``target``; a failed ``test`` or bad path is 422."""
    import jsonpatch
    from jsonpointer import JsonPointerException

    steps = _read(ops)
    doc = copy.deepcopy(target)
    for index, step in enumerate(steps):
        op = step.patch[0]
        kind, path = op.get("op"), op.get("path")
        where = repr(path) if "from" not in op else f"from {op['from']!r} to {path!r}"
        try:
            # in place on our copy; a replace of the root returns the new document
            doc = step.apply(doc, in_place=True)
        except jsonpatch.JsonPatchTestFailed:
            raise _bad(f"testing value {path} failed") from None
        except jsonpatch.InvalidJsonPatch as exc:  # e.g. no "value", checked when applied
            raise BadRequest(f"invalid JSON patch operation {index}: {exc}") from None
        except (jsonpatch.JsonPatchPathNotFound, JsonPointerException, TypeError):
            # the library's text may quote the document it stopped in; the path is enough
            raise _bad(f"{kind} operation does not apply: doc is missing path: {where}") from None
        except jsonpatch.JsonPatchConflict as exc:  # e.g. an index past the end of an array
            raise _bad(f"{kind} operation does not apply: {exc}") from None
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
