"""The object store on a real Kubernetes API server, through lightkube (docs/store.md
"Backed by a real Kubernetes API server").

``--store kubernetes``: the same :class:`~agentcoord.stores.objects.backend.ObjectBackend`
contract as the SQLite store, with the CRDs ``agentcoord crds`` prints installed on the cluster.

- Reads are served from memory, as an informer does: per kind, list then watch from the list's
  resourceVersion; a 410 (compacted, or a watcher cut off) lists again. The responses to our
  own writes enter the mirror at once, so a caller reads its own write (:mod:`._mirror`).
- Writes go to the server, which decides them: 409 on a stale resourceVersion, finalizers,
  ``deletionTimestamp``, and garbage collection of owned objects are the server's job.
- ``watch()`` opens a watch on the server per call (replay from ``since`` is the server's
  history), fed into the same :class:`~agentcoord.stores.objects.watch.Watcher`.
- API errors become the same typed errors (:func:`._kubeclient.translate`, the one mapping).

Create and update validate and prune locally against the kinds' schemas first (the same
Strict/Warn/Ignore rules as the SQLite store); patches are validated by the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx2
from lightkube import AsyncClient, KubeConfig
from lightkube.core.generic_client import ALL_NS
from lightkube.generic_resource import create_namespaced_resource
from lightkube.types import CascadeType, PatchType

from agentcoord.kernel.tasks import TaskSet
from agentcoord.stores.objects._kubeclient import field_pairs, label_pairs, plain, translate
from agentcoord.stores.objects._mirror import Mirror, rv_of
from agentcoord.stores.objects.kinds import GROUP, KINDS, Kind
from agentcoord.stores.objects.patch import JSON_PATCH, MERGE_PATCH
from agentcoord.stores.objects.schema import validate
from agentcoord.stores.objects.selectors import (
    FieldSelector,
    LabelSelector,
    parse_fields,
    parse_labels,
)
from agentcoord.stores.objects.statuserrors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Expired,
    ObjectNotFound,
    StoreError,
    TooManyRequests,
    UnsupportedMediaType,
)
from agentcoord.stores.objects.watch import Watcher, WatchEvent
from agentcoord.stores.objects.writerules import Key

__all__ = ["KubeObjectStore"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
_Warnings = list[str]  # out-parameter: warnings for the client (fieldValidation=Warn)
_VERSION = "v1"
_BACKOFF_MAX = 5.0


def _kind(plural: str) -> Kind:
    kind = KINDS.get(plural)
    if kind is None:
        raise ObjectNotFound(f"the server could not find the requested resource ({plural})")
    return kind


class KubeObjectStore:
    """An async context manager: the mirror is filled (every kind listed) on entry."""

    def __init__(
        self,
        kubeconfig: Path | None,
        *,
        namespace: str | None = "default",
        context: str | None = None,
        watch_queue: int = 1_000,
        ready_timeout: float = 15.0,
        transport: Any = None,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace  # the namespace mirrored for reads; None: all of them
        self.context = context
        self.watch_queue = watch_queue
        self.ready_timeout = ready_timeout
        self._transport = transport  # an httpx2 transport for tests of the informer's edges
        self._mirror = Mirror()
        self._res = {
            plural: create_namespaced_resource(GROUP, _VERSION, kind.kind, plural)
            for plural, kind in KINDS.items()
        }
        self._client: Any = None
        # The informers and one pump per watch (docs/architecture.md "Tasks").
        self._tasks = TaskSet("kubernetes object store")
        self._watchers: set[Watcher] = set()
        self._failed: dict[str, StoreError] = {}

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> KubeObjectStore:
        if self.kubeconfig is None:
            raise StoreError("--store kubernetes needs a kubeconfig")
        try:
            config = KubeConfig.from_file(str(self.kubeconfig)).get(context_name=self.context)
        except Exception as exc:
            raise StoreError(f"cannot use kubeconfig {self.kubeconfig}: {exc}") from None
        if config is None:
            raise StoreError(f"kubeconfig {self.kubeconfig} has no current context")
        # trust_env=False: components receive config, they do not read the environment.
        self._client = AsyncClient(
            config=config, timeout=httpx2.Timeout(10.0), trust_env=False, transport=self._transport
        )
        ready = {plural: asyncio.Event() for plural in KINDS}
        await self._tasks.__aenter__()
        for plural in KINDS:
            self._tasks.spawn(self._inform(plural, ready[plural]), name=f"kube-{plural}")
        try:
            async with asyncio.timeout(self.ready_timeout):
                for event in ready.values():
                    await event.wait()
            if self._failed:
                plural, err = next(iter(self._failed.items()))
                hint = ""
                if isinstance(err, ObjectNotFound):
                    hint = " (install the CRDs: agentcoord crds | kubectl apply -f -)"
                raise StoreError(f"cannot list {plural}.{GROUP}: {err.message}{hint}")
        except BaseException as exc:
            await self.__aexit__(None, None, None)
            if isinstance(exc, TimeoutError):
                raise StoreError(
                    f"the Kubernetes API server did not answer within {self.ready_timeout}s"
                ) from None
            raise
        log.info(
            "object store on %s (namespace %s) at rv %d (%d objects)",
            config.cluster.server,
            self.namespace or "*",
            self._mirror.revision,
            len(self._mirror.cache),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        for w in list(self._watchers):
            w.end()
        try:
            # Cancels the informers and the pumps, and waits for them.
            await self._tasks.__aexit__(None, None, None)
        finally:
            if self._client is not None:
                try:
                    await self._client.close()
                except Exception:
                    log.warning("closing the Kubernetes client failed", exc_info=True)
                self._client = None

    # -- the informer --------------------------------------------------------------------

    async def _inform(self, plural: str, ready: asyncio.Event) -> None:
        """List, then watch from the list's rv; on 410 (or a broken stream) list again."""
        res = self._res[plural]
        scope = self.namespace or ALL_NS
        backoff = 0.1
        while True:
            try:
                listing = self._client.list(res, namespace=scope)
                items = [plain(o) async for o in listing]
                rv = int(listing.resourceVersion)
                self._mirror.relist(plural, items, rv)
                ready.set()
                backoff = 0.1
                stream = self._client.watch(res, namespace=scope, resource_version=str(rv))
                async for etype, obj in stream:
                    self._mirror.event(plural, etype, plain(obj))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                err = translate(exc)
                if not ready.is_set():
                    self._failed[plural] = err
                    ready.set()
                    return
                if isinstance(err, Expired):
                    log.info("watch of %s expired (%s); listing again", plural, err.message)
                    continue
                log.warning("watch of %s failed (%s); listing again", plural, err.message)
                await asyncio.sleep(backoff)  # a retry timer, not polling for state
                backoff = min(backoff * 2, _BACKOFF_MAX)

    # -- reads ---------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        """The newest resourceVersion seen (lists, watch events, our own writes)."""
        return self._mirror.revision

    def _check_scope(self, namespace: str | None) -> None:
        if self.namespace is not None and namespace != self.namespace:
            raise BadRequest(
                f"this store mirrors namespace {self.namespace!r} only, not {namespace or '*'!r}"
            )

    async def get(self, plural: str, namespace: str, name: str) -> Obj:
        """A copy of one object from the mirror, or :class:`ObjectNotFound`."""
        return json.loads(self.get_raw(plural, namespace, name))  # type: ignore[no-any-return]

    def get_raw(self, plural: str, namespace: str, name: str) -> bytes:
        """The JSON of one object, from the mirror."""
        kind = _kind(plural)
        self._check_scope(namespace)
        entry = self._mirror.cache.get((plural, namespace, name))
        if entry is None:
            raise ObjectNotFound(f'{kind.plural}.{GROUP} "{name}" not found')
        return entry.raw

    def list_raw(
        self,
        plural: str,
        namespace: str | None = None,
        labels: LabelSelector | str | None = None,
        fields: FieldSelector | str | None = None,
    ) -> tuple[list[bytes], Sequence[Obj], int]:
        """Matching objects from the mirror as (JSON, dicts decoded on access) and the list's
        rv."""
        _kind(plural)
        self._check_scope(namespace)
        lsel = labels if isinstance(labels, LabelSelector) else parse_labels(labels)
        fsel = fields if isinstance(fields, FieldSelector) else parse_fields(fields)
        raws, objs = self._mirror.cache.select(plural, namespace, lsel, fsel)
        return raws, objs, self._mirror.revision

    async def list(
        self,
        plural: str,
        namespace: str | None = None,
        labels: LabelSelector | str | None = None,
        fields: FieldSelector | str | None = None,
    ) -> tuple[list[Obj], int]:
        """Copies of the matching objects and the resourceVersion of the list."""
        raws, _, rv = self.list_raw(plural, namespace, labels, fields)
        return [json.loads(r) for r in raws], rv

    # -- writes --------------------------------------------------------------------------

    @property
    def _api(self) -> Any:
        if self._client is None:
            raise TooManyRequests("the object store is not open")
        return self._client

    async def _call(self, plural: str, coro: Any, namespace: str = "", name: str = "") -> Obj:
        try:
            obj = plain(await coro)
        except Exception as exc:
            err = translate(exc)
            if isinstance(err, Conflict | AlreadyExists) and name:
                # Someone else wrote first and the mirror may not have seen it yet: fetch it,
                # so the caller's retry (read, change, write) starts from the newest version.
                await self._refresh(plural, namespace, name)
            raise err from None
        self._remember(plural, obj)
        return obj

    async def _refresh(self, plural: str, namespace: str, name: str) -> None:
        try:
            fresh = plain(await self._api.get(self._res[plural], name, namespace=namespace))
        except Exception as exc:
            log.debug("could not refresh %s/%s/%s: %s", plural, namespace, name, exc)
            return
        self._remember(plural, fresh)

    def _remember(self, plural: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._mirror.gone(plural, obj)  # the write released it: the server deleted it
        else:
            self._mirror.wrote(plural, obj)

    def _body(self, kind: Kind, namespace: str, obj: Obj, field_validation: str) -> Any:
        body, warns = validate(kind, obj, field_validation)
        meta = body.setdefault("metadata", {})
        meta.setdefault("namespace", namespace)
        body["apiVersion"], body["kind"] = f"{GROUP}/{_VERSION}", kind.kind
        return body, warns

    async def create(
        self,
        plural: str,
        namespace: str,
        obj: Obj,
        *,
        field_validation: str = "Strict",
        keep_status: bool = False,
        warnings: _Warnings | None = None,
    ) -> Obj:
        """Create; with ``keep_status``, then write the status too (the server drops it on
        create): two writes, where the SQLite store makes one."""
        kind = _kind(plural)
        body, warns = self._body(kind, namespace, obj, field_validation)
        if warnings is not None:
            warnings.extend(warns)
        res = self._res[plural]
        name = body["metadata"].get("name", "")
        created = await self._call(
            plural, self._api.create(res.from_dict(body), namespace=namespace), namespace, name
        )
        status = body.get("status")
        if keep_status and status and created.get("status") != status:
            created = await self._call(
                plural,
                self._api.replace(
                    res.Status.from_dict({**created, "status": status}),
                    created["metadata"]["name"],
                    namespace=namespace,
                ),
            )
        return created

    async def update(
        self,
        plural: str,
        namespace: str,
        obj: Obj,
        *,
        subresource: str | None = None,
        field_validation: str = "Strict",
        keep_status: bool = False,
        warnings: _Warnings | None = None,
    ) -> Obj:
        """Replace (PUT); the server answers 409 Conflict on a stale resourceVersion. With
        ``keep_status``, then the status too, at the version the first write made (two writes,
        where the SQLite store makes one)."""
        kind = _kind(plural)
        body, warns = self._body(kind, namespace, obj, field_validation)
        if warnings is not None:
            warnings.extend(warns)
        name = body["metadata"].get("name")
        if not name:
            raise BadRequest("the object has no metadata.name")
        res = self._res[plural]
        if subresource == "status":
            call = self._api.replace(res.Status.from_dict(body), name, namespace=namespace)
        elif subresource is None:
            call = self._api.replace(res.from_dict(body), namespace=namespace)
        else:
            raise ObjectNotFound(f"no subresource {subresource!r} on {plural}")
        written = await self._call(plural, call, namespace, name)
        status = body.get("status")
        if keep_status and subresource is None and written.get("status") != status:
            status_body = {**written, "status": status or {}}
            call = self._api.replace(res.Status.from_dict(status_body), name, namespace=namespace)
            written = await self._call(plural, call, namespace, name)
        return written

    async def patch(
        self,
        plural: str,
        namespace: str,
        name: str,
        patch: Any,
        *,
        content_type: str = MERGE_PATCH,
        subresource: str | None = None,
        field_validation: str = "Strict",
        warnings: _Warnings | None = None,
    ) -> Obj:
        """Merge or JSON patch on the server. Strategic is sent and refused there (415, as for
        any custom resource); apply is refused here, since a real server would accept it."""
        _kind(plural)
        media = content_type.split(";")[0].strip()
        try:
            patch_type = PatchType(media)
        except ValueError:
            patch_type = None
        if patch_type is None or patch_type is PatchType.APPLY:
            raise UnsupportedMediaType(
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {JSON_PATCH}, {MERGE_PATCH}"
            )
        res: Any = self._res[plural]
        if subresource == "status":
            res = res.Status
        elif subresource is not None:
            raise ObjectNotFound(f"no subresource {subresource!r} on {plural}")
        call = self._api.patch(res, name, patch, namespace=namespace, patch_type=patch_type)
        return await self._call(plural, call, namespace, name)

    async def delete(
        self,
        plural: str,
        namespace: str,
        name: str,
        *,
        rv: int | None = None,
        uid: str | None = None,
        propagation: str = "Background",
    ) -> Obj:
        """Delete; returns the object as marked (finalizers left) or as last seen.

        ``rv``/``uid`` preconditions are checked against a fresh read, not atomically with
        the delete (lightkube sends no DeleteOptions body).
        """
        _kind(plural)
        res = self._res[plural]
        key: Key = (plural, namespace, name)
        before = self._mirror.cache.get(key)
        try:
            if rv is not None or uid is not None:
                current = plain(await self._api.get(res, name, namespace=namespace))
                if uid is not None and current["metadata"].get("uid") != uid:
                    raise Conflict(f'Precondition failed: UID in precondition: {uid}, for "{name}"')
                if rv is not None and rv_of(current) != rv:
                    raise Conflict(f'Precondition failed: resourceVersion {rv}, for "{name}"')
            await self._api.delete(res, name, namespace=namespace, cascade=CascadeType(propagation))
        except Exception as exc:
            raise translate(exc) from None
        try:
            return await self._call(plural, self._api.get(res, name, namespace=namespace))
        except ObjectNotFound:
            self._mirror.deleted(key)
            return before.obj if before else {"metadata": {"name": name, "namespace": namespace}}

    # -- watch ---------------------------------------------------------------------------

    async def watch(
        self,
        plural: str,
        *,
        namespace: str | None = None,
        labels: LabelSelector | str | None = None,
        fields: FieldSelector | str | None = None,
        since: int | None = None,
    ) -> Watcher:
        """A watch on the server: from ``since`` (the server replays its history; 410 below
        its compacted point), or its current objects as ADDED first."""
        _kind(plural)
        lsel = labels if isinstance(labels, LabelSelector) else parse_labels(labels)
        fsel = fields if isinstance(fields, FieldSelector) else parse_fields(fields)
        w = Watcher(plural, namespace, lsel, fsel, self.watch_queue)
        if self._client is None or not self._tasks.running:
            w.end()
            return w
        stream = self._client.watch(
            self._res[plural],
            namespace=namespace or ALL_NS,
            labels=label_pairs(lsel),
            fields=field_pairs(fsel),
            resource_version=str(since) if since else None,
        )
        pump = self._tasks.spawn(self._pump(w, stream), name=f"kube-watch-{plural}")
        self._watchers.add(w)

        def closed(x: Watcher) -> None:
            self._watchers.discard(x)
            pump.cancel("watch closed")

        w.on_close.append(closed)
        return w

    async def _pump(self, w: Watcher, stream: Any) -> None:
        try:
            async for etype, obj in stream:
                body = plain(obj)
                if etype != "BOOKMARK":
                    w.deliver(WatchEvent(etype, body, rv_of(body)))
                if w.ended:
                    return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            w.end(translate(exc))
        else:
            w.end()
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()
