"""The HTTP API over mutual TLS, in process: Status bodies, Table watches, bookmarks, timeouts."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from agentcoord.kernel.httpserver import HttpServer
from agentcoord.stores.objects import ObjectStore
from agentcoord.stores.objects.api import KubeApi
from agentcoord.stores.objects.tls import client_context, ensure_credentials, server_context

BASE = "/apis/fastverk.savvifi.com/v1/namespaces/default/agents"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@dataclass
class Served:
    api: KubeApi
    store: ObjectStore
    client: httpx.AsyncClient


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    """A store and its API on an ephemeral TLS port, with a client holding the client cert."""
    creds = ensure_credentials(tmp_path / "kube")
    async with ObjectStore(tmp_path / "o.db") as store:
        api = KubeApi(store, bookmark_interval=0.1)
        server = HttpServer(api, "127.0.0.1", 0, max_body=1 << 20, ssl=server_context(creds))
        async with server:
            url = f"https://127.0.0.1:{server.port}"
            async with httpx.AsyncClient(base_url=url, verify=client_context(creds)) as client:
                yield Served(api, store, client)
            await api.aclose()


async def _create(s: Served, name: str) -> dict:
    r = await s.client.post(BASE, json={"metadata": {"name": name}, "spec": {"profile": "p"}})
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def test_not_found_is_a_status_body(served: Served) -> None:
    """A missing object is a 404 metav1.Status with reason and details."""
    r = await served.client.get(f"{BASE}/nope")
    assert r.status_code == 404
    body = r.json()
    assert body["kind"] == "Status"
    assert body["reason"] == "NotFound"
    assert body["code"] == 404
    assert body["details"] == {"name": "nope", "group": "fastverk.savvifi.com", "kind": "agents"}
    assert (await served.client.get("/apis/fastverk.savvifi.com/v1/widgets")).status_code == 404


async def test_warn_validation_sends_warning_header(served: Served) -> None:
    """fieldValidation=Warn drops an unknown field and says so in a Warning header."""
    body = {"metadata": {"name": "w"}, "spec": {"profile": "p", "nope": 1}}
    r = await served.client.post(f"{BASE}?fieldValidation=Warn", json=body)
    assert r.status_code == 201
    assert r.headers["warning"] == '299 - "unknown field \\"spec.nope\\""'
    assert r.json()["spec"] == {"profile": "p"}


async def test_invalid_object_lists_causes(served: Served) -> None:
    """A schema violation is 422 Invalid with one cause per field."""
    r = await served.client.post(BASE, json={"metadata": {"name": "x"}, "spec": {"depth": "deep"}})
    assert r.status_code == 422
    causes = r.json()["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.depth"]


async def test_list_as_table_and_plain(served: Served) -> None:
    """A list is a Table when asked for one, else an AgentList with the list's rv."""
    await _create(served, "a")
    plain = (await served.client.get(BASE)).json()
    assert plain["kind"] == "AgentList"
    assert plain["metadata"]["resourceVersion"] == "1"
    assert [i["metadata"]["name"] for i in plain["items"]] == ["a"]
    t = (await served.client.get(BASE, headers={"accept": TABLE})).json()
    assert t["kind"] == "Table"
    assert t["rows"][0]["cells"][:3] == ["a", None, "p"]


async def _events(resp: httpx.Response, n: int) -> list[dict]:
    out: list[dict] = []
    async for line in resp.aiter_lines():
        if line:
            out.append(json.loads(line))
        if len(out) == n:
            break
    return out


async def test_table_watch_events_are_one_row_tables(served: Served) -> None:
    """Each event of a Table watch carries a one-row Table with the column definitions."""
    await _create(served, "a")
    async with served.client.stream("GET", f"{BASE}?watch=true", headers={"accept": TABLE}) as r:
        assert r.status_code == 200
        first = (await _events(r, 1))[0]
        assert first["type"] == "ADDED"
        assert first["object"]["kind"] == "Table"
        assert len(first["object"]["rows"]) == 1
        assert first["object"]["columnDefinitions"][0]["name"] == "Name"


async def test_bookmarks_and_timeout(served: Served) -> None:
    """allowWatchBookmarks yields BOOKMARKs at the current rv; timeoutSeconds ends the stream."""
    await _create(served, "a")
    url = f"{BASE}?watch=true&resourceVersion=1&allowWatchBookmarks=true&timeoutSeconds=1"
    loop = asyncio.get_running_loop()
    start = loop.time()
    # timeoutSeconds ends the stream: not before that second (a busy machine only makes it
    # later), and not never (the generous bound turns a hang into a failure).
    async with asyncio.timeout(60), served.client.stream("GET", url) as r:
        events = [json.loads(line) async for line in r.aiter_lines() if line]
    assert loop.time() - start >= 0.9
    assert events
    assert {e["type"] for e in events} == {"BOOKMARK"}
    assert events[0]["object"]["metadata"]["resourceVersion"] == "1"


async def test_close_ends_open_watches(served: Served) -> None:
    """aclose() (daemon shutdown) ends an open watch stream at once."""
    async with served.client.stream("GET", f"{BASE}?watch=true&resourceVersion=0") as r:

        async def close_soon() -> None:
            await asyncio.sleep(0.2)
            await served.api.aclose()

        closer = asyncio.create_task(close_soon())
        async with asyncio.timeout(60):
            lines = [line async for line in r.aiter_lines() if line]
        await closer
    assert lines == []


async def test_dry_run_and_bad_verbs(served: Served) -> None:
    """dryRun is refused (400); DELETE on a collection is 405."""
    r = await served.client.post(f"{BASE}?dryRun=All", json={"metadata": {"name": "d"}, "spec": {}})
    assert r.status_code == 400
    assert (await served.client.delete(BASE)).status_code == 405


async def test_discovery_documents(served: Served) -> None:
    """/apis lists the group; the group doc's PATCH operations list fieldValidation."""
    groups = (await served.client.get("/apis")).json()["groups"]
    assert groups[0]["preferredVersion"]["groupVersion"] == "fastverk.savvifi.com/v1"
    root = (await served.client.get("/openapi/v3")).json()
    url = root["paths"]["apis/fastverk.savvifi.com/v1"]["serverRelativeURL"]
    doc = (await served.client.get(url)).json()
    patch = doc["paths"]["/apis/fastverk.savvifi.com/v1/namespaces/{namespace}/agents/{name}"][
        "patch"
    ]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "fastverk.savvifi.com",
        "version": "v1",
        "kind": "Agent",
    }
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
