"""The API machinery's rules for one write, as pure functions of (old, new, now).

resourceVersion is an opaque string on the wire (a decimal of the global counter inside);
``generation`` moves only when the spec (everything but metadata and status) changes; the
``/status`` subresource changes status only and the main resource never does; an object with
finalizers is marked with ``deletionTimestamp`` instead of removed and goes once they are gone.
"""

from __future__ import annotations

import copy
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Any

from agentcoord.stores.objects.kinds import GROUP, GROUP_VERSION, Kind
from agentcoord.stores.objects.statuserrors import BadRequest, Conflict, Invalid

__all__ = [
    "Key",
    "Outcome",
    "conflict",
    "parse_rv",
    "prepare_create",
    "prepare_delete",
    "prepare_update",
    "rfc3339",
    "same_but_rv",
]

Key = tuple[str, str, str]  # (plural, namespace, name)
Obj = dict[str, Any]

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def rfc3339(ts: float) -> str:
    """Seconds-precision UTC timestamp, the wire format of metav1.Time."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def parse_rv(text: str | int | None, what: str = "resourceVersion") -> int | None:
    """The counter inside an opaque resourceVersion ("" and None mean unset)."""
    if text is None or text == "":
        return None
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise BadRequest(f"invalid {what}: {text!r}") from None
    if value < 0:
        raise BadRequest(f"invalid {what}: {text!r}")
    return value


def conflict(kind: Kind, name: str, why: str = "") -> Conflict:
    """kubectl's standard conflict text (it prints it after "Error from server (Conflict)")."""
    text = why or (
        "the object has been modified; please apply your changes to the latest version and "
        "try again"
    )
    return Conflict(
        f'Operation cannot be fulfilled on {kind.plural}.{GROUP} "{name}": {text}',
        details={"name": name, "group": GROUP, "kind": kind.plural},
    )


def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def same_but_rv(a: Obj, b: Obj) -> bool:
    """True when two versions differ at most in resourceVersion (a no-op write)."""
    ma = {k: v for k, v in a.get("metadata", {}).items() if k != "resourceVersion"}
    mb = {k: v for k, v in b.get("metadata", {}).items() if k != "resourceVersion"}
    return ma == mb and {k: v for k, v in a.items() if k != "metadata"} == {
        k: v for k, v in b.items() if k != "metadata"
    }


def prepare_create(
    kind: Kind, obj: Obj, namespace: str, now: float, *, keep_status: bool = False
) -> Obj:
    """The object as first stored (resourceVersion is filled in by the store)."""
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    if meta.get("resourceVersion"):
        raise BadRequest("resourceVersion should not be set on objects to be created")
    ns = meta.get("namespace") or namespace
    if ns != namespace:
        raise BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if out.get("apiVersion", GROUP_VERSION) != GROUP_VERSION or out.get("kind", kind.kind) != (
        kind.kind
    ):
        raise BadRequest(
            f"the API version in the data ({out.get('apiVersion')}) or kind ({out.get('kind')}) "
            f"does not match the expected {GROUP_VERSION}, Kind={kind.kind}"
        )
    if not meta.get("name") and meta.get("generateName"):
        suffix = "".join(secrets.choice(_GENERATE_ALPHABET) for _ in range(5))
        meta["name"] = f"{meta['generateName']}{suffix}"
    out["apiVersion"], out["kind"] = GROUP_VERSION, kind.kind
    meta["namespace"] = namespace
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = rfc3339(now)
    meta["generation"] = 1
    for gone in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields"):
        meta.pop(gone, None)
    if not keep_status:
        out.pop("status", None)  # status is the /status subresource's to write
    _drop_empty(meta)
    return out


def _drop_empty(meta: Obj) -> None:
    """Empty maps and lists in metadata are the same as absent (so no-op writes stay no-ops)."""
    for name in ("labels", "annotations", "finalizers", "ownerReferences"):
        if name in meta and not meta[name]:
            del meta[name]


def prepare_update(
    kind: Kind, old: Obj, new: Obj, *, subresource: str | None = None, keep_status: bool = False
) -> Obj:
    """The next version of ``old`` given the client's ``new``; raises 409 on a stale version.
    ``keep_status`` (the daemon's own writes, as on create) takes ``new``'s status too, so a
    change of spec and status is one version instead of two."""
    name = old["metadata"]["name"]
    new_meta = new.get("metadata") or {}
    if new_meta.get("name", name) != name:
        raise BadRequest(
            f"the name of the object ({new_meta.get('name')}) does not match the name on the URL "
            f"({name})"
        )
    want = parse_rv(new_meta.get("resourceVersion"))
    if want is None:
        raise Invalid(
            f'{kind.kind}.{GROUP} "{name}" is invalid: metadata.resourceVersion: Invalid value: '
            "0x0: must be specified for an update",
            [("metadata.resourceVersion", "must be specified for an update")],
        )
    if want != int(old["metadata"]["resourceVersion"]):
        raise conflict(kind, name)
    if new_meta.get("uid") and new_meta["uid"] != old["metadata"]["uid"]:
        raise conflict(kind, name, "Precondition failed: UID in precondition does not match")
    old_meta = old["metadata"]
    if subresource == "status":
        out = copy.deepcopy(old)
        if "status" in new:
            out["status"] = copy.deepcopy(new["status"])
        else:
            out.pop("status", None)
        return out
    out = {k: copy.deepcopy(v) for k, v in new.items() if k not in ("metadata", "status")}
    status_from = new if keep_status else old
    if "status" in status_from:
        out["status"] = copy.deepcopy(status_from["status"])
    meta = {
        k: copy.deepcopy(v)
        for k, v in new_meta.items()
        if k in ("labels", "annotations", "finalizers", "ownerReferences")
    }
    for keep in (
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "generation",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "resourceVersion",
    ):
        if keep in old_meta:
            meta[keep] = old_meta[keep]
    if old_meta.get("deletionTimestamp"):
        added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
        if added:
            raise Invalid(
                f'{kind.kind}.{GROUP} "{name}" is invalid: metadata.finalizers: Forbidden: no new '
                "finalizers can be added if the object is being deleted",
                [("metadata.finalizers", "no new finalizers can be added while deleting")],
            )
    out["apiVersion"], out["kind"] = GROUP_VERSION, kind.kind
    out["metadata"] = meta
    if _spec_part(out) != _spec_part(old):
        meta["generation"] = int(old_meta.get("generation", 1)) + 1
    _drop_empty(meta)
    return out


@dataclass(frozen=True)
class Outcome:
    """What a delete does: ``remove`` it now, or store ``marked`` (deletionTimestamp set)."""

    remove: bool
    obj: Obj


def prepare_delete(
    kind: Kind, old: Obj, now: float, *, rv: int | None = None, uid: str | None = None
) -> Outcome:
    """Delete with optional preconditions; finalizers turn it into a mark."""
    name = old["metadata"]["name"]
    if uid is not None and uid != old["metadata"]["uid"]:
        raise conflict(
            kind,
            name,
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
            f"{old['metadata']['uid']}",
        )
    if rv is not None and rv != int(old["metadata"]["resourceVersion"]):
        raise conflict(kind, name)
    if old["metadata"].get("finalizers"):
        if old["metadata"].get("deletionTimestamp"):
            return Outcome(False, old)
        out = copy.deepcopy(old)
        out["metadata"]["deletionTimestamp"] = rfc3339(now)
        out["metadata"]["deletionGracePeriodSeconds"] = 0
        return Outcome(False, out)
    return Outcome(True, old)
