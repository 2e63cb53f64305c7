"""Discovery and OpenAPI documents kubectl reads before it does anything, and the CRDs.

kubectl's first calls are ``/version``, ``/api``, ``/apis`` and ``/apis/<g>/<v>``. ``apply``
(and ``create``/``replace`` with validation) need ``/openapi/v3`` and a per-group document whose
PATCH operations carry ``x-kubernetes-group-version-kind`` and list ``fieldValidation``; then
kubectl leaves validation to the server with ``fieldValidation=Strict``
(docs/store.md "HTTP API and TLS").
"""

from __future__ import annotations

import copy
import hashlib
import json
from functools import cache
from typing import Any

from agentcoord import __version__
from agentcoord.stores.objects.kinds import GROUP, GROUP_VERSION, KINDS, VERSION, Kind

__all__ = [
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "crds_yaml",
    "group_openapi",
    "openapi_root",
    "schema_name",
    "version_info",
]

_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
_CATEGORY = "agentcoord"


def version_info() -> dict[str, Any]:
    """``/version``: we speak the API of Kubernetes 1.32 (what kubectl 1.32 expects)."""
    return {
        "major": "1",
        "minor": "32",
        "gitVersion": f"v1.32.0+agentcoord.{__version__}",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "agentcoord",
        "platform": "linux/amd64",
    }


def api_versions(addr: str) -> dict[str, Any]:
    """``/api``: the core group is not served (no core resources)."""
    return {
        "kind": "APIVersions",
        "versions": [],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}],
    }


def _group() -> dict[str, Any]:
    gv = {"groupVersion": GROUP_VERSION, "version": VERSION}
    return {"name": GROUP, "versions": [gv], "preferredVersion": gv}


def api_group_list() -> dict[str, Any]:
    """``/apis``."""
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group()]}


def api_group() -> dict[str, Any]:
    """``/apis/<group>``."""
    return {"kind": "APIGroup", "apiVersion": "v1", **_group()}


def api_resource_list() -> dict[str, Any]:
    """``/apis/<group>/<version>``: each kind and its status subresource."""
    resources: list[dict[str, Any]] = []
    for kind in KINDS.values():
        resources.append(
            {
                "name": kind.plural,
                "singularName": kind.singular,
                "namespaced": True,
                "kind": kind.kind,
                "verbs": _VERBS,
                "shortNames": list(kind.short_names),
                "categories": [_CATEGORY],
                "storageVersionHash": _hash(kind.kind)[:12],
            }
        )
        resources.append(
            {
                "name": f"{kind.plural}/status",
                "singularName": "",
                "namespaced": True,
                "kind": kind.kind,
                "verbs": ["get", "patch", "update"],
            }
        )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": GROUP_VERSION,
        "resources": resources,
    }


def schema_name(kind: Kind) -> str:
    """Component name of a kind's schema (reverse-DNS group, as the apiserver names them)."""
    return ".".join(reversed(GROUP.split("."))) + f".{VERSION}.{kind.kind}"


def _param(name: str, where: str, description: str, required: bool = False) -> dict[str, Any]:
    return {
        "name": name,
        "in": where,
        "description": description,
        "required": required,
        "schema": {"type": "string", "uniqueItems": True},
    }


_FIELD_VALIDATION = _param(
    "fieldValidation",
    "query",
    "Strict, Warn or Ignore: what the server does with unknown or duplicate fields.",
)
_DRY_RUN = _param("dryRun", "query", "Not supported by this server.")
_FIELD_MANAGER = _param("fieldManager", "query", "Name of the actor making the change.")


def _op(kind: Kind, action: str, verb: str, body: bool, params: list[dict[str, Any]]) -> Any:
    ref = {"$ref": f"#/components/schemas/{schema_name(kind)}"}
    op: dict[str, Any] = {
        "operationId": f"{verb}{kind.kind}",
        "tags": [f"{GROUP}_{VERSION}"],
        "parameters": params,
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": ref}}}
        },
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": GROUP, "version": VERSION, "kind": kind.kind},
    }
    if body:
        types = (
            ["application/json-patch+json", "application/merge-patch+json"]
            if action == "patch"
            else ["application/json"]
        )
        op["requestBody"] = {
            "content": {
                t: {"schema": {"type": "object"} if action == "patch" else ref} for t in types
            },
            "required": True,
        }
    return op


def _paths() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    base = f"/apis/{GROUP}/{VERSION}"
    ns = _param("namespace", "path", "object name and auth scope", True)
    name = _param("name", "path", "name of the object", True)
    write = [_FIELD_VALIDATION, _DRY_RUN, _FIELD_MANAGER]
    for kind in KINDS.values():
        p = kind.plural
        paths[f"{base}/{p}"] = {"get": _op(kind, "list", "list", False, [])}
        paths[f"{base}/namespaces/{{namespace}}/{p}"] = {
            "parameters": [ns],
            "get": _op(kind, "list", "listNamespaced", False, []),
            "post": _op(kind, "post", "createNamespaced", True, write),
        }
        for suffix, verb in (("", ""), ("/status", "Status")):
            paths[f"{base}/namespaces/{{namespace}}/{p}/{{name}}{suffix}"] = {
                "parameters": [ns, name],
                "get": _op(kind, "get", f"readNamespaced{verb}", False, []),
                "put": _op(kind, "put", f"replaceNamespaced{verb}", True, write),
                "patch": _op(kind, "patch", f"patchNamespaced{verb}", True, write),
                **(
                    {"delete": _op(kind, "delete", "deleteNamespaced", False, [])}
                    if not suffix
                    else {}
                ),
            }
    return paths


def _object_meta() -> dict[str, Any]:
    s = {"type": "string"}
    return {
        "type": "object",
        "description": "Standard object metadata.",
        "properties": {
            "name": s,
            "generateName": s,
            "namespace": s,
            "uid": s,
            "resourceVersion": s,
            "generation": {"type": "integer", "format": "int64"},
            "creationTimestamp": {"type": "string", "format": "date-time"},
            "deletionTimestamp": {"type": "string", "format": "date-time"},
            "labels": {"type": "object", "additionalProperties": s},
            "annotations": {"type": "object", "additionalProperties": s},
            "finalizers": {"type": "array", "items": s},
            "ownerReferences": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "apiVersion": s,
                        "kind": s,
                        "name": s,
                        "uid": s,
                        "controller": {"type": "boolean"},
                        "blockOwnerDeletion": {"type": "boolean"},
                    },
                },
            },
        },
    }


@cache
def group_openapi_bytes() -> bytes:
    """The per-group OpenAPI v3 document, encoded once."""
    schemas: dict[str, Any] = {}
    for kind in KINDS.values():
        schema = copy.deepcopy(kind.schema())
        schema["properties"]["metadata"] = _object_meta()
        schemas[schema_name(kind)] = schema
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "agentcoord", "version": __version__},
        "paths": _paths(),
        "components": {"schemas": schemas},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def group_openapi() -> dict[str, Any]:
    """The per-group OpenAPI v3 document."""
    return json.loads(group_openapi_bytes())  # type: ignore[no-any-return]


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def openapi_root() -> dict[str, Any]:
    """``/openapi/v3``: where the per-group document lives (with a content hash)."""
    digest = _hash(group_openapi_bytes().decode())[:32].upper()
    return {
        "paths": {
            f"apis/{GROUP}/{VERSION}": {
                "serverRelativeURL": f"/openapi/v3/apis/{GROUP}/{VERSION}?hash={digest}"
            }
        }
    }


def crds_yaml() -> str:
    """CustomResourceDefinitions for a real cluster, one YAML document per kind."""
    docs = []
    for kind in KINDS.values():
        schema = copy.deepcopy(kind.schema())
        schema.pop("x-kubernetes-group-version-kind", None)
        columns = [
            {
                "name": c.name,
                "type": c.type,
                "jsonPath": c.path,
                **({"priority": c.priority} if c.priority else {}),
                **({"description": c.description} if c.description else {}),
            }
            for c in kind.columns
        ]
        docs.append(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{kind.plural}.{GROUP}"},
                "spec": {
                    "group": GROUP,
                    "scope": "Namespaced",
                    "names": {
                        "plural": kind.plural,
                        "singular": kind.singular,
                        "kind": kind.kind,
                        "listKind": kind.list_kind,
                        "shortNames": list(kind.short_names),
                        "categories": [_CATEGORY],
                    },
                    "versions": [
                        {
                            "name": VERSION,
                            "served": True,
                            "storage": True,
                            "schema": {"openAPIV3Schema": schema},
                            "subresources": {"status": {}},
                            "additionalPrinterColumns": columns,
                        }
                    ],
                },
            }
        )
    import yaml  # here: only the CLI prints YAML

    return yaml.safe_dump_all(docs, sort_keys=False)
