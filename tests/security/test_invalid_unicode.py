"""Invalid Unicode (a lone surrogate, JSON ``"\\ud800"``) is refused where it comes in (docs/
security.md "Input at the boundary"): tool arguments (-32602), a frame's method or id (-32600),
a kube object body (400 with a Status); and a record stored with one by an older version
never takes a listing down."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import ssl
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.conftest import Daemon, write_kubeconfig
from tests.tools.conftest import agents, nats_login  # noqa: F401  (the fixture)
from tests.tools.session_helpers import human_token, own_call

LONE = "\ud800"


def frames(d: Daemon, *raw: bytes) -> list[dict[str, Any]]:
    """Raw frames on one unix connection logged in as the human; a reply to each (login too)."""
    login = {"jsonrpc": "2.0", "id": "login", "method": "agentcoord/login"}
    lines = [json.dumps({**login, "params": {"token": human_token(d)}}).encode(), *raw]
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(20)
        s.connect(str(d.socket))
        reader = s.makefile("rb")
        out = []
        for line in lines:
            s.sendall(line + b"\n")
            got = reader.readline()
            assert got, f"connection dropped after {line[:120]!r}\n{d.log()[-3000:]}"
            out.append(json.loads(got))
        return out[1:]


def tool_frame(name: str, arguments: dict[str, Any], rid: int = 7) -> bytes:
    req = {"jsonrpc": "2.0", "id": rid, "method": "tools/call"}
    req["params"] = {"name": name, "arguments": arguments}
    return json.dumps(req).encode()  # ensure_ascii: a lone surrogate goes as "\ud800"


def test_lone_surrogates_in_tool_arguments_are_refused(daemon: Daemon, agents: Any) -> None:  # noqa: F811
    """annotate's intent, register_agent's metadata (value or key) and a list item with a lone
    surrogate get -32602 naming the argument; nothing is stored; listings work."""
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("annotate", {"intent": LONE}, "arguments.intent"),
        ("annotate", {"intent": "ok", "files": ["a", "b" + LONE]}, "arguments.files[1]"),
        ("register_agent", {"agent_id": "p1", "metadata": {"k": LONE}}, "arguments.metadata.k"),
        ("register_agent", {"agent_id": "p2", "metadata": {LONE: 1}}, "arguments.metadata."),
    ]
    replies = frames(daemon, *(tool_frame(name, args) for name, args, _ in cases))
    for (name, _, where), reply in zip(cases, replies, strict=True):
        assert reply["error"]["code"] == -32602, (name, reply)
        assert where in reply["error"]["message"], reply
        assert "not valid Unicode" in reply["error"]["message"], reply
    a = agents("a")  # an agent's own annotate, through its session's connection
    assert a.call("annotate", intent="fine")["ok"]
    assert own_call(daemon, "get_agent", {"agent_id": "p1"})["structuredContent"] == {
        "found": False
    }
    listed = own_call(daemon, "list_agents", {})
    assert not listed["isError"], listed
    assert a.name in [row["name"] for row in listed["structuredContent"]["agents"]]


def test_a_lone_surrogate_in_method_or_id_gets_an_error_reply(daemon: Daemon) -> None:
    """On the socket: -32600 for either, the connection stays; over HTTP a JSON-RPC error,
    not a bare 500."""
    method, rid = frames(
        daemon,
        b'{"jsonrpc":"2.0","id":5,"method":"\\ud800"}',
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
        b'{"jsonrpc":"2.0","id":6,"method":"ping"}',
    )[:2]
    assert method["error"]["code"] == -32600, method
    assert method["id"] == 5
    assert '"method" is not valid Unicode' in method["error"]["message"]
    assert rid["error"]["code"] == -32600, rid
    assert rid["id"] is None
    headers: dict[str, str] = {
        "authorization": f"Bearer {human_token(daemon)}",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    for body in (
        b'{"jsonrpc":"2.0","id":"\\udc01","method":"ping"}',
        tool_frame("annotate", {"intent": LONE}),
    ):
        req = urllib.request.Request(f"{daemon.url}/mcp", data=body, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                status, reply = resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            status, reply = exc.code, json.loads(exc.read() or b"{}")
        assert status in (200, 400), (status, reply)
        assert reply["error"]["code"] in (-32600, -32602), reply
        assert "not valid Unicode" in reply["error"]["message"], reply


def _kube(d: Daemon) -> tuple[str, ssl.SSLContext]:
    kube = d.state_dir / "kube"
    ctx = ssl.create_default_context(cafile=str(kube / "ca.crt"))
    ctx.load_cert_chain(str(kube / "client.crt"), str(kube / "client.key"))
    return (d.runtime_dir / "kube.addr").read_text().strip(), ctx


def _create(addr: str, ctx: ssl.SSLContext, body: bytes) -> tuple[int, dict[str, Any]]:
    url = f"https://{addr}/apis/fastverk.savvifi.com/v1/namespaces/u/agents"
    req = urllib.request.Request(url, data=body, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _agent(name: str, profile: str = "coder") -> bytes:
    doc: dict[str, Any] = {"apiVersion": "fastverk.savvifi.com/v1", "kind": "Agent"}
    doc["metadata"] = {"name": name, "namespace": "u"}
    doc["spec"] = {"profile": profile}
    return json.dumps(doc).encode()


def test_a_lone_surrogate_in_a_kube_body_is_a_400_and_fails_no_other_create(
    daemon: Daemon,
) -> None:
    """Bad bodies among 60 concurrent creates: each bad one is 400 BadRequest with a Status
    saying why, every good one is created."""
    addr, ctx = _kube(daemon)
    results: dict[str, tuple[int, dict[str, Any]]] = {}

    def create(name: str, bad: bool) -> None:
        results[name] = _create(addr, ctx, _agent(name, "c" + LONE if bad else "coder"))

    threads = [threading.Thread(target=create, args=(f"k{i}", i % 10 == 0)) for i in range(60)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, (code, body) in results.items():
        if int(name[1:]) % 10 == 0:
            assert code == 400, (name, code, body)
            assert body["kind"] == "Status", body
            assert body["reason"] == "BadRequest", body
            assert "not valid Unicode" in body["message"], body
        else:
            assert code == 201, (name, code, body)


def test_a_stored_bad_record_never_takes_a_listing_down(
    daemon: Daemon,
    agents: Any,  # noqa: F811
) -> None:
    """An Agent object and a focus record holding a lone surrogate (as an older version stored
    them): list_agents, get_agent, `agentcoord agents` and kubectl get still answer, with
    U+FFFD in its place, also after a restart."""
    a = agents("a")
    a.call("annotate", intent="plain-intent")
    registered = own_call(
        daemon,
        "register_agent",
        {"agent_id": "old", "endpoint": "http://127.0.0.1:9/", "metadata": {"note": "plain-note"}},
    )
    assert not registered["isError"], registered
    name = a.name
    _poison_focus(daemon, name)
    daemon.stop()
    db = sqlite3.connect(daemon.state_dir / "objects.db")
    with db:
        stored = db.execute("SELECT resource, namespace, name, object FROM objects").fetchall()
        bad = [(key, bytes(raw)) for *key, raw in stored if b"plain-note" in bytes(raw)]
        assert len(bad) == 1, stored
        key, raw = bad[0]
        new = raw.replace(b"plain-note", b"bad\\ud800note")  # JSON's escape, as stored
        db.execute(
            "UPDATE objects SET object = ? WHERE resource = ? AND namespace = ? AND name = ?",
            (new, *key),
        )
    db.close()
    daemon.start()
    for _ in range(2):  # and once more after a restart
        listed = own_call(daemon, "list_agents", {})
        assert not listed["isError"], listed
        names = [r["name"] for r in listed["structuredContent"]["agents"]]
        assert "old" in names, names
        assert name in names, names
        got = own_call(daemon, "get_agent", {"agent_id": "old"})
        assert got["structuredContent"]["found"], got
        assert "bad\ufffdnote" in json.dumps(got["structuredContent"], ensure_ascii=False)
        focus = own_call(daemon, "find_agents", {"query": "intent"})
        assert not focus["isError"], focus
        cli = subprocess.run(
            [sys.executable, "-m", "agentcoord", "agents", "--json"],
            env=daemon.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert cli.returncode == 0, cli.stderr
        assert "old" in cli.stdout
        kubeconfig = write_kubeconfig(daemon)
        kubectl = subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), "get", "agents", "-A", "-o", "json"],
            env=daemon.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert kubectl.returncode == 0, kubectl.stderr
        daemon.stop()
        daemon.start()


def _poison_focus(d: Daemon, agent: str) -> None:
    """Rewrite ``agent``'s focus record in the KV with a lone surrogate in its intent."""
    import nats

    from agentcoord.stores.kv.focus import BUCKET
    from agentcoord.stores.kv.keys import escape_key

    async def poison() -> None:
        url, user, pw = nats_login(d)
        nc = await nats.connect(url, user=user, password=pw)
        try:
            kv = await nc.jetstream().key_value(BUCKET)
            entry = await kv.get(escape_key(agent))
            assert entry.value is not None
            assert b"plain-intent" in entry.value, entry.value
            await kv.put(escape_key(agent), entry.value.replace(b"plain-intent", b"in\\ud800tent"))
        finally:
            await nc.close()

    asyncio.run(poison())


async def test_a_lone_surrogate_that_reaches_the_store_fails_no_other_write_in_its_commit(
    tmp_path: Path,
) -> None:
    """Past every boundary, an object holding a lone surrogate is stored with U+FFFD, and the
    other creates of its group commit all succeed."""
    from agentcoord.stores.objects.store import ObjectStore

    async with ObjectStore(tmp_path / "objects.db") as store:

        def obj(i: int) -> dict[str, Any]:
            note = "x" + LONE if i % 8 == 0 else "fine"
            return {"metadata": {"name": f"o{i}"}, "spec": {"description": note}}

        made = await asyncio.gather(*(store.create("agents", "default", obj(i)) for i in range(40)))
        assert [m["metadata"]["name"] for m in made] == [f"o{i}" for i in range(40)]
        assert store.stats.max_batch > 1  # they did share commits
        got = await store.get("agents", "default", "o0")
        assert got["spec"]["description"] == "x\ufffd"
