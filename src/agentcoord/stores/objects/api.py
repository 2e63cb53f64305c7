"""The HTTP API kubectl talks to: discovery, OpenAPI, CRUD, ``/status``, watch, Tables.

Paths are those of the apiserver for group ``fastverk.savvifi.com/v1``. Errors are
``metav1.Status`` bodies (:func:`status_body` is the one mapping). Watches stream one JSON
event per line and stay open until ``timeoutSeconds`` (default 30 min) or shutdown.

Memory is bounded (docs/security.md "Limits"): a create, update or patch body over
``max_object_bytes`` (1.5 MiB by default, etcd's default request limit) is refused with 413
``RequestEntityTooLarge``, as kube-apiserver refuses an oversize body; a list is streamed from
the stored objects' bytes in chunks, so concurrent lists hold no copy of the whole list.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from itertools import accumulate
from typing import Any
from urllib.parse import unquote

from agentcoord.kernel.httpserver import HttpRequest, HttpResponse
from agentcoord.kernel.jsoncodec import lone_surrogate
from agentcoord.stores.objects import apidiscovery as discovery
from agentcoord.stores.objects.kinds import GROUP, GROUP_VERSION, KINDS, VERSION, Kind
from agentcoord.stores.objects.patch import MERGE_PATCH
from agentcoord.stores.objects.statuserrors import (
    BadRequest,
    Expired,
    Forbidden,
    Invalid,
    MethodNotAllowed,
    ObjectNotFound,
    RequestEntityTooLarge,
    StoreError,
)
from agentcoord.stores.objects.store import ObjectStore
from agentcoord.stores.objects.tables import LiveCells, table, wants_table
from agentcoord.stores.objects.watch import Watcher, WatchEvent
from agentcoord.stores.objects.writerules import parse_rv

__all__ = [
    "DEFAULT_MAX_OBJECT_BYTES",
    "MAX_BODY_DEPTH",
    "KubeApi",
    "RequestEntityTooLarge",
    "json_depth",
    "status_body",
]

log = logging.getLogger(__name__)

_JSON = "application/json"
_DEFAULT_WATCH_TIMEOUT = 1800.0
_FIELD_VALIDATION = {"Strict", "Warn", "Ignore"}
# Objects and arrays nested deeper than this are refused with a 400 before they are decoded, as
# the apiserver refuses bodies past its decoder's depth limit (sigs.k8s.io/json "exceeded max
# depth"); ours is far above any real object and far below what recursion could bear
# (docs/store.md "Limits").
MAX_BODY_DEPTH = 100
_JSON_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = re.compile(rb"[^\[\]{}]+")
_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
DEFAULT_MAX_OBJECT_BYTES = 1536 << 10
_LIST_CHUNK = 256 << 10  # a list is written in chunks of about this size


def status_body(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """The one mapping from an error to (HTTP status, metav1.Status)."""
    if isinstance(exc, StoreError):
        code, reason, message, details = exc.code, exc.reason, exc.message, dict(exc.details)
        if isinstance(exc, Invalid):
            details["causes"] = [
                {"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in exc.causes
            ]
    else:
        code, reason, message, details = 500, "InternalError", f"internal error: {exc}", {}
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return code, body


def _json(status: int, doc: Any, headers: list[tuple[str, str]] | None = None) -> HttpResponse:
    body = json.dumps(doc, separators=(",", ":")).encode()
    return HttpResponse(status, body, [("content-type", _JSON), *(headers or [])])


def _raw(status: int, body: bytes, headers: list[tuple[str, str]] | None = None) -> HttpResponse:
    return HttpResponse(status, body, [("content-type", _JSON), *(headers or [])])


def _q(req: HttpRequest, name: str, default: str = "") -> str:
    values = req.query.get(name)
    return values[-1] if values else default


def _warnings(warns: list[str]) -> list[tuple[str, str]]:
    return [("warning", '299 - "' + w.replace('"', '\\"') + '"') for w in warns]


def json_depth(raw: bytes) -> int:
    """How deep objects and arrays nest in the JSON text ``raw`` (strings skipped), without
    decoding it."""
    brackets = _NOT_BRACKETS.sub(b"", _JSON_STRINGS.sub(b"", raw)).translate(_STEP)
    return max(accumulate(memoryview(brackets).cast("b")), default=0)


def _body(req: HttpRequest) -> Any:
    raw = req.body or b"null"
    if json_depth(raw) > MAX_BODY_DEPTH:
        raise BadRequest(
            f"the request body nests objects and arrays deeper than {MAX_BODY_DEPTH} levels "
            f"(exceeded max depth of {MAX_BODY_DEPTH})"
        )
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise BadRequest(f"the request body is not valid JSON: {exc}") from None
    return _valid_unicode(doc)


def _valid_unicode(doc: Any) -> Any:
    """``doc``, refused when it holds a lone surrogate (docs/security.md "Input at the
    boundary"): such text cannot be stored as UTF-8."""
    where = lone_surrogate(doc)
    if where is not None:
        raise BadRequest(
            f"the request body is not valid Unicode at {where or 'its top'}: a lone surrogate"
        )
    return doc


def _field_validation(req: HttpRequest) -> str:
    value = _q(req, "fieldValidation", "Warn") or "Warn"
    if value not in _FIELD_VALIDATION:
        raise BadRequest(f"fieldValidation {value!r} is not Strict, Warn or Ignore")
    return value


def _answer_refused(kind: Kind, name: str) -> Forbidden:
    """A HumanPrompt's status is the human's answer; it is given with the human's proof and
    audited (docs/security.md "HumanPrompt status through the kube API"), never written here."""
    return Forbidden(
        f'{kind.plural}.{GROUP} "{name}" is forbidden: the status of a HumanPrompt is the '
        "human's answer and is not written through the kube API; answer with `agentcoord "
        "answer` or the console, which prove it is you and audit it",
        details={"name": name, "group": GROUP, "kind": kind.plural},
    )


class KubeApi:
    """The request handler; ``addr`` is what ``/api`` reports as the server address."""

    def __init__(
        self,
        store: ObjectStore,
        addr: Callable[[], str] = lambda: "127.0.0.1",
        *,
        bookmark_interval: float = 10.0,
        clock: Callable[[], float] = time.time,
        live: LiveCells | None = None,
        max_object_bytes: int = DEFAULT_MAX_OBJECT_BYTES,
    ) -> None:
        self.store = store
        self.max_object_bytes = max_object_bytes
        self.live = live  # Table cells from the daemon's views (the Agent's focus)
        self._addr = addr
        self.bookmark_interval = bookmark_interval
        self._clock = clock
        self._watches: set[Watcher] = set()

    async def aclose(self) -> None:
        """End every open watch stream (before the listener closes its connections)."""
        for w in list(self._watches):
            w.end()

    async def __call__(self, req: HttpRequest) -> HttpResponse:
        try:
            return await self._route(req)
        except StoreError as exc:
            code, body = status_body(exc)
            return _json(code, body)
        except Exception as exc:
            log.exception("kube api %s %s failed", req.method, req.path)
            code, body = status_body(exc)
            return _json(code, body)

    async def _route(self, req: HttpRequest) -> HttpResponse:
        if req.method in ("POST", "PUT", "PATCH") and len(req.body) > self.max_object_bytes:
            raise RequestEntityTooLarge(
                f"Request entity too large: limit is {self.max_object_bytes} bytes "
                f"(this body has {len(req.body)})"
            )
        parts = [unquote(p) for p in req.path.strip("/").split("/") if p]
        if req.method == "GET":
            fixed = self._fixed(parts)
            if fixed is not None:
                return fixed
        if parts[:3] != ["apis", GROUP, VERSION] or len(parts) < 4:
            raise ObjectNotFound("the server could not find the requested resource")
        rest = parts[3:]
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        kind = KINDS.get(rest[0])
        if kind is None or len(rest) > 3 or (len(rest) == 3 and rest[2] != "status"):
            raise ObjectNotFound("the server could not find the requested resource")
        if len(rest) == 1:
            return await self._collection(req, kind, namespace)
        if namespace is None:
            raise ObjectNotFound("the server could not find the requested resource")
        return await self._item(req, kind, namespace, rest[1], "status" if len(rest) == 3 else None)

    def _fixed(self, parts: list[str]) -> HttpResponse | None:
        path = "/".join(parts)
        if path == "version":
            return _json(200, discovery.version_info())
        if path == "api":
            return _json(200, discovery.api_versions(self._addr()))
        if path == "apis":
            return _json(200, discovery.api_group_list())
        if path == f"apis/{GROUP}":
            return _json(200, discovery.api_group())
        if path == f"apis/{GROUP}/{VERSION}":
            return _json(200, discovery.api_resource_list())
        if path == "openapi/v3":
            return _json(200, discovery.openapi_root())
        if path == f"openapi/v3/apis/{GROUP}/{VERSION}":
            return _raw(200, discovery.group_openapi_bytes())
        if path in ("healthz", "livez", "readyz"):
            return HttpResponse(200, b"ok", [("content-type", "text/plain")])
        return None

    # -- collections ---------------------------------------------------------------------

    async def _collection(self, req: HttpRequest, kind: Kind, ns: str | None) -> HttpResponse:
        if req.method == "GET":
            if _q(req, "watch") in ("true", "1"):
                return await self._watch(req, kind, ns)
            return self._list(req, kind, ns)
        if req.method == "POST" and ns is not None:
            self._no_dry_run(req)
            warns: list[str] = []
            obj = await self.store.create(
                kind.plural, ns, _body(req), field_validation=_field_validation(req), warnings=warns
            )
            return _json(201, obj, _warnings(warns))
        raise MethodNotAllowed(f"{req.method} is not supported on {req.path}")

    def _list(self, req: HttpRequest, kind: Kind, ns: str | None) -> HttpResponse:
        rv = parse_rv(_q(req, "resourceVersion"))
        # Only an Exact list names a state we may no longer have; NotOlderThan (the default)
        # is served by the current state.
        if rv and _q(req, "resourceVersionMatch") == "Exact" and rv != self.store.revision:
            if rv < self.store.compacted:
                raise Expired(f"too old resource version: {rv} ({self.store.compacted})")
            raise Expired(f"resource version {rv} is not the current one; list without it")
        raws, objs, at = self.store.list_raw(
            kind.plural, ns, _q(req, "labelSelector"), _q(req, "fieldSelector")
        )
        if wants_table(req.headers.get("accept", "")):
            include = _q(req, "includeObject", "Metadata")
            return _json(
                200, table(kind, objs, at, now=self._clock(), include=include, live=self.live)
            )
        head = (
            f'{{"apiVersion":"{GROUP_VERSION}","kind":"{kind.list_kind}",'
            f'"metadata":{{"resourceVersion":"{at}"}},"items":['
        ).encode()
        return HttpResponse(200, b"", [("content-type", _JSON)], stream=_list_chunks(head, raws))

    # -- single objects ------------------------------------------------------------------

    async def _item(
        self, req: HttpRequest, kind: Kind, ns: str, name: str, sub: str | None
    ) -> HttpResponse:
        store = self.store
        if req.method == "GET":
            if wants_table(req.headers.get("accept", "")):
                obj = await store.get(kind.plural, ns, name)
                include = _q(req, "includeObject", "Metadata")
                return _json(
                    200,
                    table(
                        kind,
                        [obj],
                        store.revision,
                        now=self._clock(),
                        include=include,
                        live=self.live,
                    ),
                )
            return _raw(200, store.get_raw(kind.plural, ns, name))
        warns: list[str] = []
        if sub == "status" and kind.plural == "humanprompts" and req.method in ("PUT", "PATCH"):
            raise _answer_refused(kind, name)
        if req.method == "PUT":
            self._no_dry_run(req)
            body = _body(req)
            if isinstance(body, dict):
                meta = body.setdefault("metadata", {})
                if isinstance(meta, dict):
                    if meta.setdefault("name", name) != name:
                        raise BadRequest(
                            f"the name of the object ({meta['name']}) does not match the name "
                            f"on the URL ({name})"
                        )
                    meta.setdefault("namespace", ns)
            obj = await store.update(
                kind.plural,
                ns,
                body,
                subresource=sub,
                field_validation=_field_validation(req),
                warnings=warns,
            )
            return _json(200, obj, _warnings(warns))
        if req.method == "PATCH":
            self._no_dry_run(req)
            obj = await store.patch(
                kind.plural,
                ns,
                name,
                _body(req),
                content_type=req.headers.get("content-type", MERGE_PATCH),
                subresource=sub,
                field_validation=_field_validation(req),
                warnings=warns,
                max_bytes=self.max_object_bytes,
            )
            return _json(200, obj, _warnings(warns))
        if req.method == "DELETE" and sub is None:
            opts = _body(req) if req.body else {}
            if not isinstance(opts, dict):
                raise BadRequest("DeleteOptions must be a JSON object")
            self._no_dry_run(req, opts.get("dryRun"))
            pre = opts.get("preconditions") or {}
            policy = opts.get("propagationPolicy") or _q(req, "propagationPolicy", "Background")
            if opts.get("orphanDependents") is True:
                policy = "Orphan"
            obj = await store.delete(
                kind.plural,
                ns,
                name,
                rv=parse_rv(pre.get("resourceVersion")),
                uid=pre.get("uid"),
                propagation=policy,
            )
            return _json(200, obj)
        raise MethodNotAllowed(f"{req.method} is not supported on {req.path}")

    @staticmethod
    def _no_dry_run(req: HttpRequest, body_value: Any = None) -> None:
        if req.query.get("dryRun") or body_value:
            raise BadRequest("dryRun is not supported by this server")

    # -- watch ---------------------------------------------------------------------------

    async def _watch(self, req: HttpRequest, kind: Kind, ns: str | None) -> HttpResponse:
        since = parse_rv(_q(req, "resourceVersion"))
        timeout_s = _q(req, "timeoutSeconds")
        try:
            timeout = float(timeout_s) if timeout_s else _DEFAULT_WATCH_TIMEOUT
        except ValueError:
            raise BadRequest(f"invalid timeoutSeconds {timeout_s!r}") from None
        as_table = wants_table(req.headers.get("accept", ""))
        include = _q(req, "includeObject", "Metadata")
        bookmarks = _q(req, "allowWatchBookmarks") in ("true", "1")
        watcher = await self.store.watch(
            kind.plural,
            namespace=ns,
            labels=_q(req, "labelSelector"),
            fields=_q(req, "fieldSelector"),
            since=since,
        )
        self._watches.add(watcher)

        def encode(event: WatchEvent) -> bytes:
            obj: Any = event.object
            if as_table and event.type != "BOOKMARK":
                obj = table(
                    kind, [obj], event.rv, now=self._clock(), include=include, live=self.live
                )
            return (
                json.dumps({"type": event.type, "object": obj}, separators=(",", ":")).encode()
                + b"\n"
            )

        async def stream() -> AsyncIterator[bytes]:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + max(timeout, 0.0)
            try:
                while True:
                    left = deadline - loop.time()
                    if left <= 0:
                        return
                    try:
                        event = await watcher.next(timeout=min(left, self.bookmark_interval))
                    except Expired as exc:
                        _, body = status_body(exc)
                        yield json.dumps({"type": "ERROR", "object": body}).encode() + b"\n"
                        return
                    except StoreError:
                        return
                    if event is not None:
                        yield encode(event)
                    elif bookmarks and watcher.idle and not watcher.ended:
                        mark = {
                            "kind": kind.kind,
                            "apiVersion": GROUP_VERSION,
                            "metadata": {"resourceVersion": str(self.store.revision)},
                        }
                        yield encode(WatchEvent("BOOKMARK", mark, self.store.revision))
            finally:
                watcher.end()
                self._watches.discard(watcher)

        return HttpResponse(200, b"", [("content-type", _JSON)], stream=stream())


async def _list_chunks(head: bytes, raws: list[bytes]) -> AsyncIterator[bytes]:
    """A list body from the stored objects' own bytes, a chunk at a time: the server drains
    each chunk before the next is made, so a list costs one chunk, not a copy of itself."""
    parts = [head]
    size = len(head)
    for i, raw in enumerate(raws):
        if i:
            parts.append(b",")
        parts.append(raw)
        size += len(raw) + 1
        if size >= _LIST_CHUNK:
            yield b"".join(parts)
            parts, size = [], 0
    parts.append(b"]}")
    yield b"".join(parts)
