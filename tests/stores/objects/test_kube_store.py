"""A daemon with ``--store kubernetes`` keeps its objects in another daemon's API server."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from agentcoord.stores.objects import StoreError
from agentcoord.stores.objects.kube import KubeObjectStore
from tests.conftest import Daemon, make_env
from tests.stores.objects.conftest import Kubectl, kubeconfig_text
from tests.tools.session_helpers import own_call, session_call


def _pair(factory: Callable[..., Daemon]) -> tuple[Daemon, Daemon, Kubectl]:
    api = factory("api").start()
    config = api.root / "kubeconfig"
    config.write_text(kubeconfig_text(api))
    node = factory("node", AGENTCOORD_STORE="kubernetes", AGENTCOORD_KUBECONFIG=str(config))
    node.start()
    return api, node, Kubectl(api, config, api.root / "kube-cache")


def test_session_agent_appears_in_the_api_servers_store(
    daemon_factory: Callable[..., Daemon],
    claude_bin: Path,
    tmp_path: Path,
    kubectl_present: None,
) -> None:
    """whoami from a Claude session on the kubernetes-store daemon creates its Agent in the
    other daemon's store, where kubectl lists it, and so does open_channel's AgentChannel
    (with its status); the node keeps no objects.db of its own."""
    _, node, kubectl = _pair(daemon_factory)
    project = tmp_path / "webapp"
    project.mkdir()
    calls = [
        ("whoami", {}),
        (
            "open_channel",
            # qa-1 joins later: queue_unknown (docs/messaging.md "Recipients")
            {"name": "release", "participants": ["qa-1"], "topic": "1.4", "queue_unknown": True},
        ),
    ]
    result, opened = session_call(node, claude_bin, calls, cwd=project)
    assert opened["isError"] is False, opened
    agent = result["structuredContent"]["agent"]
    assert agent == "webapp-1"
    listed = kubectl("get", "agents", "-o", "yaml").stdout
    items = {i["metadata"]["name"]: i for i in yaml.safe_load(listed)["items"]}
    assert agent in items
    # Running, or Ended once its claude has exited (docs/localagents.md "Session lifetime").
    assert items[agent]["status"]["phase"] in ("Running", "Ended")
    assert items[agent]["spec"]["cwd"] == str(project)
    assert agent in kubectl("get", "agents").stdout
    channel = yaml.safe_load(kubectl("get", "agentchannel", "release", "-o", "yaml").stdout)
    assert "qa-1" in channel["spec"]["participants"]
    assert channel["status"]["phase"] == "Open"
    assert not (node.state_dir / "objects.db").exists()
    assert not (node.runtime_dir / "kube.addr").exists()


def test_objects_written_elsewhere_reach_the_node(
    daemon_factory: Callable[..., Daemon], kubectl_present: None
) -> None:
    """An Agent applied with kubectl on the API server shows in the node's list_agents (its
    mirror follows the server's watch); `agentcoord kubeconfig` on the node explains why it
    has none to print."""
    _, node, kubectl = _pair(daemon_factory)
    kubectl(
        "apply",
        "-f",
        "-",
        stdin=yaml.safe_dump(
            {
                "apiVersion": "fastverk.savvifi.com/v1",
                "kind": "Agent",
                "metadata": {"name": "buildbox-1", "namespace": "default"},
                "spec": {"profile": "builder"},
            }
        ),
    )
    names: list[str] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rows = own_call(node, "list_agents", {})["structuredContent"]["agents"]
        names = [r["name"] for r in rows]
        if "buildbox-1" in names:
            break
        time.sleep(0.05)
    assert "buildbox-1" in names
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "kubeconfig"],
        env=node.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 1
    assert "serves no kube API" in out.stderr


async def test_unreachable_api_server_fails_with_a_typed_error(tmp_path: Path) -> None:
    """Opening the kubernetes store against a closed port raises StoreError, not a hang."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "kubeconfig"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": f"https://127.0.0.1:{port}",
                            "insecure-skip-tls-verify": True,
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    # A refused connection fails the open at once with its cause; a hang would end only at
    # the ready timeout, with "did not answer within" instead.
    with pytest.raises(StoreError, match=r"cannot list .*cannot reach"):
        async with KubeObjectStore(config, ready_timeout=120):
            pass


async def test_mirror_recovers_after_api_server_restart(
    daemon_factory: Callable[..., Daemon],
) -> None:
    """When the API server restarts, the mirror lists and watches again and sees later writes
    made by another client."""
    api = daemon_factory("api").start()
    config = api.root / "kubeconfig"
    config.write_text(kubeconfig_text(api))
    async with KubeObjectStore(config) as store:
        await store.create("agents", "default", {"metadata": {"name": "a"}, "spec": {}})
        await asyncio.to_thread(api.stop)
        await asyncio.to_thread(api.start)
        async with KubeObjectStore(config) as other:
            await other.create("agents", "default", {"metadata": {"name": "b"}, "spec": {}})
        async with asyncio.timeout(15):
            while True:
                _, objs, _ = store.list_raw("agents", "default")
                if [o["metadata"]["name"] for o in objs] == ["a", "b"]:
                    break
                await asyncio.sleep(0.05)


def test_default_daemon_does_not_import_the_client() -> None:
    """Loading the daemon (SQLite store) leaves lightkube unimported: only --store kubernetes
    pays for it."""
    code = (
        "import sys, agentcoord.daemon.run, agentcoord.cli.main;"
        "print(sorted(m for m in sys.modules if m.startswith(('lightkube', 'httpx2'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert out.stdout.strip() == "[]"


def test_serve_with_a_bad_kubeconfig_exits_with_one_line(tmp_path: Path) -> None:
    """`serve --store kubernetes` with a missing kubeconfig exits 1 and says why in one line."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentcoord",
            "serve",
            "--store",
            "kubernetes",
            "--kubeconfig",
            str(tmp_path / "missing"),
        ],
        env=make_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(
        f"agentcoord: cannot use kubeconfig {tmp_path / 'missing'}: "
        f"Configuration file {tmp_path / 'missing'} not found"
    )
