"""Registry and HTTP dispatch tools against a real HTTP agent server (http.server in a thread)
and a real daemon: register, heartbeat, offline refusal with retry, routing by capability,
and the ``wait=true`` polling contract of docs/localagents.md."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon, stored_records
from tests.localagents.conftest import listed, make_package, unix_call


class AgentServer:
    """A tiny HTTP agent: POST /jobs queues, GET /jobs/<id> is running twice, then done."""

    def __init__(self, running_polls: int = 2) -> None:
        self.posts: list[dict[str, Any]] = []
        self.gets: list[str] = []
        self._polls: dict[str, int] = {}
        self.running_polls = running_polls
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:
                if self.path != "/jobs":
                    return self._send(404, {"error": "no such path"})
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.posts.append(body)
                job_id = f"j{len(outer.posts)}"
                outer._polls[job_id] = 0
                self._send(202, {"job_id": job_id, "status": "queued"})

            def do_GET(self) -> None:
                job_id = self.path.removeprefix("/jobs/")
                if job_id not in outer._polls:
                    return self._send(404, {"error": "no such job"})
                outer.gets.append(job_id)
                outer._polls[job_id] += 1
                if outer._polls[job_id] <= outer.running_polls:
                    return self._send(200, {"job_id": job_id, "status": "running"})
                self._send(200, {"job_id": job_id, "status": "done", "result": "report ready"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> AgentServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def agent_server() -> Iterator[AgentServer]:
    with AgentServer() as srv:
        yield srv


@pytest.fixture
def hub_daemon(daemon_factory: Any, tmp_path: Path) -> tuple[Daemon, Path]:
    hub = tmp_path / "agentihub"
    (hub / "agents").mkdir(parents=True)
    d = daemon_factory(AGENTIBRIDGE_LOCAL_AGENTS_ENABLED="1", AGENTIHUB_DIR=str(hub)).start()
    return d, hub


def test_register_heartbeat_deregister(
    hub_daemon: tuple[Daemon, Path], agent_server: AgentServer
) -> None:
    """Register upserts (JSON-text arguments too), heartbeat merges metadata, deregister removes."""
    d, _ = hub_daemon
    err, res = unix_call(
        d,
        "register_agent",
        {
            "agent_id": "pod-1",
            "endpoint": agent_server.url,
            "agent_type": "executor",
            "capabilities": '["cost-analysis", "profile:coding"]',
            "metadata": '{"zone": "a"}',
        },
    )
    assert not err, res
    agent = res["agent"]
    assert agent["effective_status"] == "online"
    assert agent["transport"] == "http"
    assert agent["capabilities"] == ["cost-analysis", "profile:coding"]
    assert agent["registered_by"].startswith(("human:", "session"))  # from the transport
    first = agent["registered_at"]
    err, res = unix_call(
        d,
        "heartbeat_agent",
        {"agent_id": "pod-1", "status": "degraded", "metadata": {"available_capacity": 3}},
    )
    assert not err, res
    assert res["agent"]["effective_status"] == "degraded"
    assert res["agent"]["metadata"] == {"zone": "a", "available_capacity": 3}
    err, res = unix_call(d, "register_agent", {"agent_id": "pod-1", "endpoint": agent_server.url})
    assert res["agent"]["registered_at"] == first
    err, res = unix_call(d, "deregister_agent", {"agent_id": "pod-1"})
    assert res == {"success": True, "agent_id": "pod-1", "removed": True}
    err, text = unix_call(d, "heartbeat_agent", {"agent_id": "pod-1"})
    assert err
    assert "register_agent first" in text


def test_offline_agent_refused_with_retry_then_back(
    hub_daemon: tuple[Daemon, Path], agent_server: AgentServer
) -> None:
    """Past its heartbeat TTL an HTTP agent is offline: dispatch is refused with retry=true."""
    d, _ = hub_daemon
    unix_call(
        d, "register_agent", {"agent_id": "pod-1", "endpoint": agent_server.url, "heartbeat_ttl": 1}
    )
    time.sleep(1.3)
    err, text = unix_call(d, "run_agent", {"agent_id": "pod-1", "task": "count the costs"})
    assert err
    refusal = json.loads(text)
    assert refusal == {
        "success": False,
        "error": "agent 'pod-1' is offline",
        "retry": True,
        "agent_id": "pod-1",
    }
    assert agent_server.posts == []
    unix_call(d, "heartbeat_agent", {"agent_id": "pod-1"})
    err, res = unix_call(d, "run_agent", {"agent_id": "pod-1", "task": "count the costs"})
    assert not err, res
    assert res["success"] is True
    assert res["routed_by"] == "agent_id"
    assert res["job"]["remote_job_id"] == "j1"
    assert res["job"]["status"] == "running"
    assert agent_server.posts[0]["task"] == "count the costs"
    assert agent_server.posts[0]["request_id"] == res["job"]["job_id"]


def test_dispatch_by_capability_picks_the_warm_agent_with_capacity(
    hub_daemon: tuple[Daemon, Path],
) -> None:
    """Among full, degraded, offline and idle-local candidates, the online one with room wins."""
    d, hub = hub_daemon
    make_package(hub, "local-analyst", "capabilities: [cost-analysis]\n")
    assert listed(lambda n, a: unix_call(d, n, a)) == ["local-analyst"]
    with AgentServer() as full, AgentServer() as sick, AgentServer() as good, AgentServer() as gone:
        reg = [
            ("full", full, {"available_capacity": 0}),
            ("sick", sick, {}),
            ("good", good, {"available_capacity": 2}),
            ("gone", gone, {"available_capacity": 9}),
        ]
        for name, srv, meta in reg:
            unix_call(
                d,
                "register_agent",
                {
                    "agent_id": name,
                    "endpoint": srv.url,
                    "capabilities": ["cost-analysis"],
                    "metadata": meta,
                    "heartbeat_ttl": 1 if name == "gone" else 300,
                },
            )
        unix_call(d, "heartbeat_agent", {"agent_id": "sick", "status": "degraded"})
        time.sleep(1.3)  # "gone" misses its heartbeat
        err, res = unix_call(d, "dispatch_to_agent", {"capability": "cost-analysis", "task": "q3"})
        assert not err, res
        assert res["agent_id"] == "good"
        assert res["routed_by"] == "capability"
        assert len(good.posts) == 1
        assert not (full.posts)
        assert not (sick.posts)
        assert not (gone.posts)


def test_dispatch_with_no_candidate_says_whether_to_retry(hub_daemon: tuple[Daemon, Path]) -> None:
    """No agent has the tag: retry=false; only offline ones have it: retry=true."""
    d, _ = hub_daemon
    err, text = unix_call(d, "dispatch_to_agent", {"capability": "video-editing", "task": "cut"})
    assert err
    assert json.loads(text)["retry"] is False
    unix_call(
        d,
        "register_agent",
        {
            "agent_id": "v",
            "endpoint": "http://127.0.0.1:9",
            "capabilities": ["video-editing"],
            "heartbeat_ttl": 1,
        },
    )
    time.sleep(1.3)
    err, text = unix_call(d, "dispatch_to_agent", {"capability": "video-editing", "task": "cut"})
    assert err
    assert json.loads(text)["retry"] is True


def test_wait_true_polls_until_done(
    hub_daemon: tuple[Daemon, Path], agent_server: AgentServer
) -> None:
    """wait=true polls GET {endpoint}/jobs/{id} until a terminal status and returns it."""
    d, _ = hub_daemon
    unix_call(d, "register_agent", {"agent_id": "pod-1", "endpoint": agent_server.url})
    err, res = unix_call(d, "run_agent", {"agent_id": "pod-1", "task": "x", "wait": True})
    assert not err, res
    assert res["job"]["status"] == "succeeded"
    assert res["job"]["result"] == {"job_id": "j1", "status": "done", "result": "report ready"}
    assert agent_server.gets == ["j1", "j1", "j1"]
    tasks = stored_records(d, "agenttasks", "job", "job_id")
    assert tasks[res["job"]["job_id"]]["remote_job_id"] == "j1"


def test_unreachable_endpoint_fails_with_retry(hub_daemon: tuple[Daemon, Path]) -> None:
    """A registered, online agent whose endpoint refuses connections: failed, retry=true."""
    d, _ = hub_daemon
    unix_call(d, "register_agent", {"agent_id": "pod-x", "endpoint": "http://127.0.0.1:9"})
    err, text = unix_call(d, "run_agent", {"agent_id": "pod-x", "task": "x"})
    assert err
    body = json.loads(text)
    assert body["retry"] is True
    assert body["agent_id"] == "pod-x"
    assert body["job_id"]
