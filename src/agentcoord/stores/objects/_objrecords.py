"""The generic half of the store-backed record seams: a record type as objects of one kind.

Each object carries its record whole in the ``fastverk.savvifi.com/record`` annotation (the
exact Python record) next to the spec/status fields a person reads with kubectl; the
annotation is what the daemon reads back. Conditional changes are compare-and-set on
``metadata.resourceVersion``, retried on 409. Reads come from the store's memory cache.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Generic, TypeVar

from agentcoord.errors import NotFound
from agentcoord.stores.objects.errors import Conflict, ObjectNotFound
from agentcoord.stores.objects.kinds import GROUP, GROUP_VERSION
from agentcoord.stores.objects.store import ObjectStore

__all__ = ["KIND_LABEL", "RECORD_ANNOTATION", "ObjectRecords", "object_name"]

RECORD_ANNOTATION = f"{GROUP}/record"
KEY_ANNOTATION = f"{GROUP}/record-key"
KIND_LABEL = f"{GROUP}/record-kind"
_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_CAS_TRIES = 20

R = TypeVar("R")


def object_name(prefix: str, key: str) -> str:
    """The object name for a record key: the key itself when it is a DNS label, else a
    stable ``<prefix>-<digest>`` (the key is kept in an annotation)."""
    if len(key) <= 63 and _DNS_NAME.match(key):
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{prefix}-{digest}"


class ObjectRecords(Generic[R]):
    """Records of one type as objects of one kind, selected by a record-kind label."""

    def __init__(
        self,
        store: ObjectStore,
        *,
        plural: str,
        kind: str,
        record_kind: str,
        key: Callable[[R], str],
        load: Callable[[dict[str, Any]], R],
        shape: Callable[[R], tuple[dict[str, Any], dict[str, Any]]],
        namespace: str = "default",
    ) -> None:
        self._store = store
        self._plural, self._kind, self._record_kind = plural, kind, record_kind
        self._key, self._load, self._shape = key, load, shape
        self._ns = namespace

    def _name(self, key: str) -> str:
        return object_name(self._record_kind, key)

    def _obj(self, key: str) -> dict[str, Any] | None:
        try:
            obj: dict[str, Any] = json.loads(
                self._store.get_raw(self._plural, self._ns, self._name(key))
            )
        except ObjectNotFound:
            return None
        meta = obj.get("metadata", {})
        annotations = meta.get("annotations") or {}
        if (meta.get("labels") or {}).get(KIND_LABEL) != self._record_kind:
            return None  # an object of another origin under that name is not ours
        if annotations.get(KEY_ANNOTATION) != key or RECORD_ANNOTATION not in annotations:
            return None
        return obj

    def get(self, key: str) -> R | None:
        obj = self._obj(key)
        return None if obj is None else self._record_of(obj)

    def _record_of(self, obj: dict[str, Any]) -> R:
        return self._load(json.loads(obj["metadata"]["annotations"][RECORD_ANNOTATION]))

    def list(self) -> list[R]:
        _, objs, _ = self._store.list_raw(
            self._plural, self._ns, f"{KIND_LABEL}={self._record_kind}"
        )
        return [
            self._record_of(o)
            for o in objs
            if RECORD_ANNOTATION in (o["metadata"].get("annotations") or {})
        ]

    def _body(self, record: R, old: dict[str, Any] | None) -> dict[str, Any]:
        spec, status = self._shape(record)
        key = self._key(record)
        meta: dict[str, Any] = {
            "name": self._name(key),
            "namespace": self._ns,
            "labels": {KIND_LABEL: self._record_kind},
            "annotations": {
                KEY_ANNOTATION: key,
                RECORD_ANNOTATION: json.dumps(asdict(record), separators=(",", ":"), default=str),  # type: ignore[call-overload]
            },
        }
        if old is not None:
            old_meta = old["metadata"]
            meta["labels"] = {**(old_meta.get("labels") or {}), **meta["labels"]}
            meta["annotations"] = {**(old_meta.get("annotations") or {}), **meta["annotations"]}
            meta["resourceVersion"] = old_meta["resourceVersion"]
        body = {"apiVersion": GROUP_VERSION, "kind": self._kind, "metadata": meta, "spec": spec}
        if status:
            body["status"] = status
        return body

    async def upsert(self, record: R) -> None:
        """Create or replace (last writer wins: the caller owns the record)."""
        for _ in range(_CAS_TRIES):
            old = self._obj(self._key(record))
            try:
                await self._write(record, old)
                return
            except Conflict:
                continue
        raise Conflict(f"{self._kind} {self._key(record)} keeps changing; try again")

    async def _write(self, record: R, old: dict[str, Any] | None) -> None:
        body = self._body(record, old)
        if old is None:
            await self._store.create(self._plural, self._ns, body, keep_status=True)
            return
        updated = await self._store.update(self._plural, self._ns, body)
        if "status" in body and body["status"] != updated.get("status"):
            # status is a subresource: a second write, at the version the first one made.
            rv = updated["metadata"]["resourceVersion"]
            body["metadata"]["resourceVersion"] = rv
            await self._store.update(self._plural, self._ns, body, subresource="status")

    async def change(self, key: str, fn: Callable[[R], R]) -> R:
        """Apply ``fn`` to the current record and store the result (CAS, retried on 409)."""
        for _ in range(_CAS_TRIES):
            old = self._obj(key)
            if old is None:
                raise NotFound(f"{self._kind} {key} does not exist")
            new = fn(self._record_of(old))
            try:
                await self._write(new, old)
                return new
            except Conflict:
                continue
        raise Conflict(f"{self._kind} {key} keeps changing; try again")

    async def create_if_absent(self, record: R) -> tuple[R, bool]:
        existing = self.get(self._key(record))
        if existing is not None:
            return existing, False
        try:
            await self._write(record, None)
        except Conflict:  # AlreadyExists is a 409 too: someone created it first
            found = self.get(self._key(record))
            if found is None:
                raise
            return found, False
        return record, True

    async def delete(self, key: str) -> bool:
        if self._obj(key) is None:
            return False
        try:
            await self._store.delete(self._plural, self._ns, self._name(key))
        except ObjectNotFound:
            return False
        return True
