"""Edges of the Kubernetes store that a healthy API server does not produce on demand: a watch
that ends with 410 Gone (the informer lists again), a watch from a compacted version, and a
conflict with a write the mirror has not seen yet.

A scripted API server behind lightkube's own client (an ``httpx2.MockTransport``); everything
else about the store runs against a real daemon's API (test_store.py, test_kube_store.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from agentcoord.stores.objects import Conflict, Expired
from agentcoord.stores.objects.kube import KubeObjectStore

pytestmark = pytest.mark.unit

PREFIX = "/apis/fastverk.savvifi.com/v1/namespaces/default/"
GONE = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "code": 410,
    "reason": "Expired",
    "message": "too old resource version: 1 (7)",
}


def _agent(name: str, rv: int) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default", "uid": f"u-{name}", "resourceVersion": str(rv)}
    return {"apiVersion": "fastverk.savvifi.com/v1", "kind": "Agent", "metadata": meta}


class ScriptedApi:
    """Lists and watches as scripted; records the requests it saw."""

    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []
        self.agent_lists = [([_agent("a", 5)], 5), ([_agent("a", 5), _agent("b", 9)], 9)]
        self.agent_watches = 0
        self.closed = asyncio.Event()

    async def _forever(self) -> AsyncIterator[bytes]:
        await self.closed.wait()
        yield b""

    async def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        plural = request.url.path.removeprefix(PREFIX)
        params = request.url.params
        if request.method == "PUT":
            conflict = {**GONE, "code": 409, "reason": "Conflict", "message": "modified"}
            return httpx2.Response(409, json=conflict)
        if plural == "agents/a":  # GET of one object: the version someone else wrote
            return httpx2.Response(200, json={**_agent("a", 7), "spec": {"pool": "theirs"}})
        if params.get("watch") == "true":
            if plural == "agents" and params.get("resourceVersion") == "1":
                return httpx2.Response(410, json=GONE)
            if plural == "agents" and self.agent_watches == 0:
                self.agent_watches += 1
                line = json.dumps({"type": "ERROR", "object": GONE}).encode() + b"\n"
                return httpx2.Response(200, content=line)
            return httpx2.Response(200, content=self._forever())
        items, rv = self.agent_lists.pop(0) if plural == "agents" else ([], 5)
        body = {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": str(rv)}}
        return httpx2.Response(200, json={**body, "items": items})


def _kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://kube.test"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


async def test_watch_gone_lists_again(tmp_path: Path) -> None:
    """When the informer's watch ends with a 410 ERROR event, it lists again and the mirror
    holds what the second list holds."""
    api = ScriptedApi()
    store = KubeObjectStore(_kubeconfig(tmp_path), transport=httpx2.MockTransport(api))
    async with store:
        async with asyncio.timeout(60):
            while True:
                _, objs, _ = store.list_raw("agents", "default")
                if len(objs) == 2:
                    break
                await asyncio.sleep(0.01)
        assert store.revision == 9
    agent_lists = [
        r for r in api.requests if r.url.path.endswith("/agents") and "watch" not in r.url.params
    ]
    assert len(agent_lists) == 2


async def test_watch_from_compacted_version_is_expired(tmp_path: Path) -> None:
    """store.watch from a version the server has compacted ends with Expired (410); the
    selectors go to the server in the Kubernetes grammar."""
    api = ScriptedApi()
    api.agent_watches = 1  # the informer's own watch just stays open
    store = KubeObjectStore(_kubeconfig(tmp_path), transport=httpx2.MockTransport(api))
    async with store:
        w = await store.watch("agents", namespace="default", labels="team in (x,y),!gone", since=1)
        with pytest.raises(Expired):
            await w.next(timeout=5)
    sent = [r for r in api.requests if r.url.params.get("resourceVersion") == "1"]
    assert [r.url.params["labelSelector"] for r in sent] == ["team in (x,y),!gone"]


async def test_conflict_refreshes_the_mirror(tmp_path: Path) -> None:
    """A 409 on update raises Conflict and fetches the object, so a read-change-write retry
    starts from the other writer's version even before its watch event arrives."""
    api = ScriptedApi()
    api.agent_watches = 1  # the watch stays silent: only the refresh can bring version 7
    store = KubeObjectStore(_kubeconfig(tmp_path), transport=httpx2.MockTransport(api))
    async with store:
        stale = await store.get("agents", "default", "a")
        assert stale["metadata"]["resourceVersion"] == "5"
        with pytest.raises(Conflict, match="modified"):
            await store.update("agents", "default", {**stale, "spec": {"pool": "mine"}})
        fresh = await store.get("agents", "default", "a")
    assert fresh["metadata"]["resourceVersion"] == "7"
    assert fresh["spec"] == {"pool": "theirs"}
