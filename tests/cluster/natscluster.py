"""A real three-node NATS cluster on loopback for tests and bench/cluster.py: one nats-server
process per node, routes between them, JetStream on each with its own store dir, one cluster
name. Readiness is each node's own ``/healthz`` (JetStream current), never a sleep.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcoord.kernel.natsbin import find_nats_server

CLUSTER_NAME = "agentcoord-test"


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct free ports (all held open while choosing, so none repeats)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind((host, 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class Node:
    """One nats-server of the cluster."""

    name: str
    root: Path
    port: int
    cluster_port: int
    http_port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def healthy(self) -> bool:
        try:
            url = f"http://127.0.0.1:{self.http_port}/healthz"
            with urllib.request.urlopen(url, timeout=1) as resp:
                return bool(resp.status == 200)
        except (OSError, urllib.error.HTTPError):
            return False

    def meta(self) -> dict[str, Any]:
        """This node's view of the JetStream meta group (``/jsz``), empty when unreachable."""
        try:
            url = f"http://127.0.0.1:{self.http_port}/jsz"
            with urllib.request.urlopen(url, timeout=1) as resp:
                return dict(json.loads(resp.read()).get("meta_cluster") or {})
        except (OSError, ValueError):
            return {}

    def log(self) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""


@dataclass
class NatsCluster:
    """Routed nats-servers with JetStream (``size`` 1: one plain server); ``users`` maps
    user -> password; ``extra_config`` is appended to every node's config."""

    root: Path
    size: int = 3
    users: dict[str, str] = field(default_factory=dict)
    extra_config: str = ""
    nodes: list[Node] = field(default_factory=list)

    def __post_init__(self) -> None:
        ports = free_ports(3 * self.size)
        for i in range(self.size):
            name = f"n{i + 1}"
            client, route, http = ports[3 * i : 3 * i + 3]
            self.nodes.append(Node(name, self.root / name, client, route, http))

    @property
    def seeds(self) -> str:
        """The comma-separated seed list a daemon is given (``nats_url``)."""
        return ",".join(n.url for n in self.nodes)

    def _config(self, node: Node) -> str:
        routes = ", ".join(f"nats-route://127.0.0.1:{n.cluster_port}" for n in self.nodes)
        lines = [
            f"server_name: {node.name}",
            f"listen: 127.0.0.1:{node.port}",
            f"http: 127.0.0.1:{node.http_port}",
            "jetstream {",
            f"  store_dir: {json.dumps(str(node.root / 'js'))}",
            "  max_memory_store: 64MB",
            "  max_file_store: 1GB",
            "}",
        ]
        if self.size > 1:
            lines += [
                "cluster {",
                f"  name: {CLUSTER_NAME}",
                f"  listen: 127.0.0.1:{node.cluster_port}",
                f"  routes: [{routes}]",
                "}",
            ]
        if self.users:
            users = ", ".join(
                f"{{ user: {json.dumps(u)}, password: {json.dumps(p)} }}"
                for u, p in self.users.items()
            )
            lines += ["authorization {", f"  users = [{users}]", "}"]
        lines.append(self.extra_config)
        return "\n".join(lines) + "\n"

    def start_node(self, node: Node) -> None:
        node.root.mkdir(parents=True, exist_ok=True)
        conf = node.root / "nats.conf"
        conf.write_text(self._config(node))
        log = (node.root / "server.log").open("ab")
        node.proc = subprocess.Popen(
            [str(find_nats_server()), "-c", str(conf)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    def start(self, timeout: float = 30.0) -> NatsCluster:
        for node in self.nodes:
            self.start_node(node)
        self.wait_healthy(timeout)
        return self

    def wait_healthy(self, timeout: float = 30.0) -> None:
        """Until every live node reports JetStream current (meta leader elected)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            live = [n for n in self.nodes if n.proc is not None]
            for n in live:
                if not n.alive:
                    raise RuntimeError(f"nats node {n.name} exited:\n{n.log()}")
            # /healthz is ok before the meta group has every peer; R3 placement needs them all.
            if all(n.healthy() for n in live) and (self.size == 1 or self._meta_formed(live)):
                return
            time.sleep(0.05)
        raise RuntimeError("nats cluster not healthy:\n" + "\n".join(n.log() for n in self.nodes))

    def _meta_formed(self, live: list[Node]) -> bool:
        """Every live node follows one meta leader, which sees every other live node current."""
        leaders = {n.meta().get("leader") for n in live}
        if len(leaders) != 1 or None in leaders or "" in leaders:
            return False
        leader = next((n for n in live if n.name in leaders), None)
        if leader is None:
            return False
        names = {n.name for n in live} - {leader.name}
        seen = {r.get("name"): r for r in leader.meta().get("replicas") or []}
        return all(seen.get(name, {}).get("current") for name in names)

    def kill(self, node: Node) -> None:
        """SIGKILL one node (a crash, not a clean shutdown)."""
        assert node.proc is not None
        node.proc.send_signal(signal.SIGKILL)
        node.proc.wait(10)

    def node_named(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def stop(self) -> None:
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is None:
                node.proc.terminate()
        for node in self.nodes:
            if node.proc is not None:
                try:
                    node.proc.wait(5)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        node.proc.kill()
                    node.proc.wait(5)
