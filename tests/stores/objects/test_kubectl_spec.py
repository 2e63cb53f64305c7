"""``kubectl patch`` of a record's spec takes effect in the real daemon (docs/store.md "Records
are objects"): a registered agent's endpoint and capabilities, a channel's participants, and
an AgentProfile at the next start."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon, write_kubeconfig
from tests.localagents.conftest import (  # noqa: F401 (fixtures used by name)
    local_daemon,
    make_package,
    runner_bin,
    visible_root,
)
from tests.stores.objects.conftest import Kubectl
from tests.tools.session_helpers import own_call, session_call

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


def kubectl_for(d: Daemon) -> Kubectl:
    return Kubectl(d, write_kubeconfig(d), d.root / "kube-cache")


def merge_patch(kubectl: Kubectl, kind: str, name: str, patch: dict[str, Any]) -> None:
    kubectl("patch", kind, name, "--type", "merge", "-p", json.dumps(patch))


def ok(d: Daemon, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = own_call(d, tool, args)
    assert not result["isError"], result
    return result["structuredContent"]  # type: ignore[no-any-return]


@pytest.fixture
def job_endpoint() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A registered agent's HTTP job endpoint (``POST /jobs``) and the jobs it was sent."""
    received: list[dict[str, Any]] = []

    class Jobs(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append({"path": self.path, **body})
            reply = json.dumps({"job_id": "remote-1", "status": "queued"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Jobs)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    thread.join(10)
    server.server_close()


def test_patched_agent_spec_routes_the_next_dispatch(
    daemon: Daemon, job_endpoint: tuple[str, list[dict[str, Any]]]
) -> None:
    """kubectl patch of a registered agent's spec.endpoint and spec.capabilities: get_agent
    reports them, find_agents finds it by the new capability, and run_agent posts the job to
    the new endpoint."""
    url, received = job_endpoint
    ok(
        daemon,
        "register_agent",
        {"agent_id": "pricing-api", "endpoint": "http://127.0.0.1:9", "capabilities": ["cost"]},
    )
    kubectl = kubectl_for(daemon)
    merge_patch(
        kubectl, "agent", "pricing-api", {"spec": {"endpoint": url, "capabilities": ["quote"]}}
    )

    got = ok(daemon, "get_agent", {"name": "pricing-api"})["agent"]
    assert (got["endpoint"], got["capabilities"]) == (url, ["quote"]), got
    found = ok(daemon, "find_agents", {"capability": "quote"})
    assert [a["agent_id"] for a in found["agents"]] == ["pricing-api"]
    assert ok(daemon, "find_agents", {"capability": "cost"})["agents"] == []

    job = ok(daemon, "run_agent", {"agent_id": "pricing-api", "task": "price it"})["job"]
    assert [(r["path"], r["task"]) for r in received] == [("/jobs", "price it")]
    assert job["remote_job_id"] == "remote-1", job
    # The registration's own fields (who registered it) survived the edit.
    obj = json.loads(kubectl("get", "agent", "pricing-api", "-o", "json").stdout)
    assert obj["metadata"]["annotations"]["record.fastverk.savvifi.com/registered-by"]


def test_patched_channel_participants_are_what_the_daemon_lists(
    daemon: Daemon, claude_bin: Path
) -> None:
    """kubectl patch of an AgentChannel's spec.participants and spec.topic is what
    list_channels reports next."""
    # qa-1 joins later: queue_unknown (docs/messaging.md "Recipients")
    opening = {"name": "rel", "participants": ["qa-1"], "queue_unknown": True}
    session_call(daemon, claude_bin, [("open_channel", opening)])
    merge_patch(
        kubectl_for(daemon),
        "agentchannel",
        "rel",
        {"spec": {"participants": ["qa-1", "qa-2"], "topic": "1.5"}},
    )
    channels = ok(daemon, "list_channels", {})["channels"]
    [rel] = [c for c in channels if c["name"] == "rel"]
    assert "qa-2" in rel["participants"], rel
    assert rel["topic"] == "1.5"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_patched_profile_is_used_by_the_next_start(local_daemon: Any) -> None:  # noqa: F811
    """An AgentProfile changed with kubectl patch gives the next start its new model."""
    d, hub, call = local_daemon()
    kubectl = kubectl_for(d)
    doc = {
        "apiVersion": "fastverk.savvifi.com/v1",
        "kind": "AgentProfile",
        "metadata": {"name": "fast", "namespace": "default"},
        "spec": {"backend": "claude-code", "mcpServers": ["agent-coord"], "model": "m-one"},
    }
    kubectl("apply", "-f", "-", stdin=json.dumps(doc))
    make_package(hub, "alpha")

    def model_of_a_start() -> str:
        err, res = call(
            "run_agent", {"agent_id": "alpha", "task": "env", "profile": "fast", "wait": True}
        )
        assert not err, res
        assert res["job"]["status"] == "succeeded", res
        return str(json.loads(res["job"]["result"]["result"])["flags"]["--model"])

    assert model_of_a_start() == "m-one"
    merge_patch(kubectl, "agentprofile", "fast", {"spec": {"model": "m-two"}})
    assert model_of_a_start() == "m-two"
