"""Validation and pruning of objects against their OpenAPI v3 schema (pure).

As for custom resources, unknown fields are always pruned; ``fieldValidation=Strict`` turns them
into a 400 ``strict decoding error``, ``Warn`` into warnings, ``Ignore`` drops them silently.
Type, enum, required and minItems errors are 422 Invalid with one cause per field.
"""

from __future__ import annotations

import re
from typing import Any

from agentcoord.stores.objects.kinds import GROUP, Kind
from agentcoord.stores.objects.statuserrors import BadRequest, Invalid

__all__ = ["check_object", "validate"]

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

_META_FIELDS = {
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
    "managedFields",
    "selfLink",
}
_OWNER_FIELDS = {"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def _type_ok(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES.get(kind, (object,)))


def _walk(
    value: Any,
    schema: dict[str, Any],
    path: str,
    errors: list[tuple[str, str]],
    unknown: list[str],
) -> Any:
    """Check ``value`` against ``schema``; return it with unknown fields pruned."""
    kind = schema.get("type")
    if value is None:
        return value  # null is "unset" for optional fields, as the apiserver treats it
    if kind and not _type_ok(value, kind):
        errors.append(
            (
                path,
                f'Invalid value: "{type(value).__name__}": {path} in body must be of type '
                f'{kind}: "{type(value).__name__}"',
            )
        )
        return value
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{v}"' for v in schema["enum"])
        errors.append((path, f'Unsupported value: "{value}": supported values: {allowed}'))
    if kind == "array":
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(
                (
                    path,
                    f"Invalid value: {len(value)}: {path} in body should have at least "
                    f"{schema['minItems']} items",
                )
            )
        items = schema.get("items", {})
        return [_walk(v, items, f"{path}[{i}]", errors, unknown) for i, v in enumerate(value)]
    if kind == "object":
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return value
        for req in schema.get("required", []):
            if req not in value:
                errors.append((f"{path}.{req}", "Required value"))
        props: dict[str, Any] = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        out: dict[str, Any] = {}
        for key, sub in value.items():
            where = f"{path}.{key}" if path else key
            if key in props:
                out[key] = _walk(sub, props[key], where, errors, unknown)
            elif isinstance(extra, dict):
                out[key] = _walk(sub, extra, where, errors, unknown)
            else:
                unknown.append(where)
        return out
    return value


def _check_metadata(
    meta: dict[str, Any], errors: list[tuple[str, str]], unknown: list[str]
) -> None:
    for key in meta:
        if key not in _META_FIELDS:
            unknown.append(f"metadata.{key}")
    for mapname in ("labels", "annotations"):
        m = meta.get(mapname)
        if m is None:
            continue
        if not isinstance(m, dict):
            errors.append((f"metadata.{mapname}", "Invalid value: must be a map of strings"))
            continue
        for k, v in m.items():
            if not isinstance(v, str):
                errors.append((f"metadata.{mapname}.{k}", "Invalid value: must be a string"))
            elif mapname == "labels" and not _valid_label(k, v):
                errors.append(("metadata.labels", f'Invalid value: "{k}={v}": invalid label'))
    fins = meta.get("finalizers")
    if fins is not None and (
        not isinstance(fins, list) or not all(isinstance(f, str) and f for f in fins)
    ):
        errors.append(("metadata.finalizers", "Invalid value: must be a list of strings"))
    owners = meta.get("ownerReferences")
    if owners is not None:
        if not isinstance(owners, list):
            errors.append(("metadata.ownerReferences", "Invalid value: must be a list"))
        else:
            for i, ref in enumerate(owners):
                where = f"metadata.ownerReferences[{i}]"
                if not isinstance(ref, dict):
                    errors.append((where, "Invalid value: must be an object"))
                    continue
                unknown.extend(f"{where}.{k}" for k in ref if k not in _OWNER_FIELDS)
                for req in ("apiVersion", "kind", "name", "uid"):
                    if not isinstance(ref.get(req), str) or not ref[req]:
                        errors.append((f"{where}.{req}", "Required value"))


def _valid_label(key: str, value: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _NAME.match(prefix)):
        return False
    return (
        0 < len(name) <= 63
        and bool(_LABEL_NAME.match(name))
        and len(value) <= 63
        and bool(_LABEL_VALUE.match(value))
    )


def check_object(kind: Kind, obj: Any) -> None:
    """The checks the schema cannot say: a DNS-subdomain name and a DNS-label namespace."""
    meta = obj.get("metadata") or {}
    if not isinstance(meta, dict):
        raise _invalid(kind, "", [("metadata", "Invalid value: must be an object")])
    name, ns = meta.get("name", ""), meta.get("namespace", "")
    # A wrong type is a 422 naming the field, as the apiserver's decoder answers, never an
    # error deeper in (docs/security.md "Input at the boundary").
    wrong = [
        (f, "Invalid value: must be a string")
        for f, v in (("metadata.name", name), ("metadata.namespace", ns))
        if not isinstance(v, str)
    ]
    if wrong:
        raise _invalid(kind, name if isinstance(name, str) else "", wrong)
    causes: list[tuple[str, str]] = []
    if not name:
        causes.append(("metadata.name", "Required value: name or generateName is required"))
    elif len(name) > 253 or not _NAME.match(name):
        causes.append(
            (
                "metadata.name",
                f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower '
                "case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character",
            )
        )
    if ns and (len(ns) > 63 or not _DNS1123_LABEL.match(ns)):
        causes.append(("metadata.namespace", f'Invalid value: "{ns}": not a DNS label'))
    if causes:
        raise _invalid(kind, name, causes)


def _invalid(kind: Kind, name: str, causes: list[tuple[str, str]]) -> Invalid:
    text = ", ".join(f"{f}: {m}" for f, m in causes)
    return Invalid(
        f'{kind.kind}.{GROUP} "{name}" is invalid: {text}',
        causes,
        details={"name": name, "group": GROUP, "kind": kind.kind},
    )


def validate(
    kind: Kind, obj: Any, field_validation: str = "Strict"
) -> tuple[dict[str, Any], list[str]]:
    """Validate and prune ``obj``; returns (pruned object, warnings).

    Raises :class:`BadRequest` for unknown fields under ``Strict`` and :class:`Invalid` for
    schema violations. ``field_validation`` is Strict, Warn or Ignore (the apiserver's names).
    """
    if not isinstance(obj, dict):
        raise BadRequest("the request body must be a JSON object")
    errors: list[tuple[str, str]] = []
    unknown: list[str] = []
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        errors.append(("metadata", "Invalid value: must be an object"))
        meta = {}
    _check_metadata(meta or {}, errors, unknown)
    top = kind.schema()
    body = {k: v for k, v in obj.items() if k != "metadata"}
    pruned = _walk(body, top, "", errors, unknown)
    name = (meta or {}).get("name", "")
    if unknown and field_validation == "Strict":
        listed = ", ".join(f'unknown field "{u}"' for u in unknown)
        raise BadRequest(f"strict decoding error: {listed}")
    if errors:
        raise _invalid(kind, name, errors)
    pruned["metadata"] = {k: v for k, v in (meta or {}).items() if k in _META_FIELDS}
    warnings = [f'unknown field "{u}"' for u in unknown] if field_validation == "Warn" else []
    return pruned, warnings
